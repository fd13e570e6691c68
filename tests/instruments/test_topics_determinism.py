"""The news LDA is deterministic across machines (issues 16.10, 23.6): its outputs are
bit-identical whatever the thread settings (the best proxy here for "another machine of this
kind"), and another CPU family (emulated with numpy's baseline SIMD kernels and another BLAS
kernel) changes them by no more than the documented margin, so they are written the same
(genfair.instruments.topics, docs/faults.md)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genfair.instruments.topics import single_threaded
from genfair.io import round_float

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = """
import hashlib, json, sys
import numpy as np
from threadpoolctl import threadpool_limits
from genfair.instruments.topics import choose_num_topics, document_topics, fit_lda, sentence_topics

threadpool_limits(limits=int(sys.argv[1]))  # what the rest of the process asks for
rng = np.random.default_rng(5)
vocab = [f"w{i}" for i in range(1500)]
p = 1 / np.arange(1, 1501) ** 1.05
docs = [list(rng.choice(vocab, size=int(rng.integers(150, 400)), p=p / p.sum())) for _ in range(60)]
k, table = choose_num_topics(docs, [40, 80], 0.2, seed=3, passes=2, iterations=30)
model, vocab_ = fit_lda(docs, k, seed=3, passes=2, iterations=30)
theta = document_topics(model, vocab_, docs, 0.0, 3)
sentences = sentence_topics(model, vocab_, [d[:12] for d in docs], 3)
np.save(sys.argv[2] + "_theta.npy", theta)
np.save(sys.argv[2] + "_table.npy", table.to_numpy())
digest = lambda a: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
print(json.dumps({"k": k, "table": digest(table.to_numpy()),
                  "lambda": digest(model.state.get_lambda()),
                  "theta": digest(theta), "sentences": sentences.tolist()}))
"""


def _run(tmp_path: Path, name: str, limit: int, **env: str) -> dict:
    script = tmp_path / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_NUM_THREADS")
        and k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")
    }
    result = subprocess.run(
        [sys.executable, str(script), str(limit), str(tmp_path / name)],
        env={**clean, "PYTHONPATH": str(SRC), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_lda_outputs_are_identical_under_any_thread_settings(tmp_path: Path) -> None:
    one = _run(
        tmp_path, "one", 1, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"
    )
    two = _run(tmp_path, "two", 2, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    many = _run(tmp_path, "many", 8, OPENBLAS_NUM_THREADS="8", OMP_NUM_THREADS="8")
    assert one == two == many


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 kernel names")
def test_another_cpu_family_gives_the_same_written_outputs(tmp_path: Path) -> None:
    """numpy's float32 exp/log kernels differ by CPU and moved gensim's default float32 LDA
    by ~5e-6 relative; in float64 the baseline kernels (numpy's x86-64-v2, OpenBLAS's
    Nehalem) stay within 1e-10 of this CPU's, and the K table at FLOAT_DIGITS is the same."""
    here = _run(tmp_path, "here", 2)
    other = _run(
        tmp_path,
        "other",
        2,
        OPENBLAS_CORETYPE="Nehalem",
        NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    )
    assert other["k"] == here["k"] and other["sentences"] == here["sentences"]
    difference = np.abs(
        np.load(tmp_path / "here_theta.npy") - np.load(tmp_path / "other_theta.npy")
    ).max()
    assert difference < 1e-10
    written = [
        np.vectorize(round_float)(np.load(tmp_path / f"{name}_table.npy"))
        for name in ("here", "other")
    ]
    np.testing.assert_array_equal(*written)


def test_single_threaded_limits_the_blas_inside_the_block_only() -> None:
    from threadpoolctl import threadpool_info

    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    if not blas:
        pytest.skip("numpy loaded no BLAS that threadpoolctl sees")
    before = [p["num_threads"] for p in blas]
    with single_threaded():
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    assert [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"] == before
