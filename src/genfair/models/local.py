"""Local (torch) generation: how many threads it uses, and why each answer stopped.

Threads
-------
torch sizes its thread pool from the machine, not from what the process may use, and
BLAS / OpenMP libraries each do the same. On a machine whose cores are shared (other
jobs, a CPU quota, ``taskset``), more compute threads than free cores make every
thread wait for the others at each synchronisation point: generation then slows down
far more than the share of CPU it lost (issue 16.11 measured SmolLM2 going from about
0.3 s to 3.5 s per call beside two other jobs). genfair therefore sets the counts
itself, before every batch it generates, from the model config's ``threads``:

- ``threads: N`` uses N threads (``1`` is the safest choice on a busy shared machine);
- unset (``None``), the number of cores this process may run on,
  ``len(os.sched_getaffinity(0))`` (which honours ``taskset`` and cpusets; it falls back
  to ``os.cpu_count()`` where affinity is unknown).

Waiting threads sleep rather than spin: importing :mod:`genfair.models` sets
``OMP_WAIT_POLICY=PASSIVE`` unless the environment already sets it (it must be set before
torch loads its OpenMP runtime, so it has no effect in a process that imported torch
first; :func:`apply_threads` warns then). Measured on this project's 2-core machine under
a load average of about 11: 4 prompts x 16 tokens of SmolLM2 took 107 s with 2 spinning
threads, 5.5 s with 1 thread and 4.5 s with 2 passive threads.

The count goes to ``torch.set_num_threads`` (intra-op parallelism), to
``torch.set_num_interop_threads`` when torch still allows it (only before its first
parallel work), and through ``threadpoolctl`` to every BLAS / OpenMP library loaded in the
process. It is not part of the cache key: on CPU the thread count can change the order
of floating-point sums, so bit-identical outputs across machines also need the same
``threads`` (issue 16.10). ``benchmarks/test_shared_cores.py`` measures the slowdown
beside a CPU-bound process.

Decoding
--------
:func:`decoding_kwargs` turns a request's effective sampling (the model's, with the request's
overrides: :meth:`genfair.models.base.Request.sampling`) into ``generate``'s arguments, the
same for every local text generator: greedy at temperature 0, else sampling seeded from the
batch's request seeds.

Finish reasons
--------------
:func:`finish_reasons` tells ``"length"`` (the token limit was reached without an end of
sequence) from ``"stop"`` (the model ended its answer), as OpenAI-compatible endpoints
report it, so a truncated answer is never taken for a finished one (issue 12 point 4).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from genfair.models.base import derive_seed
from genfair.models.config import SamplingParams

log = logging.getLogger(__name__)

_applied: int | None = None
#: whether torch was imported before genfair could ask OpenMP to wait passively
_torch_first: bool | None = None


def prefer_passive_waiting() -> None:
    """Ask OpenMP (torch's thread pool) to let idle threads sleep instead of spinning,
    unless the user set ``OMP_WAIT_POLICY``; called when :mod:`genfair.models` is imported,
    before torch is."""
    global _torch_first
    if _torch_first is None:
        _torch_first = "torch" in sys.modules
    if not _torch_first:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def available_cores() -> int:
    """How many cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def apply_threads(threads: int | None) -> int:
    """Set torch's and the BLAS / OpenMP libraries' thread counts to ``threads`` (default:
    :func:`available_cores`); return the count. Cheap to call before every batch."""
    global _applied
    import torch

    count = threads or available_cores()
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    if _applied != count:
        try:
            torch.set_num_interop_threads(count)
        except RuntimeError:  # torch allows it only before its first parallel work
            pass
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=count)
        except ImportError:  # optional: torch's own pool is the one that matters most
            pass
        log.info(
            "local generation uses %d threads (%s)",
            count,
            "configured" if threads else "cores available to this process",
        )
        if _torch_first and "OMP_WAIT_POLICY" not in os.environ and count > 1:
            log.warning(
                "torch was imported before genfair.models, so its threads spin while "
                "waiting; on shared cores set OMP_WAIT_POLICY=PASSIVE or threads: 1"
            )
        _applied = count
    return count


def decoding_kwargs(sampling: SamplingParams, seeds: Sequence[int]) -> dict[str, Any]:
    """``generate``'s decoding arguments for a batch that shares ``sampling``: greedy at
    temperature 0 (the seeds are unused), else sampling with its temperature and top_p from
    one torch generator seeded from the batch's request ``seeds`` (reproducible for the same
    batch composition)."""
    if sampling.temperature == 0:
        return {"do_sample": False}
    import torch

    torch.manual_seed(derive_seed(*seeds))
    return {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p}


def eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every token id that ends generation: the model's generation config and the
    tokenizer's end-of-sequence token."""
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (configured, getattr(tokenizer, "eos_token_id", None)):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, Iterable):
            ids.update(int(v) for v in value)
    return ids


def finish_reasons(new_tokens: Any, stop_ids: set[int], limit: int) -> list[str]:
    """Per row of ``new_tokens`` (the generated part of a batch, a tensor or id lists): ``"stop"``
    if it holds an end-of-sequence id (padding after the end included), ``"length"`` if it has none
    and used all ``limit`` tokens, else ``"stop"`` (ended by another stopping rule)."""
    reasons = []
    rows = new_tokens.tolist() if hasattr(new_tokens, "tolist") else new_tokens  # a tensor or lists
    for row in rows:
        ended = any(token in stop_ids for token in row)
        reasons.append("length" if not ended and len(row) >= limit else "stop")
    return reasons
