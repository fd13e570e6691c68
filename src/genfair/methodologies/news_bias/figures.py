"""News-bias bar charts with error bars (paper 001, Figures 2-10 style).

One panel per level x attribute x measure (word W, sentence S and T, document W); bars per
model, side by side per prompt type, each with its confidence interval. Simulators are
hatched and labelled as such.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from genfair.methodologies.plotting import plt

_LEVELS = ("word", "sentence", "document")


def bias_bars(scores: pd.DataFrame, title: str, column: str = "mean") -> Figure:
    """Bars of ``column`` with ``ci_low``/``ci_high`` error bars.

    ``scores`` has the news-bias score columns (``model``, ``prompt_type``, ``level``,
    ``attribute``, ``measure``, ``mean``, ``ci_low``, ``ci_high``; ``simulated`` optional).
    Refusal rates get their own panel.
    """
    panels = [
        (lvl, a, m)
        for lvl in (*_LEVELS, "refusal")
        for (a, m) in scores.loc[scores["level"] == lvl, ["attribute", "measure"]]
        .fillna("")
        .drop_duplicates()
        .itertuples(index=False)
    ]
    if not panels:
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.text(0.5, 0.5, "no scores", ha="center", va="center")
        ax.set_axis_off()
        return fig
    cols = min(4, len(panels))
    rows = int(np.ceil(len(panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.2 * rows), squeeze=False)
    models = list(dict.fromkeys(scores["model"]))
    prompts = list(dict.fromkeys(scores["prompt_type"]))
    simulated = (
        scores.groupby("model")["simulated"].first().to_dict() if "simulated" in scores else {}
    )
    width = 0.8 / max(1, len(prompts))
    for ax, (level, attribute, measure) in zip(axes.flat, panels, strict=False):
        part = scores[
            (scores["level"] == level)
            & (scores["attribute"].fillna("") == attribute)
            & (scores["measure"] == measure)
        ]
        for j, prompt in enumerate(prompts):
            sub = part[part["prompt_type"] == prompt].set_index("model").reindex(models)
            x = np.arange(len(models)) + (j - (len(prompts) - 1) / 2) * width
            y = sub[column].to_numpy(float)
            low = np.clip(y - sub["ci_low"].to_numpy(float), 0, None)
            high = np.clip(sub["ci_high"].to_numpy(float) - y, 0, None)
            bars = ax.bar(
                x,
                np.nan_to_num(y),
                width,
                label=prompt,
                color=f"C{j}",
                yerr=np.nan_to_num([low, high]),
                capsize=3,
            )
            for bar, model in zip(bars, models, strict=True):
                if simulated.get(model):
                    bar.set_hatch("//")
        ax.set_xticks(
            np.arange(len(models)),
            [f"{m}\n(simulated)" if simulated.get(m) else m for m in models],
            fontsize=7,
        )
        ax.set_title(f"{level} · {attribute or 'all'} · {measure}", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_axis_off()
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
