"""Construct validity and impartiality of IRIS scores across models (paper 002 §4.1, Fig. 4(c)-(d)).

- :func:`sector_correlation` -- Fig. 4(c): the correlation matrix of the six sector scores
  across models ("generally low inter-correlation ... supports their construct validity").
  The paper names no coefficient; Pearson's r is the default, Spearman's rho an option.
- :func:`architecture_welch` -- Fig. 4(d): Welch's t-test (unequal variances, Welch 1947) of
  scores between architecture groups (the paper: hybrid autoregressive+diffusion vs pure
  autoregressive UMLLMs, p = 0.76 on the overall score; the authors' code,
  ``validation/bias_check.py``, tests the overall score with ``scipy.stats.ttest_ind(...,
  equal_var=False)``). genfair tests the overall score and every sector score, for every
  pair of groups, and reports ``n/a`` with the reason when a group has fewer than 2 models.

Both read :func:`genfair.methodologies.iris.scoring.score_models`' output (one row per model
x sector, ``score`` and ``partial``). Partial sector scores (a subset of the sector's
metrics) are kept but counted in ``n_partial``: they are not comparable with full ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Literal

import numpy as np
import pandas as pd

from genfair.methodologies.iris.scoring import OVERALL, SECTORS

__all__ = [
    "CORRELATION_COLUMNS",
    "WELCH_COLUMNS",
    "architecture_welch",
    "correlation_matrix",
    "sector_correlation",
]

CORRELATION_COLUMNS = [
    "sector_a",
    "sector_b",
    "method",
    "r",
    "p_value",
    "n_models",
    "n_partial",
    "note",
]
WELCH_COLUMNS = [
    "score",
    "group_a",
    "group_b",
    "n_a",
    "n_b",
    "mean_a",
    "mean_b",
    "difference",
    "t",
    "df",
    "p_value",
    "n_partial",
    "status",
    "reason",
]


def _wide(scores: pd.DataFrame, column: str) -> pd.DataFrame:
    missing = [c for c in ("model", "sector", column) if c not in scores.columns]
    if missing:
        raise ValueError(f"IRIS scores lack column(s) {missing}; pass score_models' output")
    if scores.duplicated(["model", "sector"]).any():
        raise ValueError("IRIS scores have duplicate (model, sector) rows")
    return scores.pivot(index="model", columns="sector", values=column)


def sector_correlation(
    scores: pd.DataFrame, method: Literal["pearson", "spearman"] = "pearson", min_models: int = 3
) -> pd.DataFrame:
    """Fig. 4(c): correlation of every pair of sector scores across models (long form).

    One row per ordered pair of the sectors present (diagonal included), over the models
    that have both scores (pairwise complete). ``r`` and ``p_value`` from
    :func:`scipy.stats.pearsonr` (or ``spearmanr``); NaN with a ``note`` when fewer than
    ``min_models`` models share the pair (two points always lie on a line) or a score is
    constant. ``n_partial``: models among them with a partial score in either sector.
    """
    from scipy import stats

    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman'; got {method!r}")
    if min_models < 3:
        raise ValueError(
            f"min_models must be >= 3 (a correlation of 2 points is always ±1); got {min_models}"
        )
    part = scores[scores["sector"].isin(SECTORS)]
    score = _wide(part, "score")
    partial = (
        _wide(part.assign(partial=part.get("partial", False)), "partial").fillna(False).astype(bool)
    )
    present = [s for s in SECTORS if s in score.columns]
    rows = []
    for a, b in itertools.product(present, present):
        both = score[[a, b]].dropna() if a != b else score[[a]].dropna()
        n = len(both)
        n_partial = int((partial.loc[both.index, a] | partial.loc[both.index, b]).sum())
        x = both[a].to_numpy(dtype=float)
        y = both[b].to_numpy(dtype=float) if a != b else x
        r = p = math.nan
        note = ""
        if n < min_models:
            note = f"n/a: {n} model(s) with both scores, need {min_models}"
        elif np.ptp(x) == 0 or np.ptp(y) == 0:
            note = "n/a: a score is constant across these models"
        else:
            res = stats.pearsonr(x, y) if method == "pearson" else stats.spearmanr(x, y)
            r, p = float(res.statistic), float(res.pvalue)
        if n_partial and not note:
            note = f"{n_partial} model(s) with a partial score"
        rows.append(
            {
                "sector_a": a,
                "sector_b": b,
                "method": method,
                "r": r,
                "p_value": p,
                "n_models": n,
                "n_partial": n_partial,
                "note": note,
            }
        )
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def correlation_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """The square sectors x sectors matrix of :func:`sector_correlation`'s ``r``."""
    order = [s for s in SECTORS if s in set(table["sector_a"])]
    return table.pivot(index="sector_a", columns="sector_b", values="r").reindex(
        index=order, columns=order
    )


