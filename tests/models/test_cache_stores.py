"""The response cache as a URL (issue 23.1): SQLite and a real PostgreSQL through one code
path; claims across processes and hosts; credentials only from the environment; a damaged
SQLite file past its header is the same one-line error as a damaged header."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from genfair.errors import CacheError
from genfair.models.base import Completion
from genfair.models.cache import ResponseCache
from tests.support.servers import PostgresServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def url(store_url: str) -> str:
    """A fresh store of each kind (tests/support/servers.py)."""
    return store_url


def test_one_code_path_stores_serves_and_refuses_the_same(url: str) -> None:
    with ResponseCache(url) as cache:
        ok = Completion(
            status="ok",
            text="B",
            finish_reason="stop",
            latency_s=0.25,
            tries=2,
            usage={"prompt_tokens": 3},
        )
        assert cache.put("k1", "openai:m", ok) is True
        assert (
            cache.put("k1", "openai:m", Completion(status="ok", text="other")) is True
        )  # first one kept
        assert cache.put("k2", "openai:m", Completion(status="error", error="timeout")) is False
        assert cache.put("k3", "hf:x", Completion(status="ok", text=42)) is False  # type: ignore[arg-type]
        assert cache.put("k4", "hf:x", Completion(status="refused")) is True
        assert cache.get("k1") == ok and cache.get("k2") is None and cache.get("k3") is None
        assert len(cache) == 2
        assert cache.counts() == {"hf:x": 1, "openai:m": 1}
        keys = [f"key-{i:05d}" for i in range(1100)]  # more than one statement's worth
        for key in keys[::2]:
            cache.put(key, "m", Completion(status="ok", text=key))
        assert set(cache.get_many(keys)) == set(keys[::2])
    with ResponseCache(url) as again:  # persisted
        assert again.get("k1") == ok and len(again) == 552


def test_claims_are_exclusive_expire_and_follow_their_owner(url: str) -> None:
    with ResponseCache(url) as a, ResponseCache(url) as b:
        assert a.claim(["k1", "k2"]) == {"k1", "k2"}
        assert b.claim(["k1", "k2", "k3"]) == {"k3"}
        assert b.claimed_by_others(["k1", "k2", "k3"]) == 2
        a.put("k1", "m", Completion(status="ok", text="A"))
        a.put("k2", "m", Completion(status="error", error="boom"))  # a failure frees it too
        assert b.claim(["k1", "k2"]) == {"k2"}  # k1 is answered: read, never claimed
        assert a.claim(["k4"], ttl_s=2.0) == {"k4"}
        with a.holding(["k4"], ttl_s=2.0):  # a beat every 0.67 s: slack for a loaded machine
            deadline = time.monotonic() + 4.5  # over two TTLs: held by the heartbeat
            while time.monotonic() < deadline:
                assert b.claim(["k4"]) == set()
                time.sleep(0.05)
        assert b.claim(["k4"]) == {"k4"}  # released when the block ended
        assert b.claim(["k5"], ttl_s=0.2) == {"k5"}
        _until(lambda: a.claim(["k5"]) == {"k5"})  # expired without a heartbeat


def _until(check, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.02)


def _claimer(url: str, keys: list[str], start, out) -> None:  # noqa: ANN001 - multiprocessing objects
    with ResponseCache(url) as cache:
        start.wait()
        got: set[str] = set()
        for i in range(0, len(keys), 10):  # small overlapping transactions, in opposite orders
            got |= cache.claim(keys[i : i + 10] + keys[::-1][i : i + 10])
        out.put(sorted(got))


def test_concurrent_processes_never_claim_one_key_twice(url: str) -> None:
    keys = [f"k{i:04d}" for i in range(120)]
    ResponseCache(url).close()  # created before the race (processes racing to create it: below)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(url, keys, start, out)) for _ in range(4)]
    for proc in procs:
        proc.start()
    start.set()
    claimed = Counter(k for _ in procs for k in out.get(timeout=120))
    for proc in procs:
        proc.join(timeout=60)
    assert set(claimed) == set(keys) and set(claimed.values()) == {1}


HOLDER = """
import sys, time
from genfair.models.cache import ResponseCache
cache = ResponseCache(sys.argv[1], host="machine-a")
cache.claim(["k1", "k2"], ttl_s=float(sys.argv[2]))
with cache.holding(["k1", "k2"], ttl_s=float(sys.argv[2])):
    print("holding", flush=True)
    time.sleep(600)
