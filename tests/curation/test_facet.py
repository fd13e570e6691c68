"""FACET curation: crops, labels, filters, bad rows, resume, and the HOG person detector."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from pydantic import ValidationError

from genfair.curation.facet import (
    Box,
    DetectorConfig,
    FacetAnnotationError,
    FacetConfig,
    crop_person,
    curate_facet,
    detect_persons,
    majority_label,
    monk_level,
    skin_group,
)
from genfair.curation.facet_fixture import FIXTURE_COLUMNS, build_facet_fixture

DETECT = DetectorConfig(enabled=True)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_facet_fixture(tmp_path_factory.mktemp("facet_fixture"))


def _config(release: Path, **kw: object) -> FacetConfig:
    return FacetConfig(release_dir=release, **kw)  # type: ignore[arg-type]


# --- crops ------------------------------------------------------------------------------


def test_marker_at_box_centre_lands_at_crop_centre_exactly() -> None:
    image = np.zeros((200, 300, 3), np.uint8)
    image[150, 40] = 255
    box = Box(x=30, y=130, width=21, height=41)  # centre (40.5, 150.5): the marker's centre
    crop = crop_person(image, box, FacetConfig(release_dir=Path("."), crop_size=41, margin=1.0))
    assert crop.shape == (41, 41, 3)
    assert np.argwhere(crop[..., 0] == 255).tolist() == [[20, 20]]  # the middle of 41


def test_marker_stays_central_after_resize_and_border_is_padded() -> None:
    image = np.full((120, 160, 3), 10, np.uint8)
    image[6, 5] = 255  # near the top-left corner: most of the crop is outside the image
    box = Box(x=0, y=1, width=11, height=11)  # centre (5.5, 6.5)
    cfg = FacetConfig(release_dir=Path("."), margin=3.0, pad_value=200)
    crop = crop_person(image, box, cfg)
    assert crop.shape == (384, 384, 3)
    row, col = np.unravel_index(np.argmax(crop[..., 0] * (crop[..., 0] != 200)), crop.shape[:2])
    step = 384 / 33  # one source pixel spans this many crop pixels
    assert abs(row - 191.5) <= step and abs(col - 191.5) <= step
    # 11 of 33 columns and 10 of 33 rows lie outside the image: padded with pad_value
    assert (crop[:, :60, 0] == 200).all() and (crop[:60, :, 0] == 200).all()  # Lanczos rings ~3 px
    assert (crop[300:, 300:, 0] == 10).all()  # inside the image: its own pixels
    edge = crop_person(image, box, FacetConfig(release_dir=Path("."), margin=3.0, pad_mode="edge"))
    assert (edge[:100, 300:, 0] == 10).all()  # edge mode repeats the border pixels


def test_fixed_window_crop_keeps_native_resolution() -> None:
    image = np.arange(400 * 500 * 3, dtype=np.uint32).reshape(400, 500, 3).astype(np.uint8)
    cfg = FacetConfig(release_dir=Path("."), crop_side="fixed", crop_size=64)
    crop = crop_person(image, Box(x=200, y=100, width=300, height=300), cfg)
    assert crop.shape == (64, 64, 3)
    np.testing.assert_array_equal(crop, image[218:282, 318:382])


# --- labels -----------------------------------------------------------------------------


def _votes(**by_level: int) -> list[int]:
    return [by_level.get(f"l{i}", 0) for i in range(1, 11)]


def test_monk_level_from_votes_hand_computed() -> None:
    assert monk_level(_votes(l2=2, l3=1)) == 2  # votes 2,2,3 -> median 2
    assert monk_level(_votes(l1=1, l4=1, l9=1)) == 4  # 1,4,9 -> 4
    assert monk_level(_votes(l3=2, l8=2)) == 3  # 3,3,8,8 -> lower median 3
    assert monk_level(_votes(l6=1, l7=2), "majority") == 7
    assert monk_level(_votes(l1=1, l4=1, l9=1), "majority") == 4  # three-way tie -> middle
    assert monk_level(_votes(l3=2, l8=2), "majority") == 3  # two-way tie -> lower
    assert monk_level(_votes(l1=3, l9=4), "median") == 9
    assert monk_level(_votes()) is None
    with pytest.raises(ValueError, match="10 vote counts"):
        monk_level([1, 2, 3])


@pytest.mark.parametrize(
    ("level", "iris", "lvlm"),
    [(1, "light", "light"), (3, "light", "light"), (4, "middle", "medium"),
     (6, "middle", "medium"), (7, "middle", "dark"), (8, "dark", "dark"),
     (10, "dark", "dark"), (None, "unknown", "unknown")],
)  # fmt: skip
def test_skin_groups_for_both_presets(level: int | None, iris: str, lvlm: str) -> None:
    assert skin_group(level, "iris") == iris
    assert skin_group(level, "lvlm_facet") == lvlm


def test_majority_label_ties_are_unknown() -> None:
    assert majority_label({"male": 2, "female": 1, "non_binary": 0, "unknown": 0}) == "male"
    assert majority_label({"male": 1, "female": 1, "non_binary": 0, "unknown": 0}) == "unknown"
    assert majority_label({"male": 0, "female": 0, "non_binary": 0, "unknown": 0}) == "unknown"


# --- the stage on the fixture -----------------------------------------------------------


def test_fixture_curation_multi_person_and_labels(release: Path, tmp_path: Path) -> None:
    report = curate_facet(_config(release, detector=DETECT), tmp_path, progress=False)
    persons = pd.read_parquet(tmp_path / "persons.parquet")
    assert report.persons_written == len(persons) == 11
    assert (release / "README.md").read_text().startswith("# FACET-format FIXTURE")
    assert persons["fixture"].all() and report.as_dict()["fixture"] is True
    group = persons[persons["filename"] == "lfw_group_1.png"]
    assert len(group) == 3 and set(group["n_persons_in_image"]) == {3}
    assert len(set(group["crop_sha256"])) == 3  # three different people, three crops
    for path in persons["crop_path"]:
        with Image.open(tmp_path / path) as img:
            assert img.size == (384, 384) and img.mode == "RGB"
    astro = persons.set_index("person_id").loc["1"]
    assert (astro["occupation"], astro["gender"], astro["age_group"]) == (
        "astronaut", "female", "middle"
    )  # fmt: skip
    assert astro["monk_level"] == 5 and astro["skin_group"] == "medium"  # votes 5,5,6
    det = persons[persons["source"] == "detector"]
    assert det["filename"].tolist() == ["camera.png"]
    assert det["gender"].tolist() == ["unknown"] and det["occupation"].isna().all()
    assert report.as_dict()["detector"]["images_without_person"] == ["chelsea.png", "coffee.png"]
    # the iris preset regroups the MST 7 person (lfw_single_4) from dark to middle
    iris = curate_facet(_config(release, skin_groups="iris"), tmp_path / "iris", progress=False)
    assert iris.persons_written == 10  # detector off by default
    p103 = pd.read_parquet(tmp_path / "iris" / "persons.parquet").set_index("person_id").loc["103"]
    assert p103["monk_level"] == 7 and p103["skin_group"] == "middle"
    assert persons.set_index("person_id").loc["103", "skin_group"] == "dark"


def test_skin_vote_counts_are_kept(release: Path, tmp_path: Path) -> None:
    """persons.parquet carries the released MST vote counts, so a methodology can aggregate
    them its own way (lvlm_facet's majority bucket); detected persons have no votes."""
    curate_facet(_config(release, detector=DETECT), tmp_path, progress=False)
    persons = pd.read_parquet(tmp_path / "persons.parquet").set_index("person_id")
    votes = [f"skin_tone_{level}" for level in range(1, 11)]
    assert all(persons[c].dtype == "int64" for c in votes)
    assert persons.loc["1", votes].tolist() == [0, 0, 0, 0, 2, 1, 0, 0, 0, 0]  # the fixture's
    assert persons.loc["103", votes].tolist() == [0, 0, 0, 0, 0, 1, 2, 0, 0, 0]
    assert persons.loc["105", votes].sum() == 0  # no votes in the release row
    assert persons.loc[persons["source"] == "detector", votes].to_numpy().sum() == 0


def test_filters(release: Path, tmp_path: Path) -> None:
    single = curate_facet(
        _config(release, single_person_only=True, detector=DETECT), tmp_path / "a", progress=False
    )
    kept = pd.read_parquet(tmp_path / "a" / "persons.parquet")
    assert (kept["n_persons_in_image"] == 1).all() and len(kept) == 6  # 5 annotated + camera
    assert single.as_dict()["filtered"] == {"not_single_person": 5}
    by_class = curate_facet(
        _config(release, classes=["astronaut", "nurse"], detector=DETECT),
        tmp_path / "b",
        progress=False,
    )
    kept = pd.read_parquet(tmp_path / "b" / "persons.parquet")
    assert sorted(kept["occupation"]) == ["astronaut", "nurse"]
    assert by_class.as_dict()["filtered"] == {"class": 9}  # 8 other classes + the detection
    big = curate_facet(_config(release, min_box_px=101), tmp_path / "c", progress=False)
    assert pd.read_parquet(tmp_path / "c" / "persons.parquet")["person_id"].tolist() == ["1"]
    assert big.as_dict()["filtered"] == {"box_too_small": 9}
    with pytest.raises(ValidationError, match="unknown FACET class"):
        _config(release, classes=["astronuat"])


def _broken_release(release: Path, tmp_path: Path) -> Path:
    """The fixture plus deliberately malformed rows (data rows 11-20)."""
    broken = tmp_path / "broken"
    (broken / "images").mkdir(parents=True)
    for img in (release / "images").iterdir():
        (broken / "images" / img.name).write_bytes(img.read_bytes())
    (broken / "images" / "corrupt.png").write_bytes(b"not a png at all")
    lines = (release / "annotations.csv").read_text().splitlines()
    template = next(csv.DictReader(lines[:2]))

    def row(**kw: str) -> str:
        values = {**template, **kw}
        out: list[str] = []
        writer = csv.writer(_ListWriter(out), lineterminator="")
        writer.writerow([values[c] for c in FIXTURE_COLUMNS])
        return out[0]

    box = '{"x": 10, "y": 10, "width": 50, "height": 50}'
    extra = [
        row(person_id="900", bounding_box="{x: 10, y"),  # 11 unparsable JSON
        row(person_id="901", bounding_box='{"x": 1, "y": 1, "width": -5, "height": 9}'),  # 12
        row(person_id="902", filename="", bounding_box=box),  # 13 empty filename
        row(person_id="1", bounding_box=box),  # 14 duplicate id
        "903,astronaut.png,astronaut",  # 15 too few fields
        row(person_id="904", filename="nope.png", bounding_box=box),  # 16 missing image
        row(person_id="905", skin_tone_3="many", bounding_box=box),  # 17 bad vote count
        row(person_id="906", filename="../etc.png", bounding_box=box),  # 18 unsafe name
        row(person_id="907", filename="corrupt.png", bounding_box=box),  # 19 unreadable
        row(person_id="908", bounding_box='{"x": 900, "y": 900, "width": 5, "height": 5}'),  # 20
    ]
    (broken / "annotations.csv").write_text("\n".join(lines + extra) + "\n")
    return broken


class _ListWriter:
    def __init__(self, out: list[str]) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.append(text)


def test_bad_rows_reported_with_row_numbers(release: Path, tmp_path: Path) -> None:
    broken = _broken_release(release, tmp_path)
    report = curate_facet(_config(broken), tmp_path / "out", progress=False).as_dict()
    reasons = {b["row"]: b["reason"] for b in report["bad_rows"]}
    assert sorted(reasons) == [11, 12, 13, 14, 15, 17, 18, 19, 20]
    assert "not JSON" in reasons[11]
    assert "non-positive size" in reasons[12]
    assert "empty filename" in reasons[13]
    assert "duplicate person_id '1'" in reasons[14]
    assert "fields" in reasons[15]
    assert "skin_tone_3" in reasons[17]
    assert "not a plain file name" in reasons[18]
    assert "unreadable image corrupt.png" in reasons[19]
    assert "outside" in reasons[20]
    assert report["missing_images"] == {"count": 1, "rows": 1, "files": {"nope.png": [16]}}
    assert report["rows"] == 20 and report["persons_written"] == 10  # the good rows survive
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == report
    # the duplicate row still counts as a person in astronaut.png: no longer single-person
    single = curate_facet(_config(broken, single_person_only=True), tmp_path / "s", progress=False)
    assert "1" not in set(pd.read_parquet(tmp_path / "s" / "persons.parquet")["person_id"])
    assert single.persons_written == 4


def test_missing_columns_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "annotations.csv").write_text("person_id,filename,class1\n1,a.png,nurse\n")
    with pytest.raises(FacetAnnotationError) as err:
        curate_facet(_config(tmp_path), tmp_path / "out", progress=False)
    message = str(err.value)
    assert str(tmp_path / "annotations.csv") in message
    assert "bounding_box" in message and "skin_tone_10" in message and "point" in message
    with pytest.raises(FacetAnnotationError, match="no such file"):
        curate_facet(_config(tmp_path / "nowhere"), tmp_path / "out", progress=False)


