"""lvlm_facet figures (paper 004): pooled recall per group with intervals (Table 2 as a plot)
and a class x group-pair disparity heatmap (the appendix tables as a picture).

Both take score rows (:func:`.scoring.score_rows`) with a ``model`` column, one model's or
a leaderboard's; SIMULATED models are drawn hollow and named so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES, DISPARITY_PAIRS, GROUPS
from genfair.methodologies.lvlm_facet.prompts import PROMPT_IDS, PROMPT_KINDS
from genfair.methodologies.lvlm_facet.recall import MACRO, POOLED
from genfair.methodologies.plotting import plt

__all__ = ["disparity_heatmap", "recall_figure"]

_CLASS_NAMES = {POOLED: "pooled (micro)", MACRO: "macro mean"}


def _label(model: str, simulated: bool) -> str:
    return f"{model} (SIMULATED)" if simulated else model


def _models(scores: pd.DataFrame) -> list[tuple[str, bool]]:
    if "model" not in scores:
        return [("model", False)]
    flags = (
        scores.groupby("model", sort=False)["simulated"].first() if "simulated" in scores else None
    )
    return [
        (str(m), bool(flags[m]) if flags is not None else False)
        for m in dict.fromkeys(scores["model"])
    ]


def recall_figure(scores: pd.DataFrame, title: str) -> Figure | None:
    """One panel per prompt x attribute: each model's pooled recall per group with its
    interval (None when there is no recall row)."""
    rows = scores[(scores["measure"] == "recall") & (scores["class"] == POOLED)]
    if rows.empty:
        return None
    prompts = [p for p in PROMPT_KINDS if p in set(rows["prompt"])]
    models = _models(scores)
    fig, axes = plt.subplots(
        len(prompts),
        len(ATTRIBUTES),
        figsize=(4.2 * len(ATTRIBUTES), 3.2 * len(prompts)),
        squeeze=False,
    )
    width = 0.8 / max(1, len(models))
    for i, prompt in enumerate(prompts):
        for j, attribute in enumerate(ATTRIBUTES):
            ax = axes[i][j]
            groups = GROUPS[attribute]
            for k, (model, simulated) in enumerate(models):
                part = rows[(rows["prompt"] == prompt) & (rows["attribute"] == attribute)]
                if "model" in part:
                    part = part[part["model"] == model]
                part = part.set_index("group").reindex(list(groups))
                x = np.arange(len(groups)) + (k - (len(models) - 1) / 2) * width
                value = part["value"].to_numpy(dtype=float)
                low = np.clip(value - part["ci_low"].to_numpy(dtype=float), 0, None)
                high = np.clip(part["ci_high"].to_numpy(dtype=float) - value, 0, None)
                ax.errorbar(
                    x,
                    value,
                    yerr=np.nan_to_num(np.vstack([low, high])),
                    fmt="o",
                    capsize=3,
                    color=f"C{k}",
                    mfc="none" if simulated else f"C{k}",
                    label=_label(model, simulated) if (i, j) == (0, 0) else None,
                )
            ax.set_xticks(np.arange(len(groups)), groups)
            ax.set(ylim=(0, 1.02), title=f"{PROMPT_IDS[prompt]} {prompt} - {attribute}")
            ax.grid(alpha=0.3, axis="y")
            if j == 0:
                ax.set_ylabel("pooled recall (95% CI)")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def disparity_heatmap(scores: pd.DataFrame, title: str) -> Figure | None:
    """Classes (then pooled and macro) x (prompt, paper pair) disparities of one model, as
    the paper's appendix tables; an n/a cell (an empty group) is left blank."""
    rows = scores[scores["measure"] == "disparity"]
    if rows.empty:
        return None
    columns = [
        (p, a)
        for p in PROMPT_KINDS
        for a in ATTRIBUTES
        if ((rows["prompt"] == p) & (rows["attribute"] == a)).any()
    ]
    classes = [c for c in dict.fromkeys(rows["class"]) if c not in (POOLED, MACRO)] + [
        POOLED,
        MACRO,
    ]
    grid = rows.pivot_table(
        index="class",
        columns=["prompt", "attribute"],
        values="value",
        aggfunc="first",
        dropna=False,
    )
    grid = grid.reindex(index=classes, columns=pd.MultiIndex.from_tuples(columns))
    values = grid.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(1.1 * len(columns) + 3, 0.32 * len(classes) + 1.8))
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    for (r, c), v in np.ndenumerate(values):
        ax.text(c, r, "n/a" if math.isnan(v) else f"{v:+.2f}", ha="center", va="center", fontsize=6)
    ax.set_xticks(
        range(len(columns)),
        [f"{PROMPT_IDS[p]} {'-'.join(DISPARITY_PAIRS[a])}" for p, a in columns],
        rotation=45,
        ha="right",
    )
    ax.set_yticks(range(len(classes)), [_CLASS_NAMES.get(c, c) for c in classes])
    fig.colorbar(image, ax=ax, label="recall(a) - recall(b)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
