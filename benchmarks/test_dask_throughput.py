"""Calls per second through the runner on a real local Dask cluster vs the local executor,
against the mock endpoint with a fixed 50 ms latency, and the projected wall time of
paper-scale FACT-OR-FAIR on N vLLM servers (docs/scale-out.md, "Generation on a Dask
cluster"). Run with::

    PYTHONPATH=src pytest benchmarks/test_dask_throughput.py --benchmark-only -q -s

Each configuration answers fresh calls (new prompts every round, an empty cache), so every
call is sent: the figure is the executor's, not the cache's. ``CONCURRENCY`` is the model's
cluster-wide bound; it is high enough here that a worker's own CPU, not the bound, limits
its calls per second, which is what adding workers can raise.
"""

from __future__ import annotations

import itertools
import statistics
import time
from functools import partial
from pathlib import Path

import pytest

from tests.support.dask_cluster import Cluster

from genfair.models import build_backend
from genfair.models.cache import ResponseCache
from genfair.models.config import OpenAIModelConfig
from genfair.models.dask_executor import DaskExecutor
from genfair.models.executor import executing
from genfair.models.runner import Call, run_calls
from tests.support.mock_openai import MockOpenAI

LATENCY_S = 0.05
CONCURRENCY = 64
N = 640
ROUNDS = 3
#: paper-scale FACT-OR-FAIR: subjective calls per model (issue 24), models in the study
PAPER_CALLS, MODELS = 45_600, 10
#: STATED, not measured: one vLLM server's calls/s for FACT-OR-FAIR's short answers (an 8B
#: model on one A100-80GB at ~2,000 generated tokens/s in large batches, ~64 tokens an answer)
SERVER_CALLS_PER_S = 30.0
_round = itertools.count()


def _calls_per_s(server: MockOpenAI, cache: ResponseCache, executor: DaskExecutor | None) -> float:
    backend = build_backend(OpenAIModelConfig(backend="openai", model_id="mock", base_url=server.url,
                                              api_key_env=None, concurrency=CONCURRENCY))
    seconds = []
    for _ in range(ROUNDS):
        tag = next(_round)
        calls = [Call.text(f"r{tag}-{i}", f"question {tag}-{i}") for i in range(N)]
        began = time.perf_counter()
        with executing(executor):
            answers = run_calls(backend, cache, calls, lambda text, meta: "ok", seed=0)
        seconds.append(time.perf_counter() - began)
        assert (answers["status"] == "ok").all()
    assert server.max_in_flight <= CONCURRENCY
    return N / statistics.median(seconds)


@pytest.mark.dask
def test_dask_executor_throughput(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    figures: dict[str, float] = {}
    with MockOpenAI(latency_s=LATENCY_S, lifetime_s=900) as server:
        open_cache = partial(ResponseCache, tmp_path / "responses.sqlite")
        with open_cache() as cache:
            figures["local_rps"] = _calls_per_s(server, cache, None)
            cluster = Cluster(tmp_path, workers=1)
            try:
                executor = DaskExecutor(cluster.client, open_cache)
                figures["dask_1_worker_rps"] = _calls_per_s(server, cache, executor)
                cluster.add_worker()
                cluster.client.wait_for_workers(2, timeout=60)
                figures["dask_2_workers_rps"] = benchmark.pedantic(
                    _calls_per_s, args=(server, cache, executor), rounds=1, iterations=1)
            finally:
                cluster.stop()
    figures["two_over_one"] = figures["dask_2_workers_rps"] / figures["dask_1_worker_rps"]
    figures["one_worker_over_local"] = figures["dask_1_worker_rps"] / figures["local_rps"]
    per_worker = figures["dask_2_workers_rps"] / 2
    for servers in (1, 4, 16):
        # the calls flow at the slower of the servers and the client workers (one per server)
        rate = min(servers * SERVER_CALLS_PER_S, servers * per_worker)
        figures[f"paper_fact_or_fair_hours_on_{servers}_servers"] = PAPER_CALLS * MODELS / rate / 3600
    figures = {k: round(v, 2) for k, v in figures.items()}
    benchmark.extra_info.update(figures)
    print("\ndask executor throughput:", ", ".join(f"{k}={v}" for k, v in figures.items()))
