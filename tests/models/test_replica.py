"""The SIMULATED replica (issue 35): a simulator paced as one model on one GPU, a batch of up
to ``batch_size`` requests per ``service_time_s``, one batch at a time per process; it
answers as the simulator does and keys its answers the same way."""

from __future__ import annotations

import threading
import time

from genfair.models import build_backend
from genfair.models.base import Completion, ReplicaDevice, Request
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig

POLICY = {"objective": {"accuracy": 0.7, "invalid_rate": 0.3}}
SERVICE_S = 0.05


def requests(n: int, tag: str = "") -> list[Request]:
    meta = {"policy": "objective", "letters": ["A", "B", "C"], "truth_letters": ["B"]}
    return [
        Request(messages=({"role": "user", "content": f"q{tag}{i}"},), seed=i, meta=meta)
        for i in range(n)
    ]


def answers(backend, batch: list[Request]) -> list[Completion]:  # type: ignore[no-untyped-def]
    done: dict[int, Completion] = {}
    backend.complete(batch, lambda r, c: done.__setitem__(id(r), c))
    return [done[id(r)] for r in batch]


def test_a_replica_answers_and_keys_as_the_simulator_does() -> None:
    plain = build_backend(SimulatedModelConfig(backend="simulated", policy=POLICY))
    replica = build_backend(
        SimulatedModelConfig(
            backend="simulated",
            policy=POLICY,
            replica={"service_time_s": SERVICE_S, "batch_size": 8},
        )
    )
    batch = requests(20)
    assert answers(replica, batch) == answers(plain, batch)
    assert replica.fingerprint == plain.fingerprint
    for request in batch:  # where and how fast, not what: the same cache entries
        assert ResponseCache.key(replica.request_fingerprint(request), request) == (
            ResponseCache.key(plain.request_fingerprint(request), request)
        )


def test_a_replica_serves_batches_of_its_size_one_at_a_time_per_process() -> None:
    replica = build_backend(
        SimulatedModelConfig(
            backend="simulated",
            policy=POLICY,
            replica={"service_time_s": SERVICE_S, "batch_size": 8},
        )
    )
    before = ReplicaDevice.batches, ReplicaDevice.requests
    began = time.perf_counter()
    # two threads at once (a worker with two threads, or two runs in one process): one device
    threads = [threading.Thread(target=answers, args=(replica, requests(20, tag))) for tag in "xy"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 20 requests in batches of 8: three batches each, served one after another
    assert (ReplicaDevice.batches - before[0], ReplicaDevice.requests - before[1]) == (6, 40)
    assert time.perf_counter() - began >= 6 * SERVICE_S
