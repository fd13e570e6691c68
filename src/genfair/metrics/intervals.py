"""Means with Student-t confidence intervals, and one-sample t-tests against zero.

The news-bias tables (paper 001, Figures 2-7 and Table 1) report every mean with its 95%
confidence interval and N, and per-group differences with a p-value; these helpers are the
one place that computes them (``scipy.stats.ttest_1samp``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np


def ttest_zero(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> dict:
    """Mean, t-interval, N and two-sided one-sample t-test p-value against 0.

    ``scipy.stats.ttest_1samp(x, 0).confidence_interval(confidence)``. N = 0 gives NaN
    everywhere; N = 1 a NaN interval and p; zero variance gives the degenerate interval
    ``[mean, mean]`` and p = 0 if the mean is non-zero, 1 if it is zero.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    out = {"mean": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": n, "p_value": math.nan}
    if n == 0:
        return out
    mean = float(x.mean())
    out["mean"] = mean
    if n == 1:
        return out
    if float(np.ptp(x)) == 0.0:
        out.update(ci_low=mean, ci_high=mean, p_value=0.0 if mean != 0 else 1.0)
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_1samp(x, 0.0)
        ci = res.confidence_interval(confidence)
    out.update(ci_low=float(ci.low), ci_high=float(ci.high), p_value=float(res.pvalue))
    return out


def mean_ci(
    values: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> dict:
    """``{"mean", "ci_low", "ci_high", "n"}``: mean with a Student-t interval.

    ``bounds = (L, U)``: the measure's range (e.g. W in [0, 1]). When every value sits on a
    bound, the t-interval degenerates to the point ``[L, L]``, which a measure that is
    sometimes above ``L`` misses. Then the distribution-free bound is used instead: for
    ``X`` in ``[L, U]`` with mean ``mu``, ``P(X > L) >= (mu - L) / (U - L)``, so
    ``P(all n at L) <= (1 - (mu - L)/(U - L))^n`` and ``mu <= L + (U - L)(1 - (a/2)^(1/n))``
    at ``a = 1 - confidence`` (mirrored at ``U``).
    """
    res = ttest_zero(values, confidence)
    res.pop("p_value")
    if bounds is not None and res["n"] >= 1 and (res["n"] == 1 or res["ci_low"] == res["ci_high"]):
        low, high = bounds
        reach = (high - low) * (1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / res["n"]))
        if res["mean"] == low:
            res.update(ci_low=low, ci_high=low + reach)
        elif res["mean"] == high:
            res.update(ci_low=high - reach, ci_high=high)
    return res


def proportion_ci(successes: int, n: int, confidence: float = 0.95) -> dict:
    """``{"mean", "ci_low", "ci_high", "n"}`` for a proportion ``successes / n`` with the
    Wilson score interval (``scipy.stats.binomtest(...).proportion_ci("wilson")``), which
    stays inside [0, 1] and is sensible for small ``n`` and rates near 0 or 1, where a
    t-interval is not. ``n = 0`` gives NaN."""
    from scipy import stats

    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n; got {successes} of {n}")
    if n == 0:
        return {"mean": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence, method="wilson")
    return {"mean": successes / n, "ci_low": float(ci.low), "ci_high": float(ci.high), "n": int(n)}
