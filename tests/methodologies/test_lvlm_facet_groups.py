"""lvlm_facet groups and selection: hand-built persons tables and the FACET fixture."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from genfair.curation.facet import SKIN_COLUMNS, FacetConfig, curate_facet
from genfair.curation.facet_fixture import build_facet_fixture
from genfair.methodologies.lvlm_facet.groups import (
    PAPER_CLASSES,
    age_group,
    gender_group,
    lvlm_persons,
    resolve_classes,
    skin_tone_group,
)


def _votes(**levels: int) -> list[int]:
    return [levels.get(f"l{i}", 0) for i in range(1, 11)]


@pytest.mark.parametrize(
    ("votes", "bucket", "median", "majority"),
    [
        (_votes(l2=2, l3=1), "light", "light", "light"),
        (_votes(l5=2, l6=1), "medium", "medium", "medium"),
        (_votes(l8=3), "dark", "dark", "dark"),
        # 2 votes medium (4 and 6) vs 1 light (3): majority bucket medium; most-voted level
        # is a tie 3/4/6 -> lower median 4 (medium); lower median of pooled 3,4,6 = 4
        (_votes(l3=1, l4=1, l6=1), "medium", "medium", "medium"),
        # levels 3,3 (light) vs 7,8 (dark): a 2-2 bucket tie -> unknown; median 3 -> light
        (_votes(l3=2, l7=1, l8=1), "unknown", "light", "light"),
        # 1,4,9: one vote per bucket -> unknown; median 4 -> medium
        (_votes(l1=1, l4=1, l9=1), "unknown", "medium", "medium"),
        # two annotators on 6, three spread over 7, 8, 9: bucket dark (3 > 2), level 6
        (_votes(l6=2, l7=1, l8=1, l9=1), "dark", "dark", "medium"),
        (_votes(), "unknown", "unknown", "unknown"),
    ],
)
def test_skin_rules_hand_computed(
    votes: list[int], bucket: str, median: str, majority: str
) -> None:
    assert skin_tone_group(votes) == bucket  # the default rule is the majority bucket
    assert skin_tone_group(votes, "median_level") == median
    assert skin_tone_group(votes, "majority_level") == majority


def test_skin_bad_input() -> None:
    with pytest.raises(ValueError, match="10 non-negative"):
        skin_tone_group([1, 2])
    with pytest.raises(ValueError, match="not one of"):
        skin_tone_group(_votes(l1=1), "mean")  # type: ignore[arg-type]


def test_gender_and_age_groups() -> None:
    assert [gender_group(g) for g in ("male", "female", "non_binary", "unknown")] == [
        "male", "female", "unknown", "unknown"
    ]  # fmt: skip
    assert [age_group(a) for a in ("young", "middle", "older", "unknown")] == [
        "younger", "middle", "older", "unknown"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="curated FACET value"):
        gender_group("masc")


def test_class_presets() -> None:
    assert resolve_classes("paper") == PAPER_CLASSES and len(PAPER_CLASSES) == 13
    assert len(resolve_classes("all")) == 52
    assert resolve_classes(["nurse", "nurse", "doctor"]) == ("nurse", "doctor")
    with pytest.raises(ValueError, match="unknown FACET class"):
        resolve_classes(["nurse", "wizard"])
    with pytest.raises(ValueError, match="not a preset"):
        resolve_classes("thirteen")


def _persons(rows: list[dict]) -> pd.DataFrame:
    base = {"filename": "x.jpg", "n_persons_in_image": 1, "source": "annotation",
            "gender": "male", "age_group": "young", **dict.fromkeys(SKIN_COLUMNS, 0)}  # fmt: skip
    return pd.DataFrame([{**base, **r} for r in rows])


def test_selection_single_person_annotated_and_class_subset() -> None:
    persons = _persons([
        {"person_id": "1", "occupation": "nurse", "skin_tone_2": 3},
        {"person_id": "2", "occupation": "nurse", "n_persons_in_image": 2},  # two people
        {"person_id": "3", "occupation": "doctor"},  # not one of the paper's 13
        {"person_id": "4", "occupation": "gardener", "gender": "non_binary", "age_group": "older"},
        {"person_id": "5", "occupation": None, "source": "detector"},
    ])  # fmt: skip
    out = lvlm_persons(persons)
    assert out["person_id"].tolist() == ["4", "1"]  # paper class order: gardener before nurse
    assert out.set_index("person_id").loc["1", ["gender", "skin_tone", "age"]].tolist() == [
        "male", "light", "younger"
    ]  # fmt: skip
    assert out.set_index("person_id").loc["4", ["gender", "skin_tone", "age"]].tolist() == [
        "unknown", "unknown", "older"
    ]  # fmt: skip
    assert lvlm_persons(persons, classes="all")["person_id"].tolist() == ["3", "4", "1"]
    with pytest.raises(ValueError, match=r"persons\.parquet: missing column"):
        lvlm_persons(persons.drop(columns=["skin_tone_7"]))


def test_on_the_curated_fixture(tmp_path: Path) -> None:
    release = build_facet_fixture(tmp_path / "release")
    curate_facet(FacetConfig(release_dir=release), tmp_path / "out", progress=False)
    persons = pd.read_parquet(tmp_path / "out" / "persons.parquet")
    out = lvlm_persons(persons, classes="all")
    # single-person images: the astronaut and the four lfw_single canvases
    assert sorted(out["filename"]) == ["astronaut.png"] + [
        f"lfw_single_{i}.png" for i in range(1, 5)
    ]
    astro = out.set_index("person_id").loc["1"]
    assert (astro["class"], astro["gender"], astro["skin_tone"], astro["age"]) == (
        "astronaut", "female", "medium", "middle"
    )  # fmt: skip
    assert out["fixture"].all()
