"""Text instruments that cost more than a lookup keep their scores in the readings cache
(issue 43.1, the text half): TextBlob's polarity and the refusal detector's MiniLM similarity,
with the real instruments, keyed by each exact text's sha256 with the instrument's config and
code identity. A rerun measures nothing, a killed measurement keeps every chunk it committed,
SQLite and a real PostgreSQL hold them alike, and ``genfair cache stats`` lists them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from genfair.instruments import sentiment as sentiment_module
from genfair.instruments.readings import (
    CachedScores,
    InstrumentSpec,
    code_identity,
    read_texts,
    reading_key,
    scored_once,
    text_content,
)
from genfair.instruments.refusal import OpeningSimilarity, RefusalDetector
from genfair.instruments.sentiment import TextBlobSentiment
from genfair.instruments.toxicity import AltProfanityCheck
from genfair.models.cache import ResponseCache

ROOT = Path(__file__).resolve().parents[2]
TEXTBLOB = TextBlobSentiment.reading_name

SENTENCES = [
    "The new school opened to great applause from the happy parents.",
    "Officials said the terrible storm damaged roads across the region.",
    "She was a strong and capable engineer.",
    "He was a weak leader, critics said.",
    "The council met on Tuesday.",
]


def _counting_polarity(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sentences TextBlob scores from now on (the module's ``sentiment`` wrapped)."""
    seen: list[str] = []
    real = sentiment_module.sentiment

    def counted(sentence: str) -> float:
        seen.append(sentence)
        return real(sentence)

    monkeypatch.setattr(sentiment_module, "sentiment", counted)
    return seen


def test_each_text_is_scored_once_and_a_rerun_scores_nothing(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite and a real PostgreSQL: the scores are the scorer's own (same values, same
    dtype), a repeated text is scored once, a rerun scores nothing."""
    texts = [*SENTENCES, SENTENCES[0], SENTENCES[2]]
    plain = TextBlobSentiment().score(texts)
    seen = _counting_polarity(monkeypatch)
    cached = scored_once(TextBlobSentiment(), lambda: ResponseCache(store_url))
    assert isinstance(cached, CachedScores) and cached.name == "textblob"
    first = cached.score(texts)
    assert sorted(seen) == sorted(SENTENCES)  # each distinct text once
    assert first.dtype == plain.dtype and first.tobytes() == plain.tobytes()
    again = scored_once(TextBlobSentiment(), lambda: ResponseCache(store_url)).score(texts)
    assert len(seen) == len(SENTENCES)  # nothing scored again
    assert again.tobytes() == plain.tobytes()
    with ResponseCache(store_url) as store:
        assert store.reading_counts() == {TEXTBLOB: len(SENTENCES)}


def test_the_key_is_the_exact_text_the_instrument_its_config_and_its_code() -> None:
    blob = TextBlobSentiment()
    spec = InstrumentSpec.of(TEXTBLOB, blob)
    code = code_identity(blob)
    key = reading_key(text_content("A happy day."), spec, code)
    assert text_content("A happy day.") != text_content("A happy day. ")  # the exact bytes
    similarity = OpeningSimilarity()
    other = InstrumentSpec.of(OpeningSimilarity.reading_name, similarity)
    assert reading_key(text_content("A happy day."), other, code_identity(similarity)) != key
    fewer = OpeningSimilarity(exemplars=["I cannot help with that."])
    assert InstrumentSpec.of(fewer.reading_name, fewer).config_json != other.config_json
    assert reading_key(text_content("A happy day."), spec, "another code") != key
    # a text instrument's identity names its package: another TextBlob version measures again
    assert "textblob" in blob.reading_identity()["packages"]


def test_cheap_instruments_and_runs_without_a_cache_are_not_cached() -> None:
    """alt-profanity-check costs about a lookup: it scores as it did, as does any scorer
    when there is no cache."""
    profanity = AltProfanityCheck()
    assert scored_once(profanity, lambda: None) is profanity
    blob = TextBlobSentiment()
    assert scored_once(blob, None) is blob


def test_a_stored_score_that_is_not_a_number_is_measured_again(tmp_path: Path) -> None:
    db = tmp_path / "responses.sqlite"
    blob = TextBlobSentiment()
    key = reading_key(
        text_content(SENTENCES[0]), InstrumentSpec.of(TEXTBLOB, blob), code_identity(blob)
    )
    with ResponseCache(db) as store:
        store.put_readings([(key, TEXTBLOB, {"score": "high"})])
        scores = scored_once(blob, store).score(SENTENCES[:1])
        assert scores.tolist() == blob.score(SENTENCES[:1]).tolist()
        assert store.get_readings([key]) == {key: {"score": float(scores[0])}}


class _CountingEmbedder:
    """The packaged MiniLM, counting the texts it embeds."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        from genfair.instruments.embeddings import minilm

        self.model, self.texts = minilm(), 0

    def encode(self, sentences: list[str], **kwargs: Any) -> np.ndarray:
        self.texts += len(sentences)
        return self.model.encode(sentences, **kwargs)


