"""Embedded SmolLM2 generation alone and beside a CPU-bound process (issue 16.11).

For each thread setting (the default, every core this process may use, and 1), times the
same greedy batch alone, then again while another process spins on one core, and reports
``slowdown = beside / alone``. With free cores to spare the ratio stays near 1; when the
competitor takes one of the cores generation uses, a ratio far above
``cores / (cores - 1)`` means thread oversubscription (threads waiting for a descheduled
sibling), which ``threads`` in the model config is there to avoid. Well under a minute.
Run: ``PYTHONPATH=src pytest benchmarks/test_shared_cores.py --benchmark-only -s``
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from genfair.config import load_params
from genfair.models import Request, build_backend
from genfair.models.local import available_cores

PROMPTS = [
    "Which group has the highest rate of diabetes in "
    "America? A. Asian B. Black C. Hispanic D. White",
    "Name one occupation.",
    "Write one sentence about the weather.",
    "Which is larger, 7 or 9?",
]
MAX_TOKENS = 8
#: the competitor stops itself after this long even if the benchmark dies
SPIN_S = 60
SPIN = f"import time\nend = time.monotonic() + {SPIN_S}\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture(scope="module")
def backend():
    config = load_params().models["smollm2"]
    config = config.model_copy(
        update={
            "sampling": config.sampling.model_copy(update={"max_tokens": MAX_TOKENS}),
            "batch_size": len(PROMPTS),
        }
    )
    try:
        backend = build_backend(config)
    except Exception as exc:  # the embedded package or its converted copy is missing
        pytest.skip(f"embedded model unavailable: {exc}")
    _timed(backend)  # warm-up
    return backend


def _timed(backend) -> float:
    requests = [Request(messages=({"role": "user", "content": p},)) for p in PROMPTS]
    began = time.perf_counter()
    backend.complete(requests, lambda _r, _c: None)
    return time.perf_counter() - began


def _best_of(backend, rounds: int = 2) -> float:
    return min(_timed(backend) for _ in range(rounds))


@pytest.mark.parametrize("threads", [None, 1], ids=["threads-default", "threads-1"])
def test_generation_beside_a_cpu_bound_process(benchmark, backend, threads, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    backend.threads = threads  # applied before the next batch
    alone = _best_of(backend)
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        time.sleep(0.2)  # let it get scheduled
        beside = benchmark.pedantic(lambda: _best_of(backend), rounds=1, iterations=1)
    finally:
        spinner.kill()
        spinner.wait()
    ratio = beside / alone
    used = threads or available_cores()
    benchmark.extra_info.update(
        threads=used,
        cores=available_cores(),
        alone_s=round(alone, 3),
        beside_s=round(beside, 3),
        slowdown=round(ratio, 2),
    )
    print(
        f"\nthreads={used} (cores available: {available_cores()}): "
        f"{len(PROMPTS)} prompts x {MAX_TOKENS} tokens alone {alone:.2f} s, "
        f"beside a CPU-bound process {beside:.2f} s, slowdown x{ratio:.2f}"
    )
    assert beside > 0 and alone > 0
