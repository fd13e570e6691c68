"""The default figure of a methodology's scores (:meth:`Presentation.figures
<genfair.methodologies.presentation.Presentation.figures>` of a methodology that draws none of
its own): a panel of bars per numeric score column, a bar per row. Imported where a figure is
drawn (matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from genfair.methodologies.plotting import plt

#: the most panels (score columns) and bars (rows) one figure draws; the title says what is left
MAX_PANELS = 4
MAX_ROWS = 40


def score_bars(scores: pd.DataFrame, title: str, keys: Sequence[str] = ()) -> Figure | None:
    """Horizontal bars of each numeric column of ``scores`` (``rank`` and flags aside; the
    first :data:`MAX_PANELS`) for its first :data:`MAX_ROWS` rows, each row named by its
    ``model`` and its ``keys`` columns (the methodology's ``metric_keys``). A SIMULATED model's
    bars are hatched and its name says so. None when there is nothing to draw."""
    columns = [
        c
        for c in scores.columns
        if c != "rank" and is_numeric_dtype(scores[c]) and not is_bool_dtype(scores[c])
    ]
    if scores.empty or not columns:
        return None
    rows = scores.head(MAX_ROWS).reset_index(drop=True)
    simulated = (
        rows["simulated"].fillna(False).astype(bool).to_numpy()
        if "simulated" in rows
        else np.zeros(len(rows), dtype=bool)
    )
    names = [
        " · ".join(
            [
                *([f"{r['model']}{' (SIMULATED)' if s else ''}"] if "model" in rows else []),
                *(str(r[k]) for k in keys if k in rows),
            ]
        )
        or str(i)
        for i, (r, s) in enumerate(zip(rows.to_dict("records"), simulated, strict=True))
    ]
    shown = columns[:MAX_PANELS]
    figure, axes = plt.subplots(
        1, len(shown), figsize=(3.2 * len(shown) + 2.5, 0.28 * len(rows) + 1.4), squeeze=False
    )
    y = np.arange(len(rows))
    for ax, column in zip(axes[0], shown, strict=True):
        values = pd.to_numeric(rows[column], errors="coerce").to_numpy(float)
        bars = ax.barh(y, np.nan_to_num(values), color="C0")
        for bar, hatched in zip(bars, simulated, strict=True):
            if hatched:
                bar.set_hatch("//")
        ax.set_yticks(y, names if ax is axes[0][0] else [""] * len(rows), fontsize=7)
        ax.invert_yaxis()
        ax.set_title(column, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    left = [f"{len(scores) - len(rows)} more rows"] if len(scores) > len(rows) else []
    left += [f"{len(columns) - len(shown)} more columns"] if len(columns) > len(shown) else []
    figure.suptitle(title + (f" (not shown: {', '.join(left)})" if left else ""), fontsize=10)
    figure.tight_layout()
    return figure
