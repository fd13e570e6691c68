"""Issue 46.6: a headline number reported for information, ``Headline.better = NEUTRAL``:
its ``dvc metrics`` file ends ``.reported.json``, ``data/headline.json`` says "reported, not
ranked", and no rank stands beside it, although its leaderboard row is ranked."""

from __future__ import annotations

from typing import ClassVar

import pandas as pd
import pytest

from genfair.methodologies.comparison import BETTER_VALUES, NEUTRAL, Headline
from genfair.study.scoring import headline, headline_rows, leaderboard, metric_files
from tests.study.toy_methodology import Quiz
from tests.study.toy_methodology.compare import QuizComparison


class AnsweredComparison(QuizComparison):
    headline = (
        *QuizComparison.headline,
        Headline("answered", "n", {"measure": "accuracy"}, NEUTRAL),
    )


class Answered(Quiz):
    """The toy quiz with a second headline: how many answers counted, for information."""

    name: ClassVar[str] = "toy_answered"
    comparison_role = AnsweredComparison


def _board() -> pd.DataFrame:
    """Two real models (ranked by accuracy) and a simulator, as ``board_for`` leaves them."""
    rows = pd.DataFrame(
        {
            "model": ["real_a", "real_b", "planted"],
            "backend": ["hf", "openai", "simulated"],
            "modality": "llm",
            "simulated": [False, False, True],
            "measure": "accuracy",
            "mean": [0.6, 0.9, 0.75],
            "n": [30, 20, 25],
        }
    )
    return leaderboard(rows, Answered.comparison_role.ranking)


def test_a_neutral_headline_has_the_reported_suffix_and_no_rank() -> None:
    method, board = Answered(), _board()
    assert board.set_index("model")["rank"].to_dict()["real_b"] == 1  # the row is ranked
    rows = {(r["model"], r["name"]): r for r in headline_rows(method, board)}
    assert rows["real_b", "accuracy"]["rank"] == 1 and rows["real_a", "accuracy"]["rank"] == 2
    assert [rows[m, "answered"]["rank"] for m in ("real_a", "real_b", "planted")] == [None] * 3
    assert (
        rows["real_a", "answered"]["value"] == 30
        and rows["real_a", "answered"]["better"] == NEUTRAL
    )

    files = metric_files(method, board)
    assert files["real_a/answered.reported.json"] == {"value": 30.0}
    assert files["planted.SIMULATED/answered.reported.json"] == {"value": 25.0}
    assert files["real_b/accuracy.higher_better.json"] == {"value": 0.9}  # unchanged names
    assert not [f for f in files if "answered" in f and "better" in f]

    summary = headline(method, board)
    assert summary["real_b"] == {
        "simulated": False,
        "accuracy (higher is better)": 0.9,
        "answered (reported, not ranked)": 20.0,
    }


def test_a_direction_not_known_is_refused_naming_the_values() -> None:
    assert NEUTRAL in BETTER_VALUES
    with pytest.raises(ValueError, match="better='sideways'; use one of .*'neither'"):
        Headline("answered", "n", {}, "sideways")  # type: ignore[arg-type]
