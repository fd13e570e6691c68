"""News bias document level (paper 001, Eq. 7-9): hand-computed residuals, association,
chi-squared against scipy, g(v_m) and W on constructed articles, dropped pairs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from gensim.corpora import Dictionary
from gensim.models import LdaModel
from scipy import stats
from scipy.stats.contingency import expected_freq

from genfair.methodologies.news_bias.document_level import (
    associated_topics,
    chi2_test,
    contingency,
    document_bias,
    document_distribution,
    example_topics,
    standardized_residuals,
)

GROUPS = ["male", "female"]

# Rows = topics, columns = male, female, neutral. Row sums 50, 30, 20; column sums 50, 25, 25;
# N = 100, so E[k, m] = r_k c_m / 100.
OBSERVED = np.array([[40, 5, 5], [5, 15, 10], [5, 5, 10]])


def test_residuals_hand_computed() -> None:
    sr = standardized_residuals(OBSERVED)
    # SR[0,0]: E = 50*50/100 = 25; var = 25 (1 - .5)(1 - .5) = 6.25; (40 - 25) / 2.5 = 6.
    assert sr[0, 0] == 6.0
    # SR[1,1]: E = 30*25/100 = 7.5; var = 7.5 (1 - .3)(1 - .25) = 3.9375 = 63/16;
    # (15 - 7.5) / sqrt(63/16) = 30 / sqrt(63).
    assert sr[1, 1] == pytest.approx(30 / math.sqrt(63), rel=1e-12)
    # SR[2,2]: E = 20*25/100 = 5; var = 5 (1 - .2)(1 - .25) = 3; 5 / sqrt(3) < 3.
    assert sr[2, 2] == pytest.approx(5 / math.sqrt(3), rel=1e-12)
    # SR[1,0]: E = 15; var = 15 (.7)(.5) = 5.25; (5 - 15) / sqrt(5.25).
    assert sr[1, 0] == pytest.approx(-10 / math.sqrt(5.25), rel=1e-12)


def test_residuals_match_independent_computation() -> None:
    table = np.array([[12, 3, 40], [2, 9, 33], [7, 7, 70], [1, 0, 25]])
    expected = expected_freq(table)
    n = table.sum()
    by_hand = np.empty(table.shape)
    for k in range(table.shape[0]):
        for m in range(table.shape[1]):
            r, c = table[k].sum() / n, table[:, m].sum() / n
            by_hand[k, m] = (table[k, m] - expected[k, m]) / math.sqrt(
                expected[k, m] * (1 - r) * (1 - c)
            )
    np.testing.assert_allclose(standardized_residuals(table), by_hand, rtol=1e-12)


def test_residuals_nan_for_empty_topic() -> None:
    sr = standardized_residuals(np.vstack([OBSERVED, [0, 0, 0]]))
    assert np.isnan(sr[3]).all()
    np.testing.assert_allclose(sr[:3], standardized_residuals(OBSERVED))


def test_association_threshold_and_argmax() -> None:
    sr = standardized_residuals(OBSERVED)
    assert associated_topics(sr, GROUPS) == {"male": {0}, "female": {1}}
    assert associated_topics(sr, GROUPS, threshold=4.0) == {"male": {0}, "female": set()}
    # strictly greater: SR[0,0] is exactly 6
    assert associated_topics(sr, GROUPS, threshold=6.0) == {"male": set(), "female": set()}
    # topic 2's largest residual is neutral: never a group topic, whatever the threshold
    assert 2 not in set().union(*associated_topics(sr, GROUPS, threshold=0.0).values())
    # female exceeds 3 but neutral is larger: the topic is neutral (one group per topic)
    neutral_wins = np.array([[-5.0, 3.5, 4.0]])
    assert associated_topics(neutral_wins, GROUPS) == {"male": set(), "female": set()}


def test_chi2_matches_pearson_and_drops_empty_topics() -> None:
    expected = expected_freq(OBSERVED)
    pearson = float(((OBSERVED - expected) ** 2 / expected).sum())
    result = chi2_test(OBSERVED)
    assert result.statistic == pytest.approx(pearson, rel=1e-12)
    assert result.dof == 4
    assert result.pvalue == pytest.approx(stats.chi2.sf(pearson, 4), rel=1e-12)
    assert chi2_test(np.vstack([OBSERVED, [0, 0, 0]])) == result


def test_contingency_counts_neutral_and_skips_untopiced() -> None:
    sentences = pd.DataFrame(
        {
            "topic": [0, 0, 1, 1, 2, -1, 2],
            "group": ["male", "female", None, "neutral", "female", "male", "male"],
        }
    )
    expected = np.array([[1, 1, 0], [0, 0, 2], [1, 1, 0]])
    np.testing.assert_array_equal(contingency(sentences, GROUPS, num_topics=3), expected)
    with pytest.raises(ValueError, match="unknown group"):
        contingency(pd.DataFrame({"topic": [0], "group": ["other"]}), GROUPS, num_topics=3)
    with pytest.raises(ValueError, match="topics must lie"):
        contingency(pd.DataFrame({"topic": [3], "group": ["male"]}), GROUPS, num_topics=3)


ASSOC = {"male": {0}, "female": {1, 2}}


def test_document_distribution_eq8() -> None:
    t = np.array(
        [
            [0.5, 0.1, 0.1, 0.3, 0.0],  # male .5, female .2 -> (5/7, 2/7)
            [0.0, 0.0, 0.0, 1.0, 0.0],  # no associated mass -> undefined
        ]
    )
    g = document_distribution(t, ASSOC, GROUPS)
    np.testing.assert_allclose(g[0], [5 / 7, 2 / 7])
    assert np.isnan(g[1]).all()


def test_document_bias_pairs_and_summary() -> None:
    generated = document_distribution(
        np.array([[0.5, 0.1, 0.1, 0.3, 0.0], [0.0, 0.4, 0.0, 0.6, 0.0], [0, 0, 0, 1.0, 0]]),
        ASSOC,
        GROUPS,
    )
    original = document_distribution(
        np.array([[0.2, 0.3, 0.3, 0.2, 0.0], [0.3, 0.3, 0.0, 0.4, 0.0], [0.5, 0.5, 0, 0, 0]]),
        ASSOC,
        GROUPS,
    )
    # pair 0: (5/7, 2/7) vs (1/4, 3/4): W = |5/7 - 1/4| = 13/28, female share down by 13/28
    # pair 1: (0, 1) vs (1/2, 1/2): W = 1/2, female share up; pair 2: generated undefined
    result = document_bias(generated, original, GROUPS, focus="female")
    np.testing.assert_allclose(result.pairs["W"], [13 / 28, 0.5])
    assert result.pairs["pair"].tolist() == [0, 1]
    assert result.pairs["prejudice"].tolist() == [True, False]
    s = result.summary
    assert (s["n"], s["n_dropped"], s["n_prejudice"]) == (2, 1, 1)
    mean = (13 / 28 + 0.5) / 2
    half = stats.t.ppf(0.975, 1) * np.std([13 / 28, 0.5], ddof=1) / math.sqrt(2)
    assert s["W_mean"] == pytest.approx(mean)
    assert (s["W_low"], s["W_high"]) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert s["prejudice_pct"] == 50.0
    assert s["decrease_pct"] == pytest.approx(-100 * 13 / 28)
    assert math.isnan(s["decrease_low_pct"])  # one prejudice pair: no interval


def test_example_topics_table() -> None:
    docs = [["she", "her", "art", "gallery"], ["he", "his", "vote", "campaign"]] * 10
    vocab = Dictionary(docs)
    bows = [vocab.doc2bow(d) for d in docs]
    model = LdaModel(bows, id2word=vocab, num_topics=2, random_state=0, passes=20)
    table = example_topics(model, {"female": {1}, "male": {0}}, topn=4)
    assert table.columns.tolist() == ["group", "topic", "top_words"]
    assert table["topic"].tolist() == [1, 0]
    words = [set(w.split(", ")) for w in table["top_words"]]
    assert all(len(w) == 4 for w in words)
    assert {frozenset(w) for w in words} == {
        frozenset({"she", "her", "art", "gallery"}),
        frozenset({"he", "his", "vote", "campaign"}),
    }
