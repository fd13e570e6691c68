"""Sentence sentiment with TextBlob, the paper's choice (paper 001, Methods, "Evaluating
Sentence Level Bias": "we employed TextBlob ... The sentiment score of a sentence ranges
from -1 to 1"). ``TextBlob(sentence).sentiment.polarity`` (PatternAnalyzer, lexicon based,
offline)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["TextBlobSentiment", "sentiment"]


def sentiment(sentence: str) -> float:
    """TextBlob polarity of one sentence, in [-1, 1]."""
    from textblob import TextBlob

    return float(TextBlob(sentence).sentiment.polarity)


class TextBlobSentiment:
    """Batch wrapper: ``score(sentences) -> np.ndarray`` of polarities in [-1, 1].

    Its scores are cached readings (``reading_name``;
    :func:`genfair.instruments.readings.scored_once`): a sentence costs about 0.11 CPU-ms,
    about 11 times a lookup in the readings cache (docs/architecture.md, "Readings")."""

    name = "textblob"
    reading_name = "sentiment_textblob"

    @property
    def config(self) -> dict[str, str]:
        """Nothing to configure: TextBlob's default analyzer and its lexicon."""
        return {"analyzer": "PatternAnalyzer"}

    def reading_identity(self) -> dict[str, list[str]]:
        """What computes a polarity: this module and TextBlob (its lexicon ships inside)."""
        return {"modules": [__name__], "packages": ["textblob"]}

    def score(self, sentences: Iterable[str]) -> np.ndarray:
        return np.fromiter((sentiment(s) for s in sentences), dtype=float)
