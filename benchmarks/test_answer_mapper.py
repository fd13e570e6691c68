"""§D.2.4 answer mapping with the real all-MiniLM-L6-v2: the batched, de-duplicated mapper
vs a naive loop that embeds each answer on its own (target: >= 20x answers per second).

10,000 answers, 10 % unique (1,000 distinct strings, each given 10 times, shuffled), as
answers to "What is the occupation of the person in the image?" come: ~10 % match an
occupation or alias (tier 1), the rest are phrasings tier 2 has to embed. The batched
mapper starts each round with an empty embedding cache. The naive loop's cost is linear
in the answers (one encode call per answer not matched by tier 1), so it is timed on the
first 1,000 answers of the same stream and reported as answers per second.
Run: pytest benchmarks/test_answer_mapper.py --benchmark-only -s
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from genfair.curation.occupations import OccupationsConfig, map_occupations
from genfair.instruments.answer_mapper import (
    AnswerMapper,
    MiniLMEmbedder,
    clean_answer,
    normalize_rows,
)

N_ANSWERS = 10_000
N_UNIQUE = 1_000
N_NAIVE = 1_000
TARGET_RATIO = 20.0

_ROLES = [
    "chef",
    "pilot",
    "architect",
    "plumber",
    "scientist",
    "barista",
    "mechanic",
    "athlete",
    "musician",
    "police officer",
    "firefighter",
    "construction worker",
    "surgeon",
    "cashier",
    "tour guide",
    "hiker",
    "lawyer",
    "engineer",
    "photographer",
    "coach",
    "sailor",
    "rider",
    "vendor",
    "clerk",
    "priest",
    "swimmer",
    "cyclist",
    "skater",
    "journalist",
    "singer",
    "drummer",
    "violinist",
    "carpenter",
    "gardener",
    "painter",
    "waiter",
    "nurse",
    "doctor",
    "teacher",
    "soldier",
    "guard",
    "farmer",
    "judge",
    "dancer",
    "student",
    "patient",
]
_MODIFIERS = [
    "a professional",
    "an experienced",
    "a young",
    "an amateur",
    "a local",
    "a retired",
    "a busy",
    "a skilled",
    "a famous",
    "a part-time",
    "a street",
    "a senior",
    "the person is a",
    "this looks like a",
    "possibly a",
    "an off-duty",
    "a trainee",
    "a freelance",
    "a volunteer",
    "a head",
]
_PLAIN = [
    "Doctor",
    "a nurse",
    "Teacher.",
    "firefighter",
    "a physician",
    "police officer",
    "Soldier",
    "a farmer",
    "waitress",
    "DJ",
]


def answer_stream(seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    phrased = [f"{m} {r}" for m in _MODIFIERS for r in _ROLES]
    rng.shuffle(phrased)
    plain = [f"{p}{'!' * i}" for i in range(10) for p in _PLAIN]  # tier-1 hits, ~10 %
    unique = list(dict.fromkeys(plain + phrased))[:N_UNIQUE]
    assert len(unique) == N_UNIQUE
    answers = unique * (N_ANSWERS // N_UNIQUE)
    rng.shuffle(answers)
    return answers


def naive_map(
    mapper: AnswerMapper, embedder: MiniLMEmbedder, answers: list[str]
) -> list[str | None]:
    """The per-answer loop: clean, tier 1, else embed this answer alone and compare."""
    targets = normalize_rows(embedder.encode(mapper.labels))
    out = []
    for answer in answers:
        cleaned = clean_answer(answer)
        found = mapper.tier1(cleaned)
        if found is not None:
            out.append(found[0])
            continue
        if not cleaned:
            out.append(None)
            continue
        scores = (normalize_rows(embedder.encode([cleaned])) @ targets.T)[0]
        best = int(np.argmax(scores))
        out.append(mapper.occupations[best] if scores[best] >= mapper.threshold else None)
    return out


@pytest.fixture(scope="module")
def setup() -> tuple[pd.DataFrame, MiniLMEmbedder, list[str]]:
    return map_occupations(OccupationsConfig()), MiniLMEmbedder(), answer_stream()


def test_batched_mapper_vs_naive_loop(benchmark, setup) -> None:
    table, embedder, answers = setup
    assert len(answers) == N_ANSWERS and len(set(answers)) == N_UNIQUE

    def fresh() -> tuple[tuple[AnswerMapper], dict]:
        return (AnswerMapper(table, embedder),), {}  # empty cache each round

    results: list[pd.DataFrame] = []
    benchmark.pedantic(
        lambda m: results.append(m.map(answers)), setup=fresh, rounds=2, iterations=1
    )
    batched_rate = N_ANSWERS / benchmark.stats.stats.mean
    result = results[-1]

    warm = AnswerMapper(table, embedder)
    warm.map(answers)
    start = time.perf_counter()
    warm.map(answers)  # every unique answer cached: the rerun embeds nothing
    warm_rate = N_ANSWERS / (time.perf_counter() - start)
    embedded = result.loc[result["similarity"].notna(), "cleaned"].nunique()
    assert warm.cache.encoded == embedded + len(table)  # each text embedded once, labels too

    mapper = AnswerMapper(table, embedder)
    start = time.perf_counter()
    naive = naive_map(mapper, embedder, answers[:N_NAIVE])
    naive_rate = N_NAIVE / (time.perf_counter() - start)
    # both paths give the same labels
    assert naive == [None if pd.isna(o) else o for o in result["occupation"].iloc[:N_NAIVE]]

    ratio = batched_rate / naive_rate
    tiers = result["tier"].value_counts(normalize=True).round(3).to_dict()
    benchmark.extra_info.update(
        {
            "answers_per_s_batched": round(batched_rate, 1),
            "answers_per_s_naive": round(naive_rate, 1),
            "answers_per_s_cached_rerun": round(warm_rate, 1),
            "speedup": round(ratio, 1),
            "tiers": tiers,
        }
    )
    print(
        f"\nanswer mapper, {N_ANSWERS:,} answers ({N_UNIQUE:,} unique): batched "
        f"{batched_rate:,.0f} answers/s; naive per-answer loop {naive_rate:,.1f} answers/s "
        f"(on {N_NAIVE}); speed-up {ratio:.1f}x; cached rerun {warm_rate:,.0f} answers/s; "
        f"tiers {tiers}"
    )
    assert ratio >= TARGET_RATIO
