"""Send probe rows to a model through the response cache, re-asking as the paper says.

The runner is methodology-agnostic: a methodology hands it :class:`Call` objects (one per
probe row and sample) and a ``judge`` that classifies an answer as ``ok``, ``refused`` or
``invalid``. An answer that is not ``ok`` is asked again, with a new attempt index (so a new
cache entry and seed), up to the call's ``max_attempts`` (capped by the model config's
``max_attempts``: :func:`allowed`); a call the backend would answer
the same way again (:meth:`LLMBackend.repeats`: greedy decoding, by the call's own
``temperature`` when it sets one) is not re-asked. A call with a ``json_schema`` is sent
only to a backend that ``supports_json_schema`` (``ValueError`` otherwise): callers check
the flag and leave the schema out for the others. Every completion is written to the cache the
moment it exists, so an interrupted run resumes where it stopped and never pays twice.

Before a completion is cached it is checked (:meth:`Completion.problem`) and any key value
in it masked (:mod:`genfair.models.redaction`): a malformed one (a number or list where a
text belongs, an ``ok`` without text) is recorded as an ``error`` with the reason, not
cached, and asked again on the next run. Concurrent processes sharing one cache split the
work by per-key claims (:meth:`ResponseCache.claim`): a call another process is answering
is awaited and read from the cache, never sent twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from genfair.logs import progress
from genfair.models import usage
from genfair.models.base import (
    Completion,
    LLMBackend,
    PerCall,
    Request,
    Simulator,
    derive_seed,
)
from genfair.models.executor import active, store_completion

if TYPE_CHECKING:  # the cache needs SQLAlchemy: loaded by whoever opens one
    from genfair.models.cache import ResponseCache

log = logging.getLogger(__name__)

Verdict = Literal["ok", "refused", "invalid"]
Judge = Callable[[str, dict[str, Any]], Verdict]
#: called with the rows of calls whose final answers just arrived (one group: a shard's, a
#: batch's), each as the responses table will hold it (in the thread that received them)
OnRows = Callable[[list[dict[str, Any]]], None]
#: a group of final answers: per call, ``(index, completion, status, attempts)``
Finals = list[tuple[int, Completion, str, int]]

#: columns of every responses table, in order. Latency stays in the cache, not here: the
#: table must be the same bytes for the same params and seed, whenever it is rebuilt.
RESPONSE_COLUMNS = [
    "probe_id",
    "sample_index",
    "status",
    "attempts",
    "text",
    "finish_reason",
    "error",
    "tries",
]


@dataclass(frozen=True)
class Call(PerCall):
    """One sample of one probe row; decoding overrides and ``meta``: :class:`PerCall`."""

    probe_id: str
    messages: tuple[dict[str, str], ...]
    sample_index: int = 0
    max_attempts: int = 1

    @classmethod
    def text(cls, probe_id: str, prompt: str, **fields: Any) -> Call:
        """A call whose input is ``prompt`` as one user message."""
        return cls(probe_id=probe_id, messages=({"role": "user", "content": prompt},), **fields)


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
    on_final: Callable[[Finals], None] | None = None,
) -> list[tuple[Completion, str, int]]:
    """Answer every call through the cache, re-asking as the paper says; per call, its last
    ``(completion, status, attempts)``.

    ``verdict(i, completion)`` classifies call ``i``'s answer. A ``refused`` or ``invalid``
    one is asked again with the next attempt index (a new cache entry and seed) while the
    call has attempts left, unless the backend would repeat itself (:meth:`LLMBackend.repeats`).
    ``on_final``, when given, gets the calls whose last answers are settled, a group at a time
    as they arrive (those read from the cache, then each group the executor returns), each
    call once, before the others are answered.
    """
    if any(call.json_schema is not None for call in calls) and not backend.supports_json_schema:
        raise ValueError(
            f"{type(backend).__name__} cannot constrain its output to a "
            "JSON schema (supports_json_schema is False): send these calls "
            "without json_schema, and record that they were decoded freely"
        )
    fingerprint = backend.fingerprint
    model_key = f"{fingerprint.get('backend')}:{fingerprint.get('model_id')}"
    if isinstance(backend, Simulator):  # its draws are its own, not another simulator's
        seed = backend.call_seed(seed)
    final: dict[int, tuple[Completion, str, int]] = {}
    finished: list[int] = []  # settled, not yet handed to on_final
    attempt = {i: 0 for i in range(len(calls))}
    pending = list(range(len(calls)))
    #: every attempt ends read from the cache, sent, or stopped by the budget, so that
    #: calls + re-asks = cached + called + stopped (the log line below says it so)
    stats = {"cached": 0, "called": 0, "reasks": 0, "stopped": 0}
    if active() is not None:  # a cluster: one stream, whose shards follow the calls left (a
        chunk_size = max(chunk_size, EXECUTOR_CHUNK)  # chunk's end would idle its workers)

    # the bar counts answers as they arrive; re-asks extend its total
    with progress(total=len(calls), desc=desc or "generate", unit=unit) as bar:

        def settle(i: int, completion: Completion) -> bool:
            """Judge call ``i``'s answer: ``True`` when it is to be asked again (its attempt
            moved on), else its final answer is recorded."""
            status = verdict(i, completion)
            again = status in ("refused", "invalid") and not backend.repeats(
                _request(calls[i], attempt[i], seed)
            )
            if again and attempt[i] + 1 < allowed(backend, calls[i]):
                attempt[i] += 1
                stats["reasks"] += 1
                bar.total += 1
                return True
            final[i] = (completion, status, attempt[i] + 1)
            if on_final is not None:
                finished.append(i)
            return False

        def flush() -> None:
            """Hand the calls settled since the last flush to ``on_final``: one group."""
            if finished:
                group = [(i, *final[i]) for i in finished]
                finished.clear()
                on_final(group)  # type: ignore[misc]  # only filled when given

        while pending:  # one round unless another process holds some re-asks
            retry: list[int] = []
            for start in range(0, len(pending), chunk_size):
                retry += _answer(
                    backend,
                    cache,
                    calls,
                    pending[start : start + chunk_size],
                    attempt,
                    seed,
                    model_key,
                    stats,
                    bar.update,
                    settle,
                    flush,
                )
            pending = retry

    stopped = f" + {stats['stopped']} stopped by the budget" if stats["stopped"] else ""
    log.info(
        "%s: %d %ss + %d re-asks = %d answers from the cache + %d sent%s",
        desc,
        len(calls),
        unit,
        stats["reasks"],
        stats["cached"],
        stats["called"],
        stopped,
    )
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
    on_rows: OnRows | None = None,
) -> pd.DataFrame:
    """Answer every call; return one row per call with its final status (each also handed
    to ``on_rows`` the moment it exists, with the others of its group).

    ``status`` is ``ok``, ``refused`` or ``invalid`` (the last answer's verdict after all
    attempts: the paper's "skipped") or ``error`` (a transport failure after the backend's
    own retries; not cached, so the next run asks again).
    """
    answers = ask(
        backend,
        cache,
        calls,
        lambda i, c: _verdict(c, judge, calls[i].meta),
        seed=seed,
        desc=desc,
        chunk_size=chunk_size,
        on_final=None
        if on_rows is None
        else lambda finals: on_rows([_row(calls[i], *last) for i, *last in finals]),
    )
    frame = pd.DataFrame(
        [
            _row(call, completion, status, attempts)
            for call, (completion, status, attempts) in zip(calls, answers, strict=True)
        ],
        columns=RESPONSE_COLUMNS,
    )
    errors = int((frame["status"] == "error").sum())
    if errors:
        log.warning(
            "%s: %d calls failed after retries (status 'error', not cached). Rerun the stage "
            "to ask again; completed calls come from the cache.",
            desc,
            errors,
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
    settle: Callable[[int, Completion], bool],
    flush: Callable[[], None],
) -> list[int]:
    """Answer ``indices`` at their current attempts, cache first, then the model, settling
    each answer (:func:`ask`'s ``settle``) the moment it exists: a re-ask is looked up or
    sent at once, not after the others. The calls whose re-ask another process held when it
    was made, for the caller to ask in a later round.

    Keys another process is answering (its claims, :meth:`ResponseCache.claim`) are not
    sent: their answers are awaited and read from the cache, so concurrent runs on one
    cache never pay twice. A claim whose owner dies or fails is taken over and sent.
    """
    later: list[int] = []
    todo = list(indices)
    waited = False
    while todo:
        requests = {i: _request(calls[i], attempt[i], seed) for i in todo}
        keys = {i: cache.key(backend.request_fingerprint(r), r) for i, r in requests.items()}
        hits = cache.get_many(list(keys.values()))
        found = [i for i in todo if keys[i] in hits]
        stats["cached"] += len(found)
        for i in found:
            usage.record(backend, requests[i], hits[keys[i]], "cached", keys[i])
        progress(len(found))
        again = [i for i in found if settle(i, hits[keys[i]])]
        flush()
        todo = [i for i in todo if keys[i] not in hits]
        if not todo:
            todo = again
            continue
        mine = cache.claim([keys[i] for i in todo])
        send = [i for i in todo if keys[i] in mine]
        if stopped := _over_budget(send, keys, cache, settle):
            stats["stopped"] += len(stopped)
            progress(len(stopped))
            flush()
            send = send[: len(send) - len(stopped)]
            todo = [i for i in todo if i not in frozenset(stopped)]
        if send:
            held = _send(
                backend,
                cache,
                calls,
                {i: (requests[i], keys[i]) for i in send},
                attempt,
                seed,
                model_key,
                stats,
                progress,
                settle,
                flush,
            )
            later += held
        elif todo and not again:  # all held by other processes: wait for their answers
            if not waited:
                log.info("waiting for %d calls that another process is answering", len(todo))
                waited = True
            time.sleep(_CLAIM_POLL_S)
        todo = [i for i in todo if i not in send] + again
    return later


def allowed(backend: LLMBackend, call: Call) -> int:
    """How many attempts ``call`` may take on ``backend``: its methodology's ``max_attempts``
    (the paper's), capped by the model config's own ``max_attempts`` when it sets one."""
    cap = getattr(backend.model_config, "max_attempts", None)
    return call.max_attempts if cap is None else min(call.max_attempts, cap)


def _request(call: Call, attempt: int, seed: int) -> Request:
    """The request of ``call`` at ``attempt`` (its seed derived from the study ``seed``)."""
    return Request(
        messages=call.messages,
        sample_index=call.sample_index,
        attempt=attempt,
        seed=derive_seed(seed, call.probe_id, call.sample_index, attempt),
        **call.per_call(),
    )


#: calls handed to an executor at once: a stage's calls, up to a bound on the claims and
#: requests held together (a chunk of this process's own is a batch of its backend's)
EXECUTOR_CHUNK = 16_384

#: how often a process waiting for another's answers looks for them in the cache
_CLAIM_POLL_S = 0.2


def _send(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    asked: dict[int, tuple[Request, str]],
    attempt: dict[int, int],
    seed: int,
    model_key: str,
    stats: dict[str, int],
    progress: Callable[[int], object],
    settle: Callable[[int, Completion], bool],
    flush: Callable[[], None],
) -> list[int]:
    """Ask the backend for the calls of ``asked`` (their requests and cache keys, as
    :func:`_answer` made them; claimed by this process), in this process or on the
    active executor (:mod:`genfair.models.executor`); each answer is stored the moment it
    exists, after checking it (:func:`store_completion`), and settled. A re-ask it makes is
    claimed and sent at once, as a follow-up of the same send (its answer settled in turn);
    the calls whose re-ask another process holds are returned, to be awaited later."""
    sent = list(asked)  # the call of each request sent, by position
    batch = [request for request, _ in asked.values()]
    asked_of = list(batch)  # the request of each position (follow-ups appended)
    keys = [key for _, key in asked.values()]
    again: list[int] = []
    later: list[int] = []

    def record(position: int, completion: Completion) -> None:
        recorded.add(position)
        usage.record(backend, asked_of[position], completion, "sent", keys[position])
        progress(1)
        if settle(sent[position], completion):
            again.append(sent[position])

    def follow() -> list[tuple[Request, str]]:
        """The re-asks the answers recorded since the last call made, claimed: to send now."""
        flush()  # the executor calls this after each group of answers
        if not again:
            return []
        asked = {i: _request(calls[i], attempt[i], seed) for i in again}
        wanted = {i: cache.key(backend.request_fingerprint(r), r) for i, r in asked.items()}
        again.clear()
        mine = cache.claim(list(wanted.values()))
        now = [i for i in wanted if wanted[i] in mine]
        later.extend(i for i in wanted if wanted[i] not in mine)  # cached, or another's
        if stopped := _over_budget(now, wanted, cache, settle):
            stats["stopped"] += len(stopped)
            progress(len(stopped))
            now = now[: len(now) - len(stopped)]
        sent.extend(now)
        asked_of.extend(asked[i] for i in now)
        keys.extend(wanted[i] for i in now)
        stats["called"] += len(now)
        return [(asked[i], wanted[i]) for i in now]

    recorded: set[int] = set()
    position: dict[int, int] = {}  # id of a request in the local backend's hands -> position

    def on_done(request: Request, completion: Completion) -> None:
        n = position[id(request)]
        record(n, store_completion(cache, keys[n], model_key, completion))

    stats["called"] += len(asked)
    with cache.holding(keys):  # released at the end, follow-ups' keys too
        executor = active()
        if executor is None or not executor.send(
            backend, batch, list(keys), model_key, record, follow
        ):
            todo = list(zip(batch, keys, strict=True))
            while todo:
                first = len(sent) - len(todo)
                position.clear()
                position.update((id(r), first + n) for n, (r, _) in enumerate(todo))
                backend.complete([request for request, _ in todo], on_done)
                todo = follow()
        if again:  # an executor sends follow-ups until there are none
            raise RuntimeError(
                f"{type(executor).__name__} left {len(again)} follow-up calls unsent"
            )
    for n in range(len(sent)):  # a backend that broke its contract: recorded, not a crash
        if n not in recorded:
            record(n, Completion(status="error", error="backend returned no completion"))
    flush()
    return later


def _over_budget(
    send: list[int],
    keys: dict[int, str],
    cache: ResponseCache,
    settle: Callable[[int, Completion], bool],
) -> list[int]:
    """The tail of ``send`` the active budget stops (:func:`usage.admit`): released and
    settled as an ``error`` (never cached: asked again once the budget allows)."""
    stopped = send[usage.admit(len(send)) :]
    if stopped:
        cache.release([keys[i] for i in stopped])
        for i in stopped:
            settle(i, Completion(status="error", error=usage.OVER_BUDGET))
    return stopped


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
