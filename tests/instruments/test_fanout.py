"""Readings fan out like model calls (issue 43, point 2): in this process, on local worker
processes and on a real local Dask cluster, every reading is the one a single process makes,
placed by its index; each worker builds the instrument once; a reading that fails is reported
after every other reading was delivered."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from genfair.frame import GenerationConfig
from genfair.instruments.fanout import (
    DaskReadings,
    ProcessReadings,
    ReadingFailed,
    executing_readings,
    measure_each,
    readings_executor,
)
from tests.support.readings import (
    FaceSpec,
    ServiceSpec,
    builds_per_process,
    full_size_photos,
    readings_of,
    text_files,
)


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Six different 1024-px photos (portraits, composites, mirrored)."""
    return full_size_photos(tmp_path_factory.mktemp("photos"), 6)


def test_real_instrument_readings_on_two_local_workers_are_those_of_one_process(
    photos: list[str], tmp_path: Path
) -> None:
    one, _ = readings_of(FaceSpec(), photos)
    builds = tmp_path / "builds"
    builds.mkdir()
    with closing(ProcessReadings(2)) as executor:
        two, _ = readings_of(FaceSpec(str(builds)), photos, executor)
    assert two == one
    rows = json.loads(one)
    assert [r["n_faces"] >= 1 for r in rows].count(True) >= 4  # the portraits are found
    # each worker process built the instrument once, however many tasks it ran
    assert set(builds_per_process(builds).values()) == {1}
    assert len(builds_per_process(builds)) <= 2


def test_a_worker_keeps_its_instrument_across_calls_of_one_block(tmp_path: Path) -> None:
    files = text_files(tmp_path / "files", 12)
    builds = tmp_path / "builds"
    builds.mkdir()
    spec = ServiceSpec(0.0, str(builds))
    with closing(ProcessReadings(2)) as executor, executing_readings(executor):
        for _ in range(3):
            measure_each(spec, files, lambda i, r: None)
    counts = builds_per_process(builds)
    assert len(counts) <= 2 and set(counts.values()) == {1}


def test_runs_side_by_side_share_one_pool(tmp_path: Path) -> None:
    """``genfair fill`` runs several runs in threads, in copies of one context."""
    from concurrent.futures import ThreadPoolExecutor
    from contextvars import copy_context

    files = text_files(tmp_path / "files", 16)
    builds = tmp_path / "builds"
    builds.mkdir()
    spec = ServiceSpec(0.01, str(builds))

    def run(paths: list[str]) -> list[int]:
        got: dict[int, dict[str, Any]] = {}
        measure_each(spec, paths, got.__setitem__)
        return sorted(got)

    with closing(ProcessReadings(2)) as executor, executing_readings(executor):
        with ThreadPoolExecutor(4) as threads:
            done = [threads.submit(copy_context().run, run, files[n::4]) for n in range(4)]
            assert [f.result() for f in done] == [[0, 1, 2, 3]] * 4
    counts = builds_per_process(builds)
    assert len(counts) <= 2 and set(counts.values()) == {1}


def test_a_failed_reading_is_reported_and_every_other_one_delivered(tmp_path: Path) -> None:
    paths = text_files(tmp_path, 10, {3: "fail", 7: "fail"})
    for executor in (None, ProcessReadings(2)):
        got: dict[int, dict[str, Any]] = {}
        with pytest.raises(ReadingFailed) as failed, executing_readings(executor):
            measure_each(ServiceSpec(), paths, got.__setitem__)
        if executor is not None:
            executor.close()
        assert sorted(got) == [n for n in range(10) if n not in (3, 7)]
        message = str(failed.value)
        assert message.startswith("2 of 10 readings failed; the first, ")
        assert "fail_0003.txt: ValueError: cannot read fail_0003.txt" in message


def test_a_worker_that_dies_fails_its_readings_and_the_next_call_starts_afresh(
    tmp_path: Path,
) -> None:
    paths = text_files(tmp_path, 8, {5: "crash"})
    got: dict[int, dict[str, Any]] = {}
    with closing(ProcessReadings(2)) as executor, executing_readings(executor):
        with pytest.raises(ReadingFailed, match="readings failed; the first, .*BrokenProcessPool"):
            measure_each(ServiceSpec(), paths, got.__setitem__)
        assert 5 not in got
        again: dict[int, dict[str, Any]] = {}
        measure_each(ServiceSpec(), paths[:5], again.__setitem__)  # a new pool
        assert sorted(again) == [0, 1, 2, 3, 4]


def test_nothing_to_read_starts_no_worker() -> None:
    executor = ProcessReadings(2)
    with executing_readings(executor):
        measure_each(ServiceSpec(), [], lambda i, r: None)
    assert executor._pool is None


def test_the_study_settings_choose_the_executor() -> None:
    seen: list[Any] = []

    class Spy:
        def build(self) -> Any:
            raise AssertionError("not built: nothing to read")

    from genfair.instruments import fanout

    for generation, kind in (
        (GenerationConfig(), type(None)),
        (GenerationConfig(instrument_workers=2), ProcessReadings),
        (GenerationConfig(executor="dask", scheduler="tcp://127.0.0.1:1"), DaskReadings),
    ):
        with readings_executor(generation):
            seen.append(fanout._active.get())
            measure_each(Spy(), [], lambda i, r: None)  # nothing to read: no connection
        assert isinstance(seen[-1], kind)


def test_the_label_step_reads_on_the_executor_the_study_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Whatever methodology labels, its readings go where ``generation`` says."""
    import pandas as pd

    from genfair import frame as params_module
    from genfair.instruments import fanout
    from genfair.study import steps
    from genfair.study.layout import Layout

    seen: list[Any] = []

    class Method:
        def label(self, probes: Any, responses: Any, config: Any, ctx: Any) -> pd.DataFrame:
            seen.append(fanout._active.get())
            return pd.DataFrame({"status": ["ok"]})

    monkeypatch.setattr(steps, "_check_run", lambda *a: None)
    monkeypatch.setattr(steps, "configured", lambda *a: (Method(), None))
    monkeypatch.setattr(steps, "read_parquet", lambda path: pd.DataFrame())
    monkeypatch.setattr(steps, "step_context", lambda *a: None)
    monkeypatch.setattr(steps, "write_parquet", lambda frame, path: path)

    class Study:
        generation = params_module.GenerationConfig(instrument_workers=2)

    steps.label(Study(), "m", "x", Layout(tmp_path))  # type: ignore[arg-type]
    assert isinstance(seen[-1], ProcessReadings) and seen[-1].workers == 2
    assert seen[-1]._pool is None  # nothing was read: no worker started
