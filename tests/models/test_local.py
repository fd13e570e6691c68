"""Local generation helpers: finish reasons from generated ids, thread settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from genfair.models.local import available_cores, eos_ids, finish_reasons

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_finish_reasons_by_hand():
    eos, pad = 2, 0
    new = torch.tensor(
        [
            [5, 6, 7, 8],  # no end, limit reached -> length
            [5, eos, pad, pad],  # ended, then padding -> stop
            [5, 6, 7, eos],  # ended on the last allowed token -> stop
        ]
    )
    assert finish_reasons(new, {eos}, limit=4) == ["length", "stop", "stop"]
    # fewer tokens than the limit without an end: stopped by another rule
    assert finish_reasons(torch.tensor([[5, 6]]), {eos}, limit=4) == ["stop"]
    # several end ids (e.g. <|im_end|> and <|endoftext|>)
    assert finish_reasons(torch.tensor([[5, 9, 0]]), {2, 9}, limit=3) == ["stop"]


def test_eos_ids_from_generation_config_and_tokenizer():
    class Config:
        eos_token_id = [3, 4]

    class Model:
        generation_config = Config()

    class Tokenizer:
        eos_token_id = 7

    assert eos_ids(Model(), Tokenizer()) == {3, 4, 7}
    assert eos_ids(object(), object()) == set()


def test_available_cores_is_the_affinity():
    assert available_cores() == len(os.sched_getaffinity(0)) >= 1


def _env_after(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout.strip()


def test_openmp_waits_passively_unless_the_user_says_otherwise():
    show = "import os; print(os.environ.get('OMP_WAIT_POLICY'))"
    assert _env_after(f"import genfair.models; {show}") == "PASSIVE"
    assert _env_after(f"import genfair.models; {show}", OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
    # too late once torch is loaded: left alone (apply_threads warns instead)
    assert _env_after(f"import torch, genfair.models; {show}") == "None"
