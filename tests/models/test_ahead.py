"""Follow-up calls to another model sent ahead (issue 35.3): each row's follow-ups go out as
soon as that row exists, on an executor that runs calls side by side; the step then asks them
in its own order from the cache: the same table, each call sent once, counted once."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pandas as pd

from genfair.models import usage
from genfair.models.ahead import sending_ahead
from genfair.models.base import LLMBackend, OnDone, Request
from genfair.models.cache import ResponseCache
from genfair.models.executor import executing
from genfair.models.runner import Call, run_calls
from tests.models.test_follow_ups import Sharded
from tests.models.test_runner import SEED, FakeBackend, call, judge

FIRST = [call(n) for n in "abcdef"]


DEVICE = threading.Lock()


class SideBySide(Sharded):
    """:class:`Sharded`, for calls sent from several threads at once (as to a cluster)."""

    def concurrent(self, backend: LLMBackend) -> bool:
        return True


class Logged(FakeBackend):
    """Answers ``OK <content>`` and logs every request it is sent (shared by both models);
    with ``asked``, it answers ``f`` only once the other model has answered ``a1`` (a state,
    not a delay: rounds sent ahead run side by side, so which row's follow-ups take the device
    first is a race the test must not depend on), and tells it when it answers ``a1``."""

    def __init__(self, model_id: str, log: list[str], asked: threading.Event | None = None):
        super().__init__(lambda content, attempt: f"OK {content}", model_id=model_id)
        self.log, self.asked = log, asked

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        names = [r.messages[0]["content"] for r in requests]
        if self.asked is not None and self.model_id == "first" and "f" in names:
            assert self.asked.wait(30), "a1 was not sent before the first calls ended"
        with DEVICE:  # one device answering both models
            self.log += [f"{self.model_id}:{name}" for name in names]
            super().complete(requests, on_done)
        if self.asked is not None and self.model_id == "second" and "a1" in names:
            self.asked.set()


def questions(rows: list[dict[str, Any]]) -> list[Call]:
    """Two follow-ups per answer row, named after the call that made them."""
    return [call(f"{row['probe_id']}{n}") for row in rows for n in (1, 2)]


def _step(cache: ResponseCache, log: list[str], asked: threading.Event | None) -> pd.DataFrame:
    """A two-stage step: the first calls (their follow-ups sent ahead), then every follow-up
    asked in the step's order."""
    first, second = Logged("first", log, asked), Logged("second", log, asked)
    with sending_ahead(second, cache, questions, judge, seed=SEED, desc="step") as early:
        answers = run_calls(first, cache, FIRST, judge, seed=SEED, on_rows=early)
    rows = answers.to_dict("records")
    return run_calls(second, cache, questions(rows), judge, seed=SEED)


def test_each_rows_follow_ups_go_out_before_the_first_calls_end(tmp_path) -> None:
    log: list[str] = []
    with ResponseCache(tmp_path / "local.sqlite") as cache, usage.recording() as alone:
        local = _step(cache, log, None)
    assert log.index("second:a1") > log.index("first:f")  # one process: nothing ahead

    log.clear()
    with ResponseCache(tmp_path / "ahead.sqlite") as cache:
        with executing(SideBySide(cache)), usage.recording() as used:
            ahead = _step(cache, log, threading.Event())
        assert len(cache) == 6 + 12
    # a's questions were sent while the first model still had calls to answer
    assert log.index("second:a1") < log.index("first:f")
    assert sorted(log) == sorted(  # each call sent once
        [f"first:{n}" for n in "abcdef"] + [f"second:{n}{k}" for n in "abcdef" for k in (1, 2)]
    )
    pd.testing.assert_frame_equal(local, ahead)  # the same table
    # counted once, as sent, like the step in one process
    assert used.to_dict() == alone.to_dict() and used.cached.calls == 0 and not used.ahead


def test_follow_ups_that_fail_ahead_are_asked_by_the_step(tmp_path, caplog) -> None:
    def broken(rows: list[dict[str, Any]]) -> list[Call]:
        raise OSError("the image store is unreachable\nsecond line")

    first = FakeBackend(lambda content, attempt: f"OK {content}")
    second = FakeBackend(lambda content, attempt: f"OK {content}", model_id="second")
    with ResponseCache(tmp_path / "c.sqlite") as cache, executing(SideBySide(cache)):
        with sending_ahead(second, cache, broken, judge, seed=SEED, desc="step") as early:
            answers = run_calls(first, cache, FIRST, judge, seed=SEED, on_rows=early)
        asked = run_calls(second, cache, questions(answers.to_dict("records")), judge, seed=SEED)
    assert list(asked["status"]) == ["ok"] * 12 and len(second.sent) == 12  # nothing lost
    assert "follow-ups sent ahead failed (OSError: the image store is unreachable)" in caplog.text
