"""Follow-up calls sent ahead: a step whose calls to one model depend on another model's
answers (questions about each generated image) asks each answer's follow-ups the moment that
answer exists, instead of after the whole first set.

On a cluster (an active executor, :mod:`genfair.models.executor`) the rows handed to
:func:`sending_ahead`'s ``add`` (a group at a time: a shard's answers) are turned into calls
(``calls_of``) and answered in the background, through the response cache, while the first
calls are still out: a few rounds at once, each taking every row that arrived since the last
began. The step then asks all its
follow-ups in its own order, as it always does, and finds them cached: the table is the same
bytes as on one machine, and each call is sent once (an answer sent ahead is stored before
the step asks for it). In one process there is one device, so nothing is sent ahead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import copy_context
from typing import TYPE_CHECKING, Any

from genfair.models import usage
from genfair.models.base import LLMBackend
from genfair.models.executor import active
from genfair.models.runner import Call, Judge, OnRows, run_calls

if TYPE_CHECKING:  # the cache needs SQLAlchemy: loaded by whoever opens one
    from genfair.models.cache import ResponseCache

log = logging.getLogger(__name__)

#: rounds of follow-ups out at once (each waits for its own answers, so one round would
#: hold back the rows that arrive meanwhile)
ROUNDS = 4


@contextmanager
def sending_ahead(
    backend: LLMBackend,
    cache: ResponseCache,
    calls_of: Callable[[list[dict[str, Any]]], Sequence[Call]],
    judge: Judge,
    *,
    seed: int,
    desc: str,
) -> Iterator[OnRows]:
    """An ``on_rows`` for the first calls' run: each group's follow-ups (``calls_of(rows)``,
    to ``backend``) are answered into ``cache`` as soon as it arrives. The block ends when every
    follow-up sent ahead is answered; one that failed is only logged (the step asks it again)."""
    executor = active()
    if executor is None or not executor.concurrent(backend):  # one process: the step asks them
        yield lambda rows: None  # in order afterwards
        return
    lock = threading.Lock()
    waiting: list[dict[str, Any]] = []
    rounds: list[Future[None]] = []

    def one_round() -> None:
        usage.sent_ahead()  # counted as sent now, not again when the step reads them
        with lock:
            rows = waiting[:]
            waiting.clear()
        calls = calls_of(rows) if rows else ()
        if calls:
            run_calls(backend, cache, calls, judge, seed=seed, desc=f"{desc} (ahead)")

    def add(rows: list[dict[str, Any]]) -> None:
        with lock:
            waiting.extend(rows)
        # in a copy of this context: it holds the executor
        rounds.append(pool.submit(copy_context().run, one_round))

    with ThreadPoolExecutor(ROUNDS, thread_name_prefix="ahead") as pool:
        try:
            yield add
        finally:
            for future in rounds:
                if (exc := future.exception()) is not None:
                    log.warning(
                        "%s: follow-ups sent ahead failed (%s: %s); the step asks them again",
                        desc,
                        type(exc).__name__,
                        str(exc).splitlines()[0] if str(exc) else "",
                    )