"""


def test_a_dead_owner_on_another_machine_is_detected_by_its_expired_heartbeat(
    postgres: PostgresServer, postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """machine-a claims two keys and renews them; killed (SIGKILL), its heartbeat stops. On
    machine-b its PID means nothing: the keys stay held until the claim expires, then free."""
    monkeypatch.setenv("PGPASSWORD", postgres.password)
    ttl = 1.5
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, postgres_db, str(ttl)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        with ResponseCache(postgres_db, host="machine-b") as other:
            seen = time.monotonic()
            while time.monotonic() - seen < 2 * ttl:  # alive: renewed past its first expiry
                assert other.claim(["k1", "k2"]) == set()
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=30)
            killed = time.monotonic()
            _until(lambda: other.claim(["k1", "k2"]) == {"k1", "k2"}, timeout_s=5 * ttl)
            assert time.monotonic() - killed > ttl / 3  # not before the heartbeat could lapse
    finally:
        holder.kill()
        holder.wait()


def test_postgresql_credentials_come_from_the_environment_or_pgpass(
    postgres: PostgresServer, postgres_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "absent"))
    with pytest.raises(
        CacheError,
        match=r"^response cache postgresql://postgres@127\.0\.0\.1:\d+/\w+: unusable "
        r"\(.*password.*\); check the server, PGPASSWORD or ~/.pgpass",
    ):
        ResponseCache(postgres_db)
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres.port}:*:postgres:{postgres.password}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    with ResponseCache(postgres_db) as cache:
        cache.put("k", "m", Completion(status="ok", text="x"))
        assert postgres.password not in cache.where and postgres.password not in cache.url


def test_a_password_in_the_configured_url_is_refused_naming_the_key(tmp_path: Path) -> None:
    import yaml

    from genfair.frame import CacheConfig, cache_url
    from genfair.study_params import ConfigError, load_params

    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    raw["cache"]["url"] = "postgresql://team:s3cret@db.example/genfair"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"params\.yaml: cache\.url: .*a password in a URL would be stored"
    ) as err:
        load_params(tmp_path / "params.yaml")
    assert "s3cret" not in str(err.value)

    with pytest.raises(
        ValueError, match=r"'postgresql://db\.example/genfair': a password in a URL would be stored"
    ):
        CacheConfig(url="postgresql://team:s3cret@db.example/genfair")
    with pytest.raises(ValueError, match="not a response store URL"):
        CacheConfig(url="mysql://db.example/genfair")
    with pytest.raises(ValueError, match="a password in a URL"):
        CacheConfig(images="s3://key:secret@bucket/images")
    assert (
        CacheConfig(url="postgresql://team@db.example/genfair").url
        == "postgresql://team@db.example/genfair"
    )
    assert cache_url(CacheConfig(dir="/c")) == "sqlite:////c/responses.sqlite"


def test_a_sqlite_file_damaged_past_its_header_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    with ResponseCache(path) as cache:
        for i in range(400):  # several pages of rows and index
            cache.put(f"key-{i:04d}", "m", Completion(status="ok", text="x" * 200))
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096 * 2 :] = b"\xff" * (len(data) - 4096 * 2)  # header and first pages intact
    path.write_bytes(bytes(data))
    fix = (
        rf"response cache {path}: unusable \(.*\); "
        rf"move it aside \(mv {path} {path}\.broken\) and rerun"
    )
    with pytest.raises(CacheError, match=fix):
        with ResponseCache(path) as cache:
            cache.get_many([f"key-{i:04d}" for i in range(400)])
            cache.put("new", "m", Completion(status="ok", text="y"))
            len(cache)


def test_cache_copy_seeds_a_team_store_idempotently_with_images_and_stats_counts_per_model(
    postgres: PostgresServer,
    postgres_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    s3,
    s3_bucket: str,
) -> None:  # noqa: ANN001
    """A laptop's SQLite cache (text and an image) into PostgreSQL + S3, twice (the second
    copies nothing), then back into a fresh SQLite file: the same entries and image bytes."""
    from genfair.cli import main
    from genfair.models.images import ImageStore

    monkeypatch.setenv("PGPASSWORD", postgres.password)
    monkeypatch.setenv(
        "GENFAIR_CACHE_DIR", str(tmp_path / "local")
    )  # the image stores' local copies
    for name, value in {**s3.env, "AWS_ENDPOINT_URL": s3.endpoint}.items():
        monkeypatch.setenv(name, value)
    laptop = tmp_path / "laptop" / "responses.sqlite"
    png = _png()
    with ResponseCache(laptop) as cache:
        sha = cache.images.put(png)
        cache.put("img", "diffusers:sd", Completion(status="ok", image=sha))
        for i in range(5):
            cache.put(f"t{i}", "openai:gpt", Completion(status="ok", text=str(i)))
    with sqlite3.connect(laptop) as db:  # a row an older genfair stored: never copied
        db.execute(
            "INSERT INTO responses (key, model, completion) "
            "VALUES ('bad', 'openai:gpt', 'not json')"
        )
    images = f"{s3_bucket}/images"
    argv = ["cache", "copy", str(laptop), postgres_db, "--images-to", images]
    assert main(argv) == 0
    assert "copied 6 of 7 entries (1 images)" in capsys.readouterr().out
    assert main(argv) == 0
    assert "copied 0 of 7 entries (0 images)" in capsys.readouterr().out
    assert main(["cache", "stats", postgres_db]) == 0
    out = capsys.readouterr().out
    assert (
        "diffusers:sd          1" in out
        and "openai:gpt            5" in out
        and "total                 6" in out
    )
    assert postgres.password not in out
    back = tmp_path / "back" / "responses.sqlite"
    assert main(["cache", "copy", postgres_db, str(back), "--images-from", images]) == 0
    with ResponseCache(back) as cache:
        assert cache.counts() == {"diffusers:sd": 1, "openai:gpt": 5}
        assert cache.images.read(cache.get("img").image) == png
    assert ImageStore(images, mirror=tmp_path / "m").read(sha) == png


def _png() -> bytes:
    from PIL import Image

    from genfair.models.images import encode_png

    return encode_png(Image.new("RGB", (4, 4), (200, 10, 10)))
