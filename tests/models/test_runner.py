"""The runner: cache first, re-ask on refused/invalid, errors final per run, resumable."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from genfair.models.base import Completion, LLMBackend, OnDone, Request, derive_seed
from genfair.models.cache import ResponseCache
from genfair.models.runner import RESPONSE_COLUMNS, Call, run_calls

ROOT = Path(__file__).resolve().parents[2]
SEED = 1234


class FakeBackend(LLMBackend):
    """Answers with ``script(content, attempt)``: a text, or a Completion to return as is."""

    def __init__(
        self,
        script: Callable[[str, int], str | Completion],
        *,
        deterministic: bool = False,
        model_id: str = "fake-1",
    ):
        self.script = script
        self.deterministic = deterministic
        self.model_id = model_id
        self.sent: list[Request] = []
        self.batches: list[int] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "fake",
            "model_id": self.model_id,
            "revision": "0",
            "sampling": {"temperature": 1.0},
        }

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        self.batches.append(len(requests))
        for request in requests:
            self.sent.append(request)
            answer = self.script(request.messages[0]["content"], request.attempt)
            if isinstance(answer, Completion):
                on_done(request, answer)
            else:
                on_done(request, Completion(status="ok", text=answer, finish_reason="stop"))

    def attempts_of(self, content: str) -> list[int]:
        return [r.attempt for r in self.sent if r.messages[0]["content"] == content]


def judge(text: str, meta: dict[str, Any]) -> str:
    if text.startswith("OK"):
        return "ok"
    if text.startswith("NO"):
        return "refused"
    return "invalid"


def call(name: str, max_attempts: int = 1, sample_index: int = 0) -> Call:
    return Call(
        probe_id=name,
        messages=({"role": "user", "content": name},),
        sample_index=sample_index,
        max_attempts=max_attempts,
        meta={"name": name},
    )


@pytest.fixture
def cache(tmp_path):
    with ResponseCache(tmp_path / "cache" / "responses.sqlite") as c:
        yield c


def test_second_run_comes_from_the_cache(cache):
    backend = FakeBackend(lambda content, attempt: f"OK {content}")
    calls = [call(f"p{i}") for i in range(7)]
    first = run_calls(backend, cache, calls, judge, seed=SEED)
    assert len(backend.sent) == 7
    assert len(cache) == 7
    second = run_calls(backend, cache, calls, judge, seed=SEED)
    assert len(backend.sent) == 7  # nothing sent again
    pd.testing.assert_frame_equal(first, second)
    assert list(second["text"]) == [f"OK p{i}" for i in range(7)]
    # a different model (fingerprint) does not reuse those answers
    other = FakeBackend(lambda content, attempt: f"OK other {content}", model_id="fake-2")
    third = run_calls(other, cache, calls, judge, seed=SEED)
    assert len(other.sent) == 7
    assert third["text"].iloc[0] == "OK other p0"
    # a different study seed gives different requests
    run_calls(backend, cache, calls, judge, seed=SEED + 1)
    assert len(backend.sent) == 14


def test_reask_until_valid_with_distinct_attempts_and_seeds(cache):
    def script(content: str, attempt: int) -> str:
        if content == "slow":  # invalid, then refused, then ok
            return ["maybe", "NO thanks", "OK fine"][attempt]
        if content == "never":
            return "NO never"
        if content == "rambles":
            return "it depends"
        return "OK"

    backend = FakeBackend(script)
    calls = [
        call("slow", max_attempts=5),
        call("never", max_attempts=3),
        call("rambles", max_attempts=1),
        call("direct", max_attempts=5),
    ]
    frame = run_calls(backend, cache, calls, judge, seed=SEED)
    assert list(frame["status"]) == ["ok", "refused", "invalid", "ok"]
    assert list(frame["attempts"]) == [3, 3, 1, 1]
    assert list(frame["text"]) == ["OK fine", "NO never", "it depends", "OK"]
    assert backend.attempts_of("slow") == [0, 1, 2]
    assert backend.attempts_of("never") == [0, 1, 2]
    assert backend.attempts_of("rambles") == [0]
    assert backend.attempts_of("direct") == [0]
    seeds = [r.seed for r in backend.sent if r.messages[0]["content"] == "slow"]
    assert len(set(seeds)) == 3
    assert seeds == [derive_seed(SEED, "slow", 0, a) for a in range(3)]
    # every attempt is its own cache entry: 3 + 3 + 1 + 1
    assert len(cache) == 8
    # a rerun replays every attempt from the cache, with the same final result
    again = run_calls(backend, cache, calls, judge, seed=SEED)
    assert len(backend.sent) == 8
    pd.testing.assert_frame_equal(frame, again)


def test_deterministic_backend_is_not_reasked(cache):
    backend = FakeBackend(
        lambda content, attempt: "NO" if content == "r" else "nonsense", deterministic=True
    )
    frame = run_calls(
        backend, cache, [call("r", max_attempts=5), call("i", max_attempts=5)], judge, seed=SEED
    )
    assert list(frame["status"]) == ["refused", "invalid"]
    assert list(frame["attempts"]) == [1, 1]
    assert [r.attempt for r in backend.sent] == [0, 0]


def test_backend_refusal_status_is_reasked(cache):
    def script(content: str, attempt: int) -> str | Completion:
        return (
            Completion(status="refused", finish_reason="content_filter") if attempt == 0 else "OK"
        )

    backend = FakeBackend(script)
    frame = run_calls(backend, cache, [call("x", max_attempts=2)], judge, seed=SEED)
    assert frame.loc[0, "status"] == "ok"
    assert frame.loc[0, "attempts"] == 2


def test_errors_are_final_not_cached_and_asked_again_next_run(cache):
    failing = {"e1", "e3"}

    def flaky(content: str, attempt: int) -> str | Completion:
        if content in failing:
            return Completion(status="error", error="ConnectError: refused", tries=7)
        return f"OK {content}"

    backend = FakeBackend(flaky)
    calls = [call(f"e{i}", max_attempts=5) for i in range(5)]
    first = run_calls(backend, cache, calls, judge, seed=SEED)
    assert list(first["status"]) == ["ok", "error", "ok", "error", "ok"]
    assert list(first["attempts"]) == [1, 1, 1, 1, 1]  # an error is not re-asked in the run
    assert first.loc[1, "error"] == "ConnectError: refused"
    assert first.loc[1, "tries"] == 7
    assert len(backend.sent) == 5
    assert len(cache) == 3  # the errors were not stored

    failing.clear()  # the endpoint is back
    second = run_calls(backend, cache, calls, judge, seed=SEED)
    assert list(second["status"]) == ["ok"] * 5
    resent = [r.messages[0]["content"] for r in backend.sent[5:]]
    assert resent == ["e1", "e3"]  # only the failed ones, with the same attempt index
    assert [r.attempt for r in backend.sent[5:]] == [0, 0]
    assert len(cache) == 5


def test_missing_completion_is_recorded_as_error(cache):
    class Forgetful(FakeBackend):
        def complete(self, requests, on_done):
            self.sent.extend(requests)
            for request in requests[1:]:  # forgets the first one
                on_done(request, Completion(status="ok", text="OK"))

    backend = Forgetful(lambda c, a: "OK")
    frame = run_calls(backend, cache, [call("a"), call("b")], judge, seed=SEED)
    assert list(frame["status"]) == ["error", "ok"]
    assert frame.loc[0, "error"] == "backend returned no completion"
    assert len(cache) == 1


def test_frame_has_response_columns_and_one_row_per_call_in_order(cache):
    # the first call needs re-asks, so it finishes last; rows keep the call order
    backend = FakeBackend(
        lambda content, attempt: "bad" if content == "c0" and attempt < 2 else f"OK {content}"
    )
    calls = [call("c0", max_attempts=5)] + [call(f"c{i}", sample_index=i % 2) for i in range(1, 6)]
    frame = run_calls(backend, cache, calls, judge, seed=SEED, chunk_size=2)
    assert list(frame.columns) == RESPONSE_COLUMNS
    assert len(frame) == 6
    assert list(frame["probe_id"]) == [f"c{i}" for i in range(6)]
    assert list(frame["sample_index"]) == [0, 1, 0, 1, 0, 1]
    assert list(frame["text"]) == [f"OK c{i}" for i in range(6)]
    assert frame.loc[0, "attempts"] == 3
    assert list(frame["finish_reason"]) == ["stop"] * 6
    assert frame["error"].isna().all()
    # chunks of 2; c0's re-asks go out right after its own chunk, not after the other chunks
    assert backend.batches == [2, 1, 1, 2, 2]


def test_samples_of_one_probe_are_distinct_cache_entries(cache):
    backend = FakeBackend(lambda content, attempt: "OK")
    calls = [call("same", sample_index=s) for s in range(4)]
    run_calls(backend, cache, calls, judge, seed=SEED)
    assert len(cache) == 4
    assert sorted({r.seed for r in backend.sent}) == sorted(
        {derive_seed(SEED, "same", s, 0) for s in range(4)}
    )


# --- kill -9 in the middle of a run, then resume -------------------------------------------------

N_CALLS = 60

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from genfair.models.base import Completion, LLMBackend
    from genfair.models.cache import ResponseCache
    from genfair.models.runner import Call, run_calls

    cache_path, log_path, out_path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

    class Slow(LLMBackend):
        fingerprint = {"backend": "fake", "model_id": "slow", "revision": "0", "sampling": {}}

        def complete(self, requests, on_done):
            for request in requests:
                key = ResponseCache.key(self.fingerprint, request)
                with open(log_path, "a") as log:  # one write() per sent request
                    log.write(key + "\\n")
                time.sleep(0.05)
                on_done(
                    request, Completion(status="ok", text="OK " + request.messages[0]["content"])
                )

    calls = [Call(probe_id=f"p{i:03d}", messages=({"role": "user", "content": f"q{i}"},),
                  max_attempts=2)
             for i in range(n)]
    with ResponseCache(cache_path) as cache:
        frame = run_calls(Slow(), cache, calls, lambda text, meta: "ok", seed=99)
    frame.to_json(out_path, orient="records")
    """
)