def test_resume_and_determinism(release: Path, tmp_path: Path) -> None:
    first = curate_facet(_config(release, detector=DETECT), tmp_path / "a", progress=False)
    assert first.reused == 0
    crop = tmp_path / "a" / "crops" / "100.png"
    crop.write_bytes(b"damaged")  # an interrupted or tampered crop is made again
    (tmp_path / "a" / "crops" / "stale.png").write_bytes(b"old")
    again = curate_facet(_config(release, detector=DETECT), tmp_path / "a", progress=False)
    assert again.reused == first.persons_written - 1
    assert not (tmp_path / "a" / "crops" / "stale.png").exists()
    fresh = curate_facet(_config(release, detector=DETECT), tmp_path / "b", progress=False)
    assert fresh.reused == 0
    for name in ("persons.parquet", "report.json", "crops/100.png", "crops/det_camera_png_0.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    # a changed crop setting changes the key: every crop is remade, none reused
    changed = curate_facet(_config(release, margin=1.5), tmp_path / "a", progress=False)
    assert changed.reused == 0 and len(list((tmp_path / "a" / "crops").iterdir())) == 10


# --- the person detector ----------------------------------------------------------------


def test_hog_detects_the_cameraman() -> None:
    from skimage import data

    camera = np.stack([data.camera()] * 3, axis=-1)
    found = detect_persons(camera, DETECT)
    assert len(found) == 1
    box = found[0].box
    # the man fills the left of the 512x512 frame, head at y~65, cut by the bottom edge
    cx, cy = box.x + box.width / 2, box.y + box.height / 2
    assert 60 <= cx <= 260 and 150 <= cy <= 380, box
    assert box.height >= 0.6 * 512 and box.y <= 100 and box.x + box.width <= 340, box


@pytest.mark.parametrize("name", ["coffee", "chelsea"])
def test_hog_finds_nobody_in_photos_without_people(name: str) -> None:
    from skimage import data

    assert detect_persons(getattr(data, name)(), DETECT) == []
