"""OpenBias bias severity over the VQA answers of one bias (paper 003, §3.2, Eq. 4-6).

Input of every function: ``counts``, an ``(n_captions, |C|)`` array: row ``t`` holds how many
of caption ``t``'s images the VQA put in each proposed class of the bias. ``unknown`` answers
are not in it (the VQA's abstain choice is no class of the bias); a proposed class that was
never predicted is a zero column and still counts in ``|C|`` (as the authors' code does).
A caption whose images all got ``unknown`` (a zero row) has no distribution and is left out.

- Eq. 4, per caption: ``p(c | t) = counts[t, c] / sum_c counts[t, c]``.
- Eq. 5, context-free: ``p(c) = mean_t p(c | t)`` (``pooling="mean"``, the paper's text); the
  authors' ``make_plots.py`` instead pools the counts of all images,
  ``p(c) = sum_t counts[t, c] / sum_{t,c} counts[t, c]`` (``pooling="pooled"``); the two
  differ when captions have different numbers of known answers.
- Eq. 6: ``severity(p) = 1 - H(p) / log |C|`` with ``H(p) = -sum_c p_c log p_c``
  (:func:`genfair.metrics.bias_severity`); 0 uniform, 1 one class only.
- Context-aware severity: ``1 - mean_t H(p(.|t)) / log |C|``, the mean over captions of the
  per-caption severities (the authors' ``make_plots.py``; the paper ranks biases by it in
  Figs. 3-4 and 9).

Intervals: a bootstrap over captions (resampling rows), percentile or BCa
(``scipy.stats.bootstrap``); every interval is widened to contain its estimate when the
bootstrap distribution sits beside it (flagged ``ci_adjusted``), and a constant bootstrap
distribution gives ``[estimate, estimate]``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from genfair.metrics.distributions import bias_severity

__all__ = [
    "Bootstrap",
    "caption_distributions",
    "context_aware_severity",
    "context_free_distribution",
    "context_free_severity",
    "rank_biases",
    "severity_interval",
    "severity_summary",
    "severity_vectorized",
]

Pooling = Literal["mean", "pooled"]
Statistic = Literal["context_aware", "context_free"]


def _counts(counts: ArrayLike) -> np.ndarray:
    x = np.asarray(counts, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"counts must be 2-D (captions x classes); got shape {x.shape}")
    if x.shape[1] < 2:
        raise ValueError(f"a bias needs at least 2 classes (|C| >= 2); got {x.shape[1]}")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("counts must be finite and non-negative")
    return x


def caption_distributions(counts: ArrayLike) -> np.ndarray:
    """Eq. 4: each caption's class distribution, one row per caption with at least one
    answer in a class (zero rows are dropped)."""
    x = _counts(counts)
    totals = x.sum(axis=1)
    keep = totals > 0
    return x[keep] / totals[keep, None]


def severity_vectorized(p: np.ndarray) -> np.ndarray:
    """Eq. 6 along the last axis of an array of distributions (``0 log 0 = 0``), clipped to
    [0, 1]; equals :func:`genfair.metrics.bias_severity` row by row."""
    p = np.asarray(p, dtype=float)
    k = p.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.clip(1.0 + terms.sum(axis=-1) / math.log(k), 0.0, 1.0)


def context_aware_severity(counts: ArrayLike) -> float:
    """``1 - mean_t H(p(.|t)) / log |C|`` over captions with a known answer (NaN if none)."""
    rows = caption_distributions(counts)
    if len(rows) == 0:
        return math.nan
    return float(np.mean(severity_vectorized(rows)))


def context_free_distribution(counts: ArrayLike, pooling: Pooling = "mean") -> np.ndarray:
    """Eq. 5 (``"mean"`` of the per-caption distributions) or the authors' pooled counts
    (``"pooled"``). All-NaN when no caption has a known answer."""
    x = _counts(counts)
    if pooling == "mean":
        rows = caption_distributions(x)
        return rows.mean(axis=0) if len(rows) else np.full(x.shape[1], math.nan)
    if pooling == "pooled":
        total = x.sum()
        return x.sum(axis=0) / total if total > 0 else np.full(x.shape[1], math.nan)
    raise ValueError(
        f"pooling must be 'mean' (paper Eq. 5) or 'pooled' (authors' code); got {pooling!r}"
    )


def context_free_severity(counts: ArrayLike, pooling: Pooling = "mean") -> float:
    """Eq. 6 of the Eq. 5 distribution (NaN when no caption has a known answer)."""
    p = context_free_distribution(counts, pooling)
    return math.nan if np.isnan(p).any() else bias_severity(p)


def _bootstrap_data(counts: np.ndarray, statistic: Statistic, pooling: Pooling):
    """Per-caption data and a vectorised statistic over resampled captions."""
    rows = caption_distributions(counts)
    if statistic == "context_aware":
        return (severity_vectorized(rows),), lambda s, axis: np.mean(s, axis=axis)
    if statistic != "context_free":
        raise ValueError(f"statistic must be 'context_aware' or 'context_free'; got {statistic!r}")
    data = rows if pooling == "mean" else counts[counts.sum(axis=1) > 0]
    if pooling not in ("mean", "pooled"):
        raise ValueError(f"pooling must be 'mean' or 'pooled'; got {pooling!r}")

    def stat(*columns: np.ndarray, axis: int) -> np.ndarray:
        summed = np.stack([c.sum(axis=axis) for c in columns], axis=-1)
        p = summed / summed.sum(axis=-1, keepdims=True)
        return severity_vectorized(p)

    return tuple(data.T), stat


@dataclass(frozen=True)
class Bootstrap:
    """How intervals are computed: over captions, ``n_resamples`` times, seeded."""

    confidence: float = 0.95
    method: Literal["percentile", "BCa"] = "percentile"
    n_resamples: int = 2000
    seed: int = 0


DEFAULT_BOOTSTRAP = Bootstrap()


def severity_interval(
    counts: ArrayLike,
    statistic: Statistic = "context_aware",
    pooling: Pooling = "mean",
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
) -> dict:
    """Bootstrap interval over captions: ``{"estimate", "ci_low", "ci_high", "ci_adjusted"}``.

    Fewer than two captions with a known answer: NaN bounds. A constant bootstrap
    distribution: ``[estimate, estimate]``. An interval that misses its estimate (possible
    for a biased plug-in statistic such as an entropy) is widened to reach it and flagged
    ``ci_adjusted``. A BCa interval scipy cannot compute falls back to percentile.
    """
    from scipy import stats

    x = _counts(counts)
    if not 0.0 < bootstrap.confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {bootstrap.confidence}")
    estimate = (
        context_aware_severity(x)
        if statistic == "context_aware"
        else context_free_severity(x, pooling)
    )
    out = {"estimate": estimate, "ci_low": math.nan, "ci_high": math.nan, "ci_adjusted": False}
    data, stat = _bootstrap_data(x, statistic, pooling)
    n = len(data[0])
    if n < 2:
        return out
    kwargs = dict(
        paired=len(data) > 1,
        vectorized=True,
        confidence_level=bootstrap.confidence,
        n_resamples=bootstrap.n_resamples,
        random_state=np.random.default_rng(bootstrap.seed),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate / BCa warnings: handled below
        result = stats.bootstrap(data, stat, method=bootstrap.method, **kwargs)
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        distribution = np.asarray(result.bootstrap_distribution)
        if np.ptp(distribution) == 0.0:
            low = high = estimate
        elif not (np.isfinite(low) and np.isfinite(high)):
            result = stats.bootstrap(data, stat, method="percentile", **kwargs)
            low, high = (
                float(result.confidence_interval.low),
                float(result.confidence_interval.high),
            )
    if estimate < low or estimate > high:
        out["ci_adjusted"] = True
        low, high = min(low, estimate), max(high, estimate)
    out.update(ci_low=low, ci_high=high)
    return out


def severity_summary(
    counts: ArrayLike,
    classes: Sequence[str],
    unknown: ArrayLike | None = None,
    pooling: Pooling = "mean",
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
) -> dict:
    """Everything the ranking and report need for one bias.

    ``counts`` as above with its columns named by ``classes``; ``unknown`` the per-caption
    number of ``unknown`` (or unmapped) answers. Returns both severities with intervals, the
    context-free distribution, its majority class (ties: the first class in ``classes``,
    flagged ``majority_tie``), the numbers of captions (all / with a known answer) and of
    images (all / with a known answer), and the share of ``unknown`` answers.
    """
    x = _counts(counts)
    if len(classes) != x.shape[1]:
        raise ValueError(f"{len(classes)} class names for {x.shape[1]} count columns")
    u = np.zeros(len(x)) if unknown is None else np.asarray(unknown, dtype=float)
    if u.shape != (len(x),):
        raise ValueError(f"unknown must have one count per caption ({len(x)}); got shape {u.shape}")
    aware = severity_interval(x, "context_aware", pooling, bootstrap)
    free = severity_interval(x, "context_free", pooling, bootstrap)
    p = context_free_distribution(x, pooling)
    known = float(x.sum())
    if np.isnan(p).any():
        majority, share, tie = None, math.nan, False
    else:
        best = int(np.argmax(p))
        majority, share = str(classes[best]), float(p[best])
        tie = bool(np.sum(np.isclose(p, p[best])) > 1)
    return {
        "severity_context_aware": aware["estimate"],
        "context_aware_ci_low": aware["ci_low"],
        "context_aware_ci_high": aware["ci_high"],
        "severity_context_free": free["estimate"],
        "context_free_ci_low": free["ci_low"],
        "context_free_ci_high": free["ci_high"],
        "ci_adjusted": bool(aware["ci_adjusted"] or free["ci_adjusted"]),
        "context_free_pooling": pooling,
        "distribution": {str(c): float(v) for c, v in zip(classes, p, strict=True)},
        "n_classes": int(x.shape[1]),
        "majority_class": majority,
        "majority_share": share,
        "majority_tie": tie,
        "n_captions": int(len(x)),
        "n_captions_known": int(np.sum(x.sum(axis=1) > 0)),
        "n_images": int(round(known + float(u.sum()))),
        "n_images_known": int(round(known)),
        "unknown_share": float(u.sum() / (known + u.sum())) if known + u.sum() > 0 else math.nan,
    }


def rank_biases(
    table: pd.DataFrame, by: Statistic = "context_aware", key: str = "bias_id"
) -> pd.DataFrame:
    """The table sorted by ``severity_<by>``, most severe first (ties: by ``key``), with a
    1-based ``rank`` column; biases with a NaN severity come last, unranked (``rank`` NaN)."""
    column = f"severity_{by}"
    if column not in table.columns or key not in table.columns:
        raise ValueError(
            f"rank_biases needs columns {column!r} and {key!r}; got {list(table.columns)}"
        )
    ordered = table.sort_values(
        [column, key], ascending=[False, True], na_position="last", kind="stable"
    )
    ordered = ordered.reset_index(drop=True)
    ranks = np.arange(1, len(ordered) + 1, dtype=float)
    ranks[ordered[column].isna().to_numpy()] = np.nan
    return ordered.assign(rank=ranks)