def test_the_refusal_similarity_is_measured_once_and_a_threshold_change_measures_nothing(
    tmp_path: Path,
) -> None:
    """The real MiniLM check on openings the patterns let through: a rerun, or another
    ``similarity`` threshold, embeds nothing (not even the exemplars); the flags are the
    uncached detector's."""
    texts = [
        "Writing such an article would promote discrimination against women, so here is "
        "a neutral one instead.",
        "My article follows. The council met on Tuesday to discuss the new hospital.",
        "I think the mayor's plan is sound. Residents agreed at the meeting.",
        "The council met on Tuesday.",  # not addressed: never embedded
    ]
    opener = lambda: ResponseCache(tmp_path / "responses.sqlite")  # noqa: E731
    plain = RefusalDetector(similarity=0.5, embedder=_CountingEmbedder())
    expected_flags, expected_scores = plain.detect(texts), plain.scores(texts[:3])
    embedder = _CountingEmbedder()
    first = RefusalDetector(similarity=0.5, embedder=embedder, cache=opener)
    assert first.detect(texts).tolist() == expected_flags.tolist()
    assert embedder.texts > 0
    rerun = _CountingEmbedder()
    for threshold in (0.5, 0.3, 0.9):
        detector = RefusalDetector(similarity=threshold, embedder=rerun, cache=opener)
        scores = detector.scores(texts[:3])
        assert scores.dtype == expected_scores.dtype
        assert scores.tobytes() == expected_scores.tobytes()
        assert detector.detect(texts).tolist() == (
            RefusalDetector(similarity=threshold, embedder=embedder).detect(texts).tolist()
        )
    assert rerun.texts == 0
    with ResponseCache(tmp_path / "responses.sqlite") as store:
        assert store.reading_counts() == {OpeningSimilarity.reading_name: 3}


def test_a_failure_half_way_keeps_every_chunk_measured_before_it(tmp_path: Path) -> None:
    blob = TextBlobSentiment()
    texts = [f"Day {i} was a good day." for i in range(10)]
    calls: list[list[str]] = []

    def compute(todo: list[str]) -> list[dict[str, Any]]:
        calls.append(todo)
        if len(calls) == 3:
            raise RuntimeError("the network went away")
        return [{"score": float(v)} for v in blob.score(todo)]

    with ResponseCache(tmp_path / "responses.sqlite") as store:
        with pytest.raises(RuntimeError, match="went away"):
            read_texts(blob, TEXTBLOB, texts, compute, store, chunk=3)
        assert store.reading_counts() == {TEXTBLOB: 6}  # two chunks committed
        calls.clear()
        read_texts(blob, TEXTBLOB, texts, compute, store, chunk=3)
    assert [len(c) for c in calls] == [3, 1]  # only the four not stored


CHILD = """
import sys
from genfair.instruments import sentiment
from genfair.instruments.readings import scored_once
from genfair.models.cache import ResponseCache

db, total, block_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
real, scored = sentiment.sentiment, []

def polarity(text):
    if len(scored) == block_after:  # hang mid-measurement: the parent kills us here
        sys.stdin.read()
    scored.append(text)
    return real(text)

sentiment.sentiment = polarity
texts = [f"Sentence {i} is a fine and happy one." for i in range(total)]
scored_once(sentiment.TextBlobSentiment(), lambda: ResponseCache(db)).score(texts)
"""


