"""Paired model comparisons: a difference's bootstrap interval and p-value, and Holm's
adjustment across a study's comparisons (issue 33.2; the building block, not yet wired
into a stage).

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

import numpy as np


def paired_difference(
    n_units: int,
    statistic: Callable[[np.ndarray], float | np.ndarray],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
) -> dict[str, float]:
    """``{"difference", "ci_low", "ci_high", "p_value", "n"}`` of a paired difference.

    ``statistic(positions)`` is model A's headline minus model B's, computed on the units at
    ``positions`` (an int array, repeats allowed; ``np.arange(n_units)``: the data as
    observed). ``vectorized``: it takes a (..., n_units) array and returns one value per row.
    Fewer than two units, or a NaN difference, give NaN bounds and p.
    """
    from scipy import stats

    observed = float(statistic(np.arange(n_units)))
    out = {
        "difference": observed,
        "ci_low": math.nan,
        "ci_high": math.nan,
        "p_value": math.nan,
        "n": n_units,
    }
    if n_units < 2 or not math.isfinite(observed) or resamples < 1:
        return out

    def on_positions(positions: np.ndarray, axis: int = -1) -> float | np.ndarray:
        positions = np.asarray(positions, dtype=int)
        if vectorized:
            return statistic(positions)
        return float(statistic(positions))

    result = stats.bootstrap(
        (np.arange(n_units),),
        on_positions,
        vectorized=vectorized,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    replicates = np.asarray(result.bootstrap_distribution, dtype=float)
    replicates = replicates[np.isfinite(replicates)]
    if not replicates.size:
        return out
    below = (np.count_nonzero(replicates <= 0) + 1) / (replicates.size + 1)
    above = (np.count_nonzero(replicates >= 0) + 1) / (replicates.size + 1)
    out.update(
        ci_low=float(result.confidence_interval.low),
        ci_high=float(result.confidence_interval.high),
        p_value=min(1.0, 2.0 * min(below, above)),
    )
    return out


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
