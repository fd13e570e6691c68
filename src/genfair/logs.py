"""Logging that says which stage, model and methodology is running, and text made safe for
a terminal or a log line (:func:`printable`)."""

from __future__ import annotations

import logging
import numbers
import os
import sys
import time
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

from genfair.urls import strip_in_text


def printable(text: object) -> str:
    """``text`` with every unprintable character (controls such as newline and ESC, U+0085,
    line and paragraph separators, bidirectional overrides, unassigned code points) escaped
    as ``\\n``, ``\\x1b``, ``\\u202e``: text from a model, an endpoint, a web page or a config
    stays one line and can neither forge a log line nor drive the terminal."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def shown(text: object) -> str:
    """``text`` as a report, a figure or a table shows it: every format character (Unicode
    category Cf: bidirectional overrides and isolates such as U+202E, zero-width spaces and
    joiners, byte-order marks) escaped as ``\\u202e``, so that a model's "gender \\u202e99.0"
    cannot read "gender 0.99" (issue 44). Line breaks stay (a figure's title may wrap); the
    stored data keeps the raw text. :func:`printable` escapes these and every other
    unprintable character for a terminal or a log line."""
    text = str(text)
    if text.isprintable() or not any(unicodedata.category(ch) == "Cf" for ch in text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode() if unicodedata.category(ch) == "Cf" else ch
        for ch in text
    )


def _inert(value: Any) -> Any:
    """A log argument as data: numbers kept (for ``%d``, ``%.1f``), anything else printable."""
    if value is None or isinstance(value, numbers.Number):
        return value
    return printable(value)


_FORMAT = "%(asctime)s %(levelname)-7s [%(context)s] %(name)s: %(message)s"


class _Context(logging.Filter):
    def __init__(self, context: str):
        super().__init__()
        self.context = context

    def filter(self, record: logging.LogRecord) -> bool:
        record.context = self.context
        # the format is code, its arguments are data: an argument's newline or escape code is
        # escaped, so a model's or an endpoint's text can neither forge a line nor drive the
        # terminal (the format's own newlines, e.g. before a table, stay)
        args = record.args
        if record.name == "py.warnings":  # a captured warning: its whole text is data
            record.msg = printable(str(record.msg).rstrip("\n"))
        if isinstance(args, tuple):
            args = tuple(_inert(a) for a in args)
        elif isinstance(args, dict):
            args = {k: _inert(v) for k, v in args.items()}
        try:
            message = str(record.msg) % args if args else str(record.msg)
        except Exception:  # a broken format string: the formatter reports it
            return True
        # a URL's password or token never reaches a log line
        record.msg, record.args = strip_in_text(message), ()
        return True


def setup(stage: str, model: str | None = None, methodology: str | None = None) -> logging.Logger:
    """Configure root logging once per process; level from ``GENFAIR_LOG_LEVEL`` (INFO)."""
    context = " ".join(
        f"{k}={v}"
        for k, v in (("stage", stage), ("model", model), ("methodology", methodology))
        if v
    )
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(_FORMAT, datefmt="%H:%M:%S"))
    handler.addFilter(_Context(context))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("GENFAIR_LOG_LEVEL", "INFO").upper())
    for noisy in ("httpx", "urllib3", "filelock", "alembic", "matplotlib", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # a library's warning can quote data (matplotlib names a glyph a model's text lacks): as
    # a log record it is escaped like any other
    logging.captureWarnings(True)
    return logging.getLogger("genfair")


class _LogProgress:
    """A progress counter that logs ``desc: n/total (rate/s)`` every ``every`` seconds and
    at the end: what :func:`progress` gives when output is not a terminal (CI, DVC, files)."""

    def __init__(
        self, iterable: Iterable[Any] | None, total: int | None, desc: str, unit: str, every: float
    ):
        self.iterable, self.total, self.desc, self.unit, self.every = (
            iterable,
            total,
            desc,
            unit,
            every,
        )
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            self.total = len(iterable)  # type: ignore[arg-type]
        self.n = 0
        self._start = self._last = time.monotonic()
        self._log = logging.getLogger("genfair.progress")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self._emit(now)

    def _emit(self, now: float, prefix: str = "") -> None:
        elapsed = max(now - self._start, 1e-9)
        of = f"/{self.total}" if self.total is not None else ""
        self._log.info(
            "%s: %s%d%s %s (%.1f/s, %.0f s)",
            self.desc or "progress",
            prefix,
            self.n,
            of,
            self.unit,
            self.n / elapsed,
            elapsed,
        )

    def close(self) -> None:
        if self.n and time.monotonic() - self._start >= self.every:
            self._emit(time.monotonic(), "done, ")

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update()
        self.close()

    def __enter__(self) -> _LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    every: float | None = None,
) -> Any:
    """Progress of a loop that may take more than a few seconds: a tqdm bar (counts, rate,
    time left) when stderr is a terminal, else plain ``INFO`` log lines every ``every``
    seconds (``GENFAIR_PROGRESS_EVERY``, default 30) and one at the end, so CI and DVC logs
    show progress without bar redraws. Use as an iterable wrapper or with ``update(n)``."""
    if sys.stderr.isatty() and os.environ.get("GENFAIR_PROGRESS", "auto") != "log":
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=False)
    every = float(os.environ.get("GENFAIR_PROGRESS_EVERY", 30)) if every is None else every
    return _LogProgress(iterable, total, desc, unit, every)
