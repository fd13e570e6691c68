"""OpenBias severity (paper 003, Eq. 4-6): worked values, scipy cross-checks, intervals."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import entropy

from genfair.methodologies.open_bias.severity import (
    Bootstrap,
    caption_distributions,
    context_aware_severity,
    context_free_distribution,
    context_free_severity,
    rank_biases,
    severity_interval,
    severity_summary,
    severity_vectorized,
)
from genfair.metrics import bias_severity

# issue 13's worked example: caption 1 -> 10 x male; caption 2 -> 2 x female + 8 x unknown
TWO_CAPTIONS = np.array([[10, 0], [0, 2]])  # columns: male, female (unknown is no column)


def test_eq6_worked_values():
    assert round(bias_severity([0.9, 0.1]), 4) == 0.5310
    # a never-predicted proposed class stays in |C| = 3
    assert round(bias_severity([0.5, 0.5, 0.0]), 4) == 0.3691
    assert round(context_free_severity([[5, 5, 0]]), 4) == 0.3691


def test_issue_worked_example_two_definitions():
    assert context_free_severity(TWO_CAPTIONS, "mean") == pytest.approx(0.0, abs=1e-12)
    assert round(context_free_severity(TWO_CAPTIONS, "pooled"), 3) == 0.350
    assert context_aware_severity(TWO_CAPTIONS) == pytest.approx(1.0)
    # by hand: pooled p = (10/12, 2/12)
    p = np.array([10, 2]) / 12
    by_hand = 1 + (p * np.log(p)).sum() / math.log(2)
    assert context_free_severity(TWO_CAPTIONS, "pooled") == pytest.approx(by_hand)


def test_entropy_matches_scipy():
    rng = np.random.default_rng(3)
    for k in (2, 3, 5, 8):
        p = rng.dirichlet(np.ones(k), size=20)
        p[0, 0] = 0.0
        p[0] /= p[0].sum()
        ours = severity_vectorized(p)
        theirs = 1 - entropy(p, axis=1) / np.log(k)
        np.testing.assert_allclose(ours, theirs, atol=1e-12)
        assert [bias_severity(row) for row in p] == pytest.approx(list(theirs), abs=1e-12)


def test_eq4_eq5_by_hand_and_zero_rows():
    counts = np.array([[3, 1, 0], [0, 0, 0], [1, 1, 2]])  # the middle caption: all unknown
    rows = caption_distributions(counts)
    np.testing.assert_allclose(rows, [[0.75, 0.25, 0], [0.25, 0.25, 0.5]])
    np.testing.assert_allclose(context_free_distribution(counts), [0.5, 0.25, 0.25])
    np.testing.assert_allclose(context_free_distribution(counts, "pooled"), [0.5, 0.25, 0.25])
    aware = 1 - np.mean(entropy(rows, axis=1) / np.log(3))
    assert context_aware_severity(counts) == pytest.approx(aware)


def test_context_aware_equals_context_free_for_one_caption():
    """Paper §3.2.2: context-aware is the special case of a single caption."""
    counts = np.array([[7, 2, 1]])
    assert context_aware_severity(counts) == pytest.approx(context_free_severity(counts))
    assert context_aware_severity(counts) == pytest.approx(context_free_severity(counts, "pooled"))


def test_no_known_answer_is_nan_and_bad_input_raises():
    assert math.isnan(context_aware_severity([[0, 0], [0, 0]]))
    assert math.isnan(context_free_severity([[0, 0]]))
    with pytest.raises(ValueError, match="at least 2 classes"):
        context_free_severity([[3], [1]])
    with pytest.raises(ValueError, match="non-negative"):
        context_aware_severity([[1, -1]])
    with pytest.raises(ValueError, match="2-D"):
        context_aware_severity([1, 2])
    with pytest.raises(ValueError, match="pooling"):
        context_free_severity([[1, 2]], "median")


@pytest.mark.parametrize("method", ["percentile", "BCa"])
@pytest.mark.parametrize(
    "statistic,pooling",
    [("context_aware", "mean"), ("context_free", "mean"), ("context_free", "pooled")],
)
def test_interval_contains_estimate(method, statistic, pooling):
    rng = np.random.default_rng(7)
    for base in ([0.34, 0.33, 0.33], [0.9, 0.05, 0.05], [0.5, 0.5, 0.0]):
        counts = rng.multinomial(10, base, size=15)
        out = severity_interval(
            counts, statistic, pooling, Bootstrap(method=method, n_resamples=300, seed=1)
        )
        assert out["ci_low"] <= out["estimate"] <= out["ci_high"]
        assert 0.0 <= out["ci_low"] and out["ci_high"] <= 1.0


def test_interval_degenerate_and_tiny():
    same = np.tile([10, 0], (6, 1))
    out = severity_interval(
        same, "context_free", bootstrap=Bootstrap(method="BCa", n_resamples=200)
    )
    assert out["ci_low"] == out["ci_high"] == out["estimate"] == pytest.approx(1.0)
    one = severity_interval([[4, 6]], "context_aware")
    assert math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])
    assert one["estimate"] == pytest.approx(bias_severity([0.4, 0.6]))


def test_interval_is_seeded():
    counts = np.random.default_rng(0).multinomial(10, [0.6, 0.4], size=20)
    a = severity_interval(counts, bootstrap=Bootstrap(n_resamples=200, seed=5))
    b = severity_interval(counts, bootstrap=Bootstrap(n_resamples=200, seed=5))
    assert a == b


def _simulated_counts(rng, n_captions, base, concentration, images=10):
    """SIMULATED captions: each caption's class distribution ~ Dirichlet(concentration*base),
    its images' answers ~ Multinomial(images, that distribution)."""
    p = rng.dirichlet(concentration * np.asarray(base), size=n_captions)
    return np.array([rng.multinomial(images, row) for row in p])


