"""Recall per class and demographic group, and recall disparities (FACET; paper 004).

Paper 004 (Wu et al., §2.2 "Evaluation Metrics") follows FACET (Gustafson et al., ICCV
2023, §4): for a model, a prompt, a person class ``c`` and a demographic group ``g``,

    recall(c, g) = |{images of class c whose person is in g, answered with c}| / |{images
                   of class c whose person is in g}|

("answered with c" is the direct question's matched label, or Yes to the single-choice
question about c), and the disparity between groups ``a`` and ``b`` is

    disparity(c) = recall(c, a) - recall(c, b)

(> 0: the model favours ``a`` in class ``c``). Table 2 reports recall pooled over the 13
selected classes per group (micro: all hits over all images of the group) and the
disparity male - female, light - dark, younger - older of those pooled recalls.

Intervals: a recall has the Wilson score interval
(:func:`genfair.metrics.intervals.proportion_ci`); a difference of two independent recalls
has Newcombe's hybrid score interval (Newcombe 1998, method 10), built from the two Wilson
intervals ``(l1, u1)``, ``(l2, u2)``:

    d - sqrt((p1 - l1)^2 + (u2 - p2)^2)  <=  d  <=  d + sqrt((u1 - p1)^2 + (p2 - l2)^2)

which always contains ``d``. An empty group cell (no image) has no recall: n/a (NaN) by
default; ``empty_value=0.0`` scores it 0, as the paper's appendix tables do (43 of 54
young students recalled, no older student: disparity 0.7963); its interval stays NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from genfair.metrics.intervals import proportion_ci

__all__ = [
    "MACRO",
    "POOLED",
    "disparity_table",
    "group_recalls",
    "newcombe_interval",
    "recall_difference",
    "recall_estimate",
    "recall_range",
]

#: the ``class`` value of pooled (micro) rows; ``MACRO`` of the per-class mean rows
POOLED = "__pooled__"
MACRO = "__macro__"


def recall_estimate(
    hits: int, n: int, confidence: float = 0.95, empty_value: float | None = None
) -> dict[str, float]:
    """``{"recall", "ci_low", "ci_high", "hits", "n"}``: ``hits / n`` with its Wilson
    interval; ``n = 0`` gives ``empty_value`` (NaN when None) and a NaN interval.

    Paper 004 §2.2's recall of one cell, with a Wilson interval.
    """
    if n < 0 or not 0 <= hits <= n:
        raise ValueError(f"need 0 <= hits <= n, got {hits} hits of {n}")
    value = float(recall_values(hits, n, empty_value))
    if n == 0:
        return {"recall": value, "ci_low": math.nan, "ci_high": math.nan, "hits": 0, "n": 0}
    ci = proportion_ci(int(hits), int(n), confidence)
    return {"recall": value, "ci_low": ci["ci_low"], "ci_high": ci["ci_high"],
            "hits": int(hits), "n": int(n)}  # fmt: skip


def recall_values(hits: np.ndarray, n: np.ndarray, empty_value: float | None = None) -> np.ndarray:
    """``hits / n`` elementwise, ``empty_value`` (NaN when None) where ``n = 0``: the recall
    of :func:`recall_estimate`, for arrays (a paired comparison's replicates)."""
    hits, n = np.asarray(hits, dtype=float), np.asarray(n, dtype=float)
    empty = math.nan if empty_value is None else float(empty_value)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, hits / np.where(n > 0, n, 1.0), empty)


