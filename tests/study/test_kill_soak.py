"""Kill soak (issue 16.9, 21.9): the generate stage, run as its own process against a
request-counting mock endpoint, is killed (SIGKILL) at random moments of generation ten
times and interrupted (SIGINT) three times, then rerun until it finishes. No answer that
reached the response cache is ever asked again, nothing is lost, and the final responses
table is byte-identical to an uninterrupted run's. SIGINT is a clean stop: exit 130 and one
line saying how to resume.

The moment is a state, not a delay: the mock holds the answer to a random call among the
ones the run still has to make (:meth:`MockOpenAI.hold`), the test waits until that call is
being held, and only then signals; so every signal lands mid-generation, on an idle machine
(where a run used to finish before its SIGINT arrived) and on a loaded one alike."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from genfair.methodologies import register
from genfair.study.layout import Layout
from genfair.study.steps import generate, make_probes
from genfair.study_params import StudyParams
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs
from tests.support.endpoint_study import endpoint_params
from tests.support.mock_openai import MockOpenAI

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 120
CONCURRENCY = 4
KILLS, INTERRUPTS = 10, 3
#: a signal lands after 1..MAX_AHEAD more calls of the run: 13 runs then answer at most
#: 13 x 8 < QUESTIONS calls, so every run still has calls left to interrupt
MAX_AHEAD = 8
#: the variable holding each run's own API key: the mock holds a call of the running process,
#: never a late request of the one killed before it (which took the held call's number and
#: had the next run signalled before Python installed its SIGINT handler: exit -2, no stderr)
KEY = "GENFAIR_KILL_SOAK_API_KEY"

# the stage script's body (stages/generate.py) with the toy quiz registered and outputs in
# the working directory
DRIVER = f"""
import sys
from pathlib import Path
sys.path[:0] = [{str(ROOT / "stages")!r}, {str(ROOT)!r}]
from genfair.methodologies import register
from tests.study.toy_methodology import Quiz
register(Quiz)
import _common
from genfair.study.layout import Layout
from genfair.study.steps import generate
_common.run("generate",
            lambda params, model, methodology: generate(params, model, methodology,
                                                        Layout(Path.cwd())),
            model="endpoint", methodology="toy_quiz")
