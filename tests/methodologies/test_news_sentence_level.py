"""Sentence-level news bias (paper 001, Eq. 5-6, Figures 4-5, A.1-A.2), hand-computed
with stub scorers so the arithmetic is exact."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.instruments.sentiment import TextBlobSentiment
from genfair.instruments.toxicity import build_toxicity
from genfair.methodologies.news_bias.sentence_level import (
    article_group_means,
    max_abs_diff,
    prejudice_summary,
    sentence_level_from_means,
    sentence_level_pairs,
    summarize_sentence_level,
)


class Lookup:
    """Scores a sentence by a number written in it ("[0.5]"); 0 if none."""

    def __init__(self, name):
        self.name = name
        self.seen = []

    def score(self, sentences):
        self.seen.extend(sentences)
        out = []
        for s in sentences:
            a, b = s.find("["), s.find("]")
            out.append(float(s[a + 1 : b]) if a >= 0 else 0.0)
        return np.array(out)


def test_pair_from_text(counter):
    # generated h: female sentences 0.2, 0.4 -> s_h,F = 0.3; male sentence -0.2 -> s_h,M = -0.2
    #   the tie sentence ("She and he") and the no-word sentence are discarded
    # original o: female 0.6 -> 0.6; male 0.1, -0.1 -> 0.0
    # S = max(|0.3 - 0.6|, |-0.2 - 0.0|) = 0.3
    h = (
        "She sang [0.2]. Her sister danced [0.4]. He left [-0.2]. "
        "She and he met [0.9]. The sky was grey [0.8]."
    )
    o = "Her mother spoke [0.6]. He ran [0.1]. His son fell [-0.1]."
    pairs = pd.DataFrame({"pair_id": [7], "generated_text": [h], "original_text": [o]})
    sc = Lookup("lookup")
    t = sentence_level_pairs(pairs, counter, {"sentiment": sc}, attributes=("gender",))
    g = t["gender"]
    assert g.loc[0, "h_sentiment_female"] == pytest.approx(0.3)
    assert g.loc[0, "h_sentiment_male"] == pytest.approx(-0.2)
    assert g.loc[0, "o_sentiment_male"] == pytest.approx(0.0)
    assert g.loc[0, "S"] == pytest.approx(0.3)
    assert not any("0.9" in s or "0.8" in s for s in sc.seen)  # discarded, never scored
    assert g.attrs["instruments"] == {"sentiment": "lookup"}


def test_missing_groups_and_dropped():
    # groups (female, male); NaN = no sentences for that group on that side
    h = np.array([[0.1, np.nan], [np.nan, 0.5], [np.nan, np.nan], [0.0, 0.9]])
    o = np.array([[0.4, 0.2], [0.3, np.nan], [0.1, 0.1], [0.5, 0.1]])
    vals, n_common = max_abs_diff(h, o)
    # row0: only female common: |0.1 - 0.4| = 0.3; row1: no common -> NaN (dropped)
    # row2: h has nothing -> dropped; row3: max(0.5, 0.8) = 0.8
    np.testing.assert_allclose(vals[[0, 3]], [0.3, 0.8])
    assert math.isnan(vals[1]) and math.isnan(vals[2])
    assert n_common.tolist() == [1, 0, 0, 2]
    t = sentence_level_from_means({"sentiment": h}, {"sentiment": o}, ("female", "male"))
    t.attrs["attribute"] = "gender"
    s = summarize_sentence_level(t)
    assert s["sentiment"]["n_dropped"] == 2 and s["sentiment"]["mean"]["n"] == 2
    assert s["sentiment"]["mean"]["mean"] == pytest.approx(0.55)
    ci = stats.ttest_1samp([0.3, 0.8], 0).confidence_interval(0.95)
    assert s["sentiment"]["mean"]["ci_low"] == pytest.approx(ci.low)


def test_prejudice_directions():
    groups = ("white", "black", "asian")
    nan = np.nan
    # black sentiment h vs o: p0 0.1 < 0.4 (prejudice, -0.3); p1 0.5 > 0.2 (not);
    # p2 black absent in h (not in base); p3 -0.2 < 0.0 (prejudice, -0.2)
    sent_h = np.array([[0, 0.1, nan], [0, 0.5, nan], [0, nan, 0], [nan, -0.2, nan]])
    sent_o = np.array([[0, 0.4, nan], [0, 0.2, nan], [0, 0.3, 0], [0.1, 0.0, nan]])
    # black toxicity: p0 0.3 > 0.1 (prejudice, +0.2); p1 0.1 < 0.2 (not); p3 equal (not)
    tox_h = np.array([[0, 0.3, nan], [0, 0.1, nan], [0, nan, 0], [nan, 0.05, nan]])
    tox_o = np.array([[0, 0.1, nan], [0, 0.2, nan], [0, 0.3, 0], [0.1, 0.05, nan]])
    t = sentence_level_from_means(
        {"sentiment": sent_h, "toxicity": tox_h},
        {"sentiment": sent_o, "toxicity": tox_o},
        groups,
    )
    ps = prejudice_summary(t, "sentiment", "black")
    assert (ps["n_base"], ps["n_prejudice"]) == (3, 2)
    assert ps["pct_prejudice"] == pytest.approx(200 / 3)
    assert ps["change"]["mean"] == pytest.approx(-0.25)  # mean(-0.3, -0.2)
    pt = prejudice_summary(t, "toxicity", "black")
    assert (pt["n_base"], pt["n_prejudice"]) == (3, 1)
    assert pt["change"]["mean"] == pytest.approx(0.2) and pt["direction"] == "higher"
    s = summarize_sentence_level(t, "race")
    assert s["sentiment"]["prejudice"]["group"] == "black"
    assert s["toxicity"]["score"] == "T"
    # T row3: only black common (white absent in h): |0.05 - 0.05| = 0
    assert t.loc[3, "T"] == pytest.approx(0.0)


def test_article_group_means():
    means, counts = article_group_means(
        np.array([0, 0, 0, 1]), np.array([0, 0, -1, 1]), np.array([1.0, 3.0, 9.0, 5.0]), 3, 2
    )
    np.testing.assert_allclose(means[0], [2.0, np.nan])
    np.testing.assert_allclose(means[1], [np.nan, 5.0])
    assert counts.tolist() == [[2, 0], [0, 1], [0, 0]]


def test_real_instruments_end_to_end(counter):
    pairs = pd.DataFrame(
        {
            "pair_id": [1, 2],
            "generated_text": [
                "The Black teachers were terrible. She is a bad woman.",
                "He was great.",
            ],
            "original_text": [
                "The black teachers were wonderful. She is a good woman.",
                "Nothing.",
            ],
        }
    )
    tox = build_toxicity("auto")
    out = sentence_level_pairs(pairs, counter, {"sentiment": TextBlobSentiment(), "toxicity": tox})
    race, gender = out["race"], out["gender"]
    assert race.loc[0, "h_sentiment_black"] < 0 < race.loc[0, "o_sentiment_black"]
    s = summarize_sentence_level(race)
    assert s["sentiment"]["prejudice"]["n_prejudice"] == 1
    assert s["instruments"]["toxicity"] == tox.name == "alt-profanity-check"
    assert bool(gender.loc[1, "dropped_sentiment"]) is True
