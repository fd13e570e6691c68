"""An HTTP model's request rate limit (``rate_limit: "500/minute"``): at most N requests
start in any window of one second or one minute, counted as providers count them (every
HTTP request, retries included).

In one process the window is :mod:`limits`' moving window (thread-safe, in memory), shared
by every backend of the same endpoint and model, counting requests as they start. On a Dask
cluster the executor swaps in a cluster-wide window (:mod:`genfair.models.dask_executor`):
leases of a semaphore on the scheduler, each given back a window after its request was
answered, so the bound holds across all workers as the provider counts, however late a
loaded worker's request reaches it. The limit says how fast, not what: it is outside the cache key
and the run hashes (:data:`genfair.models.config.PLACEMENT_KEYS`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from genfair.io import stable_hash

#: the windows a limit may name (``N/second``, ``N/minute``)
UNITS = ("second", "minute")
_HINT = "write 'N/second' or 'N/minute' (N a whole number of requests, e.g. '500/minute')"


def parse_rate(text: str) -> RateLimitItem:
    """``text`` (``"N/second"`` or ``"N/minute"``) as a :class:`limits.RateLimitItem`;
    ``ValueError`` naming the expected form otherwise (not the value: a key pasted into the
    wrong field must not reach a log)."""
    try:
        item = parse(text)
    except ValueError:
        raise ValueError(f"not a rate: {_HINT}") from None
    if item.GRANULARITY.name not in UNITS or item.multiples != 1 or item.amount < 1:
        raise ValueError(f"not a rate of whole requests per second or minute: {_HINT}")
    return item


def endpoint_name(kind: str, config: Any, bound: object) -> str:
    """The name of a limit shared by every request to one endpoint and model: ``kind``, a
    hash of the endpoint and model (a URL never appears in a Dask dashboard or log) and the
    bound, which a cluster-wide semaphore cannot change."""
    return f"genfair-{kind}-{stable_hash([config.base_url, config.model_id], 16)}-{bound}"


def rate_name(config: Any) -> str:
    """Whose requests one ``rate_limit`` counts: the endpoint and model."""
    return endpoint_name("rate", config, config.rate_limit)


class Window(Protocol):
    def slot(self) -> AbstractAsyncContextManager[None]:
        """Held while one HTTP request is sent and answered: entered once the limit lets
        one more request start (and counting it)."""
        ...


class LocalWindow:
    """The limit in this process: a moving window keyed by ``name`` (endpoint and model)."""

    _limiter = MovingWindowRateLimiter(MemoryStorage())

    def __init__(self, item: RateLimitItem, name: str):
        self.item, self.name = item, name

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        while not self._limiter.hit(self.item, self.name):
            reset = self._limiter.get_window_stats(
                self.item, self.name
            ).reset_time  # the oldest start + window
            await asyncio.sleep(max(reset - time.time(), 0.001))
        yield