def test_a_measurement_killed_half_way_resumes_and_measures_only_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process scoring 1,100 sentences (chunks of 512) is killed in its third chunk, once
    two are committed (a state, not a time); the rerun scores only the 76 it had not stored."""
    db = tmp_path / "responses.sqlite"
    total = 1100
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(total), "1050"],
        env=env,
        stdin=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        stored = 0
        while stored < 1024:
            assert child.poll() is None, "the scoring process ended before two chunks"
            assert time.monotonic() < deadline, "no two chunks committed in 300 s"
            if db.exists():
                with ResponseCache(db) as cache:
                    stored = cache.reading_counts().get(TEXTBLOB, 0)
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    with ResponseCache(db) as cache:
        assert cache.reading_counts() == {TEXTBLOB: 1024}
    seen = _counting_polarity(monkeypatch)
    texts = [f"Sentence {i} is a fine and happy one." for i in range(total)]
    resumed = scored_once(TextBlobSentiment(), lambda: ResponseCache(db)).score(texts)
    assert len(seen) == total - 1024
    assert resumed.tobytes() == TextBlobSentiment().score(texts).tobytes()


def test_cache_stats_lists_the_text_readings_per_instrument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from genfair.cli import main

    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "local"))
    db = tmp_path / "responses.sqlite"
    scored_once(TextBlobSentiment(), lambda: ResponseCache(db)).score(SENTENCES)
    with ResponseCache(db) as store:
        store.put_readings([("k", OpeningSimilarity.reading_name, {"score": 0.25})])
    assert main(["cache", "stats", f"sqlite:///{db}"]) == 0
    out = capsys.readouterr().out
    assert "instrument readings (measured once per image or text" in out
    assert f"{TEXTBLOB}          5" in out
    assert f"{OpeningSimilarity.reading_name}          1" in out


def test_answer_embeddings_are_readings_embedded_once(store_url: str) -> None:
    """The answer matchers' :class:`EmbeddingCache` over the study's readings cache (SQLite
    and a real PostgreSQL): the vectors the file-backed cache gives, bit for bit, each text
    embedded once, and a new cache (a rerun) embeds nothing."""
    from genfair.instruments.answer_mapper import (
        READING_NAME,
        EmbeddingCache,
        LazyEmbedder,
        MiniLMEmbedder,
    )

    answers = ["a nurse", "the doctor", "firefighter", "a nurse", "software developer"]
    expected = EmbeddingCache(MiniLMEmbedder()).embed(answers)
    opener = lambda: ResponseCache(store_url)  # noqa: E731
    first = EmbeddingCache(MiniLMEmbedder(), readings=opener)
    assert first.embed(answers).tobytes() == expected.tobytes()
    assert first.encoded == 4
    assert first.embed(answers[:2]).tobytes() == expected[:2].tobytes() and first.encoded == 4

    def never() -> MiniLMEmbedder:
        raise AssertionError("MiniLM was loaded although every embedding is a reading")

    rerun = EmbeddingCache(LazyEmbedder(never, MiniLMEmbedder.name), readings=opener)
    assert rerun.embed(answers).tobytes() == expected.tobytes() and rerun.encoded == 0
    assert rerun.save() is None  # nothing written beside the readings
    with ResponseCache(store_url) as store:
        assert store.reading_counts() == {READING_NAME: 4}


def test_the_answer_mapper_maps_the_same_from_readings(
    tmp_path: Path, occupations_table: Path
) -> None:
    """IRIS's answer mapper (its IFS-Und label passes the study's cache as ``readings``):
    the same mapping as with its embeddings file, and a second mapper embeds nothing."""
    import pandas as pd

    from genfair.instruments.answer_mapper import READING_NAME, AnswerMapper, MiniLMEmbedder

    table = pd.read_parquet(occupations_table)
    answers = ["a medic who saves lives", "someone who fixes pipes", "doctor", "chef de cuisine"]
    expected = AnswerMapper(table, MiniLMEmbedder(), cache_path=tmp_path / "e.npz").map(answers)
    opener = lambda: ResponseCache(tmp_path / "responses.sqlite")  # noqa: E731
    first = AnswerMapper(table, MiniLMEmbedder(), readings=opener)
    pd.testing.assert_frame_equal(first.map(answers), expected)
    again = AnswerMapper(table, MiniLMEmbedder(), readings=opener)
    pd.testing.assert_frame_equal(again.map(answers), expected)
    assert first.cache.encoded > 0 and again.cache.encoded == 0
    with opener() as store:
        assert store.reading_counts() == {READING_NAME: first.cache.encoded}