def architecture_welch(
    scores: pd.DataFrame, architectures: Mapping[str, str | None], min_group: int = 2
) -> pd.DataFrame:
    """Fig. 4(d): Welch's t-test of scores between architecture groups.

    ``architectures`` maps a model to its architecture (``None``: unknown, left out). For
    the overall score (``IRIS``) and each sector score, and for every pair of groups
    (sorted names), one row: group sizes and means, ``difference`` = mean_a - mean_b, and
    ``t``, ``df``, ``p_value`` of :func:`scipy.stats.ttest_ind` with ``equal_var=False``
    (two-sided). ``status`` is ``ok``, or ``n/a`` with the ``reason`` (fewer than
    ``min_group`` models in a group, fewer than two groups, zero variance in both groups).
    """
    from scipy import stats

    if min_group < 2:
        raise ValueError(f"min_group must be >= 2 (a variance needs two models); got {min_group}")
    unknown = sorted(set(architectures) - set(scores["model"]))
    if unknown:
        raise ValueError(f"architectures name model(s) without IRIS scores: {unknown}")
    score = _wide(scores, "score")
    partial = (
        _wide(scores.assign(partial=scores.get("partial", False)), "partial")
        .fillna(False)
        .astype(bool)
    )
    arch = pd.Series({m: architectures.get(m) for m in score.index}, dtype=object)
    known = arch.dropna()
    groups = sorted(set(known))
    rows = []
    for target in [t for t in (OVERALL, *SECTORS) if t in score.columns]:
        have = score[target].dropna()
        members = {g: have[have.index.isin(known[known == g].index)] for g in groups}
        left_out = int((~have.index.isin(known.index)).sum())
        if len(groups) < 2:
            reason = (
                f"fewer than two architecture groups among the models ({groups or 'none'}); "
                f"set `architecture` in the model configs"
            )
            rows.append(
                {
                    "score": target,
                    "group_a": groups[0] if groups else "",
                    "group_b": "",
                    "n_a": len(members[groups[0]]) if groups else 0,
                    "n_b": 0,
                    "status": "n/a",
                    "reason": reason,
                    "n_partial": int(partial.loc[have.index, target].sum()),
                }
            )
            continue
        for a, b in itertools.combinations(groups, 2):
            xa, xb = members[a], members[b]
            n_partial = int(partial.loc[[*xa.index, *xb.index], target].sum())
            row = {
                "score": target,
                "group_a": a,
                "group_b": b,
                "n_a": len(xa),
                "n_b": len(xb),
                "mean_a": float(xa.mean()) if len(xa) else math.nan,
                "mean_b": float(xb.mean()) if len(xb) else math.nan,
                "n_partial": n_partial,
            }
            row["difference"] = row["mean_a"] - row["mean_b"]
            small = [
                f"{g} has {len(x)} model(s)" for g, x in ((a, xa), (b, xb)) if len(x) < min_group
            ]
            if small:
                row |= {
                    "status": "n/a",
                    "reason": f"{'; '.join(small)}, need {min_group} per group",
                }
            elif xa.var(ddof=1) == 0 and xb.var(ddof=1) == 0:
                row |= {"status": "n/a", "reason": "no variance within either group"}
            else:
                res = stats.ttest_ind(xa.to_numpy(float), xb.to_numpy(float), equal_var=False)
                row |= {
                    "t": float(res.statistic),
                    "df": float(res.df),
                    "p_value": float(res.pvalue),
                    "status": "ok",
                    "reason": "",
                }
            notes = [row["reason"]] if row["reason"] else []
            if left_out:
                notes.append(f"{left_out} model(s) without an architecture left out")
            if n_partial:
                notes.append(f"{n_partial} partial score(s)")
            row["reason"] = "; ".join(notes)
            rows.append(row)
    return pd.DataFrame(rows, columns=WELCH_COLUMNS)
