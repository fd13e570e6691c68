"""Send probe rows to a model through the response cache, re-asking as the paper says.

The runner is methodology-agnostic: a methodology hands it :class:`Call` objects (one per
probe row and sample) and a ``judge`` that classifies an answer as ``ok``, ``refused`` or
``invalid``. An answer that is not ``ok`` is asked again, with a new attempt index (so a new
cache entry and seed), up to the call's ``max_attempts``; a deterministic backend is not
re-asked, since it would repeat itself. Every completion is written to the cache the
moment it exists, so an interrupted run resumes where it stopped and never pays twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from genfair.logs import progress
from genfair.models.base import Completion, LLMBackend, Request, derive_seed
from genfair.models.cache import ResponseCache

log = logging.getLogger(__name__)

Verdict = Literal["ok", "refused", "invalid"]
Judge = Callable[[str, dict[str, Any]], Verdict]

#: columns of every responses table, in order. Latency stays in the cache, not here: the
#: table must be the same bytes for the same params and seed, whenever it is rebuilt.
RESPONSE_COLUMNS = [
    "probe_id", "sample_index", "status", "attempts", "text", "finish_reason", "error", "tries",
]


@dataclass(frozen=True)
class Call:
    """One sample of one probe row."""

    probe_id: str
    messages: tuple[dict[str, str], ...]
    sample_index: int = 0
    max_attempts: int = 1
    #: overrides the model's ``sampling.max_tokens`` (see :class:`Request`)
    max_tokens: int | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def ask(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    verdict: Callable[[int, Completion], str],
    *,
    seed: int,
    desc: str = "",
    chunk_size: int = 256,
    unit: str = "call",
) -> list[tuple[Completion, str, int]]:
    """Answer every call through the cache, re-asking as the paper says; per call, its last
    ``(completion, status, attempts)``.

    ``verdict(i, completion)`` classifies call ``i``'s answer. A ``refused`` or ``invalid``
    one is asked again with the next attempt index (a new cache entry and seed) while the
    call has attempts left, unless the backend is deterministic (it would repeat itself).
    """
    fingerprint = backend.fingerprint
    model_key = f"{fingerprint.get('backend')}:{fingerprint.get('model_id')}"
    final: dict[int, tuple[Completion, str, int]] = {}
    attempt = {i: 0 for i in range(len(calls))}
    pending = list(range(len(calls)))
    stats = {"cached": 0, "called": 0}

    # the bar counts answers as they arrive; re-asks extend its total
    with progress(total=len(calls), desc=desc or "generate", unit=unit) as bar:
        while pending:
            retry: list[int] = []
            for start in range(0, len(pending), chunk_size):
                chunk = pending[start : start + chunk_size]
                results = _answer(backend, cache, calls, chunk, attempt, seed, model_key, stats, bar.update)
                for i in chunk:
                    status = verdict(i, results[i])
                    again = status in ("refused", "invalid") and not backend.deterministic
                    if again and attempt[i] + 1 < calls[i].max_attempts:
                        attempt[i] += 1
                        retry.append(i)
                        continue
                    final[i] = (results[i], status, attempt[i] + 1)
            bar.total += len(retry)
            pending = retry

    log.info("%s: %d %ss (%d from cache, %d sent)", desc, len(calls), unit, stats["cached"], stats["called"])
    return [final[i] for i in range(len(calls))]


def run_calls(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    judge: Judge,
    *,
    seed: int,
    desc: str = "",
    chunk_size: int = 256,
) -> pd.DataFrame:
    """Answer every call; return one row per call with its final status.

    ``status`` is ``ok``, ``refused`` or ``invalid`` (the last answer's verdict after all
    attempts: the paper's "skipped") or ``error`` (a transport failure after the backend's
    own retries; not cached, so the next run asks again).
    """
    answers = ask(backend, cache, calls, lambda i, c: _verdict(c, judge, calls[i].meta),
                  seed=seed, desc=desc, chunk_size=chunk_size)
    frame = pd.DataFrame(
        [_row(call, completion, status, attempts)
         for call, (completion, status, attempts) in zip(calls, answers, strict=True)],
        columns=RESPONSE_COLUMNS,
    )
    errors = int((frame["status"] == "error").sum())
    if errors:
        log.warning(
            "%s: %d calls failed after retries (status 'error', not cached). Rerun the stage "
            "to ask again; completed calls come from the cache.", desc, errors,
        )
    return frame


def _answer(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    indices: list[int],
    attempt: dict[int, int],
    seed: int,
    model_key: str,
    stats: dict[str, int],
    progress: Callable[[int], object],
) -> dict[int, Completion]:
    """Completions for ``indices`` at their current attempt: cache first, then the model."""
    requests: dict[int, Request] = {}
    keys: dict[int, str] = {}
    for i in indices:
        call = calls[i]
        requests[i] = Request(
            messages=call.messages,
            sample_index=call.sample_index,
            attempt=attempt[i],
            seed=derive_seed(seed, call.probe_id, call.sample_index, attempt[i]),
            max_tokens=call.max_tokens,
            meta=call.meta,
        )
        keys[i] = cache.key(backend.fingerprint, requests[i])
    hits = cache.get_many(list(keys.values()))
    results = {i: hits[keys[i]] for i in indices if keys[i] in hits}
    stats["cached"] += len(results)
    progress(len(results))
    missing = [i for i in indices if i not in results]
    if not missing:
        return results
    by_request = {id(requests[i]): i for i in missing}

    def on_done(request: Request, completion: Completion) -> None:
        i = by_request[id(request)]
        cache.put(keys[i], model_key, completion)
        results[i] = completion
        progress(1)

    backend.complete([requests[i] for i in missing], on_done)
    stats["called"] += len(missing)
    lost = [i for i in missing if i not in results]
    if lost:  # a backend broke its contract; record rather than crash
        for i in lost:
            results[i] = Completion(status="error", error="backend returned no completion")
    return results


def _verdict(completion: Completion, judge: Judge, meta: dict[str, Any]) -> str:
    if completion.status != "ok":
        return completion.status
    return judge(completion.text or "", meta)


def _row(call: Call, completion: Completion, status: str, attempts: int) -> dict[str, Any]:
    return {
        "probe_id": call.probe_id,
        "sample_index": call.sample_index,
        "status": status,
        "attempts": attempts,
        "text": completion.text,
        "finish_reason": completion.finish_reason,
        "error": completion.error,
        "tries": completion.tries,
    }