@pytest.mark.parametrize("statistic", ["context_aware", "context_free"])
def test_bootstrap_coverage_on_simulated_data(statistic):
    """Near-nominal coverage of the 95% percentile interval on simulated captions."""
    base, concentration = [0.7, 0.2, 0.1], 5.0
    rng = np.random.default_rng(2024)
    if statistic == "context_aware":  # the population mean of the per-caption severities
        truth = context_aware_severity(_simulated_counts(rng, 200_000, base, concentration))
    else:  # E[p(c|t)] = base, so Eq. 5's population value is the severity of base
        truth = bias_severity(base)
    reps, hits = 150, 0
    for r in range(reps):
        counts = _simulated_counts(rng, 80, base, concentration)
        out = severity_interval(counts, statistic, "mean", Bootstrap(n_resamples=600, seed=r))
        hits += out["ci_low"] <= truth <= out["ci_high"]
    coverage = hits / reps
    assert 0.88 <= coverage <= 0.995, coverage


def test_summary_fields():
    counts = np.array([[8, 2, 0], [6, 3, 1], [0, 0, 0]])
    out = severity_summary(
        counts,
        ["male", "female", "non-binary"],
        unknown=[0, 0, 10],
        bootstrap=Bootstrap(n_resamples=200),
    )
    assert out["n_captions"] == 3 and out["n_captions_known"] == 2
    assert out["n_images"] == 30 and out["n_images_known"] == 20
    assert out["unknown_share"] == pytest.approx(10 / 30)
    assert out["majority_class"] == "male" and not out["majority_tie"]
    assert out["majority_share"] == pytest.approx((0.8 + 0.6) / 2)
    assert out["n_classes"] == 3
    assert out["severity_context_free"] == pytest.approx(bias_severity([0.7, 0.25, 0.05]))
    tie = severity_summary([[5, 5]], ["a", "b"])
    assert tie["majority_class"] == "a" and tie["majority_tie"]
    with pytest.raises(ValueError, match="class names"):
        severity_summary(counts, ["a", "b"])


def test_ranking_most_severe_first_nan_last():
    table = pd.DataFrame(
        {
            "bias_id": ["a", "b", "c", "d"],
            "severity_context_aware": [0.2, 0.9, math.nan, 0.9],
            "severity_context_free": [0.5, 0.1, 0.3, 0.2],
        }
    )
    ranked = rank_biases(table)
    assert ranked["bias_id"].tolist() == ["b", "d", "a", "c"]
    assert ranked["rank"].tolist()[:3] == [1, 2, 3] and math.isnan(ranked["rank"].iloc[3])
    assert rank_biases(table, "context_free")["bias_id"].tolist() == ["a", "c", "d", "b"]
    with pytest.raises(ValueError, match="needs columns"):
        rank_biases(table.drop(columns="bias_id"))
