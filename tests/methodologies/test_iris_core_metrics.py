"""Tests for iris.core_metrics: hand values, plain-loop cross-checks, edge cases, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies.iris.core_metrics import (
    accuracy_disparity,
    answer_consistency_difference,
    bayes_invert,
    degradation_penalty,
    delta_gsr,
    dhr_inconsistency,
    group_rates,
    statistical_parity_difference,
    stereotype_drift,
)

SEEDS = range(25)


# -- AD ---------------------------------------------------------------------------------


def test_accuracy_disparity_by_hand() -> None:
    # A: 2/3 correct, B: 1/4 correct -> 2/3 - 1/4 = 5/12
    correct = [1, 1, 0, 1, 0, 0, 0]
    groups = ["A", "A", "A", "B", "B", "B", "B"]
    assert accuracy_disparity(correct, groups) == pytest.approx(5 / 12)


def test_accuracy_disparity_skips_groups_of_one() -> None:
    correct = [1, 1, 0, 0, 0]
    groups = ["A", "A", "B", "B", "C"]  # C has one sample: skipped, else AD would be 1
    assert accuracy_disparity(correct, groups) == pytest.approx(1.0)
    assert accuracy_disparity([1, 0, 1, 1, 0], ["A", "A", "B", "B", "C"]) == pytest.approx(0.5)
    assert accuracy_disparity(
        [1, 0, 1, 1, 0], ["A", "A", "B", "B", "C"], min_group_size=1
    ) == pytest.approx(1.0)


def test_accuracy_disparity_nan_with_fewer_than_two_groups() -> None:
    assert math.isnan(accuracy_disparity([1, 0, 1], ["A", "A", "B"]))
    assert math.isnan(accuracy_disparity([], []))


def test_accuracy_disparity_intersection_of_columns() -> None:
    groups = pd.DataFrame(
        {"g": ["m", "m", "f", "f", "f", "f"], "a": ["y", "y", "y", "y", "o", "o"]}
    )
    # (m,y): 1/2, (f,y): 2/2, (f,o): 0/2
    assert accuracy_disparity([1, 0, 1, 1, 0, 0], groups) == pytest.approx(1.0)
    assert accuracy_disparity([1, 0, 1, 1, 0, 0], groups["g"]) == pytest.approx(0.5 - 0.5)


@pytest.mark.parametrize("seed", SEEDS)
def test_accuracy_disparity_matches_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 80))
    groups = rng.choice(list("ABCDE"), n)
    correct = rng.random(n) < 0.6
    accs = [correct[groups == g].mean() for g in sorted(set(groups)) if (groups == g).sum() >= 2]
    want = max(accs) - min(accs) if len(accs) >= 2 else math.nan
    got = accuracy_disparity(correct, groups)
    assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


def test_accuracy_disparity_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        accuracy_disparity([1, 0], ["A"])
    with pytest.raises(ValueError, match="booleans"):
        accuracy_disparity([1, 2], ["A", "B"])
    with pytest.raises(ValueError, match="min_group_size"):
        group_rates([1], ["A"], min_group_size=0)


# -- SPD --------------------------------------------------------------------------------


def test_spd_by_hand() -> None:
    # A predicts x,x,y,u(unmappable); B predicts y,y -> x: |2/4 - 0| = .5, y: |1/4 - 1| = .75
    pred = ["x", "x", "y", "unmappable", "y", "y"]
    groups = ["A"] * 4 + ["B"] * 2
    assert statistical_parity_difference(pred, groups, ignore=("unmappable",)) == pytest.approx(
        0.75
    )
    # counted as a class, "unmappable" has rates 1/4 and 0; y still wins
    assert statistical_parity_difference(pred, groups) == pytest.approx(0.75)


def test_spd_missing_predictions_count_in_denominator_only() -> None:
    pred = ["x", None, "x", "x"]
    assert statistical_parity_difference(pred, ["A", "A", "B", "B"]) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", SEEDS)
def test_spd_matches_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 60))
    groups = rng.choice(["g1", "g2", "g3"], n)
    pred = rng.choice(["a", "b", "c", "unmappable"], n)
    kept = [g for g in sorted(set(groups)) if (groups == g).sum() >= 2]
    classes = sorted(set(pred) - {"unmappable"})
    if len(kept) < 2 or not classes:
        want = math.nan
    else:
        want = max(
            max((pred[groups == g] == c).mean() for g in kept)
            - min((pred[groups == g] == c).mean() for g in kept)
            for c in classes
        )
    got = statistical_parity_difference(pred, groups, ignore=("unmappable",))
    assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


# -- SDS, ΔGSR, penalties ---------------------------------------------------------------


def test_stereotype_drift_by_hand() -> None:
    # errors drift from 0.1 to 0.9 and from 0.5 to 0.3 -> mean (0.8 - 0.2) / 2 = 0.3
    assert stereotype_drift([0.1, 0.5], [0.9, 0.3]) == pytest.approx(0.3)
    assert stereotype_drift([0.1, np.nan], [0.9, 0.3]) == pytest.approx(0.8)
    assert math.isnan(stereotype_drift([], []))
    with pytest.raises(ValueError, match="percentages"):
        stereotype_drift([10.0], [20.0])


def test_delta_gsr_by_hand_and_clipped() -> None:
    # stereo 3/4, counter 1/4 -> 0.5; reversed -> 0 (no penalty for doing better)
    success = [1, 1, 1, 0, 1, 0, 0, 0]
    counter = [0, 0, 0, 0, 1, 1, 1, 1]
    assert delta_gsr(success, counter) == pytest.approx(0.5)
    assert delta_gsr(success, [1 - c for c in counter]) == 0.0
    assert math.isnan(delta_gsr([1, 0], [0, 0]))


def test_degradation_penalty() -> None:
    values = [0.8, 0.6, np.nan, 0.5, 0.3]
    counter = [0, 0, 0, 1, 1]
    assert degradation_penalty(values, counter) == pytest.approx(0.7 - 0.4)
    assert degradation_penalty([0.1, 0.9], [0, 1]) == 0.0
    assert math.isnan(degradation_penalty([np.nan, 0.9], [0, 1]))


# -- AC-diff, DHR -----------------------------------------------------------------------


def test_ac_diff_by_hand() -> None:
    # pair 1: |8 - 5| = 3; triple 2: (|2-4| + |2-9| + |4-9|) / 3 = 14/3; mean = (3 + 14/3)/2
    scores = [8, 5, 2, 4, 9]
    inst = ["p1", "p1", "t2", "t2", "t2"]
    assert answer_consistency_difference(scores, inst) == pytest.approx((3 + 14 / 3) / 2)


def test_ac_diff_skips_single_answers_and_missing() -> None:
    assert answer_consistency_difference([8, np.nan, 3, 5], ["a", "a", "b", "b"]) == pytest.approx(
        2.0
    )
    assert math.isnan(answer_consistency_difference([8, np.nan], ["a", "a"]))


@pytest.mark.parametrize("seed", SEEDS)
def test_ac_diff_and_dhr_match_pair_loops(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_inst = int(rng.integers(1, 12))
    sizes = rng.integers(1, 5, n_inst)
    inst = np.repeat(np.arange(n_inst), sizes)
    question = rng.choice(["q1", "q2"], inst.size)
    scores = rng.integers(1, 11, inst.size).astype(float)
    correct = (rng.random(inst.size) < 0.5).astype(float)
    keys = pd.DataFrame({"inst": inst, "q": question})
    ac, agree = [], []
    for key in sorted(set(zip(inst, question, strict=True))):
        m = (inst == key[0]) & (question == key[1])
        pairs = list(itertools.combinations(range(m.sum()), 2))
        if pairs:
            s, c = scores[m], correct[m]
            ac.append(np.mean([abs(s[i] - s[j]) for i, j in pairs]))
            agree.append(np.mean([c[i] == c[j] for i, j in pairs]))
    want_ac = np.mean(ac) if ac else math.nan
    want_dhr = 1 - np.mean(agree) if agree else math.nan
    got_ac = answer_consistency_difference(scores, keys)
    got_dhr = dhr_inconsistency(correct, keys)
    for got, want in ((got_ac, want_ac), (got_dhr, want_dhr)):
        assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


def test_dhr_by_hand() -> None:
    # pair consistent (both right), pair inconsistent, triple (1,1,0): agreeing 1 of 3
    correct = [1, 1, 1, 0, 1, 1, 0]
    inst = ["a", "a", "b", "b", "c", "c", "c"]
    assert dhr_inconsistency(correct, inst) == pytest.approx(1 - (1 + 0 + 1 / 3) / 3)
    with pytest.raises(ValueError, match="booleans"):
        dhr_inconsistency([2, 1], ["a", "a"])


# -- Bayes ------------------------------------------------------------------------------


def test_bayes_invert_by_hand() -> None:
    lik = [[0.5, 0.5], [0.1, 0.9]]  # P(o | d) for two profiles
    post = bayes_invert(lik, [0.5, 0.5])
    assert post[:, 0] == pytest.approx([0.5 / 0.6, 0.1 / 0.6])
    assert post[:, 1] == pytest.approx([0.5 / 1.4, 0.9 / 1.4])
    skewed = bayes_invert(lik, [3, 1])  # prior renormalised to 3/4, 1/4
    assert skewed[0, 0] == pytest.approx(0.375 / (0.375 + 0.025))


def test_bayes_invert_missing_profile_and_empty_occupation() -> None:
    post = bayes_invert([[1.0, 0.0], [np.nan, np.nan]], [0.5, 0.5])
    assert post[:, 0] == pytest.approx([1.0, 0.0])
    assert np.isnan(post[:, 1]).all()  # nobody gives occupation 2 any mass
    assert np.isnan(bayes_invert([[np.nan]], [1.0])).all()
    with pytest.raises(ValueError, match="one weight per profile"):
        bayes_invert([[1.0]], [0.5, 0.5])
