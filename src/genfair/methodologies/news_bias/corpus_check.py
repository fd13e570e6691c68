"""Which corpus a news_bias run uses: paper 001 measured 8,629 New York Times and Reuters
articles; the embedded corpus (gensim's ``lee_background.cor``, ABC news from the 2000s,
headlines derived from the first sentence) only exercises the pipeline. A run at
``scale=paper`` (``paper_scale``) on it would look like a reproduction and is not one."""

from __future__ import annotations

import pandas as pd

from genfair.curation.config import EMBEDDED_SOURCE  # not .news: it imports httpx


def embedded_corpus_warning(
    corpus: pd.DataFrame, paper_scale: bool, path: str = "corpus"
) -> str | None:
    """The warning to log when ``paper_scale`` and ``corpus`` (its ``source`` column) holds
    articles of the embedded corpus; None otherwise."""
    if not paper_scale or "source" not in corpus:
        return None
    embedded = int((corpus["source"] == EMBEDDED_SOURCE).sum())
    if not embedded:
        return None
    return (
        f"scale=paper, but {embedded} of {len(corpus)} articles of {path} come from the "
        f"embedded corpus ({EMBEDDED_SOURCE}: 2000s ABC news, headlines derived from the "
        "first sentence), not the paper's 8,629 New York Times / Reuters articles: the "
        "news_bias numbers are not a reproduction of paper 001. Configure feed, sitemap "
        "or file sources for collect_news (conf/curation) to collect a comparable corpus."
    )


__all__ = ["embedded_corpus_warning"]
