"""Where an instrument's readings run: this process, local worker processes, or the Dask
cluster that sends the study's model calls (``generation.executor``).

Whoever reads images asks :func:`measure_each` for the readings it does not have (the
readings cache hands it the missing ones); which executor runs them is set for a block by
:func:`readings_executor` (the ``label`` step opens one), as
:func:`genfair.models.dask_executor.calls_executor` does for model calls, so no methodology
knows where its readings run. Each executor:

* builds the instrument from its picklable spec (``spec.build()``) once per process (this
  one, a worker process, a Dask worker) and keeps it loaded for every later reading: an
  instrument's networks load once, not once per image;
* hands each reading to ``on_result(i, reading)`` in the calling process as it arrives,
  placed by its index, so the caller stores it at once (a killed stage keeps it) and the
  outputs are those of one process, whatever order the readings came back in;
* reports a reading that failed: every other reading is still delivered, then
  :class:`ReadingFailed` names how many failed and the first path with its error.

Local workers are processes (``generation.instrument_workers`` > 1): an instrument's own
threads (OpenCV's parallel detection) use the cores for part of a reading only, processes for
all of it (measured: docs/benchmarks.md, "Readings: processes, threads and Dask"). Each
worker process gets its share of the cores for the libraries' thread pools, so N workers do
not run N times the cores' threads.

Nothing here imports Dask, an instrument or a process pool until there is something to
measure: a label stage with nothing to read starts as light as before.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import pickle
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

log = logging.getLogger(__name__)

#: called in the calling process once per path that was read: its index and its reading
OnReading = Callable[[int, dict[str, Any]], None]
#: a task's readings: per path, ``(True, reading)`` or ``(False, "<error in one line>")``
Outcome = tuple[bool, Any]

#: paths per task at most: a 1024-px image costs about 0.3 CPU-s to read, so a task of 8 is a
#: few seconds (a lost worker loses little) and its overhead (ms) is negligible
MAX_SHARD = 8
#: tasks per worker, so a fast worker takes more of them and the tail is cut finer
SHARDS_PER_WORKER = 4
#: the thread-pool variables a worker process sets to its share of the cores before its
#: instrument loads (OpenCV's parallel_for, OpenMP, BLAS)
THREAD_VARIABLES = (
    "OPENCV_FOR_THREADS_NUM",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)


class Instrument(Protocol):
    def read(self, path: str) -> dict[str, Any]:
        """The reading of the image (or text) at ``path``: a JSON-able dict."""
        ...


class Spec(Protocol):
    """What rebuilds an instrument in another process: picklable, small (e.g. the readings
    cache's instrument spec, its name and config)."""

    def build(self) -> Instrument: ...


class ReadingFailed(RuntimeError):
    """Some readings raised; every other reading was delivered."""


class ReadingsExecutor(Protocol):
    def measure(self, spec: Spec, paths: Sequence[str], on_result: OnReading) -> None:
        """Read every path of ``paths`` with ``spec``'s instrument; ``on_result`` per reading."""
        ...

    def close(self) -> None: ...


_active: ContextVar[ReadingsExecutor | None] = ContextVar("genfair_readings", default=None)


def measure_each(spec: Spec, paths: Sequence[str], on_result: OnReading) -> None:
    """``spec.build().read(path)`` for each of ``paths``, where the active executor runs
    (this process when none is: :func:`readings_executor`); ``on_result(i, reading)`` in this
    process as each arrives. Raises :class:`ReadingFailed` after delivering the others when
    some reading raised."""
    if not paths:
        return
    (_active.get() or InProcess()).measure(spec, paths, on_result)


@contextmanager
def executing_readings(executor: ReadingsExecutor | None) -> Iterator[None]:
    """Run every reading of the block on ``executor`` (``None``: in this process)."""
    token = _active.set(executor)
    try:
        yield
    finally:
        _active.reset(token)


@contextmanager
def readings_executor(generation: Any) -> Iterator[None]:
    """Run the block's readings where ``generation`` (the study's
    :class:`~genfair.frame.GenerationConfig`) says: on the Dask cluster of
    ``generation.scheduler`` when ``executor`` is ``dask``, else on
    ``instrument_workers`` local processes (1: in this process). Workers start (and Dask is
    imported) at the first reading, not before."""
    executor: ReadingsExecutor | None = None
    if generation.executor == "dask":
        executor = DaskReadings(generation.scheduler)
    elif generation.instrument_workers > 1:
        executor = ProcessReadings(generation.instrument_workers)
    try:
        with executing_readings(executor):
            yield
    finally:  # its workers stop with the block
        if executor is not None:
            executor.close()


# --- the executors ----------------------------------------------------------------------------


class InProcess:
    """Every reading in this process, one after another (the instrument's own threads, if it
    has any, are its only parallelism)."""

    def measure(self, spec: Spec, paths: Sequence[str], on_result: OnReading) -> None:
        # one path at a time, each reading delivered before the next is read
        _deliver(((i, _read_shard(spec, [path])) for i, path in enumerate(paths)), paths, on_result)

    def close(self) -> None:
        pass


class ProcessReadings:
    """Readings on ``workers`` local processes, kept for every ``measure`` of the block. They
    fork from a fresh server process (``forkserver``; ``spawn`` where there is none) that
    imported this module alone, so no thread pool of this process is copied half-locked. As
    for every start method but ``fork``, each worker imports the caller's main module: a
    script needs the ``if __name__ == "__main__":`` guard (the stage scripts have it)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool: Any = None
        self._starting = threading.Lock()  # runs filled side by side share one pool

    def _started(self) -> Any:
        with self._starting:
            if self._pool is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                share = max(1, (os.cpu_count() or 1) // self.workers)
                methods = multiprocessing.get_all_start_methods()
                context = multiprocessing.get_context(
                    "forkserver" if "forkserver" in methods else "spawn"
                )
                if context.get_start_method() == "forkserver":  # the server imports this alone
                    context.set_forkserver_preload([__name__])
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=context,
                    initializer=_worker_threads,
                    initargs=(share,),
                )
            return self._pool

    def measure(self, spec: Spec, paths: Sequence[str], on_result: OnReading) -> None:
        from concurrent.futures import as_completed

        pool = self._started()
        spans = _spans(len(paths), self.workers)
        placed = {pool.submit(_read_shard, spec, list(paths[s : s + n])): s for s, n in spans}
        try:
            _deliver(_completed(as_completed(placed), placed, spans), paths, on_result)
        finally:
            if getattr(pool, "_broken", False):  # a worker died: the next call starts afresh
                self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


class DaskReadings:
    """Readings on the Dask cluster at ``scheduler`` (``None``: ``DASK_SCHEDULER_ADDRESS``),
    connected at the first reading; each worker rebuilds the instrument from its spec once."""

    def __init__(self, scheduler: str | None):
        self.scheduler = scheduler
        self._client: Any = None
        self._connecting = threading.Lock()  # runs filled side by side share one client

    def measure(self, spec: Spec, paths: Sequence[str], on_result: OnReading) -> None:
        from distributed import as_completed

        with self._connecting:
            if self._client is None:  # Dask and the task module load only when there is work
                from genfair.models.dask_executor import connect

                self._client = connect(self.scheduler)
            client = self._client
        info = client.sync(client.scheduler.identity, n_workers=-1)
        threads = max(1, sum(w.get("nthreads", 1) for w in info["workers"].values()))
        spans = _spans(len(paths), threads)
        # a worker runs in a folder of its own: a path relative to this process's (a stage's
        # data/responses/...) reaches it whole
        futures = client.map(
            _read_shard,
            [spec] * len(spans),
            [[os.path.abspath(p) for p in paths[s : s + n]] for s, n in spans],
            key=[f"genfair-readings-{uuid.uuid4().hex}" for _ in spans],
            pure=False,
        )
        placed = {f: s for f, (s, _) in zip(futures, spans, strict=True)}
        try:
            with client.as_current():
                _deliver(_completed(as_completed(futures), placed, spans), paths, on_result)
        finally:
            client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


# --- shared by the executors ------------------------------------------------------------------


def _spans(count: int, workers: int) -> list[tuple[int, int]]:
    """``(first path, paths)`` of each task: about ``count`` over the workers and
    :data:`SHARDS_PER_WORKER`, at most :data:`MAX_SHARD`."""
    size = max(1, min(MAX_SHARD, math.ceil(count / (workers * SHARDS_PER_WORKER))))
    return [(start, min(size, count - start)) for start in range(0, count, size)]


def _completed(
    done: Iterable[Any], placed: dict[Any, int], spans: list[tuple[int, int]]
) -> Iterator[tuple[int, list[Outcome]]]:
    """Each finished task's first index and outcomes; a task that failed as a whole (its
    worker died) makes an error of each of its paths."""
    count = dict(spans)
    for future in done:
        start = placed[future]
        try:
            outcomes = future.result()
        except Exception as exc:  # noqa: BLE001 - a lost task is data: its readings failed
            reason = f"task failed: {type(exc).__name__}: {_first_line(exc)}"
            outcomes = [(False, reason)] * count[start]
        yield start, outcomes


def _deliver(
    finished: Iterable[tuple[int, list[Outcome]]], paths: Sequence[str], on_result: OnReading
) -> None:
    """Hand each reading to ``on_result`` as its task finishes; then, if any failed, raise
    :class:`ReadingFailed` naming the first (by index)."""
    failed: dict[int, str] = {}
    for start, outcomes in finished:
        for offset, (ok, value) in enumerate(outcomes):
            if ok:
                on_result(start + offset, value)
            else:
                failed[start + offset] = value
                log.warning("%s: not read: %s", paths[start + offset], value)
    if failed:
        first = min(failed)
        raise ReadingFailed(
            f"{len(failed)} of {len(paths)} readings failed; the first, {paths[first]}: "
            f"{failed[first]} (the other readings were delivered)"
        )


# --- worker-side state: loaded instruments, per process ---------------------------------------

_lock = threading.Lock()
_instruments: dict[str, Instrument] = {}


def worker_instrument(spec: Spec) -> Instrument:
    """``spec``'s instrument, built once per process and kept for every later reading (keyed
    by the pickled spec: its name and config)."""
    key = hashlib.sha256(pickle.dumps(spec)).hexdigest()[:16]
    with _lock:  # a Dask worker with several threads builds it once
        if key not in _instruments:
            _instruments[key] = spec.build()
        return _instruments[key]


def adopt(spec: Spec, instrument: Instrument) -> None:
    """Use ``instrument`` for ``spec`` in this process from now on (the caller's own, already
    loaded: its networks are not loaded a second time)."""
    key = hashlib.sha256(pickle.dumps(spec)).hexdigest()[:16]
    with _lock:
        _instruments[key] = instrument


def _read_shard(spec: Spec, paths: list[str]) -> list[Outcome]:
    """In a worker (or this process): each path's reading, or its error in one line."""
    instrument = worker_instrument(spec)
    outcomes: list[Outcome] = []
    for path in paths:
        try:
            outcomes.append((True, instrument.read(path)))
        except Exception as exc:  # noqa: BLE001 - reported by the caller, with the path
            outcomes.append((False, f"{type(exc).__name__}: {_first_line(exc)}"))
    return outcomes


def _worker_threads(share: int) -> None:
    """A worker process's thread pools get ``share`` cores (set before any library loads)."""
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(share))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
