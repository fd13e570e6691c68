"""The response cache: every model call in genfair goes through it.

Content-addressed: the key is the SHA-256 of the model's fingerprint (backend, model id,
revision, sampling parameters) and the request (full chat input, seed, sample index,
attempt). A value is the :class:`~genfair.models.base.Completion` as JSON.

Stored in SQLite (WAL journal): each ``put`` is its own committed transaction, so a run
killed at any moment keeps every call that completed before it and repeats none of them;
a torn write cannot happen. Failed calls (``status == "error"``) are never stored, so
they are retried on the next run. One file serves every stage, run and model, and
several processes may share it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from genfair.models.base import Completion, Request, stable_hash

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    completion TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (datetime('now'))
)
"""


def cache_dir(configured: str | os.PathLike[str]) -> Path:
    """The cache folder: ``GENFAIR_CACHE_DIR`` if set, else the configured one."""
    return Path(os.environ.get("GENFAIR_CACHE_DIR") or configured)


class ResponseCache:
    """A persistent map from (model fingerprint, request) to completion."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # check_same_thread=False: the OpenAI backend reports results from its event loop
        # thread; the lock serialises access.
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    @staticmethod
    def key(fingerprint: dict[str, Any], request: Request) -> str:
        return stable_hash({"model": fingerprint, "request": request.key_payload()})

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT completion FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return Completion.from_dict(json.loads(row[0])) if row else None

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, completion FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                found.update((k, Completion.from_dict(json.loads(v))) for k, v in rows)
        return found

    def put(self, key: str, model: str, completion: Completion) -> bool:
        """Store one completion at once (committed). Errors are not stored."""
        if completion.status == "error":
            return False
        blob = json.dumps(completion.to_dict(), sort_keys=True)
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO responses (key, model, completion) VALUES (?, ?, ?)",
                (key, model, blob),
            )
            self._db.commit()
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
