"""Embedded SmolLM2 generation alone and beside a CPU-bound process (issue 16.11).

For each thread setting (the default, every core this process may use, and 1), times the
same greedy batch alone, then again while another process spins on one core, and reports
``slowdown = beside / alone``. With free cores to spare the ratio stays near 1; when the
competitor takes one of the cores generation uses, a ratio far above
``cores / (cores - 1)`` means thread oversubscription (threads waiting for a descheduled
sibling), which ``threads`` in the model config is there to avoid. Well under a minute.
Quick mode (benchmarks/conftest.py): 2 prompts x 4 tokens, one batch each way, the spinner
capped at 10 s; the slowdown is printed in both modes (it is a measurement, not a goal).
Run: ``PYTHONPATH=src pytest benchmarks/test_shared_cores.py --benchmark-only -s``
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from genfair.models import Request, build_backend
from genfair.models.local import available_cores
from genfair.study_params import load_params

ALL_PROMPTS = [
    "Which group has the highest rate of diabetes in America? "
    "A. Asian B. Black C. Hispanic D. White",
    "Name one occupation.",
    "Write one sentence about the weather.",
    "Which is larger, 7 or 9?",
]
#: prompts, tokens per answer, batches timed (the best is kept), the competitor's cap in
#: seconds (it is killed once the batches are timed; the cap stops it if the benchmark dies)
FULL = {"prompts": 4, "max_tokens": 8, "rounds": 2, "spin_s": 60}
QUICK = {"prompts": 2, "max_tokens": 4, "rounds": 1, "spin_s": 10}
SPIN = "import time\nend = time.monotonic() + {}\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture(scope="module")
def sizes(mode) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return mode.size(FULL, QUICK)


@pytest.fixture(scope="module")
def backend(sizes: dict[str, int]):  # type: ignore[no-untyped-def]
    config = load_params().models["smollm2"]
    config = config.model_copy(
        update={
            "sampling": config.sampling.model_copy(update={"max_tokens": sizes["max_tokens"]}),
            "batch_size": sizes["prompts"],
        }
    )
    try:
        backend = build_backend(config)
    except Exception as exc:  # the embedded package or its converted copy is missing
        pytest.skip(f"embedded model unavailable: {exc}")
    _timed(backend, sizes["prompts"])  # warm-up
    return backend


def _timed(backend, prompts: int) -> float:  # type: ignore[no-untyped-def]
    requests = [Request(messages=({"role": "user", "content": p},)) for p in ALL_PROMPTS[:prompts]]
    began = time.perf_counter()
    backend.complete(requests, lambda _r, _c: None)
    return time.perf_counter() - began


def _best_of(backend, sizes: dict[str, int]) -> float:  # type: ignore[no-untyped-def]
    return min(_timed(backend, sizes["prompts"]) for _ in range(sizes["rounds"]))


@pytest.mark.parametrize("threads", [None, 1], ids=["threads-default", "threads-1"])
def test_generation_beside_a_cpu_bound_process(  # type: ignore[no-untyped-def]
    benchmark, backend, sizes, threads, monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    backend.threads = threads  # applied before the next batch
    alone = _best_of(backend, sizes)
    spinner = subprocess.Popen([sys.executable, "-c", SPIN.format(sizes["spin_s"])])
    try:
        time.sleep(0.2)  # let it get scheduled
        beside = benchmark.pedantic(lambda: _best_of(backend, sizes), rounds=1, iterations=1)
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
        f"\nthreads={used} (cores available: {available_cores()}): {sizes['prompts']} prompts x "
        f"{sizes['max_tokens']} tokens alone {alone:.2f} s, beside a CPU-bound process "
        f"{beside:.2f} s, slowdown x{ratio:.2f}"
    )
    assert beside > 0 and alone > 0