def newcombe_interval(
    hits_a: int, n_a: int, hits_b: int, n_b: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``hits_a/n_a - hits_b/n_b`` (method 10).

    Used for paper 004's disparities (Table 2 reports none; Newcombe 1998, method 10).
    """
    a = recall_estimate(hits_a, n_a, confidence)
    b = recall_estimate(hits_b, n_b, confidence)
    if n_a == 0 or n_b == 0:
        return math.nan, math.nan
    d = a["recall"] - b["recall"]
    low = d - math.hypot(a["recall"] - a["ci_low"], b["ci_high"] - b["recall"])
    high = d + math.hypot(a["ci_high"] - a["recall"], b["recall"] - b["ci_low"])
    return max(-1.0, low), min(1.0, high)


def recall_difference(
    hits_a: int, n_a: int, hits_b: int, n_b: int,
    confidence: float = 0.95, empty_value: float | None = None,
) -> dict[str, float]:  # fmt: skip
    """``{"difference", "ci_low", "ci_high"}`` for recall(a) - recall(b); an empty side is
    ``empty_value`` (NaN difference when None) and the interval is NaN.

    Paper 004 Table 2's disparity of one pair, with a Newcombe interval.
    """
    ra = recall_estimate(hits_a, n_a, confidence, empty_value)["recall"]
    rb = recall_estimate(hits_b, n_b, confidence, empty_value)["recall"]
    low, high = newcombe_interval(hits_a, n_a, hits_b, n_b, confidence)
    return {"difference": ra - rb, "ci_low": low, "ci_high": high}


def group_recalls(
    classes: Sequence[str] | np.ndarray,
    groups: Sequence[str] | np.ndarray,
    hits: Sequence[bool] | np.ndarray,
    group_order: Sequence[str],
    class_order: Sequence[str] | None = None,
    confidence: float = 0.95,
    empty_value: float | None = None,
) -> pd.DataFrame:
    """Recall per (class, group), pooled per group and the per-class (macro) mean.

    One row per image: its class, its group and whether it was answered with its class.
    Images in groups outside ``group_order`` (e.g. ``unknown``) are ignored. Returns
    ``class, group, hits, n, recall, ci_low, ci_high`` with per-class rows in
    ``class_order`` (default: sorted), then ``POOLED`` rows (all hits / all images of the
    group over the classes) and ``MACRO`` rows (mean of the group's per-class recalls over
    the classes where it is defined; no interval).

    Paper 004 §2.2: recall per class and group; Table 2 reports the pooled (micro) rows.
    """
    frame = pd.DataFrame({"class": np.asarray(classes, dtype=object),
                          "group": np.asarray(groups, dtype=object),
                          "hit": np.asarray(hits, dtype=bool)})  # fmt: skip
    if class_order is None:
        class_order = sorted(frame["class"].unique())
    frame = frame[frame["group"].isin(group_order) & frame["class"].isin(class_order)]
    counts = frame.groupby(["class", "group"])["hit"].agg(["sum", "size"])
    rows = []
    for cls in class_order:
        for group in group_order:
            k, n = counts.loc[(cls, group)] if (cls, group) in counts.index else (0, 0)
            rows.append({"class": cls, "group": group,
                         **recall_estimate(int(k), int(n), confidence, empty_value)})  # fmt: skip
    per_class = pd.DataFrame(rows)
    for group in group_order:
        cells = per_class[per_class["group"] == group]
        pooled = recall_estimate(
            int(cells["hits"].sum()), int(cells["n"].sum()), confidence, empty_value
        )
        rows.append({"class": POOLED, "group": group, **pooled})
        defined = cells["recall"].dropna()
        rows.append({"class": MACRO, "group": group, "hits": int(cells["hits"].sum()),
                     "n": int(cells["n"].sum()),
                     "recall": float(defined.mean()) if len(defined) else math.nan,
                     "ci_low": math.nan, "ci_high": math.nan})  # fmt: skip
    out = pd.DataFrame(rows, columns=["class", "group", "hits", "n", "recall", "ci_low", "ci_high"])
    return out.astype({"hits": "int64", "n": "int64"})


def disparity_table(
    recalls: pd.DataFrame,
    pairs: Sequence[tuple[str, str]] | None = None,
    confidence: float = 0.95,
    empty_value: float | None = None,
) -> pd.DataFrame:
    """recall(a) - recall(b) for each class (and the pooled rows) of a
    :func:`group_recalls` table, for ``pairs`` (default: every pair of groups in table
    order). Columns ``class, group_a, group_b, difference, ci_low, ci_high, n_a, n_b``;
    the ``MACRO`` rows have the difference of the macro means and no interval.

    Paper 004 §2.2 and Table 2: the disparity male − female, light − dark, younger − older.
    """
    groups = list(dict.fromkeys(recalls["group"]))
    pairs = list(pairs) if pairs is not None else list(combinations(groups, 2))
    unknown = sorted({g for p in pairs for g in p} - set(groups))
    if unknown:
        raise ValueError(
            f"disparity pairs name group(s) {unknown} not in the recall table {groups}"
        )
    cells = recalls.set_index(["class", "group"])
    rows = []
    for cls in dict.fromkeys(recalls["class"]):
        for a, b in pairs:
            ca, cb = cells.loc[(cls, a)], cells.loc[(cls, b)]
            if cls == MACRO:
                diff = {
                    "difference": ca["recall"] - cb["recall"],
                    "ci_low": math.nan,
                    "ci_high": math.nan,
                }
            else:
                diff = recall_difference(int(ca["hits"]), int(ca["n"]), int(cb["hits"]),
                                         int(cb["n"]), confidence, empty_value)  # fmt: skip
            rows.append({"class": cls, "group_a": a, "group_b": b, **diff,
                         "n_a": int(ca["n"]), "n_b": int(cb["n"])})  # fmt: skip
    return pd.DataFrame(rows)


def recall_range(recalls: pd.DataFrame) -> pd.DataFrame:
    """max - min of the groups' recalls per class (and pooled / macro rows), with the
    groups that attain them; groups with no recall (n/a) are left out, and a class with
    fewer than two defined groups has NaN. A point estimate: no interval.

    An extra beside paper 004's pair disparities: the spread over every group.
    """
    rows = []
    for cls, cells in recalls.groupby("class", sort=False):
        defined = cells.dropna(subset=["recall"])
        if len(defined) < 2:
            rows.append({"class": cls, "max_group": None, "min_group": None, "range": math.nan})
            continue
        top = defined.loc[defined["recall"].idxmax()]
        bottom = defined.loc[defined["recall"].idxmin()]
        rows.append({"class": cls, "max_group": top["group"], "min_group": bottom["group"],
                     "range": float(top["recall"] - bottom["recall"])})  # fmt: skip
    return pd.DataFrame(rows)
