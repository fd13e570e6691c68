"""Logging that says which stage, model and methodology is running."""

from __future__ import annotations

import logging
import os

_FORMAT = "%(asctime)s %(levelname)-7s [%(context)s] %(name)s: %(message)s"


class _Context(logging.Filter):
    def __init__(self, context: str):
        super().__init__()
        self.context = context

    def filter(self, record: logging.LogRecord) -> bool:
        record.context = self.context
        return True


def setup(stage: str, model: str | None = None, methodology: str | None = None) -> logging.Logger:
    """Configure root logging once per process; level from ``GENFAIR_LOG_LEVEL`` (INFO)."""
    context = " ".join(f"{k}={v}" for k, v in (("stage", stage), ("model", model), ("methodology", methodology)) if v)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(_FORMAT, datefmt="%H:%M:%S"))
    handler.addFilter(_Context(context))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("GENFAIR_LOG_LEVEL", "INFO").upper())
    for noisy in ("httpx", "urllib3", "filelock", "alembic", "matplotlib", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return logging.getLogger("genfair")
