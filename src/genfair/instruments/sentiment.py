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
    """Batch wrapper: ``score(sentences) -> np.ndarray`` of polarities in [-1, 1]."""

    name = "textblob"

    def score(self, sentences: Iterable[str]) -> np.ndarray:
        return np.fromiter((sentiment(s) for s in sentences), dtype=float)
