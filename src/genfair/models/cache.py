"""The response cache: every model call in genfair goes through it.

Content-addressed: the key is the SHA-256 of the model's fingerprint (backend, model id,
revision, sampling parameters) and the request (full chat input, seed, sample index,
attempt). A value is the :class:`~genfair.models.base.Completion` as JSON.

The store is named by a URL (``cache.url`` / ``GENFAIR_CACHE_URL``): a SQLite file by default
(``sqlite:///.genfair/cache/responses.sqlite``, WAL journal), or a PostgreSQL database shared
by a team (``postgresql://host/db``; the password from ``PGPASSWORD`` or ``~/.pgpass``, never
the URL in params). Both go through SQLAlchemy Core with one schema and one code path (only
"now", the conflict-tolerant insert and PostgreSQL's one-statement ``put`` are spelled per
dialect); a SQLite file written by
earlier genfair has the same tables and is read as it is. Each ``put`` is its own committed
transaction, so a run killed at any moment keeps every call that completed before it and
repeats none of them. Failed calls (``status == "error"``) are never stored, so they are
retried on the next run. One store serves every stage, run, model and machine.

Nothing malformed is stored or served: ``put`` refuses a completion that fails
:meth:`Completion.problem` (a number where a text belongs would crash every later run),
and a row that fails it on the way out (written by an older genfair) is deleted and
reported as a miss, so the call is asked again. Key values of the configured
``api_key_env`` variables are masked before a row is written
(:mod:`genfair.models.redaction`).

Concurrent processes, on one host or many, never pay twice for one call: before sending,
a process *claims* the keys it is missing (table ``claims``: one row per key, inserted with
``ON CONFLICT DO NOTHING``, with its owner ``host:pid:instance`` and an expiry that a
heartbeat extends while the owner works; times come from the database's clock, so hosts
need not agree on theirs). Another process that needs a claimed key waits for the owner's
answer instead of sending it too. A claim is dropped when its answer is stored (or fails),
when it expires (an owner on another machine that died stops its heartbeat), or at once
when its owner process on this host is dead (a killed run).

The same database keeps the instruments' readings (table ``readings``: key, instrument, JSON),
written and read by :mod:`genfair.instruments.readings`.
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
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from genfair.errors import CacheError
from genfair.frame import CacheConfig, cache_dir, cache_url, images_url
from genfair.models.base import Completion, Request, stable_hash
from genfair.models.images import ImageStore
from genfair.models.redaction import redact_completion

log = logging.getLogger(__name__)
#: how long a SQLite connection waits for another process's lock
SQLITE_TIMEOUT_S = 60.0

_META = sa.MetaData()
# the tables earlier genfair created in SQLite (TEXT key, model, completion; claims' REAL
# expiry): an existing file is used as it is. genfair sets created_at (UTC, as SQLite's
# datetime('now') writes it); the default serves rows inserted by hand.
RESPONSES = sa.Table(
    "responses",
    _META,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("completion", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False, server_default=sa.text("CURRENT_TIMESTAMP")),
)
CLAIMS = sa.Table(
    "claims",
    _META,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("owner", sa.Text, nullable=False),
    sa.Column("expires", sa.Float, nullable=False),
)
#: instrument readings (genfair.instruments.readings): the key hashes what was measured (an
#: image's sha256) with the instrument's name, config and code identity; a reading is JSON
READINGS = sa.Table(
    "readings",
    _META,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("instrument", sa.Text, nullable=False),
    sa.Column("reading", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False, server_default=sa.text("CURRENT_TIMESTAMP")),
)
#: seconds a claim lives without a heartbeat; the heartbeat renews it every third of that
CLAIM_TTL_S = 60.0
#: keys per statement (SQLite allows 32766 bound values; PostgreSQL 65535)
_CHUNK = 500
#: how often a claim transaction is retried when PostgreSQL picks it as a deadlock victim
_RETRIES = 5
_RETRY_STATES = ("40P01", "40001")  # deadlock detected, serialization failure


def store_url(target: str | os.PathLike[str]) -> str:
    """A cache URL: a URL as given, a plain path as ``sqlite:///<absolute path>``."""
    text = os.fspath(target)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).resolve()}"


