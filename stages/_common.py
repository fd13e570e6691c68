"""Shared entry point of the stage scripts: logging, params, and one clear error line."""

from __future__ import annotations

import sys
from collections.abc import Callable

from genfair.config import ConfigError, load_params
from genfair.logs import setup


def run(stage: str, step: Callable, *, model: str | None = None, methodology: str | None = None) -> None:
    log = setup(stage, model=model, methodology=methodology)
    try:
        params = load_params()
        args = [a for a in (model, methodology) if a is not None]
        step(params, *args)
    except (ConfigError, FileNotFoundError, ValueError, KeyError) as exc:
        # bad input: one clear line (the traceback with GENFAIR_LOG_LEVEL=DEBUG)
        log.error("%s", exc)
        log.debug("traceback", exc_info=True)
        sys.exit(1)
