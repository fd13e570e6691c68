"""Run a stage's uncached calls on a Dask distributed cluster (``generation.executor: dask``).

The runner still decides which calls to send (cache first, claims, re-asks) and keeps its
claims alive while the cluster works; this executor splits the calls it is handed into
shards and submits one task per shard. A task, on a worker:

1. takes the model from the worker's model cache (:func:`worker_model`, keyed by the model
   config: weights load once per worker and serve every later task), wrapped to write
   images into the image store for a text-to-image model;
2. skips the calls an earlier try of the same task already stored (a worker that died
   mid-shard), asks the model the rest and stores each answer in the shared response cache
   the moment it exists (:func:`genfair.models.executor.store_completion`);
3. returns the completions (without image bytes) to the client, whose progress line counts
   the calls answered anywhere on the cluster.

Where a task runs: a model's ``worker_resources`` (``{GPU: 1}``) go to Dask as task
resources, so it runs only on workers started with them (``dask worker --resources GPU=1``);
eight such workers hold eight replicas. HTTP models (a config with ``concurrency``) run as
tasks that are clients of the endpoint, and their ``concurrency`` is a cluster-wide bound:
each in-flight request holds a lease of a :class:`distributed.Semaphore` named after the
endpoint and model, so ten workers never send ten times a provider's limit; so does a
``rate_limit`` (:class:`ClusterWindow`).

A task whose workers all died (``KilledWorker``) or that raised is recorded as ``error``
completions carrying the reason in one line (the lost worker's address), so the stage
fails with the usual incomplete-generation error and a rerun asks only those calls. The
scheduler reruns a task lost with one worker on another by itself.

Everything a worker needs travels with the task (the model config, the image store, the
cache opener); API keys do not: a worker reads a model's ``api_key_env`` from its own
environment, and the response cache must be one the workers reach (the same file on one
machine or a shared file system, or the team database).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import queue
import threading
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from genfair.errors import ConfigError
from genfair.models import build_backend
from genfair.models.base import Completion, LLMBackend, Request, stable_hash
from genfair.models.cache import ResponseCache
from genfair.models.executor import FollowUps, OnResult, checked, executing
from genfair.models.rate_limit import endpoint_name, parse_rate, rate_name
from genfair.models.t2i import stored

log = logging.getLogger(__name__)

#: how long to wait for the scheduler to answer, and for a first worker to join it
CONNECT_TIMEOUT_S = 30.0
#: a local model's calls per task at most: small enough to spread a stage over the workers
#: and to lose little when one dies, large enough that a task's overhead (ms) is negligible
MAX_SHARD = 64
#: a local model's tasks per worker thread, so a fast worker takes more of them
SHARDS_PER_THREAD = 4

INSTALL_HINT = "pip install -e '.[dask]' (Dask distributed is an optional extra)"


def connect(address: str | None) -> Any:
    """A :class:`distributed.Client` of the scheduler at ``address`` (``None``:
    ``DASK_SCHEDULER_ADDRESS``), once at least one worker has joined it."""
    address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if not address:
        raise ConfigError(
            "params.yaml: generation.executor: dask, but no scheduler: set DASK_SCHEDULER_ADDRESS="
            "tcp://HOST:8786 or generation.scheduler"
        )
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(
            f"params.yaml: generation.executor: dask needs Dask distributed: {INSTALL_HINT}"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except OSError as exc:
        raise ConfigError(
            f"cannot reach the Dask scheduler at {address} (generation.scheduler or "
            f"DASK_SCHEDULER_ADDRESS): {_first_line(exc)}"
        ) from None
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
    except TimeoutError:
        client.close()
        raise ConfigError(
            f"no Dask worker joined the scheduler at {address} within {CONNECT_TIMEOUT_S:g} s: "
            f"start workers (dask worker {address})"
        ) from None
    # a scheduler imports this module when it unpickles the first graph naming run_shard
    # (1.4-2.2 s measured on the loaded 2-core machine, the first shards waiting for it):
    # started now, it overlaps the stage's own preparation (probes, keys, claims)
    threading.Thread(
        target=_import_on_scheduler, args=(client,), name="genfair-scheduler-import", daemon=True
    ).start()
    return client


def _import_on_scheduler(client: Any) -> None:
    try:
        client.run_on_scheduler(_imported)
    except Exception as exc:  # noqa: BLE001 - a head start only: the first graph imports it anyway
        log.debug("the scheduler did not import the task module ahead: %s", exc)


def _imported() -> None:
    """Runs on the scheduler: unpickling it imports this module (and so ``run_shard``)."""


class DaskExecutor:
    """Sends a stage's calls to the cluster of ``client``; workers open the response cache
    with ``open_cache`` (a picklable callable, e.g. ``partial(ResponseCache, path)``)."""

    def __init__(self, client: Any, open_cache: Callable[[], ResponseCache]):
        self.client = client
        self.open_cache = open_cache
        self._declined: set[str] = set()

    def concurrent(self, backend: LLMBackend) -> bool:
        """A backend with a model config runs on the workers (else in this process)."""
        return getattr(backend, "model_config", None) is not None

    def send(
        self,
        backend: LLMBackend,
        requests: Sequence[Request],
        keys: Sequence[str],
        model_key: str,
        on_result: OnResult,
        follow: FollowUps,
    ) -> bool:
        if not self.concurrent(backend):  # built in code: nothing to rebuild it from on a worker
            if model_key not in self._declined:
                self._declined.add(model_key)
                log.info(
                    "%s has no model config to rebuild it on "
                    "a worker: its calls run in this process",
                    model_key,
                )
            return False
        config = backend.model_config  # type: ignore[attr-defined]  # concurrent() checked it
        resources = dict(getattr(config, "worker_resources", {}) or {})
        # asked of the scheduler, not scheduler_info(): the client's own refresh (every 2 s)
        # replaces that shared copy with one that lists no workers, so a send beside it saw none
        info = self.client.sync(self.client.scheduler.identity, n_workers=-1)
        workers = [
            w
            for w in info["workers"].values()
            if all(w.get("resources", {}).get(k, 0) >= v for k, v in resources.items())
        ]
        if not workers:  # its tasks would wait forever
            raise ConfigError(
                f"no Dask worker offers the resources {resources} that {model_key} needs "
                f"(its worker_resources): start workers with --resources "
                f"{','.join(f'{k}={v:g}' for k, v in resources.items())}"
            )
        threads = max(1, sum(w.get("nthreads", 1) for w in workers))
        limit = _http_limit(config)
        # HTTP: a task per worker thread, holding up to its share of the model's concurrency
        share = math.ceil(limit / threads) if limit else 1
        job = _Job(config, getattr(backend, "store", None), self.open_cache, model_key, share)
        shards = _Shards(self.client, job, list(requests), list(keys), threads, limit, resources)
        from distributed import as_completed

        # each answer is recorded (and counted) as its shard comes back, from whichever worker;
        # the follow-ups it made go out at once, in shards sized by the calls left and workers
        with self.client.as_current():  # where as_completed finds its client
            # not as_completed(with_results=True): a result lost with its worker before the
            # fetch, then failing, would never come out of it (a hang); result() raises it
            running = as_completed()
            shards.submit(running, busy=0)
            try:
                for future in running:
                    start, count = shards.placed.pop(future)
                    try:
                        done = [Completion.from_dict(d) for d in future.result()]
                    except Exception as exc:  # noqa: BLE001 - a lost task is data: its calls are errors
                        reason = f"Dask task failed: {type(exc).__name__}: {_first_line(exc)}"
                        log.warning("%d calls of %s not answered: %s", count, model_key, reason)
                        done = [Completion(status="error", error=reason)] * count
                    for offset, completion in enumerate(done):
                        on_result(start + offset, completion)
                    shards.follow(follow())
                    shards.submit(running, len(shards.placed))
            finally:
                self.client.cancel([f for f in shards.placed if not f.done()])
        return True


@contextmanager
def calls_executor(generation: Any, open_cache: Callable[[], ResponseCache]) -> Iterator[None]:
    """Run the block's calls where ``generation`` (the study's
    :class:`~genfair.frame.GenerationConfig`) says: in this process, or on the Dask cluster of
    ``generation.scheduler`` (whose workers open the response cache with ``open_cache``)."""
    if generation.executor == "local":
        yield
        return
    client = connect(generation.scheduler)
    try:
        with executing(DaskExecutor(client, open_cache)):
            yield
    finally:
        client.close()


class _Shards:
    """The shards of one ``send``: which requests each task carries, and the follow-ups
    waiting for a shard. A shard is a whole number of the model's batches (a replica serves a
    batch at a time: a shard of 3 costs what one of 8 does) and about the calls left divided
    over the worker threads and :data:`SHARDS_PER_THREAD`, so the tail of a stage is cut
    finer and keeps every worker busy; follow-ups wait until they fill a shard or a worker
    thread would otherwise idle."""

    def __init__(
        self,
        client: Any,
        job: _Job,
        requests: list[Request],
        keys: list[str],
        threads: int,
        limit: int | None,
        resources: dict[str, float],
    ):
        self.client, self.job, self.requests, self.keys = client, job, requests, keys
        self.threads, self.limit, self.resources = threads, limit, resources
        self.batch = _batch_size(job.config)
        self.placed: dict[Any, tuple[int, int]] = {}  # future -> (first request, count)
        self.sent = 0  # requests[:sent] are in shards

    def follow(self, more: Sequence[tuple[Request, str]]) -> None:
        self.requests += [request for request, _ in more]
        self.keys += [key for _, key in more]

    def size(self, left: int) -> int:
        if self.limit:  # HTTP: one task per worker thread, each holding its share of the bound
            return max(self.job.share, math.ceil(left / self.threads))
        size = min(MAX_SHARD, math.ceil(left / (self.threads * SHARDS_PER_THREAD)))
        return max(1, math.ceil(size / self.batch)) * self.batch

    def submit(self, running: Any, busy: int) -> None:
        """Put waiting requests in shards: all of them when fewer shards than worker threads
        are at work (``busy``), else only the shards they fill. After the first shards, a
        local model's waiting requests (its re-asks, the stream's last calls) go out as soon
        as they fill one of its batches, ahead of the shards already queued (Dask priority):
        each is the critical path of its call, and a stage that waits for its re-asks (IRIS's
        IFS-Gen before BIS-Gen) would otherwise wait for every other run's queued shards."""
        left = len(self.requests) - self.sent
        size = self.size(left + sum(count for _, count in self.placed.values()))
        later = bool(self.sent)
        spans: list[tuple[int, int]] = []
        while left and (left >= size or busy < self.threads or (later and left >= self.batch)):
            count = min(size, left)
            if busy >= self.threads:  # whole batches only; the rest waits for more
                count -= count % self.batch
            if self.limit and later and count < size and busy >= self.threads:
                break  # HTTP: a shard costs its leases' round trips, so only full ones
            spans.append((self.sent, count))
            self.sent += count
            left, busy = left - count, busy + 1
        if not spans:
            return
        # one message to the scheduler for all of them (a submit each cost it one graph update)
        futures = self.client.map(
            run_shard,
            [self.job] * len(spans),
            [self.requests[s : s + n] for s, n in spans],
            [self.keys[s : s + n] for s, n in spans],
            key=[f"genfair-shard-{uuid.uuid4().hex}" for _ in spans],
            resources=self.resources or None,
            priority=1 if later else 0,
            pure=False,
        )
        self.placed.update(zip(futures, spans, strict=True))
        running.update(futures)