#: names of a SQLite file (an empty one may be a cache being created)
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def foreign_file_problem(path: Path, *, strict: bool = False) -> str | None:
    """Why the existing file ``path`` is not a genfair response cache (one line), or None.
    Opening a SQLite store writes genfair's tables into it: it must never turn a database of
    something else into a cache. ``strict`` (a file the user named on the command line) also
    refuses an empty file and one that is not SQLite; without it those are left to the store
    (an empty file named like a SQLite database may be one another process is creating; a
    damaged cache is named with its fix when opened), and an empty file named otherwise is
    refused."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if not path.is_file():
        return "not a regular file"
    if size == 0:
        # an empty *.sqlite may be a cache another process is creating this moment; any other
        # empty file (an __init__.py, a .keep marker) belongs to someone else: never made a database
        if strict or path.suffix.lower() not in SQLITE_SUFFIXES:
            return "an existing empty file, not a genfair response cache"
        return None
    with path.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            return (
                "an existing file that is not a SQLite database, so not a genfair response cache"
                if strict
                else None
            )
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
    except sqlite3.Error:
        return None  # damaged: opening it names the fault and the fix
    if tables and RESPONSES.name not in tables:
        return (
            "an existing SQLite database of something else (tables: "
            f"{', '.join(sorted(tables)[:5])}), not a genfair response cache"
        )
    return None


def display_url(url: str) -> str:
    """The URL as logs and messages show it: never a password."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "<unparsable cache URL>"


def host_id() -> str:
    """This machine's name in claim owners: ``GENFAIR_CACHE_HOST`` if set (machines or
    containers sharing a host name), else the host name."""
    return os.environ.get("GENFAIR_CACHE_HOST") or socket.gethostname()


