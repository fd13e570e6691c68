"""LDA topic instrument (paper 001, document level): tokeniser, determinism, sentence and
document topics, choice of K by held-out perplexity."""

from __future__ import annotations

import numpy as np
import pytest

from genfair.instruments.topics import (
    choose_num_topics,
    document_topics,
    fit_lda,
    sentence_topics,
    tokenize,
)

ART = "she her art artist gallery painting exhibition museum".split()
POLITICS = "he his election campaign vote governor senate candidate".split()


def corpus(n: int = 30, seed: int = 0) -> list[list[str]]:
    """Synthetic documents, each drawn from one of two disjoint themes plus stop words."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        theme = ART if i % 2 == 0 else POLITICS
        docs.append(list(rng.choice(theme, 12)) + ["the", "a", "of"])
    return docs


def test_tokenize_keeps_stop_words_drops_punctuation_and_numbers() -> None:
    text = "She said: Don't panic! The 42 artists’ works, in 2023."
    assert tokenize(text) == ["she", "said", "don't", "panic", "the", "artists", "works", "in"]
    assert tokenize("Artists paint.", lemmatizer=lambda t: t.rstrip("s")) == ["artist", "paint"]


def test_fit_lda_is_deterministic_with_seed() -> None:
    docs = corpus()
    a, vocab_a = fit_lda(docs, 2, seed=3, passes=5)
    b, vocab_b = fit_lda(docs, 2, seed=3, passes=5)
    assert vocab_a.token2id == vocab_b.token2id
    np.testing.assert_array_equal(a.get_topics(), b.get_topics())


def test_sentence_topics_separate_themes_and_flag_unknown() -> None:
    model, vocab = fit_lda(corpus(), 2, seed=0, passes=20)
    sentences = [["she", "painting", "gallery"], ["he", "vote", "senate"], ["unseen", "words"]]
    topics = sentence_topics(model, vocab, sentences)
    assert topics.dtype.kind == "i"
    assert topics[2] == -1
    assert {int(topics[0]), int(topics[1])} == {0, 1}
    np.testing.assert_array_equal(sentence_topics(model, vocab, sentences), topics)


def test_document_topics_threshold_and_empty() -> None:
    model, vocab = fit_lda(corpus(), 2, seed=0, passes=20)
    docs = [ART + ["the"], [], ["unseen"]]
    full = document_topics(model, vocab, docs, minimum_probability=0.0)
    assert full[0].sum() == pytest.approx(1.0)
    assert (full[1:] == 0).all()
    cut = document_topics(model, vocab, docs, minimum_probability=0.5)
    assert (cut[0] > 0).sum() == 1  # only the art topic survives


def test_choose_num_topics_returns_grid_member() -> None:
    best, table = choose_num_topics(corpus(40), [2, 3, 5], holdout_fraction=0.25, seed=0, passes=5)
    assert best in {2, 3, 5}
    assert table["num_topics"].tolist() == [2, 3, 5]
    assert np.isfinite(table["perplexity"]).all() and (table["perplexity"] > 1).all()
    np.testing.assert_allclose(table["perplexity"], 2.0 ** (-table["per_word_bound"]))
    assert best == int(table.loc[table["perplexity"].idxmin(), "num_topics"])
    with pytest.raises(ValueError):
        choose_num_topics(corpus(4), [2], holdout_fraction=1.0, seed=0)
