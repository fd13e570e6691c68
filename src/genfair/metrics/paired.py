"""Paired model comparisons: a difference's bootstrap interval and p-value, and Holm's
adjustment across a study's comparisons (issue 33.2; used by :mod:`genfair.study.compare`).

Two models that answered the same probes are compared on the *same* resampled units: each
bootstrap replicate draws units (a methodology's resampling unit: a probe, a statistic, a
caption) with replacement once, and both models' headline numbers are computed on that one
draw, so what the models share cancels out of their difference. The replicates come from
``scipy.stats.bootstrap`` over the units' positions (percentile interval).

The two-sided bootstrap p-value of "no difference" is
``p = min(1, 2 min((#{d* <= 0} + 1) / (B + 1), (#{d* >= 0} + 1) / (B + 1)))``
(the share of replicates on the other side of zero, doubled, with the +1 that keeps a
Monte Carlo p-value valid; Davison & Hinkley 1997, §4.4). Holm's step-down adjustment
(Holm 1979) of the study's p-values controls the family-wise error rate; a comparison is
marked where its adjusted p-value is below ``1 - confidence``. The intervals are the
nominal, unadjusted ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def paired_differences(
    n_units: int,
    statistic: Callable[[np.ndarray], Sequence[float] | np.ndarray],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
    batch: int | None = None,
) -> list[dict[str, float]]:
    """Per value of ``statistic``, ``{"difference", "ci_low", "ci_high", "p_value", "n"}``.

    ``statistic(positions)`` gives model A's headline numbers minus model B's (one or more),
    computed on the units at ``positions`` (an int array, repeats allowed;
    ``np.arange(n_units)``: the data as observed); every number of one replicate comes from
    the same draw. ``vectorized``: it takes a (..., n_units) array and returns values along
    the last axis; ``batch``: at most this many replicates drawn at once (a draw holds
    ``batch x n_units`` positions; None: all). Fewer than two units, or a NaN difference,
    give NaN bounds and p.
    """
    from scipy import stats

    observed = np.atleast_1d(np.asarray(statistic(np.arange(n_units)), dtype=float))
    out = [
        {"difference": float(d), "ci_low": math.nan, "ci_high": math.nan, "p_value": math.nan}
        | {"n": n_units}
        for d in observed
    ]
    if n_units < 2 or resamples < 1:
        return out

    def on_positions(positions: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(statistic(np.asarray(positions, dtype=int)), dtype=float)

    result = stats.bootstrap(
        (np.arange(n_units),),
        on_positions,
        vectorized=vectorized,
        n_resamples=resamples,
        batch=batch,
        confidence_level=confidence,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    distributions = np.asarray(result.bootstrap_distribution, dtype=float).reshape(
        len(observed), -1
    )
    lows = np.atleast_1d(result.confidence_interval.low)
    highs = np.atleast_1d(result.confidence_interval.high)
    for entry, replicates, low, high in zip(out, distributions, lows, highs, strict=True):
        replicates = replicates[np.isfinite(replicates)]
        if not math.isfinite(entry["difference"]) or not replicates.size:
            continue
        below = (np.count_nonzero(replicates <= 0) + 1) / (replicates.size + 1)
        above = (np.count_nonzero(replicates >= 0) + 1) / (replicates.size + 1)
        entry.update(
            ci_low=float(low), ci_high=float(high), p_value=min(1.0, 2.0 * min(below, above))
        )
    return out


def paired_difference(
    n_units: int, statistic: Callable[[np.ndarray], float | np.ndarray], **options: Any
) -> dict[str, float]:
    """:func:`paired_differences` of a statistic with one value."""
    return paired_differences(n_units, statistic, **options)[0]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the given order: with the m
    p-values sorted ascending, ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p_(j))`` (j from
    1). NaN p-values stay NaN and do not count in m."""
    known = [(p, i) for i, p in enumerate(p_values) if not math.isnan(p)]
    adjusted = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(known)):
        running = max(running, min(1.0, (len(known) - rank) * p))
        adjusted[i] = running
    return adjusted
