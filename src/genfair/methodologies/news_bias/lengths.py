"""Article lengths (paper 001, Table 3: "Average Word Count of News Articles Used in the
Study"), and how many generated articles the token limit cut short.

Per prompt type, over the ``ok`` generated articles: the mean word count (whitespace-
separated tokens; the paper does not say how it counted) with a t-interval, and the share
whose completion stopped at the token limit (``finish_reason == "length"``; the hf and
embedded backends record it, OpenAI returns it) with a Wilson interval. ``length`` means the
limit cut an answer the model had not ended; an endpoint that says ``length`` for an answer
ended at the last allowed token (``transformers serve``) is told apart with the model's
``tokenizer`` as its answers arrive, and without one makes the share an upper bound
(docs/methodology.md, "Article length"). A row
``original`` gives the same word count for the distinct original articles, the paper's
New York Times / Reuters row. Articles cut by ``max_tokens`` are shorter than the paper's
and may miss the end of the story, which the word-level shares then miss too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from genfair.metrics.intervals import mean_ci, proportion_ci

COLUMNS = [
    "prompt_type",
    "n",
    "mean_words",
    "ci_low",
    "ci_high",
    "n_length",
    "length_share",
    "length_ci_low",
    "length_ci_high",
    "n_finish_reason",
]


def word_count(text: Any) -> int:
    """Whitespace-separated tokens of ``text`` (0 for a missing text)."""
    return len(text.split()) if isinstance(text, str) else 0


def article_lengths(
    labels: pd.DataFrame, prompt_types: list[str], confidence: float = 0.95
) -> pd.DataFrame:
    """Table 3 per prompt type (``ok`` articles of ``labels``) and for the originals.

    ``labels``: the news_bias label table (``prompt_type``, ``status``, ``generated_text``,
    ``article_id``, ``original_text``; ``finish_reason`` when the responses had one). The
    length share is over the articles whose finish reason is known (``n_finish_reason``).
    """
    rows = []
    for prompt_type in prompt_types:
        ok = labels[(labels["prompt_type"] == prompt_type) & (labels["status"] == "ok")]
        if ok.empty:
            continue
        words = mean_ci(
            np.array([word_count(t) for t in ok["generated_text"]], dtype=float), confidence
        )
        reasons = ok["finish_reason"].dropna() if "finish_reason" in ok else pd.Series(dtype=object)
        cut = proportion_ci(int((reasons == "length").sum()), len(reasons), confidence)
        rows.append(
            {
                "prompt_type": prompt_type,
                "n": len(ok),
                "mean_words": words["mean"],
                "ci_low": words["ci_low"],
                "ci_high": words["ci_high"],
                "n_length": int((reasons == "length").sum()),
                "length_share": cut["mean"],
                "length_ci_low": cut["ci_low"],
                "length_ci_high": cut["ci_high"],
                "n_finish_reason": len(reasons),
            }
        )
    originals = labels.drop_duplicates("article_id")
    if not originals.empty:
        words = mean_ci(
            np.array([word_count(t) for t in originals["original_text"]], dtype=float), confidence
        )
        rows.append(
            {
                "prompt_type": "original",
                "n": len(originals),
                "mean_words": words["mean"],
                "ci_low": words["ci_low"],
                "ci_high": words["ci_high"],
                "n_length": 0,
                "length_share": math.nan,
                "length_ci_low": math.nan,
                "length_ci_high": math.nan,
                "n_finish_reason": 0,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["article_lengths", "word_count"]
