"""Bootstrap intervals over units (issue 46.7): the percentile and BCa intervals are scipy's
on the same replicates, and every interval contains its estimate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from genfair.metrics.bootstrap import unit_intervals

#: a hand case: 12 right-skewed values (a mean whose bootstrap law is skewed)
X = np.array([0.1, 0.2, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.4, 2.2, 3.5, 6.0])


def _mean(positions: np.ndarray) -> np.ndarray:
    return X[positions].mean(axis=-1)


@pytest.mark.parametrize(("method", "scipy_method"), [("percentile", "percentile"),
                                                      ("bca", "BCa")])  # fmt: skip
def test_the_interval_is_scipys_on_the_data(method: str, scipy_method: str) -> None:
    (got,) = unit_intervals(len(X), _mean, method, resamples=2000, seed=7, vectorized=True)
    expected = stats.bootstrap(
        (X,), np.mean, n_resamples=2000, method=scipy_method, random_state=np.random.default_rng(7)
    ).confidence_interval
    assert got["estimate"] == pytest.approx(X.mean())
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((expected.low, expected.high))
    assert got["method"] == method and not got["widened"] and got["n"] == len(X)


def test_bca_shifts_a_skewed_statistics_interval_up_from_the_percentile_one() -> None:
    percentile, bca = unit_intervals(
        len(X), lambda p: np.stack([_mean(p), _mean(p)]), ["percentile", "bca"], seed=3,
        vectorized=True, resamples=2000,
    )  # fmt: skip
    assert bca["ci_low"] > percentile["ci_low"] and bca["ci_high"] > percentile["ci_high"]
    # a plain (not vectorized) statistic gives the same numbers
    plain = unit_intervals(len(X), _mean, "bca", seed=3, resamples=2000)[0]
    assert (plain["ci_low"], plain["ci_high"]) == pytest.approx((bca["ci_low"], bca["ci_high"]))


def test_an_interval_beside_its_estimate_is_widened_to_contain_it() -> None:
    """|mean| of values centred on 0 is 0 here; every replicate is above it, so
    the replicates' interval lies above the estimate; BCa's bias correction is infinite
    (no replicate below the estimate) and falls back to the percentile interval."""
    x = np.random.default_rng(0).normal(size=20)
    x -= x.mean()
    for method in ("percentile", "bca"):
        (got,) = unit_intervals(len(x), lambda p: np.abs(x[p].mean(axis=-1)), method,
                                seed=1, vectorized=True)  # fmt: skip
        assert got["estimate"] == pytest.approx(0.0, abs=1e-12) and got["widened"]
        assert got["ci_low"] == got["estimate"] < got["ci_high"]
        assert got["method"] == "percentile"  # BCa could not be computed: said so


def test_a_constant_statistic_and_too_few_units() -> None:
    (constant,) = unit_intervals(5, lambda p: np.full(np.shape(p)[:-1], 0.5), "bca",
                                 vectorized=True)  # fmt: skip
    assert (constant["ci_low"], constant["ci_high"]) == (0.5, 0.5)
    (one,) = unit_intervals(1, lambda p: X[p].mean(), "percentile")
    assert np.isnan(one["ci_low"]) and np.isnan(one["ci_high"])


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="one of"):
        unit_intervals(len(X), _mean, "basic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="for each of the 1 values"):
        unit_intervals(len(X), _mean, ["bca", "bca"])
