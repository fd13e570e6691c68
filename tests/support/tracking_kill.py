"""Run ``track`` or ``mlflow_sync`` in this process and stop it for good at a named point, so
that a test can SIGKILL it there: ``python -m tests.support.tracking_kill STAGE POINT PARAMS``.

At the point it writes ``reached`` (next to the params file) and waits forever; the test waits
for that file (a state, not a delay) and kills the process. Points:

- ``before_parent``: the experiment exists, no run yet;
- ``parent_created``: the parent run exists, nothing logged to it yet;
- ``parent_artifact``: an artifact of the parent uploaded, the parent still RUNNING;
- ``between_children``: the parent and the first child finished, the second not started;
- ``child_artifact``: an artifact of the first child uploaded, the child still RUNNING.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlflow

from genfair.frame import StudyFrame
from genfair.methodologies import register
from genfair.study import tracking
from genfair.study.always import sync_store
from genfair.study.layout import Layout
from genfair.study_params import StudyParams
from tests.study.toy_methodology import Quiz

POINTS = (
    "before_parent",
    "parent_created",
    "parent_artifact",
    "between_children",
    "child_artifact",
)


class QuizB(Quiz):
    """A second toy methodology, so that a study has two child runs per model."""

    name = "toy_quiz_b"


def _stop(reached: Path) -> None:
    reached.write_text("reached", encoding="utf-8")
    threading.Event().wait()  # until killed


def _hook(point: str, reached: Path) -> None:
    calls: dict[str, int] = {}
    in_child = threading.Event()

    def wrap(
        owner: Any,
        attr: str,
        before: Callable[[int], bool] = lambda n: False,
        after: Callable[[int], bool] = lambda n: False,
    ) -> None:
        original = getattr(owner, attr)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            calls[attr] = calls.get(attr, 0) + 1
            if before(calls[attr]):
                _stop(reached)
            out = original(*args, **kwargs)
            if after(calls[attr]):
                _stop(reached)
            return out

        setattr(owner, attr, wrapped)

    if point == "before_parent":
        wrap(tracking, "_log_parent", before=lambda n: True)
    elif point == "parent_created":
        wrap(mlflow, "log_params", before=lambda n: n == 1)
    elif point == "parent_artifact":
        wrap(mlflow, "log_artifact", after=lambda n: n == 1)
    elif point == "between_children":
        wrap(tracking, "_log_child", before=lambda n: n == 2)
    elif point == "child_artifact":
        wrap(tracking, "_log_child", before=lambda n: in_child.set() or False)
        wrap(mlflow, "log_artifact", after=lambda n: in_child.is_set())
    else:
        raise SystemExit(f"unknown point {point!r}: one of {', '.join(POINTS)}")


def main(stage: str, point: str, params_file: Path) -> None:
    register(Quiz)
    register(QuizB)
    raw = json.loads(params_file.read_text(encoding="utf-8"))
    _hook(point, params_file.parent / "reached")
    layout = Layout(Path.cwd())
    if stage == "track":
        tracking.track_study(StudyParams.model_validate(raw), layout)
    else:
        sync_store(StudyFrame.model_validate(raw), layout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
