"""Shared entry point of the stage scripts: logging, params, and one clear error line."""

from __future__ import annotations

import sys
from collections.abc import Callable

from genfair.config import ConfigError, load_params
from genfair.logs import setup
from genfair.study.steps import IncompleteGeneration

#: bad input or an incomplete run: the message says what to fix
EXPECTED = (ConfigError, FileNotFoundError, ValueError, KeyError, IncompleteGeneration)


def run(stage: str, step: Callable, *, model: str | None = None, methodology: str | None = None) -> None:
    log = setup(stage, model=model, methodology=methodology)
    try:
        params = load_params()
        args = [a for a in (model, methodology) if a is not None]
        step(params, *args)
    except EXPECTED as exc:
        # one clear line (the traceback with GENFAIR_LOG_LEVEL=DEBUG)
        log.error("%s", exc)
        log.debug("traceback", exc_info=True)
        sys.exit(1)
    except KeyboardInterrupt:
        log.error("interrupted: everything answered so far is in the response cache; rerun to resume")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - anything else: still one line, the traceback on demand
        log.error("unexpected %s: %s (GENFAIR_LOG_LEVEL=DEBUG shows the traceback)", type(exc).__name__, exc)
        log.debug("traceback", exc_info=True)
        sys.exit(1)