def _batch_size(config: Any) -> int:
    """How many requests the model answers at once (a local model's ``batch_size``, a
    simulated replica's): shards are whole batches of it."""
    replica = getattr(config, "replica", None)
    size = getattr(replica, "batch_size", None) or getattr(config, "batch_size", None)
    return size if isinstance(size, int) and size > 0 else 1


class _Job:
    """What every shard of one ``send`` shares (pickled once per task)."""

    def __init__(
        self,
        config: Any,
        store: Any,
        open_cache: Callable[[], ResponseCache],
        model_key: str,
        share: int,
    ):
        self.config, self.store, self.open_cache = config, store, open_cache
        self.model_key, self.share = model_key, share


def run_shard(job: _Job, requests: list[Request], keys: list[str]) -> list[dict[str, Any]]:
    """On a worker: answer one shard through the shared cache; the completions as dicts."""
    cache = _worker_cache(job.open_cache)
    with _lock:
        tasks[job.model_key] += 1
    results: dict[int, Completion] = {}
    hits = cache.get_many(keys)  # stored by an earlier try of this task (its worker died)
    results.update((n, hits[k]) for n, k in enumerate(keys) if k in hits)
    todo = [n for n in range(len(keys)) if n not in results]
    if todo:
        with _leases(job) as concurrency:
            config = (
                job.config
                if concurrency is None
                else job.config.model_copy(update={"concurrency": concurrency})
            )
            backend = worker_model(config)
            if getattr(job.config, "rate_limit", None):
                backend.window = ClusterWindow(job.config)
            position = {id(requests[n]): n for n in todo}

            def store(answers: list[tuple[Request, Completion]]) -> None:
                """The answers that arrived since the last write, in one transaction."""
                entries = []
                for request, completion in answers:
                    n = position[id(request)]
                    if job.store is not None:  # a t2i model's image first, then its answer
                        completion = stored(job.store, request, completion)
                    results[n] = checked(completion, job.model_key)
                    entries.append((keys[n], job.model_key, results[n]))
                cache.put_many(entries)

            # answers are written behind the model, so its next batch does not wait for them
            with _Writer(store) as writer:
                backend.complete([requests[n] for n in todo], writer.add)
    missing = Completion(status="error", error="backend returned no completion")
    return [results.get(n, missing).to_dict() for n in range(len(keys))]


