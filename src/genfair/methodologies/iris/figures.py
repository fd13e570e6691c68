"""IRIS figures (paper 002): the six-sector score chart with Table 3's codes, and Fig. 4(c),
the correlation matrix of the six sector scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from genfair.methodologies.iris.scoring import OVERALL, SECTORS
from genfair.methodologies.iris.validity import correlation_matrix, sector_correlation
from genfair.methodologies.plotting import plt


def sector_figure(scores: pd.DataFrame, title: str, tau: float = 60.0) -> Figure:
    """Grouped bars: the six sector scores and the overall IRIS score per model (higher is
    fairer), the code threshold ``tau`` as a line, each model's Gen/Und codes in the legend.

    ``scores``: the study's IRIS scores table (``model``, ``sector``, ``score``, ``gen_code``,
    ``und_code``; ``simulated`` optional). Simulators are hatched and labelled as such.
    """
    sectors = [s for s in (*SECTORS, OVERALL) if s in set(scores["sector"])]
    models = list(dict.fromkeys(scores["model"]))
    fig, ax = plt.subplots(figsize=(max(7.0, 1.25 * len(sectors) * max(1, len(models)) / 2), 4.2))
    width = 0.8 / max(1, len(models))
    for j, model in enumerate(models):
        rows = scores[scores["model"] == model].set_index("sector").reindex(sectors)
        simulated = (
            bool(rows["simulated"].dropna().iloc[0])
            if "simulated" in rows and rows["simulated"].notna().any()
            else False
        )
        codes = "/".join(
            str(c)
            for c in (
                rows["gen_code"].dropna().iloc[0] if rows["gen_code"].notna().any() else "-",
                rows["und_code"].dropna().iloc[0] if rows["und_code"].notna().any() else "-",
            )
        )
        label = f"{model}{' (SIMULATED)' if simulated else ''} · codes Gen/Und {codes}"
        x = np.arange(len(sectors)) + (j - (len(models) - 1) / 2) * width
        bars = ax.bar(
            x, np.nan_to_num(rows["score"].to_numpy(float)), width, label=label, color=f"C{j}"
        )
        for bar, value in zip(bars, rows["score"].to_numpy(float), strict=True):
            if simulated:
                bar.set_hatch("//")
            if np.isnan(value):
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    1,
                    "n/a",
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    rotation=90,
                )
    ax.axhline(tau, color="0.3", lw=1, ls="--", label=f"code threshold τ = {tau:g}")
    ax.set_xticks(np.arange(len(sectors)), sectors)
    top = np.nanmax(
        scores.loc[scores["sector"].isin(sectors), "score"].to_numpy(float), initial=0.0
    )
    ax.set(ylim=(0, max(100.0, 1.05 * top)), ylabel="score (higher is fairer)", title=title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def correlation_figure(table: pd.DataFrame, title: str) -> Figure:
    """Heat map of :func:`~genfair.methodologies.iris.validity.sector_correlation`'s r
    (n/a cells blank), each cell annotated with r and the number of models."""
    matrix = correlation_matrix(table)
    counts = table.pivot(index="sector_a", columns="sector_b", values="n_models").reindex(
        index=matrix.index, columns=matrix.columns
    )
    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    image = ax.imshow(
        np.ma.masked_invalid(matrix.to_numpy(float)), cmap="coolwarm", vmin=-1, vmax=1
    )
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
    table = sector_correlation(
        scores[["model", "sector", "score", *(["partial"] if "partial" in scores else [])]]
    )
    if table["sector_a"].nunique() < 2:
        return []
    return [(correlation_figure(table, title), "sector_correlation.png")]
