"""News bias word + sentence level on 8,629 synthetic article pairs (paper 001's corpus
size), end to end: group-word counting, Eq. 1-4 and summaries; nupunkt splitting, group
assignment, TextBlob sentiment, alt-profanity-check toxicity, Eq. 5-6 and summaries.

The corpus is synthetic (seeded): ~400-word articles built from a filler vocabulary with
gender words and "descriptor + occupation" phrases mixed in, so the instruments do
realistic work. Quick mode (benchmarks/conftest.py): 300 pairs, the same checks of the
summaries (the corpus is seeded: 278 of the 300 pairs get a gender W, above the 90 % checked;
200 pairs gave exactly 180), and the "within a few minutes" goal printed, not asserted.
Run: pytest benchmarks/test_news_levels.py --benchmark-only -s
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from genfair.instruments.sentiment import TextBlobSentiment
from genfair.instruments.toxicity import build_toxicity
from genfair.methodologies.news_bias.sentence_level import (
    sentence_level_pairs,
    summarize_sentence_level,
)
from genfair.methodologies.news_bias.word_level import summarize_word_level, word_level_pairs
from genfair.resources.group_words import GroupWordCounter

#: article pairs: full mode (paper 001's corpus), quick mode
N_PAIRS = {"full": 8_629, "quick": 300}
WORDS_PER_ARTICLE = 400
MAX_SECONDS = 300  # "within a few minutes on 2 cores"

_FILLER = (
    "the city council said on Tuesday that a new report showed growth in the region while "
    "officials and residents debated plans for schools roads and housing after the storm "
    "market prices rose quickly good bad great terrible happy sad strong weak"
).split()
_GENDER = "she her woman mother sister daughter he his him man father brother son".split()
_RACE = [
    "white teachers",
    "Black nurses",
    "Asian engineers",
    "black police officers",
    "white registered nurse",
    "Asian workers",
    "Black teacher",
]
_TOXIC = ["damn", "stupid", "idiot"]


def synthetic_pairs(n: int = N_PAIRS["full"], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def article() -> str:
        words = list(rng.choice(_FILLER, WORDS_PER_ARTICLE))
        k = rng.integers(0, 25)
        for pos in rng.integers(0, WORDS_PER_ARTICLE, k):
            words[pos] = str(rng.choice(_GENDER))
        for pos in rng.integers(0, WORDS_PER_ARTICLE, rng.integers(0, 5)):
            words[pos] = str(rng.choice(_RACE))
        for pos in rng.integers(0, WORDS_PER_ARTICLE, rng.integers(0, 3)):
            words[pos] = str(rng.choice(_TOXIC))
        out, i = [], 0
        while i < len(words):  # sentences of 12-25 words
            j = i + int(rng.integers(12, 26))
            sent = " ".join(words[i:j])
            out.append(sent[:1].upper() + sent[1:] + ".")
            i = j
        return " ".join(out)

    return pd.DataFrame(
        {
            "pair_id": np.arange(n),
            "generated_text": [article() for _ in range(n)],
            "original_text": [article() for _ in range(n)],
        }
    )


@pytest.fixture(scope="module")
def pairs(mode) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    return synthetic_pairs(N_PAIRS[mode.size("full", "quick")])


def test_news_word_and_sentence_levels(  # type: ignore[no-untyped-def]
    benchmark, mode, pairs: pd.DataFrame
) -> None:
    counter = GroupWordCounter.from_files()
    scorers = {"sentiment": TextBlobSentiment(), "toxicity": build_toxicity("auto")}
    timings: dict[str, float] = {}
    results: dict = {}

    def run() -> None:
        t0 = time.perf_counter()
        for attr in ("gender", "race"):
            results[f"word_{attr}"] = summarize_word_level(word_level_pairs(pairs, counter, attr))
        t1 = time.perf_counter()
        tables = sentence_level_pairs(pairs, counter, scorers)
        for attr, table in tables.items():
            results[f"sentence_{attr}"] = summarize_sentence_level(table)
        t2 = time.perf_counter()
        timings.update(word=t1 - t0, sentence=t2 - t1, total=t2 - t0)

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    print(
        f"\nnews bias, {len(pairs):,} pairs x ~{WORDS_PER_ARTICLE} words: word level "
        f"{timings['word']:.1f} s, sentence level {timings['sentence']:.1f} s, total "
        f"{timings['total']:.1f} s (toxicity: {scorers['toxicity'].name})"
    )
    benchmark.extra_info.update(timings)
    assert results["word_gender"]["W"]["n"] > 0.9 * len(pairs)
    assert results["word_race"]["W"]["n"] > 0
    assert results["sentence_gender"]["sentiment"]["mean"]["n"] > 0
    assert results["sentence_race"]["toxicity"]["mean"]["n"] > 0
    mode.goal(
        timings["total"] < MAX_SECONDS,
        f"both levels in {timings['total']:.1f} s (under {MAX_SECONDS} s)",
        "a goal for the paper's 8,629 pairs; quick mode scores 300",
    )
