"""Bootstrap intervals of statistics over resampling units, percentile or BCa (issue 46.7).

Each replicate draws ``n`` units (a methodology's resampling unit: a probe, an image, an
article) with replacement and recomputes every statistic on that one draw
(``scipy.stats.bootstrap`` over the units' positions, as :mod:`genfair.metrics.paired` does
for differences). Two intervals from the same replicates (Efron & Tibshirani 1993, ch. 13-14):

- ``percentile``: the replicates' ``(1 - c) / 2`` and ``(1 + c) / 2`` quantiles. It is right
  when some monotone transform of the statistic is unbiased and symmetric; for a biased
  statistic (an absolute gap, a maximum, a plug-in entropy) it repeats the bias: the
  replicates sit beside the estimate as the estimate sits beside the truth, and the interval
  misses the truth more often than ``1 - c``.
- ``bca``: bias-corrected and accelerated. The quantile levels are shifted by the bias
  correction ``z0 = Phi^-1(share of replicates below the estimate)`` and the acceleration
  ``a`` (from the jackknife, leaving out one unit at a time):
  ``alpha(z) = Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``. It corrects a median bias, not
  every bias: near a boundary (an absolute gap whose truth is 0) no interval of replicates
  reaches it.

Every interval contains its estimate: when the replicates sit beside it (both methods can
put the interval beside a biased estimate) it is widened to reach it, flagged ``widened``.
A constant bootstrap distribution gives ``[estimate, estimate]``; a BCa interval scipy
cannot compute (every replicate on one side of the estimate: ``z0`` infinite) falls back to
the percentile one, and ``method`` says which was used.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

import numpy as np

#: the bootstrap interval methods a headline may declare
IntervalMethod = Literal["percentile", "bca"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = get_args(IntervalMethod)


def unit_intervals(
    n_units: int,
    statistic: Callable[[np.ndarray], Sequence[float] | np.ndarray],
    methods: IntervalMethod | Sequence[IntervalMethod] = "percentile",
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
    batch: int | None = None,
) -> list[dict[str, Any]]:
    """Per value of ``statistic``: ``{"estimate", "ci_low", "ci_high", "method", "widened",
    "n"}``, its interval by its method (``methods``: one for every value, or one each).

    ``statistic(positions)`` gives the statistics on the units at ``positions`` (an int
    array, repeats allowed; ``np.arange(n_units)``: the data as observed); ``vectorized``:
    it takes a (..., n_units) array and returns values along the last axis; ``batch``: at
    most this many replicates drawn at once. Both methods read the same replicates (BCa adds
    the jackknife). Fewer than two units, no replicates or a NaN estimate: NaN bounds.
    """
    from scipy import stats

    observed = np.atleast_1d(np.asarray(statistic(np.arange(n_units)), dtype=float))
    wanted = [methods] * len(observed) if isinstance(methods, str) else list(methods)
    if len(wanted) != len(observed) or set(wanted) - set(INTERVAL_METHODS):
        raise ValueError(
            f"methods {wanted!r}: give one of {INTERVAL_METHODS} for each of the "
            f"{len(observed)} values"
        )
    out = [
        {"estimate": float(t), "ci_low": math.nan, "ci_high": math.nan, "method": m}
        | {"widened": False, "n": n_units}
        for t, m in zip(observed, wanted, strict=True)
    ]
    if n_units < 2 or resamples < 1:
        return out

    def on_positions(positions: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(statistic(np.asarray(positions, dtype=int)), dtype=float)

    kwargs: dict[str, Any] = dict(vectorized=vectorized, batch=batch, confidence_level=confidence)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate or NaN replicates: handled below
        result = stats.bootstrap(
            (np.arange(n_units),),
            on_positions,
            n_resamples=resamples,
            method="percentile",
            random_state=np.random.default_rng(seed),
            **kwargs,
        )
        bounds = {"percentile": result.confidence_interval}
        if "bca" in wanted:  # the same replicates (no new draw), BCa's levels
            bounds["bca"] = stats.bootstrap(
                (np.arange(n_units),),
                on_positions,
                n_resamples=0,
                method="BCa",
                bootstrap_result=result,
                **kwargs,
            ).confidence_interval
    replicates = np.asarray(result.bootstrap_distribution, dtype=float).reshape(len(observed), -1)
    for i, entry in enumerate(out):
        estimate = entry["estimate"]
        if not math.isfinite(estimate):
            continue
        if np.ptp(replicates[i]) == 0.0 and np.isfinite(replicates[i]).all():
            entry.update(ci_low=estimate, ci_high=estimate)
            continue
        low, high = (float(np.atleast_1d(b)[i]) for b in bounds[entry["method"]])
        if not (math.isfinite(low) and math.isfinite(high)) and entry["method"] == "bca":
            low, high = (float(np.atleast_1d(b)[i]) for b in bounds["percentile"])
            entry["method"] = "percentile"  # z0 infinite: every replicate on one side
        if not (math.isfinite(low) and math.isfinite(high)):
            continue
        if not low <= estimate <= high:
            entry["widened"] = True
            low, high = min(low, estimate), max(high, estimate)
        entry.update(ci_low=low, ci_high=high)
    return out
