"""Shared entry point of the stage scripts: logging, params, and one clear error line."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from genfair.errors import EXPECTED, ConfigError
from genfair.frame import EXP_RESTORE, PARAMS_FILE
from genfair.logs import setup
from genfair.names import check_name

#: the repository these scripts belong to (DVC runs them from there)
ROOT = Path(__file__).resolve().parent.parent


def message(exc: BaseException, model: str | None) -> str:
    """The error's one line; a model config key at fault is named in full
    (``params.yaml: models.<model>.model_id: ...``), with the file in ``conf/`` that sets it."""
    from genfair.study.selection import where_to_edit

    key = getattr(exc, "config_key", None)
    text = f"{PARAMS_FILE}: models.{model}.{key}: {exc}" if key and model else str(exc)
    return where_to_edit(text)  # params.yaml is composed: the line names the conf/ file


def _study_params() -> Any:
    from genfair.study_params import load_params

    try:
        return load_params()
    except ConfigError as exc:  # `dvc exp run -S` leaves its value in params.yaml when it fails
        raise ConfigError(
            f"{exc}\n"
            f"(after a failed `dvc exp run -S`, put the workspace back with `{EXP_RESTORE}`; "
            "`genfair exp -S ...` validates overrides before DVC changes anything)"
        ) from None


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's timeout, ``kill``), raised in the main thread so that every
    ``finally`` runs: a generate stage's paid calls reach the usage ledger as sent. A
    ``KeyboardInterrupt``, so that what lets Ctrl-C through (asyncio's loop) lets it through."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in this block (Python's default ends the process at
    once, skipping ``finally``); only the main thread can install a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(
    stage: str,
    step: Callable,
    *,
    model: str | None = None,
    methodology: str | None = None,
    item: str | None = None,
    load: Callable[[], Any] | None = None,
) -> None:
    """Run ``step(params, *model/methodology/item)`` as the stage, with the params ``load`` returns
    (default :func:`genfair.study_params.load_params`: all of ``params.yaml``, validated)."""
    log = setup(stage, model=model, methodology=methodology)
    try:
        cwd = Path.cwd().resolve()
        if cwd != ROOT and ROOT in cwd.parents and (ROOT / PARAMS_FILE).is_file():
            # run by hand from a subdirectory: every path in params is relative to the root
            log.info("running from the repository root %s", ROOT)
            os.chdir(ROOT)
        # a name from the command line becomes a path: checked before anything is read or written
        args = [
            check_name(a, f"stage {stage}'s {what} argument")
            for a, what in ((model, "model"), (methodology, "methodology"), (item, "item"))
            if a is not None
        ]
        params = (load or _study_params)()
        with _sigterm_raises():
            step(params, *args)
    except EXPECTED as exc:
        # one clear line (the traceback with GENFAIR_LOG_LEVEL=DEBUG); a config error's own
        # lines (one problem each) stay lines, each escaped like any logged text
        for line in message(exc, model).split("\n"):
            log.error("%s", line)
        log.debug("traceback", exc_info=True)
        sys.exit(1)
    except Terminated:
        log.error(
            "terminated (SIGTERM): everything answered so far is in the response cache and its "
            "sent calls in the usage ledger; rerun to resume"
        )
        sys.exit(128 + signal.SIGTERM)
    except KeyboardInterrupt:
        log.error(
            "interrupted: everything answered so far is in the response cache; rerun to resume"
        )
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - anything else: still one line, the traceback on demand
        log.error(
            "unexpected %s: %s (GENFAIR_LOG_LEVEL=DEBUG shows the traceback)",
            type(exc).__name__,
            message(exc, model),
        )
        log.debug("traceback", exc_info=True)
        sys.exit(1)
