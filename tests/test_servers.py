"""The throwaway servers of tests/support/servers.py: each starts, answers and takes
credentials only from where a client should (the environment, not the URL)."""

from __future__ import annotations

import os

import pytest

from tests.support.servers import PostgresServer, S3Server


def test_postgres_takes_the_password_from_the_environment(
    postgres: PostgresServer, postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlalchemy as sa

    url = postgres_db.replace("postgresql://", "postgresql+psycopg://")
    assert postgres.password not in url
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", os.devnull)
    with pytest.raises(sa.exc.OperationalError, match="password"):
        sa.create_engine(url).connect()
    monkeypatch.setenv("PGPASSWORD", postgres.password)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert (
            conn.execute(sa.text("select current_database()")).scalar()
            == postgres_db.rsplit("/", 1)[1]
        )
        assert conn.execute(sa.text("show fsync")).scalar() == "off"
        assert conn.execute(sa.text("show listen_addresses")).scalar() == "127.0.0.1"
    engine.dispose()


def test_s3_round_trips_an_object_through_fsspec(s3: S3Server, s3_bucket: str) -> None:
    import fsspec

    fs = fsspec.filesystem("s3", **s3.storage_options())
    fs.pipe(f"{s3_bucket}/a/b.bin", b"\x00png")
    assert fs.cat(f"{s3_bucket}/a/b.bin") == b"\x00png"
    assert s3.endpoint.startswith("http://127.0.0.1:")
