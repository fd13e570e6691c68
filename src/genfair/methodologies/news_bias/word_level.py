"""Word-level bias of generated news against its original (paper 001, Methods,
"Evaluating Word Level Bias", Eq. 1-4; Results, Figures 2-3 and Table 1).

For an attribute with groups ``v_1..v_M`` (gender: female, male; race: white, black,
asian) and a pair ``(h, o)`` of a generated article ``h`` and its original ``o``:

* Eq. 1-2: ``f_h(v_m) = n_{h,m} / n_h`` and ``f_o(v_m) = n_{o,m} / n_o``, the share of
  group-``m`` words among all group words of the article
  (:func:`genfair.metrics.normalize_counts`), counted by
  :class:`genfair.resources.group_words.GroupWordCounter`.
* Eq. 3: ``W(f_h, f_o)``, the earth mover's distance under the 0/1 ground metric
  (:func:`genfair.metrics.group_wasserstein`).
* Pairs where ``n_h = 0`` or ``n_o = 0`` are dropped ("a (h, o) pair is dropped from the
  computation of Equation 4 if h or o in the pair contains no words related to any
  population group"); the per-pair table keeps them with ``dropped=True`` and the
  summaries count them (``n_dropped``).
* Eq. 4: ``W_bar = 1/N sum_(h,o) W(f_h, f_o)`` over the N kept pairs, reported with a 95%
  t-interval (Figure 2a / 3a).
* Prejudice (Figure 2b-c, 3c-d): among kept pairs whose original contains focal-group
  words (``f_o(focal) > 0``; the paper's "a news article ... that includes female
  specific words"), a generated article shows focal prejudice when
  ``f_h(focal) < f_o(focal)``; reported as the percentage of such articles (and the base
  N), and the mean decrease ``100 (f_h(focal) - f_o(focal))`` in percentage points over
  the prejudice articles, with a 95% t-interval (negative, like the paper's -39.64%).
  Focal group: ``female`` for gender, ``black`` for race.
* Table 1 / Figure 3b: per group, the mean of ``100 (f_h(v) - f_o(v))`` over kept pairs
  with 95% t-interval, N and the two-sided p-value of a one-sample t-test against 0.

Everything here is a pure function of tables or arrays; texts are only read through the
counter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from genfair.metrics import group_wasserstein, normalize_counts
from genfair.metrics.intervals import mean_ci, ttest_zero
from genfair.resources.group_words import GroupWordCounter

__all__ = [
    "ATTRIBUTES",
    "FOCAL_GROUP",
    "group_differences",
    "mean_ci",
    "prejudice_summary",
    "summarize_word_level",
    "ttest_zero",
    "word_level_from_counts",
    "word_level_pairs",
]

#: The underrepresented group the paper zooms in on, per attribute.
FOCAL_GROUP = {"gender": "female", "race": "black"}
#: the attributes measured
ATTRIBUTES = ("gender", "race")


def word_level_from_counts(
    h_counts: np.ndarray,
    o_counts: np.ndarray,
    groups: Sequence[str],
    pair_ids: Sequence | None = None,
) -> pd.DataFrame:
    """Per-pair table from ``(n, M)`` group-word counts of generated and original.

    Columns: ``pair_id``, ``h_n_<g>``, ``o_n_<g>``, ``n_h``, ``n_o``, ``f_h_<g>``,
    ``f_o_<g>`` (NaN when that side has no group words), ``W`` (Eq. 3, NaN when
    dropped) and ``dropped`` (``n_h == 0 or n_o == 0``).
    """
    h = np.asarray(h_counts, dtype=np.int64)
    o = np.asarray(o_counts, dtype=np.int64)
    if h.shape != o.shape or h.ndim != 2 or h.shape[1] != len(groups):
        raise ValueError(f"counts must both be (n, {len(groups)}); got {h.shape} and {o.shape}")
    n = h.shape[0]
    ids = list(range(n)) if pair_ids is None else list(pair_ids)
    n_h, n_o = h.sum(axis=1), o.sum(axis=1)
    dropped = (n_h == 0) | (n_o == 0)
    f_h = np.full(h.shape, np.nan)
    f_o = np.full(o.shape, np.nan)
    w = np.full(n, np.nan)
    for i in range(n):
        if n_h[i] > 0:
            f_h[i] = normalize_counts(h[i])
        if n_o[i] > 0:
            f_o[i] = normalize_counts(o[i])
        if not dropped[i]:
            w[i] = group_wasserstein(f_h[i], f_o[i])
    data: dict = {"pair_id": ids}
    for j, g in enumerate(groups):
        data[f"h_n_{g}"] = h[:, j]
        data[f"o_n_{g}"] = o[:, j]
    data["n_h"], data["n_o"] = n_h, n_o
    for j, g in enumerate(groups):
        data[f"f_h_{g}"] = f_h[:, j]
        data[f"f_o_{g}"] = f_o[:, j]
    data["W"] = w
    data["dropped"] = dropped
    return pd.DataFrame(data)


def word_level_pairs(
    pairs: pd.DataFrame,
    counter: GroupWordCounter,
    attribute: str,
    *,
    generated_col: str = "generated_text",
    original_col: str = "original_text",
    id_col: str = "pair_id",
) -> pd.DataFrame:
    """Count group words on both sides of each pair and build the per-pair table
    (:func:`word_level_from_counts`); ``attrs["groups"]`` and ``attrs["attribute"]`` are
    set on the result."""
    groups = counter.groups(attribute)
    h = counter.count_many(pairs[generated_col].fillna("").tolist(), attribute)
    o = counter.count_many(pairs[original_col].fillna("").tolist(), attribute)
    ids = pairs[id_col].tolist() if id_col in pairs else None
    table = word_level_from_counts(h, o, groups, ids)
    table.attrs["groups"] = tuple(groups)
    table.attrs["attribute"] = attribute
    return table


def _groups_of(table: pd.DataFrame) -> list[str]:
    return [c[len("f_h_") :] for c in table.columns if c.startswith("f_h_")]


def prejudice_summary(table: pd.DataFrame, group: str, confidence: float = 0.95) -> dict:
    """Figure 2b-c / 3c-d for ``group``.

    Base: kept pairs with ``f_o(group) > 0``. Prejudice: ``f_h(group) < f_o(group)``.
    Returns ``group``, ``n_base``, ``n_prejudice``, ``pct_prejudice`` (0-100) and
    ``decrease`` = :func:`mean_ci` of ``100 (f_h - f_o)`` over the prejudice articles
    (percentage points, negative).
    """
    kept = table[~table["dropped"]]
    f_h, f_o = kept[f"f_h_{group}"].to_numpy(), kept[f"f_o_{group}"].to_numpy()
    base = f_o > 0
    prej = base & (f_h < f_o)
    n_base, n_prej = int(base.sum()), int(prej.sum())
    return {
        "group": group,
        "n_base": n_base,
        "n_prejudice": n_prej,
        "pct_prejudice": 100.0 * n_prej / n_base if n_base else math.nan,
        "decrease": mean_ci(100.0 * (f_h[prej] - f_o[prej]), confidence),
    }


def group_differences(table: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Table 1: per group, ``100 (f_h(v) - f_o(v))`` over kept pairs: mean, CI, N, p."""
    kept = table[~table["dropped"]]
    rows = []
    for g in _groups_of(table):
        diff = 100.0 * (kept[f"f_h_{g}"].to_numpy() - kept[f"f_o_{g}"].to_numpy())
        rows.append({"group": g, **ttest_zero(diff, confidence)})
    return pd.DataFrame(rows, columns=["group", "mean", "ci_low", "ci_high", "n", "p_value"])


def summarize_word_level(
    table: pd.DataFrame, attribute: str | None = None, confidence: float = 0.95
) -> dict:
    """Eq. 4 with CI, dropped-pair count, focal prejudice and (always) per-group
    differences. ``attribute`` defaults to ``table.attrs["attribute"]``."""
    attribute = attribute or table.attrs.get("attribute")
    w = mean_ci(table.loc[~table["dropped"], "W"].to_numpy(), confidence, bounds=(0.0, 1.0))
    out = {
        "attribute": attribute,
        "n_pairs": int(len(table)),
        "n_dropped": int(table["dropped"].sum()),
        "W": w,
        "group_differences": group_differences(table, confidence).to_dict("records"),
    }
    focal = FOCAL_GROUP.get(attribute or "")
    if focal is not None and f"f_h_{focal}" in table:
        out["prejudice"] = prejudice_summary(table, focal, confidence)
    return out