class _Writer:
    """A thread that stores a task's answers behind the model: each write takes every answer
    that arrived since the last one (a batch's answers: one commit, not one each). A write
    that failed fails the task (its calls are errors) when the block ends."""

    def __init__(self, store: Callable[[list[tuple[Request, Completion]]], None]):
        self.store = store
        self.queue: queue.SimpleQueue[tuple[Request, Completion] | None] = queue.SimpleQueue()
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="genfair-store")

    def add(self, request: Request, completion: Completion) -> None:
        self.queue.put((request, completion))

    def _run(self) -> None:
        end = False
        while not end:
            answers, item = [], self.queue.get()
            while item is not None:  # everything queued now, up to the end marker
                answers.append(item)
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
            end = item is None
            if answers:
                self.store(answers)

    def __enter__(self) -> _Writer:
        self.done = self.pool.submit(self._run)
        return self

    def __exit__(self, *exc: object) -> None:
        self.queue.put(None)
        try:
            self.done.result()
        finally:
            self.pool.shutdown()


# --- worker-side state: loaded models and open caches, per worker process ---------------------

_lock = threading.Lock()
_models: dict[str, LLMBackend] = {}
_caches: dict[str, ResponseCache] = {}
#: how many times each model (by config hash) was loaded in this process, and how many tasks ran
loads: Counter[str] = Counter()
tasks: Counter[str] = Counter()


