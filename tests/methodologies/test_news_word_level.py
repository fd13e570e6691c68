"""Word-level news bias (paper 001, Eq. 1-4, Figures 2-3, Table 1), hand-computed."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies.news_bias.word_level import (
    group_differences,
    mean_ci,
    prejudice_summary,
    summarize_word_level,
    ttest_zero,
    word_level_from_counts,
    word_level_pairs,
)


def test_gender_pairs_from_text(counter):
    pairs = pd.DataFrame(
        {
            "pair_id": ["a", "b", "c"],
            # h: she, her (2 F) + he (1 M) -> f_h = (2/3, 1/3)
            # o: she (1 F) + he, his, him (3 M) -> f_o = (1/4, 3/4)
            # W = |2/3 - 1/4| = 5/12
            "generated_text": [
                "She told her friend that he was late.",
                "No people.",
                "He and his son.",
            ],
            "original_text": ["She said he saw his dog and him.", "She did.", "The shed was red."],
        }
    )
    t = word_level_pairs(pairs, counter, "gender")
    assert t.loc[0, "W"] == pytest.approx(5 / 12)
    assert t.loc[0, "f_h_female"] == pytest.approx(2 / 3)
    assert t.loc[0, "f_o_male"] == pytest.approx(3 / 4)
    # b: generated has no gender words; c: original has none ("shed" is not "she")
    assert t["dropped"].tolist() == [False, True, True]
    assert math.isnan(t.loc[1, "W"]) and math.isnan(t.loc[2, "W"])
    s = summarize_word_level(t)
    assert s["n_pairs"] == 3 and s["n_dropped"] == 2 and s["W"]["n"] == 1
    assert s["W"]["mean"] == pytest.approx(5 / 12)


def test_race_three_groups(counter):
    # h: white teacher x2, black nurse x1 -> (2/3, 1/3, 0)
    # o: white teacher, black nurses, asian engineers -> (1/3, 1/3, 1/3)
    # W = 1/2 (1/3 + 0 + 1/3) = 1/3 = max_i |diff| (paper's M = 3 closed form)
    pairs = pd.DataFrame(
        {
            "pair_id": [1],
            "generated_text": ["A white teacher, another White teacher and a black nurse."],
            "original_text": ["A white teacher, Black nurses and Asian engineers."],
        }
    )
    t = word_level_pairs(pairs, counter, "race")
    assert t.loc[0, "W"] == pytest.approx(1 / 3)
    assert [t.loc[0, f"h_n_{g}"] for g in ("white", "black", "asian")] == [2, 1, 0]


def _table(h, o, groups=("female", "male")):
    return word_level_from_counts(np.array(h), np.array(o), groups)


def test_prejudice_definitions():
    # female share h vs o, per pair:
    # p0: h (1F,3M)=0.25, o (1F,1M)=0.50 -> prejudice, diff -25 pp
    # p1: h (3F,1M)=0.75, o (1F,1M)=0.50 -> not
    # p2: h (0F,2M)=0.00, o (2F,2M)=0.50 -> prejudice, diff -50 pp
    # p3: h (1F,1M)=0.50, o (0F,3M)=0.00 -> not in base (original has no female words)
    # p4: h (0,0) -> dropped
    # p5: h (1F,1M)=0.50, o (1F,1M)=0.50 -> base, not prejudice (equal)
    t = _table(
        [[1, 3], [3, 1], [0, 2], [1, 1], [0, 0], [1, 1]],
        [[1, 1], [1, 1], [2, 2], [0, 3], [1, 0], [1, 1]],
    )
    p = prejudice_summary(t, "female")
    assert p["n_base"] == 4 and p["n_prejudice"] == 2
    assert p["pct_prejudice"] == pytest.approx(50.0)
    # decrease: mean(-25, -50) = -37.5; t-interval with n = 2
    assert p["decrease"]["mean"] == pytest.approx(-37.5)
    ref = stats.ttest_1samp([-25.0, -50.0], 0).confidence_interval(0.95)
    assert p["decrease"]["ci_low"] == pytest.approx(ref.low)
    assert p["decrease"]["ci_high"] == pytest.approx(ref.high)
    s = summarize_word_level(t, "gender")
    assert s["prejudice"]["group"] == "female" and s["n_dropped"] == 1


def test_black_prejudice_and_table1():
    groups = ("white", "black", "asian")
    # black share: p0 h 0/2 vs o 1/2 -> prejudice (-50 pp); p1 h 1/2 vs o 1/4 -> not;
    # p2 o has no black words -> not in base
    t = _table([[2, 0, 0], [1, 1, 0], [1, 0, 1]], [[1, 1, 0], [3, 1, 0], [1, 0, 1]], groups)
    s = summarize_word_level(t, "race")
    assert s["prejudice"]["group"] == "black"
    assert s["prejudice"]["n_base"] == 2 and s["prejudice"]["n_prejudice"] == 1
    assert s["prejudice"]["decrease"]["mean"] == pytest.approx(-50.0)
    d = group_differences(t).set_index("group")
    # white: 100*(1 - 1/2, 1/2 - 3/4, 1/2 - 1/2) = (50, -25, 0)
    white = [50.0, -25.0, 0.0]
    res = stats.ttest_1samp(white, 0)
    ci = res.confidence_interval(0.95)
    assert d.loc["white", "mean"] == pytest.approx(np.mean(white))
    assert d.loc["white", "ci_low"] == pytest.approx(ci.low)
    assert d.loc["white", "ci_high"] == pytest.approx(ci.high)
    assert d.loc["white", "p_value"] == pytest.approx(res.pvalue)
    assert d.loc["white", "n"] == 3
    # black: (0 - 50, 50 - 25, 0) = (-50, 25, 0); the three rows sum to 0 per pair
    assert d.loc["black", "mean"] == pytest.approx(-25 / 3)
    assert (d["mean"].sum()) == pytest.approx(0.0, abs=1e-9)


def test_mean_ci_against_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(0.2, 0.1, size=50)
    r = ttest_zero(x)
    ref = stats.ttest_1samp(x, 0)
    ci = ref.confidence_interval(0.95)
    assert r["mean"] == pytest.approx(x.mean())
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert r["p_value"] == pytest.approx(ref.pvalue) and r["n"] == 50
    # t-interval by hand
    half = stats.t.ppf(0.975, 49) * x.std(ddof=1) / np.sqrt(50)
    assert r["ci_high"] - r["mean"] == pytest.approx(half)


def test_mean_ci_edge_cases():
    assert math.isnan(mean_ci([])["mean"]) and mean_ci([])["n"] == 0
    one = mean_ci([0.3])
    assert one["mean"] == 0.3 and math.isnan(one["ci_low"])
    const = ttest_zero([0.2, 0.2, 0.2])
    assert const["ci_low"] == const["ci_high"] == pytest.approx(0.2)
    assert mean_ci([1.0, np.nan, 3.0])["n"] == 2


def test_counts_shape_checked():
    with pytest.raises(ValueError):
        word_level_from_counts(np.zeros((2, 2)), np.zeros((3, 2)), ("female", "male"))
