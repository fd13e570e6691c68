"""Exactly once across machines (issue 23.3), with real servers: two checkouts of one smoke
study ("machine-a", "machine-b": their own folders, local caches and claim host names) run
the same generate stages at the same time against one counting mock endpoint, sharing a
response cache on PostgreSQL and an image store on a loopback S3. Whichever machine claims a
run's calls sends them; the other waits and reads the answers. The waiting machine is
killed (SIGKILL) at an observed state (the other has stored part of the run) and rerun.
Every distinct call (chat answers and images) reaches the endpoint exactly once in total,
machine-b exports images it never drew (read from S3), and both checkouts end with
byte-identical outputs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from genfair.methodologies import register
from genfair.models.cache import ResponseCache
from genfair.study.layout import Layout
from genfair.study.steps import make_probes
from genfair.study_params import StudyParams
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs
from tests.support.endpoint_study import endpoint_params
from tests.support.mock_openai import IMAGES_PATH, PATH, MockOpenAI
from tests.support.servers import PostgresServer, S3Server

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 40
RUNS = [("painter", "fact_or_fair"), ("endpoint", "toy_quiz")]

# the generate stage script's body (stages/generate.py) for each run, the toy quiz registered
DRIVER = f"""
import sys
from pathlib import Path
sys.path[:0] = [{str(ROOT / "stages")!r}, {str(ROOT)!r}]
from genfair.methodologies import register
from genfair.models.cache import ResponseCache
from tests.study.toy_methodology import Quiz
register(Quiz)
import _common
from genfair.study.layout import Layout
from genfair.study.steps import generate
for model, methodology in {RUNS!r}:
    _common.run("generate", lambda params, m, me: generate(params, m, me, Layout(Path.cwd())),
                model=model, methodology=methodology)
print("done", flush=True)
"""


def _params(folder: Path, base_url: str) -> dict:
    """The quiz on ``endpoint`` and fact_or_fair's images from ``painter``, both the mock."""
    raw = endpoint_params(folder, base_url, QUESTIONS, keep=("fact_or_fair",))
    raw["models"]["painter"] = {
        **raw["models"]["endpoint"],
        "modality": "t2i",
        "model_id": "mock-images",
        "size": "256x256",
        "send_response_format": True,
    }
    return with_runs(raw)


def _rows(engine: sa.Engine, model: str | None = None) -> int:
    with engine.connect() as conn:
        if model is None:
            return conn.execute(sa.text("SELECT COUNT(*) FROM responses")).scalar()
        return conn.execute(
            sa.text("SELECT COUNT(*) FROM responses WHERE model = :m"), {"m": model}
        ).scalar()


def _claim_hosts(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return {
            owner.split(":")[0]
            for (owner,) in conn.execute(sa.text("SELECT DISTINCT owner FROM claims"))
        }


def _until(check, what: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.02)


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
def test_two_machines_share_one_cache_and_pay_each_call_once(
    tmp_path: Path,
    postgres: PostgresServer,
    postgres_db: str,
    s3: S3Server,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PGPASSWORD", postgres.password)
    ResponseCache(postgres_db).close()  # the team's store exists before the machines start
    server = MockOpenAI(latency_s=0.3, lifetime_s=900).start()  # 40 answers, 4 at once: ~3 s
    try:
        register(Quiz)
        params = _params(tmp_path, server.url)
        machines = {}
        for name in ("machine-a", "machine-b"):
            work = tmp_path / name
            work.mkdir()
            (work / "params.yaml").write_text(json.dumps(params), encoding="utf-8")
            (work / "driver.py").write_text(DRIVER, encoding="utf-8")
            machines[name] = work
        layout = Layout(machines["machine-a"])
        study = StudyParams.model_validate(params)
        for _, methodology in RUNS:
            make_probes(study, methodology, layout)
        shutil.copytree(machines["machine-a"] / "data", machines["machine-b"] / "data")
        base_env = {
            **os.environ,
            **s3.env,
            **postgres.env,
            "AWS_ENDPOINT_URL": s3.endpoint,
            "GENFAIR_CACHE_URL": postgres_db,
            "GENFAIR_IMAGES_URL": f"{s3_bucket}/images",
            "PYTHONPATH": str(ROOT / "src"),
            "GENFAIR_LOG_LEVEL": "INFO",
        }

        def start(name: str) -> subprocess.Popen:
            env = {
                **base_env,
                "GENFAIR_CACHE_HOST": name,
                "GENFAIR_CACHE_DIR": str(machines[name] / "cache"),
            }
            return subprocess.Popen(
                [sys.executable, "driver.py"],
                cwd=machines[name],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

        engine = sa.create_engine(
            postgres.url(postgres_db.rsplit("/", 1)[1], driver="psycopg", password=True)
        )
        procs = {name: start(name) for name in machines}
        # the state: one machine holds the quiz's claims and has stored some of its answers
        _until(
            lambda: 10 <= _rows(engine, "openai:mock") and _claim_hosts(engine),
            "quiz answers being stored",
        )
        holders = _claim_hosts(engine)
        assert len(holders) == 1, holders  # one machine answers a run; the other waits for it
        waiter = next(name for name in machines if name not in holders)
        procs[waiter].send_signal(signal.SIGKILL)
        procs[waiter].wait(timeout=60)
        procs[waiter] = start(waiter)  # the rerun of the killed machine
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0 and out.strip() == "done", f"{name}: {err[-3000:]}"

        chats = Counter(
            r.body["messages"][-1]["content"] for r in server.requests if r.path == PATH
        )
        images = Counter(r.body["prompt"] for r in server.requests if r.path == IMAGES_PATH)
        quiz = Layout(machines["machine-a"]).responses("endpoint", "toy_quiz")
        assert len(chats) == QUESTIONS and set(chats.values()) == {1}, (
            chats
        )  # each call sent once in total
        # a prompt is drawn once per sample (images_per_query): each drawing is one stored key
        assert images and sum(images.values()) == _rows(engine, "openai:mock-images"), images
        assert _rows(engine) == QUESTIONS + sum(images.values())
        # the same bytes in both checkouts: responses tables and the exported images
        outputs = {name: _files(work / "data" / "responses") for name, work in machines.items()}
        assert outputs["machine-a"] == outputs["machine-b"] and quiz.is_file()
        exported = [k for k in outputs["machine-a"] if k.endswith(".png")]
        assert len(exported) == len(images)  # the mock draws one picture per prompt: stored once
        # whichever machine did not draw got the images from S3 (its own local copies came from
        # there)
        for work in machines.values():
            assert len(list((work / "cache" / "images").rglob("*.png"))) == len(exported)
        engine.dispose()
    finally:
        server.stop()
