"""What the CPU can do fast, read at run time, and the local engine settings chosen from it.

The embedded and hf backends run on whatever CPU the study runs on, and the fastest faithful
way to run them depends on it (issue 25): bf16 matrix products are fast only where the CPU
has AMX-BF16 or AVX512-BF16 (5.6x fp32 one-at-a-time on an AMX machine, per the issue), and
emulated, slower than fp32, elsewhere. A config's ``dtype: auto`` resolves here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

#: flags whose presence makes bf16 matrix products faster than fp32 on CPU
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


@cache
def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags (Linux ``/proc/cpuinfo``); empty where unknown."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def fast_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether bf16 runs natively on this CPU (AMX-BF16 or AVX512-BF16)."""
    return bool(BF16_FLAGS & (cpu_flags() if flags is None else flags))


def resolve_dtype(dtype: str, device: str = "cpu", flags: frozenset[str] | None = None) -> str:
    """``auto``: bfloat16 on a CPU with native bf16, else float32 (also on GPUs, where the
    checkpoint's own dtype is a separate choice); any other value as given."""
    if dtype != "auto":
        return dtype
    return "bfloat16" if device == "cpu" and fast_bf16(flags) else "float32"


#: engines the hf / embedded backends can generate with
ENGINES = ("transformers", "ctranslate2")


def resolve_engine(engine: str) -> str:
    """``auto``: transformers, on every CPU measured so far (docs/methodology.md, "The
    embedded model"); any other value as given."""
    return "transformers" if engine == "auto" else engine
