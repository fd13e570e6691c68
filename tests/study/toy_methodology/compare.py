"""The toy quiz's comparison role: its leaderboard ranked by accuracy, its one headline
number, and what a paired comparison of two models resamples."""

from __future__ import annotations

from typing import Any

import pandas as pd

from genfair.methodologies.comparison import Comparison, Headline, Ranking

from .config import QuizConfig


class QuizComparison(Comparison[QuizConfig]):
    """The toy quiz's comparison role: models ranked and compared on their accuracy."""

    ranking = Ranking(("measure",), "mean", False)
    headline = (Headline("accuracy", "mean", {"measure": "accuracy"}, "higher"),)
    #: a question: what a paired comparison of two models resamples
    paired_unit = "probe_id"

    def headline_function(self, config: QuizConfig, modality: str) -> Any:
        def accuracy(labels: pd.DataFrame) -> dict[str, float]:
            valid = labels[labels["status"] == "ok"]
            return {"accuracy": float(valid["correct"].mean()) if len(valid) else float("nan")}

        return accuracy