def _locked(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def _switch_to_wal(dbapi: Any, seconds: float = SQLITE_TIMEOUT_S) -> None:
    """Put a SQLite file in WAL mode (once per file). The switch needs the file alone, and when
    another process holds a lock on a file still in rollback mode (two machines opening a new
    cache at once) SQLite answers "database is locked" at once, without waiting for its busy
    timeout: retry for as long as that timeout."""
    for attempt in Retrying(
        retry=retry_if_exception(_locked),
        stop=stop_after_delay(seconds),
        wait=wait_exponential(multiplier=0.01, max=0.5),
        reraise=True,
        before_sleep=lambda _: log.debug("the cache file is locked; switching to WAL again"),
    ):
        with attempt:
            if dbapi.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                dbapi.execute("PRAGMA journal_mode=WAL")


def _engine(url: str) -> sa.Engine:
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise CacheError(f"response cache {url}: name a file (sqlite:///path/responses.sqlite)")
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread=False: the OpenAI backend reports results from its event loop thread
        engine = sa.create_engine(
            parsed, connect_args={"timeout": SQLITE_TIMEOUT_S, "check_same_thread": False}
        )

        @sa.event.listens_for(engine, "connect")
        def _connect(dbapi: Any, _record: Any) -> None:
            dbapi.isolation_level = None  # genfair says when a transaction begins (below)
            _switch_to_wal(dbapi)
            dbapi.execute("PRAGMA synchronous=NORMAL")

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            # IMMEDIATE: the claim transaction takes the write lock first, so one writer decides
            conn.exec_driver_sql(
                "BEGIN IMMEDIATE" if conn.get_execution_options().get("immediate") else "BEGIN"
            )

        return engine
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        # no pre-ping (a round trip per operation): a dropped connection invalidates the pool, so
        # the next operation reconnects
        return sa.create_engine(parsed, pool_recycle=600, pool_size=4, max_overflow=8)
    raise CacheError(
        f"response cache {display_url(url)}: unsupported store (use sqlite:///path or "
        "postgresql://host/db in cache.url or GENFAIR_CACHE_URL)"
    )


class ResponseCache:
    """A persistent map from (model fingerprint, request) to completion, named by a URL (or
    a SQLite file's path); ``images`` is the blob store its image completions point to."""

    def __init__(
        self, target: str | os.PathLike[str], images: Any = None, *, host: str | None = None
    ):
        self.url = store_url(target)
        parsed = sa.make_url(self.url) if "://" in self.url else None
        #: the SQLite file, or None for a server
        self.path = (
            Path(parsed.database)
            if parsed is not None and parsed.get_backend_name() == "sqlite"
            else None
        )
        self.where = str(self.path) if self.path else display_url(self.url)
        problem = self.path and foreign_file_problem(self.path)
        if problem:
            raise CacheError(
                f"response cache {self.path}: {problem}; name a new file or an existing cache"
            )
        self._engine = _engine(self.url)
        self._dialect = self._engine.dialect.name
        with self._tx(immediate=True) as conn:  # one process creates the tables, the others wait
            _META.create_all(conn)
        self._host = host or host_id()
        #: who holds this cache's claims: host, pid (checked for liveness on this host), instance
        self.owner = f"{self._host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        if images is None and self.path is not None:
            images = ImageStore(self.path.parent / "images")
        self.images = images

    @classmethod
    def configured(cls, config: CacheConfig) -> ResponseCache:
        """The study's cache (``params.cache`` and the ``GENFAIR_CACHE_*`` variables): its
        store and image store, the image store's local copies in the cache folder."""
        images = ImageStore(images_url(config), mirror=cache_dir(config.dir) / "images")
        cache = cls(cache_url(config), images=images)
        log.info("response cache %s, images %s", cache.where, images.url)
        return cache

    # --- errors: one line naming the store and the fix -------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sa.exc.DBAPIError as exc:
            if self.path is not None and isinstance(exc, sa.exc.DatabaseError):
                # e.g. "file is not a database", "database disk image is malformed",
                # "disk I/O error"
                raise CacheError(
                    f"response cache {self.path}: unusable ({_first_line(exc.orig)}); move it "
                    f"aside (mv {self.path} {self.path}.broken) and rerun: calls not in a cache "
                    "are asked again (set GENFAIR_CACHE_DIR or cache.dir to use another folder)"
                ) from exc
            if (
                self.path is None
                and isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)
                and _sqlstate(exc) not in _RETRY_STATES
            ):
                raise CacheError(
                    f"response cache {self.where}: unusable ({_first_line(exc.orig)}); check "
                    "the server, PGPASSWORD or ~/.pgpass, and cache.url / GENFAIR_CACHE_URL"
                ) from exc
            raise

    @contextmanager
    def _tx(self, immediate: bool = False) -> Iterator[sa.Connection]:
        with self._guard(), self._engine.connect() as conn:
            if immediate:
                conn.execution_options(immediate=True)
            with conn.begin():
                yield conn

    @contextmanager
    def _one(self) -> Iterator[sa.Connection]:
        """A connection for work done in one statement: on PostgreSQL in autocommit (one
        round trip instead of BEGIN, statement, COMMIT); on SQLite a transaction (local)."""
        if self._dialect != "postgresql":
            with self._tx() as conn:
                yield conn
            return
        with self._guard(), self._engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def _insert(self, table: sa.Table) -> Any:
        """``INSERT ... ON CONFLICT DO NOTHING`` in this store's dialect."""
        dialect = postgresql if self._dialect == "postgresql" else sqlite
        return dialect.insert(table).on_conflict_do_nothing(index_elements=["key"])

    def _clock(self) -> Any:
        """Seconds since the epoch on the database's clock (one clock for every host), as SQL."""
        if self._dialect == "postgresql":
            return sa.cast(sa.func.extract("epoch", sa.func.clock_timestamp()), sa.Float)
        return (sa.func.julianday("now") - 2440587.5) * 86400.0

    def _now(self, conn: sa.Connection) -> float:
        return float(conn.execute(sa.select(self._clock())).scalar_one())

    # --- responses -------------------------------------------------------------------------

    @staticmethod
    def key(fingerprint: dict[str, Any], request: Request) -> str:
        return stable_hash({"model": fingerprint, "request": request.key_payload()})

    def get(self, key: str) -> Completion | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        bad: list[tuple[str, str, str]] = []
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            with self._one() as conn:
                rows = conn.execute(
                    sa.select(RESPONSES.c.key, RESPONSES.c.completion).where(
                        RESPONSES.c.key.in_(chunk)
                    )
                ).all()
            for key, blob in rows:
                completion, problem = _load(blob)
                if completion is None:
                    bad.append((key, blob, problem or ""))
                else:  # masked on the way out too: rows written before a key was known
                    found[key] = redact_completion(completion)
        if bad:
            # only the row as read: a valid answer stored meanwhile is kept
            with self._tx() as conn:
                conn.execute(
                    RESPONSES.delete().where(
                        RESPONSES.c.key == sa.bindparam("k"),
                        RESPONSES.c.completion == sa.bindparam("b"),
                    ),
                    [{"k": k, "b": b} for k, b, _ in bad],
                )
        for key, _, problem in bad:
            log.warning(
                "response cache %s: dropped malformed entry %s (%s); the call will be asked again",
                self.where,
                key[:12],
                problem,
            )
        return found

    def put(self, key: str, model: str, completion: Completion) -> bool:
        """Store one completion at once (committed) and drop this process's claim on the key.
        Errors and malformed completions are not stored."""
        blob = storable(completion, key)
        release = CLAIMS.delete().where(CLAIMS.c.key == key, CLAIMS.c.owner == self.owner)
        store = (
            None
            if blob is None
            else self._insert(RESPONSES).values(
                key=key, model=model, completion=blob, created_at=_utc_now()
            )
        )
        if self._dialect == "postgresql":
            # one statement, so one round trip (autocommit), and atomic: the answer and the
            # claim's release are seen together (a claim checks answers after its insert)
            with self._one() as conn:
                conn.execute(release if store is None else store.add_cte(release.cte("released")))
        else:
            with self._tx() as conn:
                if store is not None:
                    conn.execute(store)
                conn.execute(release)
        return blob is not None

    def put_many(self, entries: Sequence[tuple[str, str, Completion]]) -> int:
        """Store ``(key, model, completion)`` entries in one transaction and drop this
        process's claims on their keys (:meth:`put`, for many answers: a worker stores a
        batch's answers in one commit, not one each); returns how many were stored."""
        if not entries:
            return 0
        now = _utc_now()
        rows = [
            {"key": k, "model": m, "completion": blob, "created_at": now}
            for k, m, c in entries
            if (blob := storable(c, k)) is not None
        ]
        keys = [k for k, _, _ in entries]
        with self._tx() as conn:
            if rows:
                conn.execute(self._insert(RESPONSES), rows)
            for start in range(0, len(keys), _CHUNK):
                conn.execute(
                    CLAIMS.delete().where(
                        CLAIMS.c.key.in_(keys[start : start + _CHUNK]),
                        CLAIMS.c.owner == self.owner,
                    )
                )
        return len(rows)

    def put_rows(self, rows: list[tuple[str, str, str, str]]) -> int:
        """Store already-checked rows ``(key, model, completion JSON, created_at)`` in one
        transaction, keeping any row the store has (``genfair cache copy``); returns how many
        were new."""
        if not rows:
            return 0
        with self._tx() as conn:
            have = {
                k
                for (k,) in conn.execute(
                    sa.select(RESPONSES.c.key).where(RESPONSES.c.key.in_([r[0] for r in rows]))
                )
            }
            new = [
                dict(zip(("key", "model", "completion", "created_at"), r, strict=True))
                for r in rows
                if r[0] not in have
            ]
            if new:
                conn.execute(self._insert(RESPONSES), new)
        return len(new)

    def scan(self, after: str = "", limit: int = 1000) -> list[tuple[str, str, str, str]]:
        """Up to ``limit`` rows ``(key, model, completion, created_at)`` with keys after
        ``after``, in key order (a resumable walk over the whole store)."""
        with self._one() as conn:
            return [
                tuple(r)
                for r in conn.execute(
                    sa.select(
                        RESPONSES.c.key,
                        RESPONSES.c.model,
                        RESPONSES.c.completion,
                        RESPONSES.c.created_at,
                    )
                    .where(RESPONSES.c.key > after)
                    .order_by(RESPONSES.c.key)
                    .limit(limit)
                )
            ]

    def counts(self) -> dict[str, int]:
        """Stored responses per model (``genfair cache stats``)."""
        return self._count_by(RESPONSES.c.model)

    def _count_by(self, column: sa.Column) -> dict[str, int]:
        """Rows of ``column``'s table per value of it."""
        with self._one() as conn:
            return dict(
                conn.execute(
                    sa.select(column, sa.func.count()).group_by(column).order_by(column)
                ).all()
            )

    def recent(self, model: str, limit: int = 1000) -> list[Completion]:
        """Up to ``limit`` of ``model``'s latest stored answers (``genfair plan``'s observed
        answer length and speed); malformed rows are skipped here, not dropped."""
        with self._one() as conn:
            blobs = conn.execute(
                sa.select(RESPONSES.c.completion)
                .where(RESPONSES.c.model == model)
                .order_by(RESPONSES.c.created_at.desc())
                .limit(limit)
            ).scalars()
            loaded = [_load(blob)[0] for blob in blobs]
        return [c for c in loaded if c is not None]

    # --- readings: what an instrument measured, once per content, config and code ----------

    def get_readings(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored readings of ``keys`` (absent ones left out). A row that is not a JSON
        object (damaged, or written by hand) is left out too, so it is measured again."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), _CHUNK):
            with self._one() as conn:
                rows = conn.execute(
                    sa.select(READINGS.c.key, READINGS.c.reading).where(
                        READINGS.c.key.in_(keys[start : start + _CHUNK])
                    )
                ).all()
            for key, blob in rows:
                try:
                    reading = json.loads(blob)
                except ValueError:
                    reading = None
                if isinstance(reading, dict):
                    found[key] = reading
                else:
                    log.warning("response cache %s: unreadable reading %s", self.where, key[:12])
        return found

    def put_readings(self, entries: Sequence[tuple[str, str, dict[str, Any]]]) -> int:
        """Store ``(key, instrument, reading)`` entries in one committed transaction (a
        reading stored by another process first is kept); returns how many were given."""
        return self.put_reading_rows(
            [(k, name, json.dumps(r, sort_keys=True), _utc_now()) for k, name, r in entries]
        )

    def put_reading_rows(self, rows: Sequence[tuple[str, str, str, str]]) -> int:
        """Store rows ``(key, instrument, reading JSON, created_at)`` as they are."""
        if not rows:
            return 0
        names = ("key", "instrument", "reading", "created_at")
        with self._tx() as conn:
            conn.execute(self._insert(READINGS), [dict(zip(names, r, strict=True)) for r in rows])
        return len(rows)

    def drop_readings(self, keys: Sequence[str]) -> None:
        """Delete the readings of ``keys`` (malformed ones, measured again)."""
        with self._tx() as conn:
            for start in range(0, len(keys), _CHUNK):
                conn.execute(
                    READINGS.delete().where(READINGS.c.key.in_(keys[start : start + _CHUNK]))
                )

    def scan_readings(self, after: str = "", limit: int = 1000) -> list[tuple[str, str, str, str]]:
        """Up to ``limit`` reading rows ``(key, instrument, reading, created_at)`` with keys
        after ``after``, in key order (``genfair cache copy``)."""
        with self._one() as conn:
            return [
                tuple(r)
                for r in conn.execute(
                    sa.select(*READINGS.c).where(READINGS.c.key > after).order_by(READINGS.c.key)
                    .limit(limit)
                )
            ]  # fmt: skip

    def reading_counts(self) -> dict[str, int]:
        """Stored readings per instrument (``genfair cache stats``)."""
        return self._count_by(READINGS.c.instrument)

    # --- claims: one process answers each call -------------------------------------------

    def claim(self, keys: list[str], ttl_s: float = CLAIM_TTL_S) -> set[str]:
        """Claim every key of ``keys`` that no live process holds and no stored answer
        has; return the keys this cache now holds (claimed now or before). Stale claims
        (expired, or of a dead process on this host) are dropped first. Keys are inserted
        in sorted order with ``ON CONFLICT DO NOTHING``: two processes never both get a key."""
        if not keys:
            return set()
        for attempt in range(_RETRIES):
            try:
                return self._claim(sorted(set(keys)), ttl_s)
            except sa.exc.OperationalError as exc:  # a deadlock victim (PostgreSQL): try again
                if _sqlstate(exc) not in _RETRY_STATES or attempt == _RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _claim(self, keys: list[str], ttl_s: float) -> set[str]:
        mine: set[str] = set()
        with self._tx(immediate=True) as conn:
            now = self._now(conn)
            conn.execute(CLAIMS.delete().where(CLAIMS.c.expires < now))
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                owners = set(
                    conn.execute(
                        sa.select(CLAIMS.c.owner).distinct().where(CLAIMS.c.key.in_(chunk))
                    ).scalars()
                )
                dead = [o for o in owners if o != self.owner and not self._alive(o)]
                if dead:
                    conn.execute(CLAIMS.delete().where(CLAIMS.c.owner.in_(dead)))
                todo = [{"key": k, "owner": self.owner, "expires": now + ttl_s} for k in chunk]
                conn.execute(self._insert(CLAIMS), todo)
                # answered since the caller looked: read it, do not send it again. Checked after
                # the insert: a key won there had no other claim, so its owner's put (one
                # transaction with the claim's release) is committed and seen here
                answered = list(
                    conn.execute(
                        sa.select(RESPONSES.c.key).where(RESPONSES.c.key.in_(chunk))
                    ).scalars()
                )
                if answered:
                    conn.execute(
                        CLAIMS.delete().where(
                            CLAIMS.c.owner == self.owner, CLAIMS.c.key.in_(answered)
                        )
                    )
                mine.update(
                    conn.execute(
                        sa.select(CLAIMS.c.key).where(
                            CLAIMS.c.owner == self.owner, CLAIMS.c.key.in_(chunk)
                        )
                    ).scalars()
                )
        return mine

    def release(self, keys: list[str] | None = None) -> None:
        """Drop this cache's claims on ``keys`` (all of them when ``None``)."""
        with self._tx() as conn:
            if keys is None:
                conn.execute(CLAIMS.delete().where(CLAIMS.c.owner == self.owner))
            else:
                for start in range(0, len(keys), _CHUNK):
                    conn.execute(
                        CLAIMS.delete().where(
                            CLAIMS.c.owner == self.owner,
                            CLAIMS.c.key.in_(keys[start : start + _CHUNK]),
                        )
                    )

    def renew(self, ttl_s: float = CLAIM_TTL_S) -> None:
        """Extend every claim this cache holds (the heartbeat of a long batch)."""
        with self._one() as conn:
            conn.execute(
                CLAIMS.update()
                .where(CLAIMS.c.owner == self.owner)
                .values(expires=self._clock() + ttl_s)
            )

    @contextmanager
    def holding(self, keys: list[str], ttl_s: float = CLAIM_TTL_S) -> Iterator[None]:
        """Renew this cache's claims every ``ttl_s / 3`` while the block runs; release
        ``keys`` (those not already released by :meth:`put`) when it ends, however."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(ttl_s / 3):
                try:
                    self.renew(ttl_s)
                except (
                    sa.exc.SQLAlchemyError,
                    CacheError,
                ) as exc:  # busy or unreachable: next beat
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
        count = 0
        with self._one() as conn:
            for start in range(0, len(keys), _CHUNK):
                count += conn.execute(
                    sa.select(sa.func.count())
                    .select_from(CLAIMS)
                    .where(
                        CLAIMS.c.owner != self.owner, CLAIMS.c.key.in_(keys[start : start + _CHUNK])
                    )
                ).scalar_one()
        return count

    def claims(self) -> int:
        """Claims held now, by anyone (``genfair cache stats``)."""
        with self._one() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(CLAIMS)).scalar_one()

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
        with self._one() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(RESPONSES)).scalar_one()

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def copy_entries(src: ResponseCache, dst: ResponseCache, batch: int = 1000) -> dict[str, int]:
    """Copy every valid entry of ``src`` that ``dst`` lacks, with the images it points to,
    and every instrument reading ``dst`` lacks (``genfair cache copy``). Idempotent and
    resumable: entries ``dst`` has are kept, and a copy stopped at any point is finished by
    running it again. An image is copied before the row that names it, so ``dst`` never
    points to an image it lacks. Rows are checked and key values masked as
    :meth:`ResponseCache.put` does; malformed ones are skipped."""
    counts = {"read": 0, "copied": 0, "skipped": 0, "images": 0, "readings": 0}
    after = ""
    while rows := src.scan(after, batch):
        after = rows[-1][0]
        counts["read"] += len(rows)
        good: list[tuple[str, str, str, str]] = []
        for key, model, blob, created in rows:
            completion, _ = _load(blob)
            stored = storable(completion, key) if completion is not None else None
            if stored is None:
                counts["skipped"] += 1
                continue
            if completion.image:
                counts["images"] += _copy_image(completion.image, src, dst)
            good.append((key, model, stored, created))
        counts["copied"] += dst.put_rows(good)
    after = ""
    while readings := src.scan_readings(after, batch):  # measurements: JSON, copied as they are
        after = readings[-1][0]
        have = dst.get_readings([r[0] for r in readings])
        counts["readings"] += dst.put_reading_rows([r for r in readings if r[0] not in have])
    return counts


def _copy_image(sha256: str, src: ResponseCache, dst: ResponseCache) -> int:
    if src.images is None or dst.images is None:
        raise CacheError(
            f"response cache {src.where} holds images: name the image stores "
            "(--images-from / --images-to) of a PostgreSQL cache"
        )
    if sha256 in dst.images:
        return 0
    dst.images.put(src.images.read(sha256))
    return 1


def storable(completion: Completion, key: str = "") -> str | None:
    """The JSON a completion is stored as (key values masked), or None when it must not
    be stored: a failed call, or a malformed completion."""
    completion = redact_completion(completion)
    problem = completion.problem()
    if problem is not None:
        log.warning("not caching a malformed completion for %s: %s", key[:12], problem)
    if completion.status == "error" or problem is not None:
        return None
    return json.dumps(completion.to_dict(), sort_keys=True)


def _load(blob: str) -> tuple[Completion | None, str | None]:
    """A stored completion, or ``None`` and why it cannot be used."""
    try:
        completion = Completion.from_dict(json.loads(blob))
    except (ValueError, TypeError) as exc:
        return None, f"unreadable: {type(exc).__name__}"
    problem = completion.problem()
    return (None, problem) if problem else (completion, None)


def _utc_now() -> str:
    """UTC as SQLite's ``datetime('now')`` writes it (the format of earlier rows)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())


def _sqlstate(exc: sa.exc.DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)


def _first_line(exc: BaseException | None) -> str:
    text = str(exc or "").strip()
    return text.splitlines()[0] if text else type(exc).__name__
