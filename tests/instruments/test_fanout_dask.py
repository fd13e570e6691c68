"""Readings on a real local Dask cluster (2 one-thread workers on 127.0.0.1): the readings of
one process, the instrument built once per worker, a failed reading reported."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from genfair.instruments.fanout import DaskReadings, ReadingFailed, executing_readings, measure_each
from tests.support.dask_cluster import Cluster, dask_cluster  # noqa: F401 - a fixture, by name
from tests.support.readings import (
    FaceSpec,
    ServiceSpec,
    builds_per_process,
    full_size_photos,
    readings_of,
    text_files,
)

pytestmark = pytest.mark.dask


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return full_size_photos(tmp_path_factory.mktemp("photos"), 6)


def test_readings_on_a_real_dask_cluster_are_those_of_one_process(
    photos: list[str],
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
) -> None:
    one, _ = readings_of(FaceSpec(), photos)
    builds = tmp_path / "builds"
    builds.mkdir()
    executor = DaskReadings(dask_cluster.address)
    try:
        two, _ = readings_of(FaceSpec(str(builds)), photos, executor)
        again, _ = readings_of(FaceSpec(str(builds)), photos, executor)
    finally:
        executor.close()
    assert two == one and again == one
    counts = builds_per_process(builds)
    assert len(counts) <= 2 and set(counts.values()) == {1}  # once per worker, both calls


def test_a_failed_reading_on_the_cluster_is_reported(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
) -> None:
    paths = text_files(tmp_path, 6, {4: "fail"})
    got: dict[int, dict[str, Any]] = {}
    with pytest.raises(ReadingFailed, match="1 of 6 readings failed; the first, .*fail_0004.txt"):
        with closing(DaskReadings(dask_cluster.address)) as executor, executing_readings(executor):
            measure_each(ServiceSpec(), paths, got.__setitem__)
    assert sorted(got) == [0, 1, 2, 3, 5]


def test_paths_relative_to_the_caller_are_read_on_the_cluster(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
) -> None:
    """A label stage names its images relative to the study (``data/responses/...``); a
    worker runs in a folder of its own, so it must get them whole (found by the rehearsal)."""
    paths = text_files(tmp_path / "data", 4)
    monkeypatch.chdir(tmp_path)
    relative = [str(Path(p).relative_to(tmp_path)) for p in paths]
    one, _ = readings_of(ServiceSpec(), relative)
    with closing(DaskReadings(dask_cluster.address)) as executor:
        two, _ = readings_of(ServiceSpec(), relative, executor)
    assert two == one
