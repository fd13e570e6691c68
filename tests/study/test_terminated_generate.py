"""A generate stage stopped by SIGTERM (a scheduler's timeout) counts the calls it sent as sent
(issue 45.3): the stage script turns SIGTERM into an exception, so the ledger is appended on
the way out, and the calls are not counted as cached when the rerun reads them back.

The moment is a state, not a delay: the mock holds the run's calls from a known one on, and the
test waits until one is held and the answers before it are in the response cache."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from genfair.config import StudyParams
from genfair.models.usage import read_ledger
from genfair.study.layout import Layout
from genfair.study.steps import make_probes
from tests.study.test_kill_soak import DRIVER, KEY, _params, start_driver
from tests.support.conf import with_runs
from tests.support.mock_openai import MockOpenAI

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 24
#: calls answered before the hold: the ones the stopped run must count as sent
ANSWERED = 6


def _rows(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(cache) as db:
            return db.execute("SELECT count(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


def test_a_terminated_generate_counts_its_sent_calls_as_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from genfair.methodologies import register
    from tests.study.toy_methodology import Quiz

    register(Quiz)
    server = MockOpenAI(lifetime_s=300).start()
    try:
        work = tmp_path / "work"
        params = _params(tmp_path, server.url)
        params["methodologies"]["toy_quiz"]["questions"] = QUESTIONS
        params = with_runs(params)  # its digests follow the edit
        make_probes(StudyParams.model_validate(params), "toy_quiz", Layout(work))
        (work / "params.yaml").write_text(json.dumps(params), encoding="utf-8")
        (work / "driver.py").write_text(DRIVER, encoding="utf-8")
        cache = work / "cache" / "responses.sqlite"
        ledger = work / "cache" / "usage.jsonl"
        env = {
            **os.environ,
            "GENFAIR_CACHE_DIR": str(work / "cache"),
            "PYTHONPATH": str(ROOT / "src"),
        }

        def start(key: str) -> subprocess.Popen[str]:
            return start_driver(work, {**env, KEY: key})

        server.hold(ANSWERED, "Bearer first-run-key")
        proc = start("first-run-key")
        try:
            deadline = time.monotonic() + 120
            # the state: a call is held and every answer before it is in the cache
            while not (server.held and _rows(cache) >= ANSWERED):
                assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the run never reached the held call"
                time.sleep(0.005)
            proc.send_signal(signal.SIGTERM)
            server.release()
            _, err = proc.communicate(timeout=120)
        finally:
            server.release()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert (
            err.strip()
            .splitlines()[-1]
            .endswith(
                "terminated (SIGTERM): everything answered so far is in the response cache and its "
                "sent calls in the usage ledger; rerun to resume"
            )
        ), err
        assert "Traceback" not in err
        stored = _rows(cache)
        [stopped] = read_ledger(ledger)
        # every answer the stopped run stored was sent by it, and is counted so
        assert stored >= ANSWERED
        assert (stopped["sent"].calls, stopped["cached"].calls) == (stored, 0)
        assert stopped["responses"] is None

        rerun = start("second-run-key")
        _, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        first, second = read_ledger(ledger)
        assert (second["cached"].calls, second["sent"].calls) == (stored, QUESTIONS - stored)
        # the two runs' sent calls are every question once; the server received those and at
        # most the calls in flight when the stop landed (cut off: no answer, nothing to count)
        assert first["sent"].calls + second["sent"].calls == QUESTIONS
        assert QUESTIONS <= server.calls <= QUESTIONS + params["models"]["endpoint"]["concurrency"]
    finally:
        server.stop()
