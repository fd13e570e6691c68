"""Throwaway servers for tests and benchmarks: a PostgreSQL cluster and an S3-compatible store.

``postgres_server()`` starts a real PostgreSQL (Debian's ``postgresql`` package) in a temp
folder on a free port, bound to 127.0.0.1, with fsync off (this disk syncs ~290 times a
second); ``initdb`` and ``pg_ctl`` refuse to run as root, so as root they run as the
``postgres`` user through ``runuser`` in a folder that user owns. Host connections need the
password (scram-sha-256): a client that connects with ``server.env`` (``PGPASSWORD``) or a
``~/.pgpass`` line proves it takes credentials from there and not from a URL. It stops with
``pg_ctl stop -m immediate`` (then the postmaster's PID) and its folder is removed.

``s3_server()`` runs moto's S3 in-process (``ThreadedMotoServer``) on 127.0.0.1 on a free
port; ``server.env`` holds the fake credentials and region a client (boto3, s3fs, dvc-s3)
needs, and ``server.endpoint`` its URL.

Fixtures (import them by name in a conftest, like ``mock_openai``): ``postgres`` and
``s3`` (one server per session), ``postgres_db`` (a fresh database per test: a
``postgresql://`` URL without credentials) and ``s3_bucket`` (a fresh bucket per test:
``s3://<name>``). Where the binaries or packages are absent they skip, saying why and how
to install them (``make setup`` does it, as root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_USER = "postgres"  # the cluster's superuser, and the OS user that runs it as root
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def postgres_missing() -> str | None:
    """Why no cluster can start here, or None when one can."""
    if not (_pg_bin("initdb") and _pg_bin("pg_ctl")):
        return (
            "PostgreSQL binaries (initdb, pg_ctl) not found: run `make setup` as root, "
            "or `apt-get install postgresql`"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            return (
                f"running as root and no {PG_USER!r} user "
                "to run initdb as: apt-get install postgresql"
            )
        if not shutil.which("runuser"):
            return "running as root and no runuser to run initdb as postgres"
    try:
        import psycopg  # noqa: F401
        import sqlalchemy  # noqa: F401
    except ImportError as err:
        return f"{err.name} not installed: run `make setup`"
    return None


@dataclass
class PostgresServer:
    """A running throwaway cluster: ``url(db)``, ``create_database(name)``, ``env``."""

    root: Path
    port: int
    password: str
    host: str = "127.0.0.1"
    user: str = PG_USER
    databases: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def env(self) -> dict[str, str]:
        """What a libpq client needs besides the URL: the password, kept out of URLs."""
        return {"PGPASSWORD": self.password}

    def url(self, database: str = "postgres", *, driver: str = "", password: bool = False) -> str:
        """``postgresql://postgres@127.0.0.1:PORT/db``; ``driver="psycopg"`` for SQLAlchemy's
        ``postgresql+psycopg://``; ``password=True`` puts the password in (only where a tool
        takes no other way, e.g. a server's backend-store URI)."""
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        auth = f"{self.user}:{self.password}" if password else self.user
        return f"{scheme}://{auth}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database (a fresh name unless given); returns its name."""
        import psycopg

        name = name or f"t_{secrets.token_hex(6)}"
        with psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, ending the sessions still connected to it."""
        import psycopg

        with psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_pg(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *cmd] if os.geteuid() == 0 else cmd


def _run_pg(cmd: list[str], what: str) -> None:
    proc = subprocess.run(_as_pg(cmd), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
        )


@contextlib.contextmanager
def postgres_server(password: str | None = None) -> Iterator[PostgresServer]:
    """Start a throwaway cluster; stop it and remove its folder on exit (skips where impossible)."""
    reason = postgres_missing()
    if reason:
        pytest.skip(reason)
    # /tmp directly: pytest's tmp folders are 0700 root-owned, which the postgres user cannot enter
    root = Path(tempfile.mkdtemp(prefix="genfair-pg-"))
    password = password or secrets.token_hex(12)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(PG_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(root=root, port=0, password=password)
    pwfile = root / "pwfile"
    started = False
    try:
        pwfile.write_text(password + "\n")
        if os.geteuid() == 0:
            os.chown(pwfile, pwd.getpwnam(PG_USER).pw_uid, -1)
        _run_pg(
            [
                _pg_bin("initdb"),
                "-D",
                str(server.data_dir),
                "-U",
                PG_USER,
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
            ],
            "initdb",
        )
        pwfile.unlink()
        for attempt in range(3):  # a free port can be taken between probing and binding
            server.port = free_port()
            opts = (
                f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            )
            try:
                _run_pg(
                    [
                        _pg_bin("pg_ctl"),
                        "-D",
                        str(server.data_dir),
                        "-l",
                        str(root / "log"),
                        "-w",
                        "-t",
                        "60",
                        "start",
                        "-o",
                        opts,
                    ],
                    "pg_ctl start",
                )
                started = True
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        yield server
    finally:
        if started:
            _stop_postgres(server)
        shutil.rmtree(root, ignore_errors=True)


def _stop_postgres(server: PostgresServer) -> None:
    try:
        _run_pg(
            [_pg_bin("pg_ctl"), "-D", str(server.data_dir), "-m", "immediate", "-w", "stop"],
            "pg_ctl stop",
        )
    except (RuntimeError, subprocess.TimeoutExpired):
        pid_file = server.data_dir / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, IndexError):
            os.kill(int(pid_file.read_text().splitlines()[0]), signal.SIGKILL)


@dataclass
class S3Server:
    """A running loopback S3: ``endpoint``, ``env`` (fake credentials), ``create_bucket()``."""

    endpoint: str
    env: dict[str, str] = field(default_factory=lambda: dict(S3_ENV))

    def client(self):  # noqa: ANN201 - a boto3 client; boto3 has no public type for it
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
            region_name=self.env["AWS_DEFAULT_REGION"],
        )

    def create_bucket(self, name: str | None = None) -> str:
        """A new empty bucket (a fresh name unless given); returns its name."""
        name = name or f"genfair-{secrets.token_hex(6)}"
        self.client().create_bucket(Bucket=name)
        return name

    def storage_options(self) -> dict[str, object]:
        """fsspec/s3fs options that reach this server (credentials come from ``env``)."""
        return {
            "endpoint_url": self.endpoint,
            "key": self.env["AWS_ACCESS_KEY_ID"],
            "secret": self.env["AWS_SECRET_ACCESS_KEY"],
        }


def s3_missing() -> str | None:
    """Why no loopback S3 can start here, or None when one can."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as err:
        return f"{err.name} not installed (moto[server], boto3): run `make setup`"
    return None


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's S3 in a thread on 127.0.0.1 and a free port; stopped on exit."""
    reason = s3_missing()
    if reason:
        pytest.skip(reason)
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request on stderr
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    try:
        host, port = moto.get_host_and_port()
        yield S3Server(endpoint=f"http://{host}:{port}")
    finally:
        moto.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL cluster for the session."""
    with postgres_server() as server:
        yield server


@pytest.fixture
def postgres_db(postgres: PostgresServer) -> Iterator[str]:
    """A fresh database on the session's cluster: its ``postgresql://`` URL (no password:
    ``postgres.env`` has it)."""
    name = postgres.create_database()
    yield postgres.url(name)
    postgres.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """A fresh response cache of each kind, by URL (PostgreSQL: the password in PGPASSWORD,
    not the URL)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cache' / 'responses.sqlite'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    monkeypatch.setenv("PGPASSWORD", server.password)
    return request.getfixturevalue("postgres_db")


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """One loopback S3-compatible server for the session."""
    with s3_server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3: S3Server) -> str:
    """A fresh bucket on the session's S3 server: ``s3://<name>``."""
    return f"s3://{s3.create_bucket()}"
