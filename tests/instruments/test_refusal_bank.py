"""The refusal detector on real news openings and on real and typical refusals.

News: every article of gensim's ``lee_background.cor`` (the ABC corpus that
``collect_news`` embeds), plus typical openings that talk *about* bias, quote someone's
"I won't", or start with "Sorry Day" / "As an AI researcher", and real SmolLM2-135M article
openings to both of paper 001's prompts (tests/data/refusal_bank.csv; SmolLM2 never refused,
scripts/refusal_bank_candidates.py). None may be flagged. Refusals: paper 001's quoted ChatGPT
refusal and typical chat-model refusals; all must be flagged, by the check the bank names
(``caught_by``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from genfair.instruments.refusal import RefusalDetector, is_refusal

BANK = pd.read_csv(Path(__file__).parents[1] / "data" / "refusal_bank.csv", keep_default_na=False)
NEWS = BANK[BANK["expected"] == "news"]
REFUSALS = BANK[BANK["expected"] == "refusal"]


def abc_articles() -> list[str]:
    from gensim.test.utils import datapath

    lines = Path(datapath("lee_background.cor")).read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()]


def test_bank_is_balanced_and_labelled() -> None:
    assert set(BANK["expected"]) == {"news", "refusal"}
    assert len(NEWS) >= 30 and len(REFUSALS) >= 20
    assert NEWS["source"].str.startswith("real SmolLM2").sum() == 24
    assert set(REFUSALS["caught_by"]) == {"patterns", "similarity"}
    assert (NEWS["caught_by"] == "").all()


def test_no_abc_article_is_a_refusal_by_pattern() -> None:
    articles = abc_articles()
    assert len(articles) == 300
    assert [a[:80] for a in articles if is_refusal(a)] == []


@pytest.mark.parametrize("text", NEWS["text"].tolist())
def test_news_openings_are_not_refusals(text: str) -> None:
    assert not is_refusal(text)


@pytest.mark.parametrize("text", REFUSALS.loc[REFUSALS["caught_by"] == "patterns", "text"].tolist())
def test_refusals_are_caught_by_the_patterns(text: str) -> None:
    assert is_refusal(text)


def test_the_full_detector_on_the_bank_and_the_abc_corpus() -> None:
    """Patterns plus the real all-MiniLM-L6-v2 check at the configured default 0.6."""
    detector = RefusalDetector(similarity=0.6)
    assert detector.detect(REFUSALS["text"].tolist()).all()
    assert not detector.detect(NEWS["text"].tolist()).any()
    assert not detector.detect(abc_articles()).any()


def test_similarity_alone_needs_an_addressed_opening() -> None:
    """A news opening about stereotypes is close to the exemplars in topic, but it does not
    speak as the model or about the request, so the similarity check never sees it."""
    detector = RefusalDetector(similarity=0.3)
    text = "Researchers say gender stereotypes still shape hiring decisions at large companies."
    assert detector.scores([text])[0] >= 0.3  # close in topic...
    assert not detector.detect([text])[0]  # ...but not a refusal


def test_a_refusal_after_the_opening_is_not_read() -> None:
    article = (
        "Farmers in the state's north are bracing for another dry winter. Rain has been "
        "scarce since March. One grower said: I can't see how we survive another year."
    )
    assert not is_refusal(article)
    assert is_refusal("Thank you for asking. I can't write that article.")
    assert not is_refusal(
        "Thank you for asking. Here is the article. I can't wait to read it.", max_sentences=2
    )
