"""The toy quiz's presentation role: its report title and its ``dvc plots`` figure (the figures,
report section, samples and MLflow record are the defaults)."""

from __future__ import annotations

from typing import ClassVar

import pandas as pd

from genfair.methodologies.presentation import Plot, Presentation

from .config import QuizConfig


class QuizPresentation(Presentation[QuizConfig]):
    title: ClassVar[str] = "Toy quiz: which number is larger"
    plots: ClassVar[tuple[Plot, ...]] = (
        Plot("accuracy", "Toy quiz accuracy per model", "mean", "model", "bar_horizontal"),
    )

    def plot_tables(self, board: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return {"accuracy": board[["model", "mean", "ci_low", "ci_high"]]} if len(board) else {}
