"""A generate stage stopped mid-run counts the calls it sent as sent (issue 45.3), whatever
stopped it: SIGTERM (a scheduler's timeout), which the stage script turns into an exception so
the ledger line is written on the way out, or SIGKILL, after which the journal the run kept
of each sent answer is folded into the ledger by the next generate. Either way the rerun
counts those calls as its cached ones, never as the stopped run's.

The moment is a state, not a delay: the mock holds the run's calls from a known one on, and the
test waits until one is held and the answers before it are in the cache and the journal."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from genfair.models.usage import JOURNALS, read_ledger
from genfair.study.layout import Layout
from genfair.study.steps import make_probes
from genfair.study_params import StudyParams
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


def _journaled(folder: Path) -> int:
    """Answers journaled by the running generate (its journal's lines after the first)."""
    journals = list(folder.glob("*.jsonl")) if folder.is_dir() else []
    return max([len(p.read_bytes().splitlines()) - 1 for p in journals] or [0])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_stopped_generate_counts_its_sent_calls_as_sent(
    tmp_path: Path, sig: signal.Signals
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
        journals = work / "cache" / JOURNALS
        env = {
            **os.environ,
            "GENFAIR_CACHE_DIR": str(work / "cache"),
            "PYTHONPATH": str(ROOT / "src"),
        }

        server.hold(ANSWERED, "Bearer first-run-key")
        proc = start_driver(work, {**env, KEY: "first-run-key"})
        try:
            deadline = time.monotonic() + 120
            # the state: a call is held, every answer before it cached and journaled
            while not (
                server.held and _rows(cache) >= ANSWERED and _journaled(journals) >= ANSWERED
            ):
                assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the run never reached the held call"
                time.sleep(0.005)
            proc.send_signal(sig)
            if sig == signal.SIGTERM:
                server.release()  # a clean stop need not wait for the held answer
            _, err = proc.communicate(timeout=120)
        finally:
            server.release()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stored = _rows(cache)
        assert stored >= ANSWERED
        if sig == signal.SIGTERM:
            assert proc.returncode == 128 + signal.SIGTERM, err
            assert (
                err.strip()
                .splitlines()[-1]
                .endswith(
                    "terminated (SIGTERM): everything answered so far is in the response cache and "
                    "its sent calls in the usage ledger; rerun to resume"
                )
            ), err
            assert "Traceback" not in err
            [stopped] = read_ledger(ledger)
            assert not list(journals.glob("*.jsonl"))  # its line closes its journal
        else:
            assert proc.returncode == -signal.SIGKILL
            assert read_ledger(ledger) == []  # nothing ran on the way out
            assert stored == ANSWERED  # the held calls were never answered

        rerun = start_driver(work, {**env, KEY: "second-run-key"})
        _, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        first, second = read_ledger(ledger)  # SIGKILL: the killed run's line, folded first
        # every answer the stopped run stored was sent by it and counts so, not as cached
        assert (first["sent"].calls, first["cached"].calls) == (stored, 0)
        assert first["responses"] is None
        assert (second["cached"].calls, second["sent"].calls) == (stored, QUESTIONS - stored)
        assert first["sent"].prompt_tokens > 0 and first["rules"] == second["rules"]
        # the server received those and at most the calls in flight when the stop landed
        assert QUESTIONS <= server.calls <= QUESTIONS + params["models"]["endpoint"]["concurrency"]
        assert not list(journals.glob("*.jsonl"))
    finally:
        server.stop()
