"""OpenBias figures (paper 003 Figs. 3, 4, 9): biases ranked by severity, and context-aware vs
context-free severity side by side. One panel per model when the scores hold several."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from genfair.methodologies.plotting import plt

__all__ = ["aware_vs_free_figure", "ranking_figure"]


def _panels(scores: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    rows = scores[scores["severity_context_aware"].notna()]
    if "model" not in rows:
        return [("", rows)]
    out = []
    for model, part in rows.groupby("model", sort=False):
        simulated = "simulated" in part and bool(part["simulated"].astype(bool).any())
        out.append((f"{model} (SIMULATED)" if simulated else str(model), part))
    return out


def _names(part: pd.DataFrame) -> list[str]:
    return [str(v) for v in (part["label"] if "label" in part else part["bias_id"])]


def _severity_figure(
    scores: pd.DataFrame,
    title: str,
    row_height: float,
    xlabel: str,
    draw: Callable[[Axes, np.ndarray, pd.DataFrame], None],
) -> Figure:
    """One panel per model (:func:`_panels`), a bar row per bias sorted by context-aware
    severity (most severe on top); ``draw(ax, y, part)`` draws a panel's bars."""
    panels = _panels(scores)
    height = max(2.5, row_height * max((len(p) for _, p in panels), default=1) + 1.2)
    fig, axes = plt.subplots(
        1, len(panels) or 1, figsize=(6 * max(1, len(panels)), height), squeeze=False
    )
    for ax, (name, part) in zip(axes[0], panels, strict=False):
        part = part.sort_values("severity_context_aware")
        y = np.arange(len(part))
        draw(ax, y, part)
        ax.set(yticks=y, yticklabels=_names(part), xlim=(0, 1.05), xlabel=xlabel, title=name)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def ranking_figure(scores: pd.DataFrame, title: str) -> Figure:
    """Biases by context-aware severity (most severe on top) with their intervals."""

    def draw(ax: Axes, y: np.ndarray, part: pd.DataFrame) -> None:
        value = part["severity_context_aware"].to_numpy(float)
        err = np.vstack(
            [
                value - part["context_aware_ci_low"].to_numpy(float),
                part["context_aware_ci_high"].to_numpy(float) - value,
            ]
        )
        ax.barh(y, value, xerr=np.clip(err, 0, None), color="C0", capsize=2)

    return _severity_figure(scores, title, 0.35, "context-aware severity", draw)


def aware_vs_free_figure(scores: pd.DataFrame, title: str) -> Figure:
    """Paired bars per bias: context-aware and context-free severity (a bias high in the first
    and low in the second is biased within captions only, the paper's Fig. 9)."""

    def draw(ax: Axes, y: np.ndarray, part: pd.DataFrame) -> None:
        ax.barh(
            y + 0.2, part["severity_context_aware"], height=0.4, color="C0", label="context-aware"
        )
        ax.barh(
            y - 0.2, part["severity_context_free"], height=0.4, color="C1", label="context-free"
        )
        ax.legend(fontsize=8, loc="lower right")

    return _severity_figure(scores, title, 0.45, "severity", draw)