def worker_model(config: Any) -> LLMBackend:
    """The backend of ``config``, built once per worker process and kept for every later task
    (keyed by the whole config: device and threads decide how it is loaded)."""
    name = config_hash(config)
    with _lock:  # a worker with several threads loads a model once
        if name not in _models:
            log.info("loading %s on this worker", getattr(config, "model_id", name))
            _models[name] = build_backend(config)
            loads[name] += 1
        return _models[name]


def config_hash(config: Any) -> str:
    return stable_hash(config.model_dump(mode="json"), 16)


def worker_stats() -> dict[str, Any]:
    """This worker's model loads (by config hash) and tasks run: ``client.run(worker_stats)``."""
    with _lock:
        return {"loads": dict(loads), "tasks": sum(tasks.values())}


def _worker_cache(open_cache: Callable[[], ResponseCache]) -> ResponseCache:
    name = repr(open_cache)
    with _lock:
        if name not in _caches:
            _caches[name] = open_cache()
        return _caches[name]


def _http_limit(config: Any) -> int | None:
    """The cluster-wide bound of an HTTP model (its ``concurrency``); ``None`` for the others."""
    limit = getattr(config, "concurrency", None)
    return limit if isinstance(limit, int) and getattr(config, "base_url", None) else None


@contextmanager
def _leases(job: _Job) -> Iterator[int | None]:
    """For an HTTP model, leases of its cluster-wide semaphore: one (waiting for it), then up
    to the task's share without waiting; yields how many requests may be in flight. ``None``
    (no bound) for the other models.

    A lease is one round trip to the scheduler; taken one after another, a share of 64 cost
    about 0.4 s to take and as much to give back (measured on a loaded 2-core machine), more
    than the 50 ms calls they bound. So the extra leases are asked for, and all of them
    given back, at once on the worker's event loop (0.15-0.33 s for both, measured)."""
    limit = _http_limit(job.config)
    if limit is None:
        yield None
        return
    from distributed import Semaphore

    semaphore = Semaphore(max_leases=limit, name=endpoint_name("lease", job.config, limit))

    async def take() -> int:  # on the worker's loop, where acquire() returns a coroutine
        await semaphore.acquire()
        more = await asyncio.gather(*(semaphore.acquire(timeout=0) for _ in range(job.share - 1)))
        return 1 + sum(more)

    async def give(count: int) -> None:
        await asyncio.gather(*(semaphore.release() for _ in range(count)))

    held = semaphore.sync(take)
    try:
        yield held
    finally:
        semaphore.sync(give, held)


class ClusterWindow:
    """An HTTP model's ``rate_limit`` across the cluster: a :class:`distributed.Semaphore` of
    N leases (named by endpoint, model and limit). A request takes one before it starts and
    gives it back a window (1 s or 60 s) after its answer arrived, so the provider never sees
    more than N requests arrive within a window, whichever workers sent them and however late
    a loaded worker's request reached it. The leases live on this worker's event loop (the
    backend runs its own loop in the task's thread); a worker that dies loses its leases to the
    scheduler's lease timeout."""

    def __init__(self, config: Any):
        from distributed import Semaphore, get_worker

        item = parse_rate(config.rate_limit)
        self.window_s = float(item.get_expiry())
        self.semaphore = Semaphore(max_leases=item.amount, name=rate_name(config))
        self.loop = get_worker().loop.asyncio_loop

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async def take() -> None:  # on the worker's loop, where acquire() returns a coroutine
            await self.semaphore.acquire()

        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(take(), self.loop))
        try:
            yield
        finally:
            self.loop.call_soon_threadsafe(self.loop.call_later, self.window_s, self._give_back)

    def _give_back(self) -> None:
        asyncio.ensure_future(self.semaphore.release())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
