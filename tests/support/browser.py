"""Helpers of the Chromium tests: the browser, a watched page, waiting on the page."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


@dataclass
class Seen:
    """What a page did: the URLs it requested, its console errors and uncaught exceptions,
    the dialogs it opened (each dismissed)."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def sync_api() -> Any:
    """Playwright's sync API, or a skip naming what installs it (and Chromium)."""
    api = pytest.importorskip("playwright.sync_api", reason="playwright: make setup")
    if not Path(CHROMIUM).exists():
        pytest.skip(
            "no Chromium: `make setup` installs Debian's chromium when run as root "
            "(apt-get install chromium chromium-driver)"
        )
    return api


@contextmanager
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright, closed on the way out."""
    with sync_api().sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


@contextmanager
def watched_page(width: int = 1280, height: int = 900) -> Iterator[tuple[Any, Seen]]:
    """A new page in :func:`browser` and what it did (:class:`Seen`)."""
    seen = Seen()
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": width, "height": height})
        page.on("request", lambda r: seen.requests.append(r.url))
        page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: seen.errors.append(str(e)))
        page.on("dialog", lambda d: (seen.dialogs.append(d.message), d.dismiss()))
        yield page, seen


def wait_until(page: Any, function: str, timeout: float = 60.0) -> None:
    """Wait until ``function`` (JavaScript, called in the page) returns true. Playwright's
    ``wait_for_function`` evaluates its predicate with ``eval``, which the report's
    Content-Security-Policy forbids; ``page.evaluate`` is not subject to it."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(function):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true after {timeout:.0f} s: {function}")
        page.wait_for_timeout(50)
