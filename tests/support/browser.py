"""Helpers of the Chromium tests."""

from __future__ import annotations

import time
from typing import Any


def wait_until(page: Any, function: str, timeout: float = 60.0) -> None:
    """Wait until ``function`` (JavaScript, called in the page) returns true. Playwright's
    ``wait_for_function`` evaluates its predicate with ``eval``, which the report's
    Content-Security-Policy forbids; ``page.evaluate`` is not subject to it."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(function):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true after {timeout:.0f} s: {function}")
        page.wait_for_timeout(50)
