"""Paired bootstrap differences and Holm's adjustment (issue 33.2's building block):
hand-computed values, and coverage on simulated paired data with a planted difference and
with none."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genfair.metrics.paired import holm, paired_difference


def test_holm_matches_the_hand_computed_step_down() -> None:
    # sorted 0.01, 0.02, 0.03, 0.5 (m = 4): 0.04, 0.06, 0.06 (monotone), 0.5
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.4, 0.9]) == pytest.approx([0.8, 0.9])  # capped at 1 and kept monotone
    adjusted = holm([math.nan, 0.01, 0.04])  # NaN left out of m = 2
    assert math.isnan(adjusted[0]) and adjusted[1:] == pytest.approx([0.02, 0.04])


def test_holm_agrees_with_its_definition_on_random_p_values() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=9).tolist()
    order = sorted(range(9), key=p.__getitem__)
    expected = [0.0] * 9
    for rank, i in enumerate(order):  # the definition, written out
        expected[i] = max(min(1.0, (9 - j) * p[order[j]]) for j in range(rank + 1))
    assert holm(p) == pytest.approx(expected)


def _paired_accuracy(rng: np.random.Generator, n: int, gap: float) -> tuple[np.ndarray, ...]:
    """Per probe, whether models A and B answered right: a shared difficulty makes them
    correlated (paired), and B is ``gap`` less accurate on average."""
    difficulty = rng.uniform(0.2, 0.9, size=n)
    a = rng.uniform(size=n) < difficulty
    b = rng.uniform(size=n) < np.clip(difficulty - gap, 0, 1)
    return a.astype(float), b.astype(float)


def _compare(a: np.ndarray, b: np.ndarray, seed: int) -> dict[str, float]:
    return paired_difference(
        len(a),
        lambda positions: a[positions].mean(axis=-1) - b[positions].mean(axis=-1),
        resamples=400,
        seed=seed,
        vectorized=True,
    )


@pytest.mark.parametrize("gap", [0.0, 0.15])
def test_intervals_cover_the_planted_difference(gap: float) -> None:
    """Over 120 simulated studies of 300 probes, the 95% interval covers the true difference
    (the planted gap's mean effect) in at least 88% (binomial 1st percentile at 95%: ~0.90),
    and a planted gap is found (interval excludes 0) in nearly every study."""
    rng = np.random.default_rng(20250101)
    n, studies = 300, 120
    covered = found = 0
    for s in range(studies):
        a, b = _paired_accuracy(rng, n, gap)
        # the true difference: mean over the probe population of the two accuracies
        truth = gap if gap else 0.0
        result = _compare(a, b, seed=s)
        covered += result["ci_low"] <= truth <= result["ci_high"]
        found += result["ci_low"] > 0 or result["ci_high"] < 0
    assert covered / studies >= 0.88
    if gap:
        assert found / studies >= 0.95
    else:
        assert found / studies <= 0.12


def test_the_pairing_is_sharper_than_two_independent_intervals() -> None:
    """The models share each probe's difficulty: the paired interval of the difference is
    narrower than the one resampling each model's probes on their own."""
    rng = np.random.default_rng(7)
    a, b = _paired_accuracy(rng, 300, 0.05)
    paired = _compare(a, b, seed=1)
    draws = np.random.default_rng(1)
    unpaired = [
        a[draws.integers(0, 300, 300)].mean() - b[draws.integers(0, 300, 300)].mean()
        for _ in range(400)
    ]
    width = np.subtract(*np.percentile(unpaired, [97.5, 2.5]))
    assert paired["ci_high"] - paired["ci_low"] < width


def test_a_sure_difference_has_the_smallest_p_and_none_has_p_one() -> None:
    ones, zeros = np.ones(50), np.zeros(50)
    sure = _compare(ones, zeros, seed=0)
    assert sure["difference"] == 1.0 and sure["p_value"] == pytest.approx(2 / 401)
    same = _compare(ones, ones, seed=0)
    assert same["difference"] == 0.0 and same["p_value"] == 1.0


def test_a_generic_statistic_and_too_few_units() -> None:
    a, b = np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.0, 0.0, 1.0, 0.0])
    result = paired_difference(4, lambda p: a[p].mean() - b[p].mean(), resamples=50, seed=2)
    assert result["difference"] == 0.5 and result["ci_low"] <= 0.5 <= result["ci_high"]
    one = paired_difference(1, lambda p: a[p].mean() - b[p].mean())
    assert one["n"] == 1 and math.isnan(one["ci_low"]) and math.isnan(one["p_value"])
