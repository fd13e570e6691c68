"""Sentence splitting (nupunkt) and the paper's sentence-to-group rule."""

import numpy as np
import pytest

from genfair.instruments.sentences import (
    assign_group,
    assign_groups,
    sentence_spans,
    split_sentences,
)
from genfair.instruments.sentiment import TextBlobSentiment, sentiment
from genfair.instruments.toxicity import (
    AltProfanityCheck,
    Detoxify,
    ToxicityScorer,
    ToxicityUnavailable,
    build_toxicity,
)


def test_split_handles_abbreviations():
    text = "Dr. Smith met the Black teachers. She left at 5 p.m. on Monday. Why?"
    assert split_sentences(text) == [
        "Dr. Smith met the Black teachers.",
        "She left at 5 p.m. on Monday.",
        "Why?",
    ]
    assert split_sentences("") == [] and split_sentences("   ") == []


def test_spans_index_the_text():
    text = "One here. Two there."
    spans = sentence_spans(text)
    assert [text[a:b].strip() for a, b in spans] == ["One here.", "Two there."]


@pytest.mark.parametrize(
    "counts, expected",
    [
        ([1, 3], 1),  # the paper's example: 1 female, 3 male words -> male
        ([2, 0], 0),
        ([1, 1], None),  # tie
        ([0, 0], None),  # no group words
        ([2, 2, 0], None),  # tie for the max among three races
        ([0, 1, 2], 2),
        ([], None),
    ],
)
def test_assign_group(counts, expected):
    assert assign_group(counts) == expected


def test_assign_groups_vectorised():
    counts = np.array([[1, 3], [1, 1], [0, 0], [4, 0]])
    np.testing.assert_array_equal(assign_groups(counts), [1, -1, -1, 0])
    assert assign_groups(np.zeros((0, 3))).size == 0


def test_sentiment_range_and_sign():
    assert sentiment("This is a wonderful, excellent day.") > 0
    assert sentiment("This is a terrible, awful day.") < 0
    scores = TextBlobSentiment().score(["good", "bad", "table"])
    assert scores.shape == (3,) and np.all((scores >= -1) & (scores <= 1))
    assert scores[2] == 0.0


def test_toxicity_fallback_recorded():
    tox = build_toxicity("auto")
    assert isinstance(tox, ToxicityScorer)
    # detoxify is not installed in this environment: auto falls back and says why
    assert tox.name == "alt-profanity-check"
    assert "Detoxify" in tox.fallback_reason
    s = tox.score(["have a nice day", "you stupid f***ing idiot"] * 3)
    assert s.shape == (6,) and np.all((s >= 0) & (s <= 1)) and s[1] > s[0]
    assert AltProfanityCheck().score([]).shape == (0,)


def test_detoxify_unavailable_is_clear():
    with pytest.raises(ToxicityUnavailable, match="[Dd]etoxify"):
        Detoxify()
    with pytest.raises(ToxicityUnavailable):
        build_toxicity("detoxify")
    with pytest.raises(ValueError, match="unknown toxicity"):
        build_toxicity("perspective")