def _keys(path: Path) -> list[str]:
    """Complete lines of a send log (a line being written may be cut short)."""
    if not path.exists():
        return []
    return [line for line in path.read_text().split("\n")[:-1] if line]


def test_killed_run_resumes_without_repeating_stored_calls(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    cache_path = tmp_path / "cache" / "responses.sqlite"
    log1, log2 = tmp_path / "sent1.log", tmp_path / "sent2.log"
    out1, out2 = tmp_path / "out1.json", tmp_path / "out2.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    first = subprocess.Popen(
        [sys.executable, str(script), str(cache_path), str(log1), str(out1), str(N_CALLS)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_keys(log1)) < 10:  # kill after some calls have completed
            assert first.poll() is None, first.stderr.read().decode()
            assert time.monotonic() < deadline, "the first run sent nothing"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == -signal.SIGKILL
    assert not out1.exists()  # it really died mid-run

    sent1 = _keys(log1)
    with ResponseCache(cache_path) as cache:
        stored1 = set(cache.get_many(sent1))
    assert 10 <= len(sent1) < N_CALLS
    assert len(set(sent1)) == len(sent1)
    # everything sent was stored except at most the one in flight at the kill
    assert len(sent1) - len(stored1) in (0, 1)
    assert stored1 <= set(sent1)

    second = subprocess.run(
        [sys.executable, str(script), str(cache_path), str(log2), str(out2), str(N_CALLS)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr.decode()
    sent2 = _keys(log2)

    assert not stored1 & set(sent2), "a call stored by the killed run was sent again"
    assert set(sent1) & set(sent2) == set(sent1) - stored1  # only the in-flight one, if any
    assert len(set(sent1) | set(sent2)) == N_CALLS
    assert len(sent2) == N_CALLS - len(stored1)

    frame = pd.DataFrame(json.loads(out2.read_text()))
    assert list(frame["probe_id"]) == [f"p{i:03d}" for i in range(N_CALLS)]
    assert list(frame["status"]) == ["ok"] * N_CALLS
    assert list(frame["text"]) == [f"OK q{i}" for i in range(N_CALLS)]
    with ResponseCache(cache_path) as cache:
        assert len(cache) == N_CALLS


# --- a malformed answer is a recorded failure, never a cached success (issue 16.1) ------------


def test_a_malformed_completion_is_an_error_not_cached_and_asked_again(cache):
    broken = {"number": 42, "list": ["A", "B"], "null": None}

    def script(content: str, attempt: int) -> str | Completion:
        if content in broken:
            return Completion(status="ok", text=broken[content], finish_reason="stop")  # type: ignore[arg-type]
        return f"OK {content}"

    backend = FakeBackend(script)
    calls = [call(name, max_attempts=3) for name in ("number", "list", "null", "fine")]
    frame = run_calls(backend, cache, calls, judge, seed=SEED)
    assert list(frame["status"]) == ["error", "error", "error", "ok"]
    assert frame.loc[0, "error"] == "malformed completion: text is not a string (int)"
    assert frame.loc[1, "error"] == "malformed completion: text is not a string (list)"
    assert frame.loc[2, "error"] == "malformed completion: an ok completion without text or image"
    assert frame["text"].iloc[:3].isna().all()
    assert len(cache) == 1  # only the valid answer

    broken.clear()  # the endpoint behaves again: only the three failures are sent
    again = run_calls(backend, cache, calls, judge, seed=SEED)
    assert list(again["status"]) == ["ok"] * 4
    assert [r.messages[0]["content"] for r in backend.sent[4:]] == ["number", "list", "null"]


def test_a_key_echoed_by_the_model_is_redacted_in_table_and_cache(tmp_path, monkeypatch):
    from genfair.models.redaction import register_key_env

    secret = "sk-runner-test-0123456789abcdef"
    monkeypatch.setenv("GENFAIR_TEST_RUNNER_KEY", secret)
    register_key_env("GENFAIR_TEST_RUNNER_KEY")
    path = tmp_path / "responses.sqlite"
    backend = FakeBackend(lambda content, attempt: f"OK the key is {secret}")
    with ResponseCache(path) as cache:
        frame = run_calls(backend, cache, [call("leak")], judge, seed=SEED)
    assert frame.loc[0, "text"] == "OK the key is [redacted]"
    for file in tmp_path.iterdir():
        assert secret.encode() not in file.read_bytes(), file.name


# --- two processes on one cache never pay twice (issue 16) ------------------------------------

PEER = textwrap.dedent(
    """
    import json, sys
    from genfair.models.cache import ResponseCache
    from genfair.models.config import OpenAIModelConfig
    from genfair.models.openai import OpenAIChatBackend
    from genfair.models.runner import Call, run_calls

    cache_path, url, out_path, n, go, ready = (sys.argv[1], sys.argv[2], sys.argv[3],
                                                int(sys.argv[4]), *sys.argv[5:7])
    backend = OpenAIChatBackend(OpenAIModelConfig(backend="openai", model_id="mock", base_url=url,
                                                  api_key_env=None, concurrency=4, timeout_s=10))
    calls = [Call(probe_id=f"p{i:03d}", messages=({"role": "user", "content": f"q{i}"},))
             for i in range(n)]
    import os, time
    open(ready, "w").close()  # imported: the test starts both once both say so
    while not os.path.exists(go):  # both processes start asking together
        time.sleep(0.005)
    with ResponseCache(cache_path) as cache:
        frame = run_calls(backend, cache, calls, lambda text, meta: "ok", seed=5, chunk_size=16)
    frame.to_json(out_path, orient="records")
    """
)


def test_two_processes_on_one_cache_send_each_call_once(tmp_path, mock_openai):
    server = mock_openai(latency_s=0.05)
    script = tmp_path / "peer.py"
    script.write_text(PEER)
    cache_path, go = tmp_path / "cache" / "responses.sqlite", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    n = 48
    peers = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(cache_path),
                server.url,
                str(tmp_path / f"out{k}.json"),
                str(n),
                str(go),
                str(tmp_path / f"ready{k}"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for k in range(2)
    ]
    try:
        deadline = time.monotonic() + 120
        while not all(
            (tmp_path / f"ready{k}").exists() for k in range(2)
        ):  # both imported and waiting
            assert all(p.poll() is None for p in peers) and time.monotonic() < deadline, (
                "a peer did not start"
            )
            time.sleep(0.01)
        go.touch()
        for peer in peers:
            assert peer.wait(timeout=90) == 0, peer.stderr.read().decode()
    finally:
        for peer in peers:
            if peer.poll() is None:
                peer.kill()
                peer.wait()
    prompts = [r.body["messages"][-1]["content"] for r in server.requests]
    assert sorted(prompts) == sorted(f"q{i}" for i in range(n)), "a call was sent twice (or never)"
    frames = [pd.DataFrame(json.loads((tmp_path / f"out{k}.json").read_text())) for k in range(2)]
    for frame in frames:
        assert list(frame["status"]) == ["ok"] * n
        assert list(frame["text"]) == [f"echo: q{i}" for i in range(n)]
    with ResponseCache(cache_path) as cache:
        assert len(cache) == n
    with sqlite3.connect(cache_path) as db:
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)  # every claim released


# --- per-call decoding (issues 12, 13) ----------------------------------------------------------


class Sampling(FakeBackend):
    """Repeats itself at temperature 0, its own ``temperature`` unless the request sets one (as
    the hf backend); can constrain to a schema."""

    supports_json_schema = True

    def __init__(
        self, script: Callable[[str, int], str | Completion], temperature: float, **kwargs: Any
    ):
        super().__init__(script, **kwargs)
        self.temperature = temperature

    def repeats(self, request: Request) -> bool:
        return (request.temperature if request.temperature is not None else self.temperature) == 0


def test_reasking_follows_the_calls_own_temperature(cache):
    greedy = Sampling(lambda content, attempt: "nonsense", temperature=0.0)
    calls = [
        call("default", max_attempts=3),
        Call(
            probe_id="sampled",
            messages=({"role": "user", "content": "sampled"},),
            max_attempts=3,
            temperature=0.9,
            top_p=0.8,
        ),
    ]
    frame = run_calls(greedy, cache, calls, judge, seed=SEED)
    assert list(frame["attempts"]) == [1, 3]  # greedy would repeat itself; sampling may not
    assert greedy.attempts_of("default") == [0]
    assert greedy.attempts_of("sampled") == [0, 1, 2]
    sampled = [r for r in greedy.sent if r.messages[0]["content"] == "sampled"]
    assert {(r.temperature, r.top_p) for r in sampled} == {(0.9, 0.8)}
    # ...and a sampling model is not re-asked for a call that asks for greedy decoding
    sampling = Sampling(
        lambda content, attempt: "nonsense", temperature=1.0, model_id="fake-sampling"
    )
    calls = [
        call("default", max_attempts=3),
        Call(
            probe_id="greedy",
            messages=({"role": "user", "content": "greedy"},),
            max_attempts=3,
            temperature=0.0,
        ),
    ]
    frame = run_calls(sampling, cache, calls, judge, seed=SEED)
    assert list(frame["attempts"]) == [3, 1]


def test_a_schema_reaches_a_backend_that_supports_it_and_is_refused_by_one_that_does_not(cache):
    schema = {"type": "object"}
    constrained = Call(
        probe_id="c", messages=({"role": "user", "content": "c"},), json_schema=schema
    )
    backend = Sampling(lambda content, attempt: "OK {}", temperature=0.0)
    run_calls(backend, cache, [constrained], judge, seed=SEED)
    assert backend.sent[0].json_schema == schema
    free = FakeBackend(lambda content, attempt: "OK")
    with pytest.raises(ValueError, match="cannot constrain its output to a JSON schema"):
        run_calls(free, cache, [call("a"), constrained], judge, seed=SEED)
    assert free.sent == []  # refused before anything was sent
