"""Local generation on CPU gives the same bits whatever the thread count (issue 16.10): a
seeded transformer block's outputs, run with 1 and 2 torch threads in separate processes,
are byte-identical. (Different CPU families may use other kernels; see docs/faults.md.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

PROBE = """
import hashlib, sys
from genfair.models.local import apply_threads
import torch
apply_threads(int(sys.argv[1]))
torch.manual_seed(0)
block = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                         batch_first=True).eval()
head = torch.nn.Linear(256, 4000)
x = torch.randn(4, 48, 256)
with torch.inference_mode():
    logits = head(block(x))
print(hashlib.sha256(logits.numpy().tobytes()).hexdigest(), logits.argmax(-1).sum().item())
"""


def _run(threads: int) -> str:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(threads)],
        env={**env, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def test_cpu_forward_is_identical_with_one_and_two_threads() -> None:
    assert _run(1) == _run(2)
