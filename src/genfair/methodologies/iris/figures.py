"""IRIS figures (paper 002): Fig. 4(c), the correlation matrix of the six sector scores."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: files only

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from genfair.methodologies.iris.validity import correlation_matrix, sector_correlation


def correlation_figure(table: pd.DataFrame, title: str) -> Figure:
    """Heat map of :func:`~genfair.methodologies.iris.validity.sector_correlation`'s r
    (n/a cells blank), each cell annotated with r and the number of models."""
    matrix = correlation_matrix(table)
    counts = table.pivot(index="sector_a", columns="sector_b", values="n_models").reindex(
        index=matrix.index, columns=matrix.columns)
    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    image = ax.imshow(np.ma.masked_invalid(matrix.to_numpy(float)), cmap="coolwarm", vmin=-1, vmax=1)
    ax.set_xticks(range(len(matrix.columns)), matrix.columns, rotation=45, ha="right")
    ax.set_yticks(range(len(matrix.index)), matrix.index)
    for i, a in enumerate(matrix.index):
        for j, b in enumerate(matrix.columns):
            r = matrix.at[a, b]
            text = "n/a" if pd.isna(r) else f"{r:.2f}"
            ax.text(j, i, f"{text}\nn={int(counts.at[a, b])}", ha="center", va="center", fontsize=7)
    method = table["method"].iloc[0] if len(table) else "pearson"
    fig.colorbar(image, ax=ax, label=f"{method} correlation across models")
    ax.set_title(f"{title}: sector score correlation (IRIS Fig. 4(c))")
    fig.tight_layout()
    return fig


def study_figures(scores: pd.DataFrame, title: str) -> list[tuple[Figure, str]]:
    """Fig. 4(c) for a leaderboard (IRIS scores of >= 3 models, at least two sectors); none
    for one model's rows (its granular metrics) or a smaller study."""
    if not {"model", "sector", "score"} <= set(scores.columns) or scores["model"].nunique() < 3:
        return []
    table = sector_correlation(scores[["model", "sector", "score", *(["partial"] if "partial" in scores else [])]])
    if table["sector_a"].nunique() < 2:
        return []
    return [(correlation_figure(table, title), "sector_correlation.png")]
