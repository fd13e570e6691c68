"""Usage (issue 33.3): every answer a run uses counts its tokens (the endpoint's ``usage``,
else the model's tokenizer, else 4 characters a token, said so) and images, answers from the
cache and sent apart; a run's totals are the same with or without a cache."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genfair.models.base import ESTIMATE_RULE, Completion, Request
from genfair.models.cache import ResponseCache
from genfair.models.runner import run_calls
from genfair.models.usage import MAX_COUNT, TOKENIZER_RULE, USAGE_RULE, Counts, recording
from tests.models.test_runner import FakeBackend, call, judge

PROMPTS = ["alpha", "a longer question here", "q"]


def _run(backend: Any, cache: ResponseCache) -> Any:
    with recording() as used:
        run_calls(backend, cache, [call(p) for p in PROMPTS], judge, seed=1)
    return used


@pytest.fixture
def cache(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as c:
        yield c


def test_sent_then_cached_count_apart_with_the_estimate_rule(cache) -> None:
    backend = FakeBackend(lambda content, attempt: "A answer")
    first, second = _run(backend, cache), _run(backend, cache)
    prompts = sum(math.ceil(len(p) / 4) for p in PROMPTS)  # the stated rule, computed apart
    answers = len(PROMPTS) * math.ceil(len("A answer") / 4)
    assert first.sent == Counts(3, prompts, answers, 0) and first.cached == Counts()
    assert second.cached == first.sent and second.sent == Counts()
    assert first.total() == second.total()  # the same totals with or without a cache
    assert first.rules == {ESTIMATE_RULE}


def test_the_endpoints_usage_comes_first(cache) -> None:
    reply = Completion(status="ok", text="A", usage={"prompt_tokens": 11, "completion_tokens": 7})
    used = _run(FakeBackend(lambda content, attempt: reply), cache)
    assert used.sent == Counts(3, 33, 21, 0) and used.rules == {USAGE_RULE}


class Tokenized(FakeBackend):
    """A backend with a tokenizer: one token per word, plus 3 for its chat template."""

    def prompt_tokens(self, request: Request) -> int:
        return len(request.messages[0]["content"].split()) + 3

    def text_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_local_models_tokenizer_counts_without_usage(cache) -> None:
    used = _run(Tokenized(lambda content, attempt: "A is it"), cache)
    assert used.sent == Counts(3, (1 + 4 + 1) + 9, 9, 0) and used.rules == {TOKENIZER_RULE}


def test_failed_calls_count_nothing_and_nothing_is_counted_without_a_ledger(cache) -> None:
    failing = FakeBackend(lambda content, attempt: Completion(status="error", error="down"))
    assert _run(failing, cache).total() == Counts()
    run_calls(FakeBackend(lambda c, a: "A"), cache, [call("x")], judge, seed=1)  # no ledger: fine


def test_images_drawn_are_counted(cache) -> None:
    from genfair.models.t2i import generate_images
    from tests.models.test_t2i_images import calls, simulator

    with recording() as used:
        generate_images(simulator(), cache, calls(4), seed=1)
    assert used.sent.images == 4 and used.sent.calls == 4
    assert used.rules == {ESTIMATE_RULE}  # a simulator's prompt: estimated, said so


def _entry(model: str, sent: int, cached: int, responses: str | None = "r") -> dict[str, Any]:
    from genfair.models.usage import Usage, ledger_entry

    usage = Usage(
        cached=Counts(cached, 10 * cached, cached, 0), sent=Counts(sent, 10 * sent, sent, 0)
    )
    return ledger_entry(model, "m", f"{model}-m", usage, responses)


def test_the_ledger_sums_per_run_and_finds_the_latest_split(tmp_path) -> None:
    from genfair.models.usage import append_entry, latest_split, ledger_totals, read_ledger

    path = tmp_path / "cache" / "usage.jsonl"
    for entry in (_entry("a", 3, 0), _entry("a", 0, 3), _entry("b", 1, 1, None)):
        append_entry(path, entry)
    entries = read_ledger(path)
    assert [e["model"] for e in entries] == ["a", "a", "b"] and entries[0]["time"].endswith(
        "+00:00"
    )
    totals = ledger_totals(entries)
    assert totals[("a", "m")].sent == totals[("a", "m")].cached == Counts(3, 30, 3, 0)
    assert totals[("b", "m")].sent == Counts(1, 10, 1, 0)
    assert latest_split(entries, "r") == {"sent": Counts(), "cached": Counts(3, 30, 3, 0)}
    assert latest_split(entries, "other") is None


def test_a_damaged_ledger_line_is_skipped_and_named(tmp_path, caplog) -> None:
    from genfair.models.usage import append_entry, read_ledger

    path = tmp_path / "usage.jsonl"
    append_entry(path, _entry("a", 1, 0))
    with path.open("a") as fh:
        fh.write('{"model": "x", "sent": [1]}\n{"cut sho\n')  # not an entry; a torn line
    append_entry(path, _entry("b", 2, 0))
    assert [e["model"] for e in read_ledger(path)] == ["a", "b"]
    assert "usage.jsonl: line 2 is not a usage entry" in caplog.text
    assert "line 3" in caplog.text


def test_only_the_ledgers_tail_is_read(tmp_path, monkeypatch) -> None:
    from genfair.models import usage as module

    path = tmp_path / "usage.jsonl"
    for i in range(20):
        module.append_entry(path, _entry(f"m{i}", 1, 0))
    line = len(path.read_bytes()) // 20
    monkeypatch.setattr(module, "LEDGER_READ_BYTES", 5 * line + line // 2)
    assert [e["model"] for e in module.read_ledger(path)] == [f"m{i}" for i in range(15, 20)]


# ---- issue 44.1 / 44.5: a count is a whole number in [0, MAX_COUNT] wherever it enters

COUNTS = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.just(10**4000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=3),
)


@given(value=COUNTS)
@settings(max_examples=200, deadline=None)
def test_an_endpoints_usage_is_kept_only_where_it_is_a_count(value: Any) -> None:
    from genfair.models.openai import token_usage

    kept = token_usage({"usage": {"prompt_tokens": value, "completion_tokens": 3}})
    is_count = type(value) is int and 0 <= value <= MAX_COUNT
    assert kept == ({"prompt_tokens": value} if is_count else {}) | {"completion_tokens": 3}


@given(value=st.one_of(st.integers(max_value=-1), st.integers(min_value=MAX_COUNT + 1)))
@settings(max_examples=50, deadline=None)
def test_a_cached_answers_bad_usage_is_counted_as_unknown(value: int) -> None:
    """An answer cached before the guard, with a negative or huge ``usage``, is counted from
    its text: no budget adds up -7.3e30 tokens."""
    from genfair.models.usage import completion_tokens, prompt_tokens

    backend = FakeBackend(lambda content, attempt: "x")
    answer = Completion(
        status="ok", text="four", usage={"prompt_tokens": value, "completion_tokens": value}
    )
    request = Request(messages=({"role": "user", "content": "abcdefgh"},))
    assert prompt_tokens(backend, request, answer) == (2, ESTIMATE_RULE)
    assert completion_tokens(backend, answer) == (1, ESTIMATE_RULE)


@pytest.mark.parametrize(
    "count", ["Infinity", "-Infinity", "NaN", "-5", "1e400", "1" + "0" * 4000, "2.5", "1e20"]
)
def test_a_ledger_line_whose_count_is_no_count_is_skipped_and_named(
    tmp_path, caplog, count: str
) -> None:
    from genfair.models.usage import append_entry, ledger_totals, read_ledger

    path = tmp_path / "usage.jsonl"
    append_entry(path, _entry("a", 1, 0))
    with path.open("a") as fh:
        fh.write(
            '{"model": "x", "methodology": "m", "cached": {"calls": 0}, '
            f'"sent": {{"calls": 1, "prompt_tokens": {count}}}}}\n'
        )
    append_entry(path, _entry("b", 2, 0))
    entries = read_ledger(path)
    assert [e["model"] for e in entries] == ["a", "b"]
    assert f"{path}: line 2 is not a usage entry" in caplog.text
    assert ledger_totals(entries)[("b", "m")].sent.calls == 2


def test_cache_stats_survives_a_ledger_line_of_infinity(tmp_path, monkeypatch, capsys) -> None:
    from genfair.cli import main
    from genfair.models.usage import append_entry

    for marker in ("conf/config.yaml", "dvc.yaml"):  # a study folder without params.yaml
        (tmp_path / marker).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / marker).write_text("")
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    ledger = tmp_path / "cache" / "usage.jsonl"
    append_entry(ledger, _entry("a", 1, 0))
    with ledger.open("a") as fh:
        fh.write('{"model": "x", "methodology": "m", "cached": {}, "sent": {"calls": Infinity}}\n')
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "stats"]) == 0
    assert "a · m" in capsys.readouterr().out


def test_a_budget_stops_sending_at_its_calls(cache) -> None:
    """The runner asks the active budget before each send: past it, a call is an ``error``
    (never cached) and its claim released; the calls before it are answered and cached."""
    from genfair.models.usage import OVER_BUDGET, Budget, budgeted

    backend = FakeBackend(lambda content, attempt: "OK")
    calls = [call(f"question {i}") for i in range(10)]
    with budgeted(Budget(calls=4)) as budget:
        results = run_calls(backend, cache, calls, judge, seed=1)
    assert budget is not None and (budget.sent, budget.stopped) == (4, 6)
    assert list(results["status"]).count("ok") == 4 and len(cache) == 4
    assert set(results["error"].dropna()) == {OVER_BUDGET} and cache.claims() == 0
    again = run_calls(backend, cache, calls, judge, seed=1)  # no budget: the rest is sent
    assert list(again["status"]) == ["ok"] * 10 and len(cache) == 10


def test_a_budget_stops_sending_at_its_cost(cache) -> None:
    from genfair.models.config import Price
    from genfair.models.usage import Budget, budgeted

    class Priced(FakeBackend):
        model_config = SimpleNamespace(price=Price(output_per_million=1e6))

    reply = Completion(status="ok", text="OK", usage={"prompt_tokens": 1, "completion_tokens": 2})
    backend = Priced(lambda content, attempt: reply)
    calls = [call(f"q{i}") for i in range(10)]
    with budgeted(Budget(cost=5.0)) as budget:  # 2 a call: the third reaches 6 and stops it
        results = run_calls(backend, cache, calls, judge, seed=1, chunk_size=1)
    assert budget is not None and budget.spent == 6.0
    assert list(results["status"]).count("ok") == 3
    # with the plan's cost of one call, a chunk goes out only as far as it fits: never past
    with budgeted(Budget(cost=5.0, per_call=2.0)) as budget:
        results = run_calls(backend, cache, [call(f"r{i}") for i in range(10)], judge, seed=1)
    assert budget is not None and (budget.sent, budget.spent, budget.stopped) == (2, 4.0, 8)


def test_a_spent_budget_sends_nothing_and_waits_for_nothing(cache, caplog) -> None:
    from genfair.models.usage import Budget, budgeted

    caplog.set_level("INFO")
    backend = FakeBackend(lambda content, attempt: "OK")
    with budgeted(Budget(calls=0)) as budget:
        results = run_calls(backend, cache, [call(f"q{i}") for i in range(5)], judge, seed=1)
    assert budget is not None and budget.stopped == 5 and not backend.sent
    assert set(results["status"]) == {"error"} and len(cache) == 0
    assert "waiting for" not in caplog.text  # no other process holds them


def test_a_dead_runs_journal_becomes_its_ledger_line_once(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from genfair.models.usage import JOURNALS, fold_journals, read_ledger, start_journal

    ledger = tmp_path / "usage.jsonl"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(dead.stdout)  # a process that has ended
    folder = tmp_path / JOURNALS
    folder.mkdir()
    head = json.dumps({"model": "m", "methodology": "x", "run": "k"})
    line = json.dumps(
        {
            "sent": {"calls": 1, "prompt_tokens": 5, "completion_tokens": 2, "images": 0},
            "rules": ["the endpoint's usage"],
        }
    )
    (folder / f"{pid}-a.jsonl").write_text(
        f"{head}\n{line}\n{line}\n{line[:20]}"
    )  # cut by the kill
    (folder / f"{pid}-b.jsonl").write_text("not json\n")  # damaged: removed, no line
    (folder / f"{pid}-c.jsonl").write_text(f"{head}\n")  # killed before its first answer
    mine = start_journal(ledger, "m", "x", "k")  # this process is alive: its journal stays
    assert mine is not None and mine.parent == folder
    assert fold_journals(ledger) == 1
    [entry] = read_ledger(ledger)
    assert (entry["model"], entry["methodology"], entry["run"]) == ("m", "x", "k")
    assert (entry["sent"].calls, entry["sent"].prompt_tokens, entry["cached"].calls) == (2, 10, 0)
    assert entry["responses"] is None and entry["journal"] == f"{pid}-a.jsonl"
    assert sorted(p.name for p in folder.iterdir()) == [mine.name]
    # a journal whose line the ledger already has (killed between the two) is only removed
    (folder / f"{pid}-a.jsonl").write_text(f"{head}\n{line}\n")
    assert fold_journals(ledger) == 0 and len(read_ledger(ledger)) == 1