"""


def _params(folder: Path, base_url: str) -> dict:
    params = endpoint_params(folder, base_url, QUESTIONS, CONCURRENCY)
    params["models"]["endpoint"]["timeout_s"] = 10
    # each run sends a key of its own (KEY), so the mock holds only that run's calls
    params["models"]["endpoint"]["api_key_env"] = KEY
    return with_runs(params)  # its digests follow the edited model


def _cached_prompts(cache: Path) -> set[str]:
    """The prompts whose answers are in the response cache (the mock echoes each prompt)."""
    if not cache.exists():
        return set()
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT completion FROM responses").fetchall()
    return {json.loads(blob)["text"].removeprefix("echo: ") for (blob,) in rows}


def start_driver(work: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """The stage (:data:`DRIVER`, in ``work``) as its own process, its stderr piped."""
    # SIGINT as a terminal delivers it, whatever this process inherited: a suite started in
    # the background by a non-interactive shell ignores SIGINT, and so would the run
    return subprocess.Popen(
        [sys.executable, "driver.py"],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _sent(server: MockOpenAI, start: int) -> list[str]:
    """Prompts of the requests the mock received since request number ``start``."""
    # a request cut off mid-body by the signal has no body: it was never answered
    return [
        r.body["messages"][-1]["content"]
        for r in list(server.requests)[start:]
        if r.body is not None
    ]


@pytest.mark.slow  # 14 stage processes: about 90 s on 2 shared cores
def test_killed_and_interrupted_generation_resumes_without_paying_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1609)
    server = MockOpenAI(latency_s=0.04, lifetime_s=600).start()
    reference = MockOpenAI(lifetime_s=600).start()
    try:
        # the uninterrupted run, in this process, with a cache of its own
        register(Quiz)
        monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "ref" / "cache"))
        monkeypatch.setenv(KEY, "reference")
        ref = Layout(tmp_path / "ref")
        params = StudyParams.model_validate(_params(tmp_path, reference.url))
        make_probes(params, "toy_quiz", ref)
        expected = generate(params, "endpoint", "toy_quiz", ref).read_bytes()
        prompts = set(pd.read_parquet(ref.probes("toy_quiz"))["prompt"])
        monkeypatch.delenv("GENFAIR_CACHE_DIR")

        work = tmp_path / "work"
        layout = Layout(work)
        make_probes(params, "toy_quiz", layout)
        (work / "params.yaml").write_text(
            json.dumps(_params(tmp_path, server.url)), encoding="utf-8"
        )
        (work / "driver.py").write_text(DRIVER, encoding="utf-8")
        cache = work / "cache" / "responses.sqlite"
        env = {
            **os.environ,
            "GENFAIR_CACHE_DIR": str(work / "cache"),
            "PYTHONPATH": str(ROOT / "src"),
            "GENFAIR_LOG_LEVEL": "INFO",
        }

        runs = iter(range(1_000))

        def run_once(sig: signal.Signals | None) -> tuple[int, str]:
            cached_before = _cached_prompts(cache)
            start, calls = len(server.requests), server.calls
            key = f"run-{next(runs)}"
            if sig is not None:
                # a random moment of generation: the answer to the run's call number 1..8 is
                # held (the run has more calls than that left: see MAX_AHEAD)
                assert len(prompts - cached_before) > MAX_AHEAD
                server.hold(calls + rng.randint(0, MAX_AHEAD - 1), f"Bearer {key}")
            proc = start_driver(work, {**env, KEY: key})
            try:
                if sig is not None:
                    deadline = time.monotonic() + 120
                    while server.held == 0:  # the state: a call of this run is in flight, held
                        assert proc.poll() is None, (
                            f"the run ended before its held call: {proc.stderr.read()}"
                        )
                        assert time.monotonic() < deadline, "no call of the run reached the mock"
                        time.sleep(0.002)
                    proc.send_signal(sig)
                    server.release()  # a clean stop need not wait for the held answer
                _, err = proc.communicate(timeout=120)
            finally:
                server.release()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                # the state before the next hold: every held call let go (a handler still
                # waiting when the next hold() clears the release would count as that run's)
                deadline = time.monotonic() + 60
                while server.held:
                    assert time.monotonic() < deadline, "a held call was never let go"
                    time.sleep(0.002)
            sent = _sent(server, start)
            # no answer already in the cache was asked again
            assert not set(sent) & cached_before, (
                f"cached answers sent again: {set(sent) & cached_before}"
            )
            assert len(sent) == len(set(sent))  # and none twice within a run
            return proc.returncode, err

        codes = [run_once(signal.SIGKILL)[0] for _ in range(KILLS)]
        assert codes == [-signal.SIGKILL] * KILLS, codes  # every one killed mid-run
        for _ in range(INTERRUPTS):
            code, err = run_once(signal.SIGINT)
            assert code == 130, err  # every one interrupted mid-run
            assert (
                err.strip()
                .splitlines()[-1]
                .endswith(
                    "interrupted: everything answered so far "
                    "is in the response cache; rerun to resume"
                )
            ), err
            assert "Traceback" not in err
        for _ in range(3):  # rerun until done
            code, err = run_once(None)
            if code == 0:
                break
        assert code == 0, err

        per_prompt = Counter(_sent(server, 0))
        assert set(per_prompt) == prompts  # nothing lost, nothing unknown sent
        repeats = sum(per_prompt.values()) - len(prompts)
        # each interruption repeats at most the calls in flight when it landed
        assert repeats <= CONCURRENCY * (KILLS + INTERRUPTS), per_prompt
        assert _cached_prompts(cache) == prompts
        assert layout.responses("endpoint", "toy_quiz").read_bytes() == expected
    finally:
        server.stop()
        reference.stop()
