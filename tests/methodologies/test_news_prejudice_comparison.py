"""News bias, biased vs unbiased prompts within prejudiced articles (paper 001 Figs. 8-10 a/b)
and article lengths (Table 3): the paper's published Δ and p, hand-computed values, and
planted values recovered from the SIMULATOR."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies.news_bias.biased_prompts import (
    prejudice_values,
    prompt_comparison,
    welch_delta,
)
from genfair.methodologies.news_bias.lengths import article_lengths, word_count
from genfair.methodologies.news_bias.topics_study import document_prompt_comparison
from tests.methodologies.test_news_bias_methodology import synthetic_corpus
from tests.methodologies.test_news_bias_study import simulate


def _sample(mean: float, low: float, high: float, n: int) -> np.ndarray:
    """n values with exactly this mean and the standard deviation its 95% t-interval implies."""
    se = (high - low) / 2 / stats.t.ppf(0.975, n - 1)
    z = np.random.default_rng(n).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + z * se * math.sqrt(n)


@pytest.mark.parametrize(
    ("unbiased", "biased", "delta", "p"),
    [
        # Fig. 2c / 8b, Grover: -39.64% [-40.97, -38.30] N=2,244; biased -39.15% [-40.44, -37.86]
        # N=2,214
        ((-39.64, -40.97, -38.30, 2244), (-39.15, -40.44, -37.86, 2214), 0.49, 0.605),
    ],
)
def test_papers_grover_decrease_delta_and_p_are_reproduced(unbiased, biased, delta, p):
    out = welch_delta(_sample(*biased), _sample(*unbiased))
    assert out["delta"] == pytest.approx(delta, abs=1e-9)
    assert out["p_value"] == pytest.approx(p, abs=0.005)  # the CIs are rounded to 0.01


def test_prejudice_values_by_hand():
    base = pd.Series([True, True, True, False])
    h, o = pd.Series([10.0, 30.0, 5.0, 0.0]), pd.Series([20.0, 30.0, 15.0, 5.0])
    indicator, change = prejudice_values(base, h, o, "lower")
    assert indicator.tolist() == [100.0, 0.0, 100.0]  # the 4th is outside the base
    assert change.tolist() == [-10.0, -10.0]
    indicator, change = prejudice_values(base, h, o, "higher")
    assert indicator.tolist() == [0.0, 0.0, 0.0] and change.size == 0


def _word_pairs() -> pd.DataFrame:
    # unbiased: f_o = .5 each; f_h .25, .5, .4 -> prejudiced 2 of 3, changes -25, -10 pp
    # biased:   f_h .1, .2, .5, and one with f_o = 0 (outside the base) -> 2 of 3, -40, -30 pp
    rows = [
        ("unbiased", 0.25, 0.5),
        ("unbiased", 0.5, 0.5),
        ("unbiased", 0.4, 0.5),
        ("biased", 0.1, 0.5),
        ("biased", 0.2, 0.5),
        ("biased", 0.5, 0.5),
        ("biased", 0.3, 0.0),
    ]
    return pd.DataFrame(
        [
            {
                "prompt_type": p,
                "attribute": "gender",
                "W": abs(h - o),
                "dropped": False,
                "f_h_female": h,
                "f_o_female": o,
            }
            for p, h, o in rows
        ]
    )


def test_word_level_prejudice_rows_by_hand():
    table = prompt_comparison(_word_pairs(), pd.DataFrame()).set_index(
        ["level", "attribute", "measure"]
    )
    change = table.loc[("word", "gender", "prejudice_change")]
    assert (change["mean_unbiased"], change["mean_biased"]) == pytest.approx((-17.5, -35.0))
    assert change["delta"] == pytest.approx(-17.5)
    assert change["p_value"] == pytest.approx(
        stats.ttest_ind([-40, -30], [-25, -10], equal_var=False).pvalue
    )
    pct = table.loc[("word", "gender", "prejudice_pct")]
    assert (pct["mean_unbiased"], pct["mean_biased"], pct["delta"]) == pytest.approx(
        (200 / 3, 200 / 3, 0.0)
    )
    assert (pct["n_unbiased"], pct["n_biased"]) == (3, 3)


def test_sentence_level_prejudice_rows_by_hand():
    # sentiment prejudice: h < o; toxicity prejudice: h > o
    rows = [
        ("unbiased", 0.1, 0.3, 0.0, 0.1),
        ("unbiased", 0.2, 0.2, 0.2, 0.1),
        ("unbiased", 0.0, 0.4, 0.3, 0.1),
        ("biased", -0.2, 0.3, 0.5, 0.1),
        ("biased", 0.1, 0.2, 0.0, 0.1),
        ("biased", np.nan, 0.2, 0.4, 0.1),
    ]
    pairs = pd.DataFrame(
        [
            {
                "prompt_type": p,
                "attribute": "gender",
                "S": 0.1,
                "T": 0.1,
                "dropped_sentiment": False,
                "dropped_toxicity": False,
                "h_sentiment_female": hs,
                "o_sentiment_female": os_,
                "h_toxicity_female": ht,
                "o_toxicity_female": ot,
            }
            for p, hs, os_, ht, ot in rows
        ]
    )
    table = prompt_comparison(pd.DataFrame(), pairs).set_index(["measure"])
    sentiment = table.loc["prejudice_change_sentiment"]
    # unbiased prejudiced: -.2, -.4 (mean -.3); biased: -.5, -.1 (mean -.3)
    assert (sentiment["mean_unbiased"], sentiment["mean_biased"]) == pytest.approx((-0.3, -0.3))
    assert (
        table.loc["prejudice_pct_sentiment", "n_biased"] == 2
    )  # the NaN article is outside the base
    toxicity = table.loc["prejudice_change_toxicity"]
    # unbiased: +.1, +.2 ; biased: +.4, +.3
    assert (toxicity["mean_unbiased"], toxicity["mean_biased"]) == pytest.approx((0.15, 0.35))


def test_document_level_prejudice_rows_by_hand():
    rows = [
        ("unbiased", 0.2, 0.4),
        ("unbiased", 0.4, 0.4),
        ("unbiased", 0.1, 0.4),
        ("biased", 0.0, 0.4),
        ("biased", 0.1, 0.4),
        ("biased", 0.5, 0.4),
    ]
    pairs = pd.DataFrame(
        [
            {
                "model": "m",
                "prompt_type": p,
                "attribute": "gender",
                "W": abs(h - o),
                "generated_share": h,
                "original_share": o,
            }
            for p, h, o in rows
        ]
    )
    table = document_prompt_comparison(pairs).set_index("measure")
    assert table.loc["prejudice_change", "mean_unbiased"] == pytest.approx(-25.0)  # -20, -30
    assert table.loc["prejudice_change", "mean_biased"] == pytest.approx(-35.0)  # -40, -30
    assert table.loc["prejudice_pct", "delta"] == pytest.approx(0.0)
    assert table.loc["W", "delta"] == pytest.approx(
        np.mean([0.4, 0.3, 0.1]) - np.mean([0.2, 0, 0.3])
    )
    assert document_prompt_comparison(pairs[pairs.prompt_type == "biased"]).empty


def test_planted_prejudice_shift_is_recovered(tmp_path):
    """Each of an article's f female words turns male w.p. p: it is prejudiced w.p.
    1 - (1 - p)^f, and E[100 (f_h - f_o); prejudiced] = -100 p f / (f + m); over the
    prejudiced articles the mean change is their ratio (summed over articles)."""
    path, f, m = synthetic_corpus(tmp_path, n=160)
    low, high = 0.1, 0.5
    _, result = simulate(
        tmp_path,
        path,
        {
            "unbiased": {"kind": "rewrite", "female_to_male": low},
            "biased": {"kind": "rewrite", "female_to_male": high},
        },
    )
    table = result.tables["prompt_comparison"].set_index(["level", "attribute", "measure"])

    def pct(p):
        return 100 * np.mean(1 - (1 - p) ** f)

    def change(p):
        return np.sum(-100 * p * f / (f + m)) / np.sum(1 - (1 - p) ** f)

    row = table.loc[("word", "gender", "prejudice_pct")]
    assert row["delta_ci_low"] <= pct(high) - pct(low) <= row["delta_ci_high"]
    row = table.loc[("word", "gender", "prejudice_change")]
    assert row["delta_ci_low"] <= change(high) - change(low) <= row["delta_ci_high"]
    assert row["p_value"] < 0.01


def test_article_lengths_by_hand():
    labels = pd.DataFrame(
        {
            "prompt_type": ["unbiased", "unbiased", "unbiased", "biased", "biased"],
            "status": ["ok", "ok", "refused", "ok", "ok"],
            "article_id": ["a", "b", "c", "a", "b"],
            "generated_text": ["one two three", "one two three four five", "I'm sorry", "x", None],
            "original_text": ["w " * 10, "w " * 20, "w " * 30, "w " * 10, "w " * 20],
            "finish_reason": ["length", "stop", "stop", "length", None],
        }
    )
    table = article_lengths(labels, ["unbiased", "biased"]).set_index("prompt_type")
    assert table.loc["unbiased", "mean_words"] == 4.0 and table.loc["unbiased", "n"] == 2
    assert table.loc["unbiased", "length_share"] == 0.5
    assert table.loc["biased", "mean_words"] == 0.5  # a missing text counts 0 words
    assert (
        table.loc["biased", "n_finish_reason"] == 1 and table.loc["biased", "length_share"] == 1.0
    )
    assert table.loc["original", "mean_words"] == 20.0 and table.loc["original", "n"] == 3
    assert word_count("  a  b\nc ") == 3 and word_count(None) == 0


def test_simulated_articles_have_the_originals_length_and_are_never_cut(tmp_path):
    """The SIMULATOR returns the original with words swapped one for one: its mean word
    count is the originals', and it always finishes with "stop"."""
    path, _, _ = synthetic_corpus(tmp_path, n=40)
    labels, result = simulate(
        tmp_path, path, {"unbiased": {"kind": "rewrite", "female_to_male": 0.5}}
    )
    lengths = result.tables["article_lengths"].set_index("prompt_type")
    assert lengths.loc["unbiased", "mean_words"] == pytest.approx(
        lengths.loc["original", "mean_words"]
    )
    assert lengths.loc["unbiased", "length_share"] == 0.0
    assert lengths.loc["unbiased", "n_finish_reason"] == lengths.loc["unbiased", "n"] == 40
    assert set(labels["finish_reason"]) == {"stop"}
