"""The response cache: every model call in genfair goes through it.

Content-addressed: the key is the SHA-256 of the model's fingerprint (backend, model id,
revision, sampling parameters) and the request (full chat input, seed, sample index,
attempt). A value is the :class:`~genfair.models.base.Completion` as JSON.

Stored in SQLite (WAL journal): each ``put`` is its own committed transaction, so a run
killed at any moment keeps every call that completed before it and repeats none of them;
a torn write cannot happen. Failed calls (``status == "error"``) are never stored, so
they are retried on the next run. One file serves every stage, run and model, and
several processes may share it.

Nothing malformed is stored or served: ``put`` refuses a completion that fails
:meth:`Completion.problem` (a number where a text belongs would crash every later run),
and a row that fails it on the way out (written by an older genfair) is deleted and
reported as a miss, so the call is asked again. Key values of the configured
``api_key_env`` variables are masked before a row is written
(:mod:`genfair.models.redaction`).

Concurrent processes never pay twice for one call: before sending, a process *claims* the
keys it is missing (table ``claims``, one row per key, with its owner and an expiry that a
heartbeat extends while the owner works). Another process that needs a claimed key waits
for the owner's answer instead of sending it too. A claim is dropped when its answer is
stored (or fails), when it expires, or at once when its owner process on this host is
dead (a killed run), so a crash never blocks the next run.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from genfair.errors import CacheError
from genfair.models.base import Completion, Request, stable_hash
from genfair.models.redaction import redact_completion

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    completion TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now'))
)
"""
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
)
"""
#: seconds a claim lives without a heartbeat; the heartbeat renews it every third of that
CLAIM_TTL_S = 60.0


class ResponseCache:
    """A persistent map from (model fingerprint, request) to completion."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            # check_same_thread=False: the OpenAI backend reports results from its event loop
            # thread; the lock serialises access.
            self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.execute(_CLAIMS)
            self._db.commit()
        except sqlite3.DatabaseError as exc:  # e.g. "file is not a database", "disk I/O error"
            raise CacheError(
                f"response cache {self.path}: unusable ({exc}); move it aside (mv {self.path} "
                f"{self.path}.broken) and rerun: calls not in a cache are asked again (set "
                "GENFAIR_CACHE_DIR or cache.dir to use another folder)") from exc
        self._host = socket.gethostname()
        #: who holds this cache's claims: host, pid (checked for liveness), instance
        self.owner = f"{self._host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    @staticmethod
    def key(fingerprint: dict[str, Any], request: Request) -> str:
        return stable_hash({"model": fingerprint, "request": request.key_payload()})

    def get(self, key: str) -> Completion | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        bad: list[tuple[str, str, str]] = []
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, completion FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob in rows:
                    completion, problem = _load(blob)
                    if completion is None:
                        bad.append((key, blob, problem or ""))
                    else:  # masked on the way out too: rows written before a key was known
                        found[key] = redact_completion(completion)
            if bad:
                # only the row as read: a valid answer stored meanwhile is kept
                self._db.executemany(
                    "DELETE FROM responses WHERE key = ? AND completion = ?", [(k, b) for k, b, _ in bad]
                )
                self._db.commit()
        for key, _, problem in bad:
            log.warning("response cache %s: dropped malformed entry %s (%s); the call will be asked "
                        "again", self.path, key[:12], problem)
        return found

    def put(self, key: str, model: str, completion: Completion) -> bool:
        """Store one completion at once (committed) and drop this process's claim on the key.
        Errors and malformed completions are not stored."""
        completion = redact_completion(completion)
        problem = completion.problem()
        store = completion.status != "error" and problem is None
        if problem is not None:
            log.warning("not caching a malformed completion for %s: %s", key[:12], problem)
        blob = json.dumps(completion.to_dict(), sort_keys=True) if store else None
        with self._lock:
            if blob is not None:
                self._db.execute(
                    "INSERT OR IGNORE INTO responses (key, model, completion) VALUES (?, ?, ?)",
                    (key, model, blob),
                )
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))
            self._db.commit()
        return store

    # --- claims: one process answers each call -------------------------------------------

    def claim(self, keys: list[str], ttl_s: float = CLAIM_TTL_S) -> set[str]:
        """Claim every key of ``keys`` that no live process holds and no stored answer
        has; return the keys this cache now holds (claimed now or before). Stale claims
        are dropped first. One transaction: two processes never both get a key."""
        if not keys:
            return set()
        mine: set[str] = set()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")  # one writer decides who gets each key
            try:
                now = time.time()
                self._db.execute("DELETE FROM claims WHERE expires < ?", (now,))
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    owners = {o for (o,) in self._db.execute(
                        f"SELECT DISTINCT owner FROM claims WHERE key IN ({marks})", chunk)}
                    dead = [o for o in owners if o != self.owner and not self._alive(o)]
                    self._db.executemany("DELETE FROM claims WHERE owner = ?", [(o,) for o in dead])
                    # answered since the caller looked: read it, do not send it again
                    answered = {k for (k,) in self._db.execute(
                        f"SELECT key FROM responses WHERE key IN ({marks})", chunk)}
                    self._db.executemany(
                        "INSERT OR IGNORE INTO claims (key, owner, expires) VALUES (?, ?, ?)",
                        [(k, self.owner, now + ttl_s) for k in chunk if k not in answered],
                    )
                    mine.update(k for (k,) in self._db.execute(
                        f"SELECT key FROM claims WHERE owner = ? AND key IN ({marks})", [self.owner, *chunk]))
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise
        return mine

    def release(self, keys: list[str] | None = None) -> None:
        """Drop this cache's claims on ``keys`` (all of them when ``None``)."""
        with self._lock:
            if keys is None:
                self._db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            else:
                self._db.executemany(
                    "DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in keys]
                )
            self._db.commit()

    def renew(self, ttl_s: float = CLAIM_TTL_S) -> None:
        """Extend every claim this cache holds (the heartbeat of a long batch)."""
        with self._lock:
            self._db.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + ttl_s, self.owner))
            self._db.commit()

    @contextmanager
    def holding(self, keys: list[str], ttl_s: float = CLAIM_TTL_S) -> Iterator[None]:
        """Renew this cache's claims every ``ttl_s / 3`` while the block runs; release
        ``keys`` (those not already released by :meth:`put`) when it ends, however."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(ttl_s / 3):
                try:
                    self.renew(ttl_s)
                except sqlite3.Error as exc:  # a busy database: the next beat tries again
                    log.debug("claim renewal failed: %s", exc)

        thread = threading.Thread(target=beat, name="cache-claims", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.release(keys)

    def claimed_by_others(self, keys: list[str]) -> int:
        """How many of ``keys`` another owner holds now (for progress messages)."""
        with self._lock:
            count = 0
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                count += self._db.execute(
                    f"SELECT COUNT(*) FROM claims WHERE owner != ? AND key IN ({marks})", [self.owner, *chunk]
                ).fetchone()[0]
        return count

    def _alive(self, owner: str) -> bool:
        """Whether a claim's owner may still answer: another host's owners are trusted
        until their claims expire; on this host, the process must exist."""
        parts = owner.split(":")
        if len(parts) < 3 or ":".join(parts[:-2]) != self._host:
            return True
        try:
            os.kill(int(parts[-2]), 0)
        except ProcessLookupError:
            return False
        except (PermissionError, ValueError):
            return True
        return True

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _load(blob: str) -> tuple[Completion | None, str | None]:
    """A stored completion, or ``None`` and why it cannot be used."""
    try:
        completion = Completion.from_dict(json.loads(blob))
    except (ValueError, TypeError) as exc:
        return None, f"unreadable: {type(exc).__name__}"
    problem = completion.problem()
    return (None, problem) if problem else (completion, None)
