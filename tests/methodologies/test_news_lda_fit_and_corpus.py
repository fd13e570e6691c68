"""News bias document level: the LDA is fitted on the originals and the REAL models' unbiased
articles by default, so a SIMULATED model's articles cannot move a real model's score; the
paper-scale warning for the embedded corpus."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from genfair.curation.news import EMBEDDED_SOURCE
from genfair.methodologies import get_methodology
from genfair.methodologies.news_bias import NewsBiasConfig
from genfair.methodologies.news_bias.config import DocumentLevelConfig
from genfair.methodologies.news_bias.corpus_check import embedded_corpus_warning
from genfair.methodologies.news_bias.topics_study import (
    ORIGINALS,
    document_level_study,
    fit_corpora,
)
from tests.methodologies.test_news_bias_study import FOOTBALL, HOSPITAL, WEATHER


def test_fit_corpora():
    names = [ORIGINALS, "real/unbiased", "real/biased", "sim/unbiased", "sim/biased"]
    assert fit_corpora(names, "real_unbiased", {"sim"}) == [ORIGINALS, "real/unbiased"]
    assert fit_corpora(names, "all", {"sim"}) == names
    assert fit_corpora(names, "real_unbiased") == [ORIGINALS, "real/unbiased", "sim/unbiased"]


def _study(
    generated: dict[str, pd.DataFrame], originals: pd.DataFrame, lda_fit: str, simulated: set[str]
):
    cfg = NewsBiasConfig(
        documents=DocumentLevelConfig(num_topics_grid=[3], passes=10, lda_fit=lda_fit)
    )
    return document_level_study(originals, generated, cfg, seed=1, simulated=simulated)


@pytest.fixture(scope="module")
def corpora():
    rng = np.random.default_rng(0)
    bodies = []
    for _ in range(30):
        sentences = (
            [HOSPITAL] * int(rng.integers(2, 5))
            + [FOOTBALL] * int(rng.integers(2, 5))
            + [WEATHER] * 3
        )
        rng.shuffle(sentences)
        bodies.append(" ".join(sentences))
    originals = pd.DataFrame({"article_id": [f"d{i:03d}" for i in range(30)], "body": bodies})

    def articles(texts):
        return pd.DataFrame(
            {
                "pair_id": [f"p{i}" for i in range(30)],
                "prompt_type": "unbiased",
                "article_id": originals["article_id"],
                "generated_text": texts,
            }
        )

    real = articles([b.replace(" she ", " he ") for b in bodies])
    # a SIMULATOR writing about something else entirely
    sim = articles(
        ["The stock market rallied as investors bought shares of banks and tech firms. " * 4] * 30
    )
    return originals, real, sim


def test_simulated_articles_do_not_move_a_real_models_document_score(corpora):
    originals, real, sim = corpora
    alone = _study({"real": real}, originals, "real_unbiased", set())
    with_sim = _study({"real": real, "sim": sim}, originals, "real_unbiased", {"sim"})
    score = alone.tables["scores"].set_index(["model", "attribute"])
    again = with_sim.tables["scores"].set_index(["model", "attribute"])
    for attribute in ("gender", "race"):
        assert again.loc[("real", attribute), "mean"] == pytest.approx(
            score.loc[("real", attribute), "mean"], nan_ok=True
        )
    assert with_sim.summary["lda_corpora"] == [ORIGINALS, "real/unbiased"]
    assert ("sim", "gender") in again.index  # the simulator is still scored
    # the earlier behaviour fits on every corpus: the simulator's articles are in the LDA
    everything = _study({"real": real, "sim": sim}, originals, "all", {"sim"})
    assert everything.summary["documents"] == 90 and with_sim.summary["documents"] == 60


def test_embedded_corpus_warning():
    corpus = pd.DataFrame({"source": [EMBEDDED_SOURCE, EMBEDDED_SOURCE, "nyt"]})
    message = embedded_corpus_warning(corpus, True, "data/curated/news.parquet")
    assert "2 of 3 articles of data/curated/news.parquet" in message and "scale=paper" in message
    assert embedded_corpus_warning(corpus, False) is None
    assert embedded_corpus_warning(corpus[corpus.source == "nyt"], True) is None
    assert embedded_corpus_warning(pd.DataFrame({"article_id": [1]}), True) is None


def test_probes_step_warns_at_paper_scale_on_the_embedded_corpus(tmp_path, caplog):
    path = tmp_path / "news.parquet"
    pd.DataFrame(
        {
            "article_id": ["a1"],
            "headline": ["Storm hits coast"],
            "body": ["A storm hit the coast."],
            "source": [EMBEDDED_SOURCE],
        }
    ).to_parquet(path)
    methodology = get_methodology("news_bias")
    with caplog.at_level(logging.WARNING):
        probes = methodology.build_probes(
            NewsBiasConfig(corpus=str(path), paper_scale=True), seed=0
        )
    assert len(probes) == 2 and "not a reproduction of paper 001" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        methodology.build_probes(NewsBiasConfig(corpus=str(path)), seed=0)
    assert "not a reproduction" not in caplog.text
