"""Follow-up calls (re-asks) go out as soon as their own answer arrives, through any executor,
and a cluster's shards are whole batches sized by the calls left (issue 35)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from genfair.models.base import Completion, LLMBackend, Request
from genfair.models.cache import ResponseCache
from genfair.models.executor import FollowUps, OnResult, executing, store_completion
from genfair.models.runner import run_calls
from tests.models.test_runner import SEED, FakeBackend, call, judge


class Sharded:
    """An executor in this process that answers its requests two at a time (a shard), asks
    ``follow`` after each shard and queues what it returns; it records every exchange."""

    def __init__(self, cache: ResponseCache):
        self.cache = cache
        self.log: list[tuple[str, list[str]]] = []

    def send(
        self,
        backend: LLMBackend,
        requests: Sequence[Request],
        keys: Sequence[str],
        model_key: str,
        on_result: OnResult,
        follow: FollowUps,
    ) -> bool:
        queue = list(zip(requests, keys, strict=True))
        done = 0
        while done < len(queue):
            shard = queue[done : done + 2]
            answers: list[Completion] = []
            backend.complete([r for r, _ in shard], lambda r, c, a=answers: a.append(c))
            self.log.append(("shard", [_name(r) for r, _ in shard]))
            for (_, key), completion in zip(shard, answers, strict=True):
                on_result(done, store_completion(self.cache, key, model_key, completion))
                done += 1
            more = list(follow())
            self.log.append(("follow", [_name(r) for r, _ in more]))
            queue += more
        return True


def _name(request: Request) -> str:
    return f"{request.messages[0]['content']}@{request.attempt}"


def script(content: str, attempt: int) -> str:
    return "maybe" if content == "a" and attempt < 2 else f"OK {content}"


def test_a_reask_is_handed_to_the_executor_with_the_answer_that_made_it(tmp_path) -> None:
    calls = [call(n, max_attempts=5) for n in "abcdef"]
    with ResponseCache(tmp_path / "local.sqlite") as cache:
        local = run_calls(FakeBackend(script), cache, calls, judge, seed=SEED)
    with ResponseCache(tmp_path / "sharded.sqlite") as cache:
        executor, backend = Sharded(cache), FakeBackend(script)
        with executing(executor):
            sharded = run_calls(backend, cache, calls, judge, seed=SEED)
        assert len(cache) == len(backend.sent) == 8  # a: three attempts; each sent once
    # a's re-ask follows its own shard, before the shards of c..f are answered
    assert executor.log[:2] == [("shard", ["a@0", "b@0"]), ("follow", ["a@1"])]
    assert [e for e in executor.log if e[0] == "follow" and e[1]] == [
        ("follow", ["a@1"]),
        ("follow", ["a@2"]),
    ]
    assert sorted(_name(r) for r in backend.sent) == sorted(
        ["a@0", "a@1", "a@2", *(f"{n}@0" for n in "bcdef")]
    )
    pd.testing.assert_frame_equal(local, sharded)  # the same table, wherever it ran


def test_a_reask_answered_earlier_is_read_from_the_cache_not_sent(tmp_path) -> None:
    calls = [call(n, max_attempts=5) for n in "abcdef"]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        first = run_calls(FakeBackend(script), cache, calls[:1], judge, seed=SEED)
        backend = FakeBackend(script)
        with executing(Sharded(cache)):
            frame = run_calls(backend, cache, calls, judge, seed=SEED)
        assert [_name(r) for r in backend.sent] == [f"{n}@0" for n in "bcdef"]
    assert frame.iloc[:1].equals(first) and list(frame["attempts"]) == [3, 1, 1, 1, 1, 1]


def test_an_executor_that_leaves_follow_ups_unsent_is_caught(tmp_path) -> None:
    class NoFollow(Sharded):
        def send(self, backend, requests, keys, model_key, on_result, follow) -> bool:  # type: ignore[no-untyped-def]
            return super().send(backend, requests, keys, model_key, on_result, lambda: [])

    with ResponseCache(tmp_path / "c.sqlite") as cache, executing(NoFollow(cache)):
        with pytest.raises(RuntimeError, match="left 1 follow-up calls unsent"):
            run_calls(FakeBackend(script), cache, [call("a", max_attempts=5)], judge, seed=SEED)


@pytest.mark.parametrize(
    ("batch", "left", "threads", "size"),
    [
        (8, 2000, 8, 64),  # many calls: the cap, a whole number of batches
        (8, 100, 2, 16),  # 100 / (2 x 4) = 13 calls, rounded up to two batches
        (8, 20, 8, 8),  # the tail: never below one batch
        (1, 20, 8, 1),  # a model without batches: one call
        (16, 2000, 1, 64),
        (24, 2000, 1, 72),  # a shard is at least one whole batch past the cap
    ],
)
def test_a_shard_is_whole_batches_of_the_calls_left_over_the_workers(
    batch: int, left: int, threads: int, size: int
) -> None:
    from genfair.models.dask_executor import _Shards

    config: Any = type("Config", (), {"batch_size": batch})()
    job: Any = type("Job", (), {"config": config, "share": 1})()
    assert _Shards(None, job, [], [], threads, None, {}).size(left) == size


class MapClient:
    """Records ``client.map`` calls: one per submission, each with its shards and priority."""

    def __init__(self) -> None:
        self.maps: list[tuple[list[int], int]] = []

    def map(self, func: Any, jobs: list, requests: list, keys: list, **options: Any) -> list:
        self.maps.append(([len(r) for r in requests], options["priority"]))
        return [object() for _ in requests]


class Running:
    def update(self, futures: list) -> None:
        pass


def _shards(batch: int, calls: int, threads: int) -> Any:
    from genfair.models.dask_executor import _Shards

    config: Any = type("Config", (), {"batch_size": batch})()
    job: Any = type("Job", (), {"config": config, "share": 1})()
    return _Shards(MapClient(), job, [None] * calls, ["k"] * calls, threads, None, {})


def test_shards_go_out_in_one_message_and_reasks_jump_the_queue_by_whole_batches() -> None:
    shards = _shards(batch=8, calls=100, threads=2)
    shards.submit(Running(), busy=0)
    # 100 / (2 x 4) = 13, two batches: six shards of 16 in one map, 4 calls wait for a shard
    assert shards.client.maps == [([16] * 6, 0)]
    shards.follow([(None, "r")] * 11)  # re-asks while six shards are busy: one whole batch
    shards.submit(Running(), busy=6)
    assert shards.client.maps[-1] == ([8], 1)
    shards.submit(Running(), busy=6)  # 7 left, less than a batch: they wait
    assert len(shards.client.maps) == 2
    shards.submit(Running(), busy=1)  # a worker thread would idle: the rest goes now
    assert shards.client.maps[-1] == ([7], 1)
    assert shards.sent == 111


def test_a_worker_stores_the_answers_that_arrived_together_in_one_write() -> None:
    import threading

    from genfair.models.dask_executor import _Writer

    writes: list[list[int]] = []
    go = threading.Event()

    def store(answers: list[tuple[Any, Any]]) -> None:
        go.wait(5)
        writes.append([a for a, _ in answers])

    with _Writer(store) as writer:
        writer.add(0, None)  # taken at once; the next three queue behind its write
        for n in (1, 2, 3):
            writer.add(n, None)
        go.set()
    assert sorted(n for w in writes for n in w) == [0, 1, 2, 3]
    assert len(writes) <= 3 and any(len(w) > 1 for w in writes)


def test_a_failed_write_fails_the_task() -> None:
    from genfair.models.dask_executor import _Writer

    def store(answers: list[tuple[Any, Any]]) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"), _Writer(store) as writer:
        writer.add(0, None)


def test_put_many_stores_answers_in_one_transaction_and_releases_their_claims(tmp_path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.claim(["a", "b", "c"]) == {"a", "b", "c"}
    stored = cache.put_many(
        [
            ("a", "m", Completion(status="ok", text="A")),
            ("b", "m", Completion(status="error", error="timeout")),  # never stored
            ("c", "m", Completion(status="ok", text="C")),
        ]
    )
    assert stored == 2
    assert {k: c.text for k, c in cache.get_many(["a", "b", "c"]).items()} == {"a": "A", "c": "C"}
    assert cache.claims() == 0
    assert cache.put_many([]) == 0
