"""Throughput of the OpenAI backend against the local mock server (fixed 50 ms latency).

Ideal throughput is concurrency / latency: 32 / 0.05 s = 640 requests/s. The figure that
matters is the ratio to it (how much the client's own overhead costs) and the speed-up
over a sequential client. Quick mode (benchmarks/conftest.py): 64 concurrent requests, one
round, 8 sequential ones; every answer and the concurrency bound still checked. Run with::

    PYTHONPATH=src pytest benchmarks/test_openai_throughput.py --benchmark-only -q -s
"""

from __future__ import annotations

import statistics
import time

from genfair.models.base import Completion, Request
from genfair.models.config import OpenAIModelConfig
from genfair.models.openai import OpenAIChatBackend
from tests.support.mock_openai import MockOpenAI

LATENCY_S = 0.05
CONCURRENCY = 32
#: concurrent requests a round, sequential requests: full mode, quick mode
SIZES = {"full": (320, 40), "quick": (64, 8)}
ROUNDS = 5


def _backend(base_url: str, concurrency: int) -> OpenAIChatBackend:
    config = OpenAIModelConfig(
        backend="openai",
        model_id="mock-model",
        base_url=base_url,
        api_key_env=None,
        concurrency=concurrency,
    )
    return OpenAIChatBackend(config)


def _requests(n: int) -> list[Request]:
    return [Request(messages=({"role": "user", "content": f"q{i}"},), seed=i) for i in range(n)]


def _timed(backend: OpenAIChatBackend, requests: list[Request]) -> tuple[float, list[Completion]]:
    done: list[Completion] = []
    began = time.perf_counter()
    backend.complete(requests, lambda _, completion: done.append(completion))
    return time.perf_counter() - began, done


def test_openai_throughput(benchmark, mode) -> None:  # type: ignore[no-untyped-def]
    n, sequential_n = SIZES[mode.size("full", "quick")]
    with MockOpenAI(latency_s=LATENCY_S) as server:
        seconds, done = _timed(_backend(server.url, 1), _requests(sequential_n))
        assert [c.status for c in done] == ["ok"] * sequential_n
        sequential_rps = sequential_n / seconds

        concurrent = _backend(server.url, CONCURRENCY)
        requests = _requests(n)
        # own timings as well as pytest-benchmark's, so the figures exist with it disabled
        rounds: list[float] = []

        def batch() -> list[Completion]:
            seconds, done = _timed(concurrent, requests)
            rounds.append(seconds)
            return done

        done = benchmark.pedantic(batch, rounds=ROUNDS, iterations=1, warmup_rounds=1)
        assert [c.status for c in done] == ["ok"] * n
        # the bound always holds; filling every slot is a speed goal: beside the rest of the
        # suite (make test), 20 of 32 requests were in flight at once at most
        assert 1 < server.max_in_flight <= CONCURRENCY, server.max_in_flight
        mode.goal(
            server.max_in_flight == CONCURRENCY,
            f"{server.max_in_flight} of {CONCURRENCY} requests in flight at once",
            "beside other tests the client may not fill every slot before the first answers",
        )

    ideal_rps = CONCURRENCY / LATENCY_S
    rps = n / statistics.median(rounds[-ROUNDS:])
    figures = {
        "requests": n,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY_S,
        "throughput_rps": round(rps, 1),
        "ideal_rps": ideal_rps,
        "ratio_to_ideal": round(rps / ideal_rps, 3),
        "sequential_rps": round(sequential_rps, 1),
        "sequential_ratio_to_ideal": round(sequential_rps * LATENCY_S, 3),
        "speedup_over_sequential": round(rps / sequential_rps, 1),
    }
    benchmark.extra_info.update(figures)
    print("\nopenai backend throughput:", ", ".join(f"{k}={v}" for k, v in figures.items()))
