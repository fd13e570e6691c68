"""Instrument readings in the response cache (issue 43.1): the ``readings`` table on SQLite
and a real PostgreSQL through one code path, copied between caches, counted by
``genfair cache stats``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from genfair.models.cache import ResponseCache, copy_entries
from tests.support.servers import PostgresServer

FACE = {"status": "ok", "source": "model", "instrument": "opencv_haar", "faces": [{"age": 33.5}]}


@pytest.fixture
def url(store_url: str) -> str:
    """A fresh store of each kind (tests/support/servers.py)."""
    return store_url


def test_readings_are_stored_served_kept_and_counted_per_instrument(url: str) -> None:
    with ResponseCache(url) as cache:
        assert cache.get_readings(["a"]) == {} and cache.reading_counts() == {}
        stored = cache.put_readings(
            [("a", "face_demographics", FACE), ("b", "face_demographics", {"status": "no_face"})]
        )
        assert stored == 2
        # a reading stored first (by another process) is kept, not overwritten
        cache.put_readings([("a", "face_demographics", {"status": "other"})])
        keys = [f"k{i:04d}" for i in range(1100)]  # more than one statement's worth
        cache.put_readings([(k, "image_quality", {"image": i / 7}) for i, k in enumerate(keys)])
        found = cache.get_readings(["a", "b", "missing", *keys])
        assert found["a"] == FACE and found["b"] == {"status": "no_face"} and "missing" not in found
        assert [found[k]["image"] for k in keys] == [i / 7 for i in range(1100)]  # exact floats
        assert cache.reading_counts() == {"face_demographics": 2, "image_quality": 1100}
        assert len(cache) == 0 and cache.counts() == {}  # readings are not answers
        cache.drop_readings(["b", *keys[:600]])  # malformed ones, measured again
        assert cache.reading_counts() == {"face_demographics": 1, "image_quality": 500}


def test_an_unreadable_reading_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as cache:
        cache.put_readings([("good", "face_demographics", FACE)])
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO readings (key, instrument, reading) VALUES "
            "('bad', 'face_demographics', 'not json'), ('list', 'face_demographics', '[1]')"
        )
    with ResponseCache(path) as cache:
        assert cache.get_readings(["good", "bad", "list"]) == {"good": FACE}


def test_copy_and_stats_carry_readings_into_a_team_postgresql_cache(
    postgres: PostgresServer,
    postgres_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A laptop's readings into PostgreSQL twice (the second copies none), listed by
    ``genfair cache stats`` beside the answers."""
    from genfair.cli import main
    from genfair.models.base import Completion

    monkeypatch.setenv("PGPASSWORD", postgres.password)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "local"))
    laptop = tmp_path / "laptop" / "responses.sqlite"
    with ResponseCache(laptop) as cache:
        cache.put("t", "openai:gpt", Completion(status="ok", text="A"))
        cache.put_readings([(f"r{i}", "face_demographics", FACE) for i in range(3)])
        cache.put_readings([("q", "image_quality", {"image": 0.5})])
    assert main(["cache", "copy", str(laptop), postgres_db]) == 0
    assert "(0 images) and 4 instrument readings" in capsys.readouterr().out
    with ResponseCache(laptop) as src, ResponseCache(postgres_db) as dst:
        assert copy_entries(src, dst)["readings"] == 0  # idempotent
        assert dst.get_readings(["r1", "q"]) == {"r1": FACE, "q": {"image": 0.5}}
    assert main(["cache", "stats", postgres_db]) == 0
    out = capsys.readouterr().out
    assert "openai:gpt          1" in out and "instrument readings" in out
    assert "face_demographics          3" in out and "image_quality              1" in out
    assert "total                      4" in out
    assert postgres.password not in out
