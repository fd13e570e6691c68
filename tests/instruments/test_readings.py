"""Instrument readings cached like answers (issue 43.1), with the real face instrument in
model mode on real photos (the validation photos that ship in packages, and copies of them
flipped or cropped so each is distinct content): each image is measured once per content,
config and code; IRIS's generate and label share readings; a rerun after a metrics change
measures nothing; a measurement killed half way resumes with every reading it stored."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from genfair.instruments import readings
from genfair.instruments.face_demographics import FaceDemographics, FaceDemographicsConfig
from genfair.instruments.readings import InstrumentSpec, code_identity, read_images, reading_key
from genfair.instruments.validation import package_photo_set
from genfair.io import write_parquet
from genfair.models.cache import ResponseCache

ROOT = Path(__file__).resolve().parents[2]
NAME = "face_demographics"


def _photos(folder: Path, variants: int = 1) -> list[tuple[str, Path]]:
    """The package's five large photos (two with a face) as ``<sha256>.png`` in ``folder``;
    ``variants`` > 1 adds copies flipped and cropped (distinct content, same people)."""
    from PIL import Image, ImageOps

    from genfair.models.images import encode_png

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for item in package_photo_set(lfw=False):
        photo = Image.fromarray(item.load())
        copies = [photo, ImageOps.mirror(photo)]
        copies += [photo.crop((k, k, photo.width - k, photo.height - k)) for k in (8, 16, 24)]
        for image in copies[:variants]:
            png = encode_png(image)
            sha = hashlib.sha256(png).hexdigest()
            (folder / f"{sha}.png").write_bytes(png)
            out.append((sha, folder / f"{sha}.png"))
    return out


def _counting(instrument: Any) -> list[Path]:
    """The paths ``instrument`` reads from now on (its ``read`` wrapped)."""
    seen: list[Path] = []
    read = instrument.read

    def counted(path: Path) -> dict[str, Any]:
        seen.append(path)
        return read(path)

    instrument.read = counted
    return seen


@pytest.fixture(scope="module")
def instrument() -> FaceDemographics:
    return FaceDemographics()


def test_each_image_is_measured_once_and_a_rerun_measures_nothing(
    tmp_path: Path, instrument: FaceDemographics
) -> None:
    photos = _photos(tmp_path / "images")
    images = [*photos, photos[0]]  # the same content twice: one measurement
    cache = tmp_path / "cache" / "responses.sqlite"
    seen = _counting(instrument)
    first = read_images(instrument, NAME, images, lambda: ResponseCache(cache), batch=2)
    assert len(seen) == 5
    # what the instrument measures of each image, in order; the same reading for the copy
    assert first == [instrument.measure(path).to_reading() for _, path in images]
    assert [first[0]["faces"][0]["gender"], first[2]["status"]] == ["female", "no_face"]
    records = [
        FaceDemographics.from_reading(r, sha) for r, (sha, _) in zip(first, images, strict=True)
    ]
    assert records[0] == instrument.measure(images[0][1], image_id=images[0][0])
    again = FaceDemographics()  # another process's instrument, the same config and code
    seen_again = _counting(again)
    with ResponseCache(cache) as store:
        assert read_images(again, NAME, images, store) == first
        assert store.reading_counts() == {NAME: 5}
    assert seen_again == []
    # a stored reading that is no record (damaged, edited by hand) is measured again
    with sqlite3.connect(cache) as db:
        db.execute('UPDATE readings SET reading = \'{"status": "ok"}\' WHERE rowid = 1')
    with ResponseCache(cache) as store:
        assert read_images(again, NAME, images, store) == first
    assert len(seen_again) == 1


def test_another_config_code_package_or_content_is_another_reading(
    monkeypatch: pytest.MonkeyPatch, instrument: FaceDemographics
) -> None:
    spec = InstrumentSpec.of(NAME, instrument)
    code = code_identity(instrument)
    key = reading_key("a" * 64, spec, code)
    assert key == reading_key("a" * 64, InstrumentSpec.of(NAME, FaceDemographics()), code)
    assert key != reading_key("b" * 64, spec, code)
    other = FaceDemographics(FaceDemographicsConfig(skin_groups="lvlm_facet"))
    assert key != reading_key("a" * 64, InstrumentSpec.of(NAME, other), code_identity(other))
    monkeypatch.setattr(readings, "_version", lambda name: "9.9" if name == "numpy" else "1")
    assert code_identity(instrument) != code
    monkeypatch.undo()
    monkeypatch.setattr(readings, "_module_hash", lambda module: f"edited {module}")
    assert code_identity(instrument) != code
    # the spec rebuilds the instrument from its config anywhere (e.g. a worker process)
    assert InstrumentSpec(spec.name, spec.config_json) == spec
    assert type(InstrumentSpec(NAME, other.config.model_dump_json()).build()) is FaceDemographics


def test_iris_generate_and_label_share_readings_and_a_metrics_change_measures_nothing(
    tmp_path: Path, instrument: FaceDemographics
) -> None:
    from genfair.methodologies.iris.config import IrisConfig
    from genfair.methodologies.iris.methodology import Iris
    from genfair.models.images import ImageStore

    photos = _photos(tmp_path / "data" / "images")
    store = ImageStore(tmp_path / "cache" / "images")
    for _, path in photos:
        store.put(path.read_bytes())
    responses = pd.DataFrame(
        {
            "probe_id": [f"p{i}" for i in range(6)],
            "sample_index": 0,
            "sector": "IFS-Gen",
            "modality": "t2i",
            "occupation": "nurse",
            "status": ["ok"] * 5 + ["error"],
            "image": [sha for sha, _ in photos] + [None],
        }
    )
    cache = tmp_path / "cache" / "responses.sqlite"
    seen = _counting(instrument)
    with ResponseCache(cache) as opened:  # generate measures through its open cache
        generated = Iris()._measure(responses, instrument, store=store, cache=opened)
    assert len(seen) == 5

    def label(config: IrisConfig, cached: Any) -> pd.DataFrame:
        return Iris().label_responses(
            pd.DataFrame(),
            responses,
            config,
            instrument=instrument,
            image_dir=tmp_path / "data" / "images",
            readings=cached,
        )

    labelled = label(IrisConfig(), lambda: ResponseCache(cache))
    assert len(seen) == 5  # label read generate's readings
    changed = IrisConfig().model_copy(
        update={"metrics": IrisConfig().metrics.model_copy(update={"unmappable_label": "other"})}
    )
    relabelled = label(changed, lambda: ResponseCache(cache))
    assert len(seen) == 5  # a metrics setting is no part of a reading
    measured_now = label(IrisConfig(), None)  # no cache: every image measured again
    assert len(seen) == 10
    files = [
        write_parquet(frame, tmp_path / f"labels{i}.parquet").read_bytes()
        for i, frame in enumerate((labelled, relabelled, measured_now))
    ]
    assert files[0] == files[1] == files[2]
    assert list(generated["face_status"][:5]) == ["ok", "ok", "no_face", "no_face", "no_face"]
    assert pd.isna(generated["face_status"].iloc[5])  # no image, no reading
    assert list(labelled["gender"][:2]) == list(generated["gender"][:2])


CHILD = """
import sys
from pathlib import Path
from genfair.instruments.face_demographics import FaceDemographics
from genfair.instruments.readings import read_images
from genfair.models.cache import ResponseCache

