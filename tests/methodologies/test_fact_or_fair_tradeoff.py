"""Tests for fact_or_fair.tradeoff: the FACT-OR-FAIR curve, distance and S_fair."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import entropy

from genfair.methodologies.fact_or_fair.tradeoff import (
    max_entropy_at_accuracy,
    s_fair,
    tradeoff_distance,
)

KS = [2, 3, 4, 5, 8]


def curve(a: np.ndarray, k: int) -> np.ndarray:
    """Independent vectorised f(a): entropy (base k) of [a, (1-a)/(k-1), ...]."""
    a = np.asarray(a, dtype=float)
    rest = (1.0 - a) / (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.nan_to_num(a * np.log(a)) - (k - 1) * np.nan_to_num(rest * np.log(rest))
    return h / math.log(k)


@functools.cache
def dense_curve(k: int) -> tuple[np.ndarray, np.ndarray]:
    """~1e6 uniform points on [0, 1] plus log-spaced points at both ends (steep parts)."""
    tails = np.geomspace(1e-12, 1e-3, 20_000)
    xs = np.unique(np.concatenate([np.linspace(0.0, 1.0, 1_000_001), tails, 1.0 - tails]))
    return xs, curve(xs, k)


def brute_force_distance(x0: float, y0: float, k: int) -> float:
    xs, ys = dense_curve(k)
    return float(np.sqrt(((xs - x0) ** 2 + (ys - y0) ** 2).min()))


# --------------------------------------------------------------------------- the curve


def test_curve_hand() -> None:
    # k=2, a=.9: -(.9 log2 .9 + .1 log2 .1) = 0.4689955935892812 (binary entropy, bits)
    assert max_entropy_at_accuracy(0.9, 2) == pytest.approx(0.4689955935892812, rel=1e-12)
    # k=4, a=.5: -(.5 ln .5 + .5 ln(.5/3)) / ln 4 = .5 (ln 2 + ln 6) / ln 4 = .5 ln 12 / ln 4
    assert max_entropy_at_accuracy(0.5, 4) == pytest.approx(
        0.5 * math.log(12) / math.log(4), rel=1e-12
    )
    # k=3, a=0: all mass split over the 2 wrong options: ln 2 / ln 3 = 0.6309297535714574
    assert max_entropy_at_accuracy(0.0, 3) == pytest.approx(0.6309297535714574, rel=1e-12)
    assert max_entropy_at_accuracy(0.0, 2) == 0.0  # k=2, a=0: the wrong option for sure


@pytest.mark.parametrize("k", [2, 3, 4, 5, 8, 19, 100])
def test_curve_special_points(k: int) -> None:
    assert max_entropy_at_accuracy(1 / k, k) == pytest.approx(1.0, abs=1e-12)  # uniform
    assert max_entropy_at_accuracy(1.0, k) == 0.0
    assert max_entropy_at_accuracy(0.0, k) == pytest.approx(math.log(k - 1) / math.log(k))
    # continuous at both closed ends (0 log 0 = 0 is the right limit)
    assert max_entropy_at_accuracy(1e-13, k) == pytest.approx(
        max_entropy_at_accuracy(0.0, k), abs=1e-10
    )
    assert max_entropy_at_accuracy(1 - 1e-13, k) == pytest.approx(0.0, abs=1e-10)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("seed", range(10))
def test_curve_matches_scipy_entropy(k: int, seed: int) -> None:
    a = float(np.random.default_rng(seed).random())
    dist = [a] + [(1 - a) / (k - 1)] * (k - 1)
    assert max_entropy_at_accuracy(a, k) == pytest.approx(entropy(dist, base=k), rel=1e-10)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("seed", range(10))
def test_curve_is_an_upper_bound(k: int, seed: int) -> None:
    # Conclusion 1: any distribution whose correct-option mass is a has S_E <= f(a)
    rng = np.random.default_rng(seed)
    for _ in range(50):
        p = rng.dirichlet(rng.choice([0.3, 1.0, 10.0]) * np.ones(k))
        assert entropy(p, base=k) <= max_entropy_at_accuracy(float(p[0]), k) + 1e-12


@pytest.mark.parametrize(
    ("a", "k", "match"),
    [
        (-0.1, 2, r"a must be in \[0, 1\]"),
        (1.0 + 1e-9, 2, r"a must be in \[0, 1\]"),
        (float("nan"), 3, r"a must be in \[0, 1\]"),
        ("0.5", 3, "real number"),
        (0.5, 1, "k must be an integer >= 2"),
        (0.5, 2.5, "k must be an integer >= 2"),
        (0.5, True, "k must be an integer >= 2"),
    ],
)
def test_curve_rejects(a: object, k: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        max_entropy_at_accuracy(a, k)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- distance


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("a", [0.0, 1e-6, 0.01, 0.2, 0.5, 0.77, 0.999, 1.0])
def test_point_on_curve_has_zero_distance(k: int, a: float) -> None:
    y = max_entropy_at_accuracy(a, k)
    x_min, y_min, d = tradeoff_distance(a, y, k)
    assert d == pytest.approx(0.0, abs=1e-7)  # Brent's x tolerance is ~1.5e-8 relative
    assert x_min == pytest.approx(a, abs=1e-5)
    assert y_min == pytest.approx(y, abs=1e-5)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("seed", range(8))
def test_distance_matches_brute_force(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for x0, y0 in rng.random((40, 2)):
        x, y, d = tradeoff_distance(float(x0), float(y0), k)
        bf = brute_force_distance(x0, y0, k)
        # the dense grid can only over-estimate the true minimum, and by little
        assert bf - 2e-5 <= d <= bf + 1e-9, (x0, y0, d, bf)
        # the returned point is on the curve and at the returned distance
        assert y == pytest.approx(float(curve(x, k)), abs=1e-12)
        assert d == pytest.approx(math.hypot(x - x0, y - y0), abs=1e-12)


def test_distance_with_two_local_minima() -> None:
    # Below the left part of the k=3 curve (which starts at height ln2/ln3 = .63): the
    # squared distance has a local minimum at the left end (the global one) and another
    # on the falling branch, where a single bounded Brent search (paper 000, Alg. 2) ends,
    # ~0.41 too far.
    k, x0, y0 = 3, 0.0407623273086144, 0.1881545037427702
    xs, ys = dense_curve(k)
    d2 = (xs - x0) ** 2 + (ys - y0) ** 2
    interior = (d2[1:-1] < d2[:-2]) & (d2[1:-1] < d2[2:])
    local_minima = int(interior.sum()) + int(d2[0] < d2[1]) + int(d2[-1] < d2[-2])
    assert local_minima >= 2  # the case really is multi-modal
    x, _, d = tradeoff_distance(x0, y0, k)
    assert d == pytest.approx(brute_force_distance(x0, y0, k), abs=2e-5)
    assert x == 0.0  # the exact left end wins (checked as a candidate)
    assert d == pytest.approx(math.hypot(x0, y0 - math.log(2) / math.log(3)), rel=1e-12)


def test_distance_symmetric_case_k2() -> None:
    # k=2 curve is symmetric about a=.5, so (.5, 0) has two equally near points a, 1-a
    x, _, d = tradeoff_distance(0.5, 0.0, 2)
    assert d == pytest.approx(brute_force_distance(0.5, 0.0, 2), abs=2e-5)
    assert abs(x - 0.5) > 0.1  # not the (farthest) apex
    mirror = 1.0 - x
    assert math.hypot(mirror - 0.5, max_entropy_at_accuracy(mirror, 2)) == pytest.approx(d)


@pytest.mark.parametrize(("x0", "y0", "k"), [(0.9, 0.9, 4), (0.05, 0.95, 2), (0.3, 1.0, 3)])
def test_point_above_curve(x0: float, y0: float, k: int) -> None:
    assert y0 > max_entropy_at_accuracy(x0, k)  # really above
    x, y, d = tradeoff_distance(x0, y0, k)
    assert d > 0
    assert d == pytest.approx(brute_force_distance(x0, y0, k), abs=2e-5)
    # interior optimum: the offset is normal to the curve, (x0-x, y0-y) . (1, f'(x)) = 0
    slope = math.log((1 - x) / ((k - 1) * x)) / math.log(k)
    assert (x0 - x) + (y0 - y) * slope == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize(
    ("s_fact", "s_e", "k", "match"),
    [
        (1.5, 0.5, 2, "s_fact must be in"),
        (0.5, -0.1, 2, "s_e must be in"),
        (float("nan"), 0.5, 2, "s_fact must be in"),
        (0.5, 0.5, 1, "k must be an integer"),
    ],
)
def test_distance_rejects(s_fact: float, s_e: float, k: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tradeoff_distance(s_fact, s_e, k)


# --------------------------------------------------------------------------- S_fair


def test_s_fair_hand() -> None:
    assert s_fair(0.5, 0.5) == pytest.approx(0.75)  # .5 + .5 - .25
    assert s_fair(0.2, 0.3) == pytest.approx(0.44)  # .2 + .3 - .06
    assert s_fair(0.0, 0.0) == 0.0


GRID = np.linspace(0.0, 1.0, 21)


def test_s_fair_definition_5_properties() -> None:
    values = np.array([[s_fair(float(e), float(kl)) for kl in GRID] for e in GRID])
    # 1. range [0, 1]
    assert values.min() >= 0.0 and values.max() <= 1.0
    # 2. monotone (non-decreasing) in S_E (axis 0) and S_KLD (axis 1); strictly inside
    assert (np.diff(values, axis=0) >= -1e-15).all() and (np.diff(values, axis=1) >= -1e-15).all()
    assert (np.diff(values[:-1, :], axis=1) > 0).all()  # strictly in S_KLD while S_E < 1
    # 3. = 1 when either score is 1
    assert np.allclose(values[-1, :], 1.0) and np.allclose(values[:, -1], 1.0)
    # 4. = S_KLD when S_E = 0
    assert np.allclose(values[0, :], GRID)


@pytest.mark.parametrize(("s_e", "s_kld"), [(-0.01, 0.5), (0.5, 1.01), (float("nan"), 0.5)])
def test_s_fair_rejects(s_e: float, s_kld: float) -> None:
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        s_fair(s_e, s_kld)


def test_vectorised_distances_match_the_scalar_search():
    """``tradeoff_distances`` (grid + golden section) equals ``tradeoff_distance`` (grid +
    Brent) to 1e-8, the scalar search's own accuracy, on 1,000 random points per k, including
    points on and above the curve."""
    import numpy as np

    from genfair.methodologies.fact_or_fair.tradeoff import tradeoff_distances

    rng = np.random.default_rng(0)
    for k in (2, 3, 4):
        x, y = rng.uniform(0, 1, 1000), rng.uniform(0, 1, 1000)
        x[:5] = [0.0, 1.0, 1 / k, 0.7, 0.5]
        y[:5] = [0.0, 0.0, 1.0, max_entropy_at_accuracy(0.7, k), 1.0]
        got = tradeoff_distances(x, y, k)
        want = np.array([tradeoff_distance(a, b, k)[2] for a, b in zip(x, y, strict=True)])
        assert np.abs(got - want).max() < 1e-8  # the scalar Brent search is accurate to ~1e-8
    nan = tradeoff_distances([0.5, float("nan")], [float("nan"), 0.5], 2)
    assert np.isnan(nan).all()
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        tradeoff_distances([1.5], [0.5], 2)
    with pytest.raises(ValueError, match="k must be"):
        tradeoff_distances([0.5], [0.5], 1)


def test_single_brent_is_algorithm_2_and_can_stop_at_a_local_minimum():
    """``tradeoff_distance_single_brent`` is paper 000's Algorithm 2 (Appendix C.2), written out
    here with scipy: one bounded search, the curve infinite outside (0, 1)."""
    from genfair.methodologies.fact_or_fair.tradeoff import tradeoff_distance_single_brent

    def algorithm_2(x: float, y: float, k: int) -> float:
        def f(a: float) -> float:
            if not 0 < a < 1:
                return math.inf
            return -(1 / math.log(k)) * (a * math.log(a) + (1 - a) * math.log((1 - a) / (k - 1)))

        res = minimize_scalar(
            lambda a: (a - x) ** 2 + (f(a) - y) ** 2, bounds=(1e-8, 1 - 1e-8), method="bounded"
        )
        return math.sqrt((res.x - x) ** 2 + (f(res.x) - y) ** 2)

    for x, y, k in ((0.3, 0.5, 2), (0.9, 0.2, 4), (0.0667, 0.3164, 4), (0.15, 0.4, 4)):
        assert tradeoff_distance_single_brent(x, y, k)[2] == pytest.approx(
            algorithm_2(x, y, k), abs=1e-12
        )
    # below the curve near its left end (k = 4): Brent stops near a = 0.59, the left end is nearer
    x_stop, _, d_stop = tradeoff_distance_single_brent(0.0667, 0.3164, 4)
    x_best, _, d_best = tradeoff_distance(0.0667, 0.3164, 4)
    assert x_stop == pytest.approx(0.59, abs=0.01) and x_best == 0.0
    assert d_best == pytest.approx(math.hypot(0.0667, math.log(3) / math.log(4) - 0.3164), abs=1e-9)
    assert d_stop > d_best + 0.2


def test_the_curve_is_the_bound_at_every_accuracy() -> None:
    from genfair.methodologies.fact_or_fair.tradeoff import max_entropy_curve

    a = np.linspace(0, 1, 41)
    for k in (2, 4):
        assert max_entropy_curve(a, k) == pytest.approx([max_entropy_at_accuracy(x, k) for x in a])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        max_entropy_curve([0.5, float("nan")], 4)
    with pytest.raises(ValueError, match="k must be"):
        max_entropy_curve([0.5], 1)
