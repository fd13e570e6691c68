"""The response cache: content-addressed keys, committed puts, errors never stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from genfair.frame import cache_dir
from genfair.models.base import Completion, Request
from genfair.models.cache import ResponseCache

FINGERPRINT = {
    "backend": "hf",
    "model_id": "org/model",
    "revision": "abc123",
    "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 16},
    "system_prompt": None,
}
MESSAGES = ({"role": "user", "content": "Which group? A. Female B. Male"},)


def request(**changes) -> Request:
    fields = {
        "messages": MESSAGES,
        "sample_index": 0,
        "attempt": 0,
        "seed": 7,
        "meta": {"policy": "objective"},
    }
    fields.update(changes)
    return Request(**fields)


def with_fingerprint(**changes) -> dict:
    fingerprint = {**FINGERPRINT, "sampling": dict(FINGERPRINT["sampling"])}
    for key, value in changes.items():
        if key in fingerprint["sampling"]:
            fingerprint["sampling"][key] = value
        else:
            fingerprint[key] = value
    return fingerprint


@pytest.fixture
def cache(tmp_path):
    with ResponseCache(tmp_path / "responses.sqlite") as c:
        yield c


BASE_KEY = ResponseCache.key(FINGERPRINT, request())


def test_key_is_a_sha256_hex_and_stable():
    assert len(BASE_KEY) == 64
    int(BASE_KEY, 16)
    # a fresh but equal request and an equal (copied) fingerprint give the same key
    assert ResponseCache.key(with_fingerprint(), request()) == BASE_KEY


@pytest.mark.parametrize(
    "changed",
    [
        {"messages": ({"role": "user", "content": "Which group? A. Male B. Female"},)},
        {"messages": ({"role": "system", "content": "Be brief."}, *MESSAGES)},
        {"sample_index": 1},
        {"attempt": 1},
        {"seed": 8},
    ],
    ids=["message-text", "extra-message", "sample_index", "attempt", "seed"],
)
def test_key_changes_with_the_request(changed):
    assert ResponseCache.key(FINGERPRINT, request(**changed)) != BASE_KEY


@pytest.mark.parametrize(
    "changed",
    [
        {"model_id": "org/other-model"},
        {"revision": "def456"},
        {"backend": "openai"},
        {"temperature": 0.7},
        {"max_tokens": 17},
        {"top_p": 0.9},
        {"system_prompt": "You are helpful."},
    ],
    ids=lambda c: next(iter(c)),
)
def test_key_changes_with_the_fingerprint(changed):
    assert ResponseCache.key(with_fingerprint(**changed), request()) != BASE_KEY


def test_key_ignores_meta():
    other = request(meta={"policy": "subjective", "letters": ["A", "B", "C", "D"]})
    assert ResponseCache.key(FINGERPRINT, other) == BASE_KEY
    assert ResponseCache.key(FINGERPRINT, request(meta={})) == BASE_KEY


def test_put_get_roundtrip(cache):
    completion = Completion(
        status="ok",
        text='{"answer": "B"}',
        finish_reason="stop",
        latency_s=0.25,
        tries=2,
        usage={"prompt_tokens": 31, "completion_tokens": 5},
    )
    assert cache.get(BASE_KEY) is None
    assert cache.put(BASE_KEY, "hf:org/model", completion) is True
    assert cache.get(BASE_KEY) == completion
    assert len(cache) == 1


def test_refused_completions_are_stored(cache):
    refused = Completion(status="refused", finish_reason="content_filter")
    assert cache.put("k-refused", "m", refused) is True
    assert cache.get("k-refused") == refused


def test_error_completions_are_not_stored(cache):
    assert cache.put(BASE_KEY, "m", Completion(status="error", error="timeout")) is False
    assert cache.get(BASE_KEY) is None
    assert len(cache) == 0


def test_insert_or_ignore_keeps_the_first(cache):
    first = Completion(status="ok", text="A")
    assert cache.put(BASE_KEY, "m", first)
    cache.put(BASE_KEY, "m", Completion(status="ok", text="B"))
    assert cache.get(BASE_KEY).text == "A"
    assert len(cache) == 1


def test_persists_across_reopen(tmp_path):
    path = tmp_path / "nested" / "dir" / "responses.sqlite"  # parents are created
    with ResponseCache(path) as first:
        first.put("k1", "hf:org/model", Completion(status="ok", text="one"))
        first.put("k2", "hf:org/model", Completion(status="ok", text="two"))
    with ResponseCache(path) as again:
        assert len(again) == 2
        assert again.get("k1").text == "one"
        assert again.get("k2").text == "two"
    # the model column is recorded for each row
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT DISTINCT model FROM responses").fetchall() == [("hf:org/model",)]


def test_put_is_visible_to_another_connection_at_once(tmp_path):
    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as writer, ResponseCache(path) as reader:
        writer.put("k", "m", Completion(status="ok", text="x"))
        assert reader.get("k").text == "x"  # committed, not buffered


def test_get_many_over_500_keys(cache):
    keys = [f"key-{i:05d}" for i in range(1234)]
    for i, key in enumerate(keys):
        if i % 3:  # every third key is missing
            cache.put(key, "m", Completion(status="ok", text=str(i)))
    found = cache.get_many(keys)
    expected = {key for i, key in enumerate(keys) if i % 3}
    assert set(found) == expected
    assert len(found) == 822
    assert found["key-01232"].text == "1232"
    assert found["key-00001"].text == "1"
    assert cache.get_many([]) == {}


def test_cache_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.delenv("GENFAIR_CACHE_DIR", raising=False)
    assert cache_dir(".genfair/cache") == Path(".genfair/cache")
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache_dir(".genfair/cache") == tmp_path / "elsewhere"
    monkeypatch.setenv("GENFAIR_CACHE_DIR", "")  # empty = unset
    assert cache_dir(".genfair/cache") == Path(".genfair/cache")


# --- nothing malformed in, nothing malformed out (issue 16.1) --------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        Completion(status="ok", text=42),  # type: ignore[arg-type]
        Completion(status="ok", text=["A", "B"]),  # type: ignore[arg-type]
        Completion(status="ok", text=None),
        Completion(status="ok", text="\ud800 lone surrogate"),
        Completion(status="maybe", text="A"),  # type: ignore[arg-type]
        Completion(status="ok", text="A", usage={"tokens": "many"}),  # type: ignore[dict-item]
    ],
    ids=["number", "list", "null", "surrogate", "status", "usage"],
)
def test_malformed_completions_are_never_stored(cache, bad):
    assert bad.problem() is not None
    assert cache.put(BASE_KEY, "m", bad) is False
    assert cache.get(BASE_KEY) is None and len(cache) == 0


def test_a_poisoned_entry_from_an_older_run_is_dropped_and_asked_again(tmp_path):
    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as cache:
        cache.put("good", "m", Completion(status="ok", text="A"))
    with sqlite3.connect(path) as db:  # as genfair before the check wrote them
        db.executemany(
            "INSERT INTO responses (key, model, completion) VALUES (?, 'm', ?)",
            [
                (
                    "number",
                    '{"status": "ok", "text": 3, "error": null, "finish_reason": '
                    '"stop", "latency_s": 0.1, "tries": 1, "usage": {}}',
                ),
                ("garbage", "not json"),
            ],
        )
    with ResponseCache(path) as cache:
        assert set(cache.get_many(["good", "number", "garbage"])) == {"good"}
        assert len(cache) == 1  # the poisoned rows are gone, so the next put is stored
        assert cache.put("number", "m", Completion(status="ok", text="B"))
        assert cache.get("number").text == "B"


def test_old_entries_keep_their_keys_and_values(tmp_path):
    """A row written by earlier genfair (same schema, same key) is served unchanged."""
    path = tmp_path / "responses.sqlite"
    blob = (
        '{"error": null, "finish_reason": "stop", "latency_s": 0.2, "status": "ok", "text": "B",'
        ' "tries": 1, "usage": {"completion_tokens": 1}}'
    )
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
            "completion TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime('now')))"
        )
        db.execute(
            "INSERT INTO responses (key, model, completion) VALUES (?, 'hf:org/model', ?)",
            (BASE_KEY, blob),
        )
    with ResponseCache(path) as cache:
        assert cache.get(ResponseCache.key(FINGERPRINT, request())) == Completion(
            status="ok",
            text="B",
            finish_reason="stop",
            latency_s=0.2,
            usage={"completion_tokens": 1},
        )


def test_a_key_value_is_masked_before_it_is_written(tmp_path, monkeypatch):
    from genfair.models.redaction import register_key_env

    monkeypatch.setenv("GENFAIR_TEST_CACHE_KEY", "cache-secret-0123456789")
    register_key_env("GENFAIR_TEST_CACHE_KEY")
    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k", "m", Completion(status="ok", text="key: cache-secret-0123456789"))
        assert cache.get("k").text == "key: [redacted]"
    assert b"cache-secret" not in path.read_bytes()
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or b"cache-secret" not in wal.read_bytes()


# --- claims: one process answers each key ---------------------------------------------------


def test_claims_are_exclusive_and_released_by_put(tmp_path):
    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as a, ResponseCache(path) as b:
        assert a.claim(["k1", "k2"]) == {"k1", "k2"}
        assert a.claim(["k1"]) == {"k1"}  # already ours
        assert b.claim(["k1", "k2", "k3"]) == {"k3"}
        assert b.claimed_by_others(["k1", "k2", "k3"]) == 2
        a.put("k1", "m", Completion(status="ok", text="A"))
        a.put("k2", "m", Completion(status="error", error="boom"))  # a failure frees it too
        # k2 is free again; k1 is answered: it is read from the cache, never claimed
        assert b.claim(["k1", "k2"]) == {"k2"}


def test_expired_and_dead_owners_claims_are_taken_over(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as a, ResponseCache(path) as b:
        assert a.claim(["k"], ttl_s=0.05) == {"k"}
        import time

        time.sleep(0.1)
        assert b.claim(["k"]) == {"k"}  # expired
    # a claim left by a process that died (kill -9) is free at once, not after the expiry
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with ResponseCache(path) as c:
        with sqlite3.connect(path) as db:
            db.execute("DELETE FROM claims")
            db.execute("INSERT INTO claims VALUES ('k2', ?, 1e12)", (f"{c._host}:{dead}:abcd",))
        assert c.claim(["k2"]) == {"k2"}


def test_holding_renews_then_releases(tmp_path):
    import time

    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as a, ResponseCache(path) as b:
        # a beat every third of the ttl: a second's ttl leaves two beats' slack to a loaded
        # machine's scheduler and disk (0.3 s left 0.1 s, and a sqlite write can take that)
        assert a.claim(["k"], ttl_s=1.0) == {"k"}
        with a.holding(["k"], ttl_s=1.0):
            time.sleep(2.0)  # twice the ttl: still held thanks to the heartbeat
            assert b.claim(["k"]) == set()
        assert b.claim(["k"]) == {"k"}  # released at the end of the block


# --- per-request decoding overrides (issues 12, 13) -------------------------------------------


def test_keys_of_requests_without_overrides_are_the_keys_written_before_them():
    """Literal keys computed before temperature / top_p / json_schema joined Request: every
    response cached since stays a hit."""
    assert BASE_KEY == "a86206fd21458cbe54ff6e7c0e820c217bac96339d2418f7731bb93c04637b39"
    assert ResponseCache.key(FINGERPRINT, request(max_tokens=768)) == (
        "9c5d5ac8de2af7ee0ad95859abbdd21e3561b8974300079d0133eee5ca752d79"
    )
    assert set(request().key_payload()) == {"messages", "sample_index", "attempt", "seed"}


SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.mark.parametrize(
    "override",
    [{"temperature": 0.7}, {"temperature": 0.0}, {"top_p": 0.9}, {"json_schema": SCHEMA}],
    ids=lambda o: next(iter(o)),
)
def test_each_override_enters_the_key_only_when_set(override):
    name, value = next(iter(override.items()))
    assert request(**override).key_payload()[name] == value
    assert set(request(**override).key_payload()) == {
        "messages",
        "sample_index",
        "attempt",
        "seed",
        name,
    }
    assert ResponseCache.key(FINGERPRINT, request(**override)) != BASE_KEY
    # a dict schema in a frozen request: equal requests, equal keys, whatever the key order
    reordered = {k: SCHEMA[k] for k in reversed(SCHEMA)} if name == "json_schema" else value
    assert ResponseCache.key(FINGERPRINT, request(**{name: reordered})) == ResponseCache.key(
        FINGERPRINT, request(**override)
    )


@pytest.mark.parametrize(
    "bad",
    [{"temperature": -0.1}, {"top_p": 0.0}, {"top_p": 1.5}, {"json_schema": "{}"}],
    ids=lambda b: f"{next(iter(b))}={next(iter(b.values()))}",
)
def test_overrides_out_of_range_are_refused_where_they_are_made(bad):
    from genfair.models.runner import Call

    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        request(**bad)
    with pytest.raises(ValueError, match=name):
        Call(probe_id="p", messages=MESSAGES, **bad)


def test_effective_sampling_is_the_models_with_the_requests_overrides():
    from genfair.models.config import SamplingParams

    model = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=16)
    assert request().sampling(model) is model
    assert request(temperature=0.8, max_tokens=99).sampling(model) == SamplingParams(
        temperature=0.8, top_p=1.0, max_tokens=99
    )
    assert request(top_p=0.5).sampling(model) == SamplingParams(
        temperature=0.0, top_p=0.5, max_tokens=16
    )


def test_a_new_cache_file_locked_by_another_machine_switches_to_wal_once_the_lock_goes(
    tmp_path: Path,
) -> None:
    """Two machines opening a new cache at once (seen in a clean-clone run): the WAL switch
    needs the file alone, and SQLite refuses it with "database is locked" while another
    connection holds a lock on the still rollback-mode file. It is retried until the lock goes."""
    import logging
    import threading

    from genfair.models.cache import _switch_to_wal

    path = tmp_path / "responses.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")  # the other machine, mid-write
    holder.execute("INSERT INTO t VALUES (1)")
    opener = sqlite3.connect(path, timeout=0.05, isolation_level=None, check_same_thread=False)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        opener.execute("PRAGMA journal_mode=WAL")  # SQLite's own answer, which the retry is for

    refused = threading.Event()

    class Refusals(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "switching to WAL again" in record.getMessage():
                refused.set()

    logger = logging.getLogger("genfair.models.cache")
    handler, level = Refusals(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    errors: list[BaseException] = []

    def switch() -> None:
        try:
            _switch_to_wal(opener, seconds=60)
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)

    try:
        worker = threading.Thread(target=switch)
        worker.start()
        assert refused.wait(60), "the switch was never refused"  # a state: the lock held it back
        holder.execute("COMMIT")
        worker.join(60)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert not worker.is_alive() and errors == []
    assert opener.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
