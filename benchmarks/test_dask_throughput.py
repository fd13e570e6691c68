"""Calls per second through the runner on a real local Dask cluster vs the local executor,
against the mock endpoint with a fixed 50 ms latency, and the projected wall time of
paper-scale FACT-OR-FAIR on N vLLM servers (docs/scale-out.md, "Generation on a Dask
cluster"). Run with::

    PYTHONPATH=src pytest benchmarks/test_dask_throughput.py --benchmark-only -q -s

Each configuration answers fresh calls (new prompts every round, an empty cache), so every
call is sent: the figure is the executor's, not the cache's. The three configurations run
paired (local, one worker, two workers, then again, ``ROUNDS`` times; two clusters up at
once), so a shared machine's load hits them alike, and the ratios are medians of per-round
ratios. ``CONCURRENCY`` is the model's cluster-wide bound, set far above what one worker can
keep busy (64 in flight at 50 ms would be 1,280 calls/s; one worker's CPU sends well under
a tenth of that): were the bound below one worker's capacity, a second worker could only
split it, and two workers could never beat one. The mock endpoint runs in this process (a
thread), so the local executor shares its interpreter with it.

Quick mode (benchmarks/conftest.py): 64 calls a round and one round of the three, on the
same two clusters; every answer and the concurrency bound still checked. No goal is
asserted in either mode: the figures are printed (and recorded in docs/scale-out.md).
"""

from __future__ import annotations

import itertools
import statistics
import time
from functools import partial
from pathlib import Path

import pytest

from genfair.models import build_backend
from genfair.models.base import LLMBackend
from genfair.models.cache import ResponseCache
from genfair.models.config import OpenAIModelConfig
from genfair.models.dask_executor import DaskExecutor
from genfair.models.executor import executing
from genfair.models.runner import Call, run_calls
from tests.support.dask_cluster import Cluster
from tests.support.mock_openai import MockOpenAI

LATENCY_S = 0.05
CONCURRENCY = 64
#: calls a round, paired rounds: full mode, quick mode
SIZES = {"full": (640, 5), "quick": (64, 1)}
#: paper-scale FACT-OR-FAIR: subjective calls per model (issue 24), models in the study
PAPER_CALLS, MODELS = 45_600, 10
#: STATED, not measured: one vLLM server's calls/s for FACT-OR-FAIR's short answers (an 8B
#: model on one A100-80GB at ~2,000 generated tokens/s in large batches, ~64 tokens an answer)
SERVER_CALLS_PER_S = 30.0
_round = itertools.count()


def _seconds(
    backend: LLMBackend, cache: ResponseCache, executor: DaskExecutor | None, n: int
) -> float:
    """Seconds to answer n fresh calls (new prompts: an empty cache, every call sent)."""
    tag = next(_round)
    calls = [Call.text(f"r{tag}-{i}", f"question {tag}-{i}") for i in range(n)]
    began = time.perf_counter()
    with executing(executor):
        answers = run_calls(backend, cache, calls, lambda text, meta: "ok", seed=0)
    seconds = time.perf_counter() - began
    assert (answers["status"] == "ok").all()
    return seconds


@pytest.mark.dask
def test_dask_executor_throughput(benchmark, mode, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    n, rounds = SIZES[mode.size("full", "quick")]
    seconds: dict[str, list[float]] = {"local": [], "one": [], "two": []}
    with MockOpenAI(latency_s=LATENCY_S, lifetime_s=1800) as server:
        backend = build_backend(
            OpenAIModelConfig(
                backend="openai",
                model_id="mock",
                base_url=server.url,
                api_key_env=None,
                concurrency=CONCURRENCY,
            )
        )
        open_cache = partial(ResponseCache, tmp_path / "responses.sqlite")
        (tmp_path / "one").mkdir()
        (tmp_path / "two").mkdir()
        with open_cache() as cache:
            one = Cluster(tmp_path / "one", workers=1)
            try:
                two = Cluster(tmp_path / "two", workers=2)
                try:
                    executors = {
                        "local": None,
                        "one": DaskExecutor(one.client, open_cache),
                        "two": DaskExecutor(two.client, open_cache),
                    }
                    for executor in executors.values():  # warm up: workers import, connect
                        _seconds(backend, cache, executor, n)
                    for _ in range(rounds):  # paired: the three alternate, so the load cancels out
                        for name, executor in executors.items():
                            seconds[name].append(_seconds(backend, cache, executor, n))
                    benchmark.pedantic(
                        _seconds,
                        args=(backend, cache, executors["two"], n),
                        rounds=1,
                        iterations=1,
                    )
                finally:
                    two.stop()
            finally:
                one.stop()
        assert server.max_in_flight <= CONCURRENCY
    rate = {name: n / statistics.median(values) for name, values in seconds.items()}
    figures = {
        "local_rps": rate["local"],
        "dask_1_worker_rps": rate["one"],
        "dask_2_workers_rps": rate["two"],
        # the median of the per-round ratios: each pair ran back to back, under the same load
        "two_over_one": statistics.median(
            o / t for o, t in zip(seconds["one"], seconds["two"], strict=True)
        ),
        "one_worker_over_local": statistics.median(
            lo / o for lo, o in zip(seconds["local"], seconds["one"], strict=True)
        ),
    }
    per_worker = rate["two"] / 2
    for servers in (1, 4, 16):
        # the calls flow at the slower of the servers and the client workers (one per server)
        flow = min(servers * SERVER_CALLS_PER_S, servers * per_worker)
        figures[f"paper_fact_or_fair_hours_on_{servers}_servers"] = (
            PAPER_CALLS * MODELS / flow / 3600
        )
    figures = {k: round(v, 2) for k, v in figures.items()}
    benchmark.extra_info.update(figures)
    print("\ndask executor throughput:", ", ".join(f"{k}={v}" for k, v in figures.items()))
    print("seconds per round:", {k: [round(x, 2) for x in v] for k, v in seconds.items()})
