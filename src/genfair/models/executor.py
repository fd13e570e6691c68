"""Who executes a stage's uncached calls: this process (the default) or a cluster.

The runner (:mod:`genfair.models.runner`) decides *which* calls to send (cache first,
claims, re-asks); an executor decides *where* they run. The local one is the backend's own
``complete`` in this process. Another executor (:mod:`genfair.models.dask_executor`) is made
active for a block with :func:`executing`, so every call of that block goes through it,
whichever methodology, step or helper model sends it: no methodology knows where its calls
run. An executor may decline a backend it cannot rebuild elsewhere (one built in code
rather than from a model config); those calls then run locally.

Whatever runs a call stores it with :func:`store_completion`: checked, masked and cached
the moment it exists, so a lost process or worker loses nothing it finished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from genfair.models.base import Completion, LLMBackend, Request
from genfair.models.redaction import redact_completion

if TYPE_CHECKING:  # the cache needs SQLAlchemy: loaded by whoever opens one
    from genfair.models.cache import ResponseCache

log = logging.getLogger(__name__)

#: called once per request with its index and its completion (already cached): the
#: requests handed to ``send`` first, then its follow-ups in the order they were returned
OnResult = Callable[[int, Completion], None]
#: the follow-up requests (with their cache keys) that the answers recorded since the last
#: call made (a re-ask of an invalid answer), to send at once; empty when there are none
FollowUps = Callable[[], Sequence[tuple[Request, str]]]


class Executor(Protocol):
    def concurrent(self, backend: LLMBackend) -> bool:
        """Whether calls to ``backend`` sent from several threads at once run side by side
        elsewhere (so follow-ups are worth sending ahead: :mod:`genfair.models.ahead`)."""
        ...

    def send(
        self,
        backend: LLMBackend,
        requests: Sequence[Request],
        keys: Sequence[str],
        model_key: str,
        on_result: OnResult,
        follow: FollowUps,
    ) -> bool:
        """Answer ``requests`` (cache ``keys``) and store each answer; ``on_result`` once per
        request. After each group of answers, ``follow()``: the follow-ups they made, sent at
        once (not after the other requests), until it returns none. ``False`` (nothing sent)
        when this executor cannot run ``backend``."""
        ...


_active: ContextVar[Executor | None] = ContextVar("genfair_executor", default=None)


def active() -> Executor | None:
    """The executor of the current block, or ``None`` (run in this process)."""
    return _active.get()


@contextmanager
def executing(executor: Executor | None) -> Iterator[None]:
    """Run every call sent in this block through ``executor`` (``None``: in this process)."""
    token = _active.set(executor)
    try:
        yield
    finally:
        _active.reset(token)


def store_completion(
    cache: ResponseCache, key: str, model_key: str, completion: Completion
) -> Completion:
    """``completion`` masked and checked (:func:`checked`), then cached under ``key``."""
    completion = checked(completion, model_key)
    cache.put(key, model_key, completion)
    return completion


def checked(completion: Completion, model_key: str) -> Completion:
    """``completion`` masked and checked: a malformed one becomes an ``error`` (not cached,
    asked again on the next run), never a cached success."""
    completion = redact_completion(completion)
    problem = completion.problem()
    if problem is not None:
        log.warning("malformed completion from %s: %s; recorded as an error", model_key, problem)
        completion = Completion(
            status="error",
            error=f"malformed completion: {problem}",
            latency_s=_number(completion.latency_s),
            tries=_count(completion.tries),
        )
    return completion


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _count(value: Any) -> int:
    return value if isinstance(value, int) else 1
