"""FACT-OR-FAIR trade-off plots (paper 000 Fig. 4-9): models as points, the max-S_E curve."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from genfair.methodologies.fact_or_fair.tradeoff import max_entropy_curve
from genfair.methodologies.plotting import mathtext, plt


def tradeoff_figure(scores: pd.DataFrame, title: str) -> Figure:
    """One panel per attribute: (S_fact, S_E) per model and the upper-bound curve.

    ``scores`` has columns model, attribute, k, s_fact, s_e and optionally simulated;
    simulators are drawn hollow and labelled as such. With ``s_fact_lo/_hi`` and
    ``s_e_lo/_hi`` columns, each point gets its bootstrap intervals as error bars.
    """
    attributes = [a for a in ("gender", "race") if a in set(scores["attribute"])]
    fig, axes = plt.subplots(1, len(attributes), figsize=(5 * len(attributes), 4.4), squeeze=False)
    for ax, attribute in zip(axes[0], attributes, strict=True):
        part = scores[scores["attribute"] == attribute]
        k = int(part["k"].iloc[0])
        a = np.linspace(0, 1, 401)
        bound = f"max $S_E$ (k={k})"
        ax.plot(a, max_entropy_curve(a, k), color="0.35", lw=1.5, label=bound)
        for row in part.itertuples():
            simulated = bool(getattr(row, "simulated", False))
            name = f"{row.model} (simulated)" if simulated else row.model
            points = ax.scatter(
                row.s_fact,
                row.s_e,
                s=60,
                zorder=3,
                label=name,
                facecolors="none" if simulated else None,
                edgecolors="C3" if simulated else None,
            )
            if hasattr(row, "s_fact_lo") and hasattr(
                row, "s_e_lo"
            ):  # the bootstrap intervals, when present
                xerr = [[max(row.s_fact - row.s_fact_lo, 0)], [max(row.s_fact_hi - row.s_fact, 0)]]
                yerr = [[max(row.s_e - row.s_e_lo, 0)], [max(row.s_e_hi - row.s_e, 0)]]
                if np.isfinite(np.array([xerr, yerr], dtype=float)).all():
                    color = "C3" if simulated else points.get_facecolor()[0]
                    ax.errorbar(
                        row.s_fact,
                        row.s_e,
                        xerr=xerr,
                        yerr=yerr,
                        fmt="none",
                        ecolor=color,
                        elinewidth=1,
                        capsize=2,
                        alpha=0.7,
                        zorder=2,
                    )
        ax.set(xlim=(0, 1), ylim=(0, 1.05), title=attribute.capitalize())
        ax.grid(alpha=0.3)
        legend = ax.legend(fontsize=8, loc="lower left")
        # formulas written here (model names in the legend are names: never a $)
        bound_entry = [t for t in legend.get_texts() if t.get_text() == bound]
        mathtext(ax.set_xlabel("$S_{fact}$"), ax.set_ylabel("$S_E$"), *bound_entry)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