folder, db = Path(sys.argv[1]), sys.argv[2]
images = [(p.stem, p) for p in sorted(folder.glob("*.png"))]
with ResponseCache(db) as cache:
    read_images(FaceDemographics(), "face_demographics", images, cache, batch=2)
"""


def test_a_measurement_killed_half_way_resumes_and_measures_only_the_rest(
    tmp_path: Path, instrument: FaceDemographics
) -> None:
    photos = _photos(tmp_path / "images", variants=5)
    total = len(photos)
    assert total == 25
    db = tmp_path / "cache" / "responses.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "images"), str(db)], env=env
    )
    try:
        with ResponseCache(db) as cache:
            deadline = time.monotonic() + 300
            # the state, not a time: half the readings committed
            while cache.reading_counts().get(NAME, 0) < total // 2:
                assert child.poll() is None, "the measuring process ended before half"
                assert time.monotonic() < deadline, "no half of the readings in 300 s"
                time.sleep(0.01)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=60) == -signal.SIGKILL
            stored = cache.reading_counts()[NAME]
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    assert total // 2 <= stored < total
    seen = _counting(instrument)
    with ResponseCache(db) as cache:
        resumed = read_images(instrument, NAME, sorted(photos), cache)
        assert cache.reading_counts() == {NAME: total}
    assert len(seen) == total - stored  # only the readings the killed process had not stored
    # the killed process's readings are those this one measures
    first = [path for _, path in sorted(photos) if path not in seen][:3]
    fresh = FaceDemographics()
    assert [fresh.read(path) for path in first] == [
        r for r, (_, path) in zip(resumed, sorted(photos), strict=True) if path in first
    ]


def test_a_label_step_reads_and_stores_in_the_study_cache_that_cache_url_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step context's opener (picklable) opens the study's cache: ``cache.url`` when set
    (the team's PostgreSQL; here a SQLite URL), else ``<cache.dir>/responses.sqlite``."""
    import pickle

    import yaml

    from genfair.study.context import step_context
    from genfair.study.layout import Layout
    from genfair.study_params import StudyParams
    from tests.support.conf import read_conf

    monkeypatch.delenv("GENFAIR_CACHE_URL", raising=False)
    monkeypatch.delenv("GENFAIR_CACHE_DIR", raising=False)
    sim = yaml.safe_load((ROOT / "conf/model/simulated_t2i.yaml").read_text())
    team = tmp_path / "team" / "responses.sqlite"

    def study(cache: dict[str, str]) -> StudyParams:
        return StudyParams.model_validate(
            {
                "seed": 1,
                "scale": "smoke",
                "methodologies": {"fact_or_fair": read_conf("methodology/fact_or_fair.yaml")},
                "models": {"simulated_t2i": sim},
                "instruments": {NAME: {}},
                "cache": cache,
            }
        )

    for cache, where in (
        ({"dir": str(tmp_path / "local"), "url": f"sqlite:///{team}"}, team),
        ({"dir": str(tmp_path / "local")}, tmp_path / "local" / "responses.sqlite"),
    ):
        ctx = step_context(study(cache), "simulated_t2i", "fact_or_fair", Layout(tmp_path))
        with pickle.loads(pickle.dumps(ctx.open_cache))() as opened:
            assert opened.path == where
            opened.put_readings([("k", NAME, {"status": "no_face"})])
        with ResponseCache(where) as store:
            assert store.reading_counts() == {NAME: 1}


def test_missing_readings_fan_out_to_local_workers_and_are_cached_as_they_arrive(
    tmp_path: Path, instrument: FaceDemographics
) -> None:
    """The missing readings go through the active readings executor (here two local worker
    processes, each building its own instrument from the spec): the same readings as this
    process measures, every one stored in the cache, and a rerun measures nothing."""
    from types import SimpleNamespace

    from genfair.instruments.fanout import readings_executor

    images = _photos(tmp_path / "images", variants=2)
    cache = tmp_path / "cache" / "responses.sqlite"
    here = read_images(instrument, NAME, images, None)
    generation = SimpleNamespace(executor="local", instrument_workers=2, scheduler=None)
    mine = FaceDemographics()
    measured_here = _counting(mine)
    with readings_executor(generation):
        there = read_images(mine, NAME, images, lambda: ResponseCache(cache))
    assert there == here
    assert measured_here == []  # the workers measured them all
    with ResponseCache(cache) as store:
        assert store.reading_counts() == {NAME: len({sha for sha, _ in images})}
    again = FaceDemographics()
    seen = _counting(again)
    assert read_images(again, NAME, images, lambda: ResponseCache(cache)) == here
    assert seen == []
