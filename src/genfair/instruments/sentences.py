"""Offline sentence splitting and sentence-to-group assignment (paper 001, Methods,
"Evaluating Sentence Level Bias").

Splitting uses ``nupunkt`` (a pure-Python Punkt sentence tokenizer with a bundled
pre-trained English model; no network, no NLTK data download). The paper does not name
its splitter; nupunkt is genfair's offline choice.

Group assignment follows the paper: "we counted the number of words related to each
population group within the sentence. The population group with the highest count of
related words was assigned to the sentence ... Sentences with an equal count of words
related to each population group or containing no gender related words were discarded."
Genfair reads "equal count" as *any tie for the maximum* (with three race groups, counts
(2, 2, 0) are discarded too, since no single group has the highest count).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import nupunkt

__all__ = ["assign_group", "assign_groups", "sentence_spans", "split_sentences"]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (nupunkt default English model)."""
    if not text or not text.strip():
        return []
    return [s for s in nupunkt.sent_tokenize(text) if s.strip()]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of the sentences of ``text``."""
    if not text or not text.strip():
        return []
    return [(a, b) for a, b in nupunkt.sent_spans(text) if text[a:b].strip()]


def assign_group(sentence_counts: Sequence[int] | np.ndarray) -> int | None:
    """Index of the group with the strictly highest count, or ``None`` for no group
    words (all zero) or a tie for the maximum."""
    counts = np.asarray(sentence_counts)
    if counts.size == 0:
        return None
    top = counts.max()
    if top <= 0 or int((counts == top).sum()) > 1:
        return None
    return int(counts.argmax())


def assign_groups(counts: np.ndarray) -> np.ndarray:
    """Vectorised :func:`assign_group` over rows of an ``(n, k)`` array; ``-1`` = None."""
    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise ValueError(f"counts must be 2-D (sentences x groups); got {counts.shape}")
    if counts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    top = counts.max(axis=1)
    unique = (counts == top[:, None]).sum(axis=1) == 1
    out = counts.argmax(axis=1).astype(np.int64)
    out[(top <= 0) | ~unique] = -1
    return out
