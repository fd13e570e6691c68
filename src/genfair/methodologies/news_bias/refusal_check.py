"""How often the refusal detector fires on text that is certainly not a refusal.

Paper 001 reports refusal rates (ChatGPT declined 89.13% of biased prompts, Results,
"Gender Bias of AIGC under Biased Prompts") without describing how refusals were found.
genfair's detector (:mod:`genfair.instruments.refusal`) is a heuristic, and every article
it wrongly marks ``refused`` leaves the word, sentence and document levels. The original
articles are news written by journalists, so none of them is a refusal: the share the
detector flags among them estimates its false-positive rate on news text,

    FPR = (# originals flagged) / (# distinct originals),

with a Wilson score interval (:func:`genfair.metrics.intervals.proportion_ci`). It is an
estimate for human-written news; a model's articles may differ in style.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from genfair.metrics.intervals import proportion_ci

Detect = Callable[[Sequence[str]], np.ndarray]


def refusal_false_positive(
    labels: pd.DataFrame, detect: Detect, confidence: float = 0.95, examples: int = 5
) -> dict[str, Any]:
    """The detector's rate on the distinct original articles of a news pair table.

    ``labels`` is the news-bias label table (columns ``article_id`` and ``original_text``;
    each article appears once per prompt type, and is counted once). ``detect`` maps texts
    to a boolean array, e.g. ``RefusalDetector(similarity=...).detect``. Returns ``rate``,
    ``ci_low``, ``ci_high`` (Wilson, at ``confidence``), ``n`` (originals checked),
    ``n_flagged`` and up to ``examples`` flagged ``article_id`` values, for reading them.
    """
    missing = [c for c in ("article_id", "original_text") if c not in labels.columns]
    if missing:
        raise ValueError(
            f"refusal_false_positive: the label table lacks column(s) {missing}; pass the "
            "news_bias label table (one row per response, with article_id and original_text)"
        )
    originals = labels.drop_duplicates("article_id")
    originals = originals[originals["original_text"].fillna("").str.strip() != ""]
    texts = originals["original_text"].astype(str).tolist()
    flags = np.asarray(detect(texts), dtype=bool) if texts else np.zeros(0, dtype=bool)
    if flags.shape != (len(texts),):
        raise ValueError(f"detect returned {flags.shape} flags for {len(texts)} texts")
    ci = proportion_ci(int(flags.sum()), len(texts), confidence)
    return {
        "rate": ci["mean"],
        "ci_low": ci["ci_low"],
        "ci_high": ci["ci_high"],
        "n": ci["n"],
        "n_flagged": int(flags.sum()),
        "flagged_examples": originals["article_id"][flags].astype(str).head(examples).tolist(),
    }
