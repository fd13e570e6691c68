"""Tests for genfair.models.openai against the local mock server (tests/support)."""

from __future__ import annotations

import json
import logging
import socket
import time
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genfair.errors import ConfigError
from genfair.models.base import Completion, Request
from genfair.models.config import OpenAIModelConfig, SamplingParams
from genfair.models.openai import OpenAIChatBackend, _retry_after_s
from tests.support.bombs import gzip_bomb, stacked_gzip_bomb
from tests.support.mock_openai import Fault, MockOpenAI

MockFactory = Callable[..., MockOpenAI]
KEY_ENV = "GENFAIR_TEST_OPENAI_API_KEY"
SECRET = "sk-test-Zq8v1TOPSECRETkey"


def make_backend(base_url: str, **overrides: Any) -> OpenAIChatBackend:
    """A backend with tiny backoffs, so retry tests take milliseconds."""
    settings: dict[str, Any] = {
        "backend": "openai",
        "model_id": "mock-model",
        "base_url": base_url,
        "api_key_env": None,
        "timeout_s": 2.0,
        "max_retries": 3,
        "backoff_initial_s": 0.001,
        "backoff_max_s": 0.01,
    }
    return OpenAIChatBackend(OpenAIModelConfig(**{**settings, **overrides}))


def ask(*prompts: str) -> list[Request]:
    return [
        Request(messages=({"role": "user", "content": p},), seed=100 + i)
        for i, p in enumerate(prompts)
    ]


def run(
    backend: OpenAIChatBackend, requests: Sequence[Request]
) -> list[tuple[Request, Completion]]:
    done: list[tuple[Request, Completion]] = []
    backend.complete(requests, lambda request, completion: done.append((request, completion)))
    return done


def test_happy_path_routes_answers_and_sends_the_full_body(mock_openai: MockFactory) -> None:
    server = mock_openai()
    backend = make_backend(
        server.url,
        concurrency=2,
        system_prompt="Be brief.",
        sampling=SamplingParams(temperature=0.7, top_p=0.9, max_tokens=12),
        extra_body={"top_k": 5},
    )
    requests = ask(*(f"q{i}" for i in range(5)))
    done = run(backend, requests)

    assert sorted(id(r) for r, _ in done) == sorted(id(r) for r in requests)  # once each
    for request, completion in done:
        assert completion.status == "ok"
        assert completion.text == f"echo: {request.messages[-1]['content']}"
        assert completion.finish_reason == "stop"
        assert completion.tries == 1
        assert completion.latency_s > 0
        assert completion.usage == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}

    bodies = {r.body["messages"][-1]["content"]: r.body for r in server.requests if r.body}
    assert len(server.requests) == 5
    for request in requests:
        body = bodies[request.messages[-1]["content"]]
        assert body["model"] == "mock-model"
        assert body["messages"] == [{"role": "system", "content": "Be brief."}, *request.messages]
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.7, 0.9, 12)
        assert body["seed"] == request.seed
        assert body["top_k"] == 5
    assert all("authorization" not in r.headers for r in server.requests)


def test_seed_is_left_out_when_send_seed_is_off(mock_openai: MockFactory) -> None:
    server = mock_openai()
    run(make_backend(server.url, send_seed=False), ask("q"))
    assert server.requests[0].body is not None and "seed" not in server.requests[0].body


def test_no_requests_means_no_calls(mock_openai: MockFactory) -> None:
    server = mock_openai()
    assert run(make_backend(server.url), []) == []
    assert server.calls == 0


def test_on_done_fires_as_each_request_finishes(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"slow": [Fault.delay(0.6)]})
    backend = make_backend(server.url, concurrency=3)
    began = time.perf_counter()
    finished: dict[str, float] = {}

    def on_done(request: Request, _: Completion) -> None:
        finished[request.messages[-1]["content"]] = time.perf_counter() - began

    backend.complete(ask("slow", "fast1", "fast2"), on_done)
    assert list(finished)[-1] == "slow"
    assert max(finished["fast1"], finished["fast2"]) < finished["slow"] - 0.3


def test_concurrency_limit_is_respected(mock_openai: MockFactory) -> None:
    server = mock_openai(latency_s=0.05)
    done = run(make_backend(server.url, concurrency=4), ask(*(f"q{i}" for i in range(24))))
    assert len(done) == server.calls == 24
    assert server.max_in_flight == 4


def test_a_rate_limit_bounds_the_requests_started_in_any_window(mock_openai: MockFactory) -> None:
    server = mock_openai(latency_s=0.01)
    began = time.perf_counter()
    done = run(
        make_backend(server.url, concurrency=8, rate_limit="5/second"),
        ask(*(f"q{i}" for i in range(12))),
    )
    assert len(done) == server.calls == 12
    # 5 start at once, then 5 a second later, then 2: never 6 within a second (0.2 s for
    # the server's receipt jitter), so 12 calls span at least 2 s
    assert server.most_started_within(0.8) <= 5
    assert time.perf_counter() - began >= 2.0


def test_two_backends_of_one_endpoint_share_its_rate_limit(mock_openai: MockFactory) -> None:
    server = mock_openai(latency_s=0.01)
    first, second = (make_backend(server.url, rate_limit="4/second") for _ in range(2))
    run(first, ask(*(f"a{i}" for i in range(4))))
    run(second, ask(*(f"b{i}" for i in range(4))))
    assert server.most_started_within(0.8) <= 4


def test_limits_are_named_by_a_hash_of_endpoint_and_model_never_the_url() -> None:
    from genfair.models.rate_limit import endpoint_name, rate_name

    config = make_backend("http://127.0.0.1:1/v1", rate_limit="4/second").config
    other = make_backend("http://127.0.0.1:2/v1", rate_limit="4/second").config
    assert "127.0.0.1" not in rate_name(config) and rate_name(config) != rate_name(other)
    assert rate_name(config).endswith("-4/second")
    assert endpoint_name("lease", config, 8) != endpoint_name("rate", config, 8)


@pytest.mark.parametrize(
    "rate", ["5/hour", "five", "0/second", "5/2 seconds", "5.5/minute", "sk-abc123"]
)
def test_a_rate_limit_that_is_not_requests_per_second_or_minute_is_refused(rate: str) -> None:
    with pytest.raises(ValueError, match="write 'N/second' or 'N/minute'") as error:
        make_backend("http://127.0.0.1:1/v1", rate_limit=rate)
    assert rate not in str(error.value)  # a key pasted here must not reach a log


def test_rate_limit_waits_for_retry_after(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.rate_limit(retry_after=0.3)]})
    # backoff alone would wait at most 1 ms: any longer wait comes from Retry-After
    [(_, completion)] = run(make_backend(server.url, backoff_max_s=5.0), ask("q"))
    assert completion.status == "ok" and completion.tries == 2
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.3


def test_retry_after_is_capped_by_backoff_max(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.rate_limit(retry_after=30)]})
    began = time.perf_counter()
    [(_, completion)] = run(make_backend(server.url, backoff_max_s=0.1), ask("q"))
    assert completion.status == "ok" and completion.tries == 2
    assert time.perf_counter() - began < 5


def test_retry_after_parsing() -> None:
    in_5s = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    assert 3.5 < (_retry_after_s(httpx.Headers({"Retry-After": in_5s})) or 0) <= 5
    assert _retry_after_s(httpx.Headers({"Retry-After": "1.5"})) == 1.5
    assert _retry_after_s(httpx.Headers({"retry-after-ms": "250", "Retry-After": "9"})) == 0.25
    assert _retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    assert _retry_after_s(httpx.Headers({})) is None


#: JSON nested deeper than Python's parser follows (it raises RecursionError, not ValueError)
DEEP_JSON = "[" * 100_000 + "]" * 100_000
#: an HTTP-date whose year no datetime holds (OverflowError), and other absurd hints
ABSURD_HINTS = [
    ("Retry-After", "Fri, 01 Jan 99999999999 00:00:00 GMT"),
    ("Retry-After", "Wed, 21 Oct 9999 07:28:00 GMT"),
    ("Retry-After", "1e999"),
    ("Retry-After", "nan"),
    ("retry-after-ms", "inf"),
]


@pytest.mark.parametrize(("name", "value"), ABSURD_HINTS)
def test_an_absurd_retry_after_is_retried_within_backoff_max(
    mock_openai: MockFactory, name: str, value: str
) -> None:
    """Issue 32: a Retry-After in the year 99999999999 ended the call as a final error."""
    server = mock_openai(prompt_faults={"q": [Fault(status=429, headers=((name, value),))]})
    began = time.perf_counter()
    [(_, completion)] = run(make_backend(server.url, backoff_max_s=0.1), ask("q"))
    assert completion.status == "ok" and completion.tries == 2 == server.calls
    assert time.perf_counter() - began < 5


@given(
    st.text(st.characters(max_codepoint=255, exclude_categories=["Cc"]), max_size=60),
    st.sampled_from(["Retry-After", "retry-after-ms"]),
)
@example("Fri, 01 Jan 99999999999 00:00:00 GMT", "Retry-After")
@settings(max_examples=300, deadline=None)
def test_any_retry_after_is_a_wait_or_none(value: str, name: str) -> None:
    """Any header value (as HTTP delivers them: Latin-1) is a wait of 0 or more, or none."""
    hint = _retry_after_s(httpx.Headers({name: value.encode("latin-1")}))
    assert hint is None or hint >= 0


@pytest.mark.parametrize(
    "fault",
    [
        Fault(body=DEEP_JSON),
        Fault(body='{"choices": ' + DEEP_JSON + "}"),
        Fault(status=500, body=DEEP_JSON),
        Fault(status=429, body='{"error": {"message": ' + DEEP_JSON + "}}"),
    ],
    ids=["deep-200", "deep-choices", "deep-500", "deep-429"],
)
def test_deeply_nested_json_is_a_malformed_answer_and_retried(
    mock_openai: MockFactory, fault: Fault
) -> None:
    """Issue 32: 100k-deep JSON raised RecursionError, an error that was never retried."""
    server = mock_openai(prompt_faults={"q": [fault]})
    [(_, completion)] = run(make_backend(server.url), ask("q"))
    assert completion.status == "ok" and completion.text == "echo: q"
    assert completion.tries == 2 == server.calls


def test_deeply_nested_json_every_time_is_a_one_line_error(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault(body=DEEP_JSON)] * 3})
    [(_, completion)] = run(make_backend(server.url, max_retries=2), ask("q"))
    assert completion.status == "error" and completion.tries == 3
    assert completion.error == "malformed response: ValueError: JSON nested too deeply to read"


@pytest.mark.parametrize(
    "fault",
    [
        Fault.server_error(500),
        Fault.server_error(503),
        Fault(status=408),
        Fault.malformed(),
        Fault.missing_choices(),
        Fault.delay(3.0),  # a hang: longer than the client's 0.3 s timeout
    ],
    ids=["500", "503", "408", "malformed-json", "missing-choices", "timeout"],
)
def test_transient_failure_then_success(mock_openai: MockFactory, fault: Fault) -> None:
    server = mock_openai(prompt_faults={"q": [fault]})
    [(_, completion)] = run(make_backend(server.url, timeout_s=0.3), ask("q"))
    assert completion.status == "ok"
    assert completion.text == "echo: q"
    assert completion.tries == 2 == server.calls
    assert completion.latency_s < 0.3  # the successful attempt only


def test_exhausted_retries_give_an_error_completion(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.server_error()] * 10})
    [(_, completion)] = run(make_backend(server.url, max_retries=2), ask("q"))
    assert completion.status == "error"
    assert completion.tries == 3 == server.calls
    assert completion.error is not None and "HTTP 500" in completion.error


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port that nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    [(_, completion)] = run(make_backend(f"http://127.0.0.1:{port}/v1", max_retries=1), ask("q"))
    assert completion.status == "error" and completion.tries == 2
    assert completion.error is not None and "ConnectError" in completion.error


def test_unauthorized_is_final(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.unauthorized()]})
    [(_, completion)] = run(make_backend(server.url), ask("q"))
    assert completion.status == "error" and completion.tries == 1 == server.calls
    assert completion.error == "HTTP 401: mock error 401"


def test_content_filter_is_a_refusal(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.content_filter()]})
    [(_, completion)] = run(make_backend(server.url), ask("q"))
    assert completion.status == "refused" and completion.finish_reason == "content_filter"
    assert completion.text == "echo: q" and completion.tries == 1


def test_structured_refusal_is_a_refusal(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.refused("I won't rank people.")]})
    [(_, completion)] = run(make_backend(server.url), ask("q"))
    assert completion.status == "refused" and completion.text == "I won't rank people."


def test_missing_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RuntimeError, match=f"variable {KEY_ENV}.*export {KEY_ENV}="):
        make_backend("http://127.0.0.1:9/v1", api_key_env=KEY_ENV)


def test_a_secret_variable_is_never_sent_even_when_the_composing_machine_allowed_it(
    mock_openai: MockFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is where the key is read too: the machine that runs a stage (a Dask
    worker) has its own allow-list. Before: the endpoint received ``Bearer <PGPASSWORD>``."""
    monkeypatch.setenv("GENFAIR_ALLOWED_KEY_ENVS", "PGPASSWORD")
    config = OpenAIModelConfig(
        backend="openai", model_id="m", base_url=mock_openai().url, api_key_env="PGPASSWORD"
    )
    monkeypatch.delenv("GENFAIR_ALLOWED_KEY_ENVS")
    monkeypatch.setenv("PGPASSWORD", "canary-postgres-password")
    with pytest.raises(ConfigError, match=r"^model 'm': api_key_env: only a variable named like"):
        OpenAIChatBackend(config)


def test_key_is_sent_but_never_exposed(
    mock_openai: MockFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    echoing_401 = Fault(status=401, body=json.dumps({"error": {"message": f"Bad key {SECRET}"}}))
    retried = [Fault.rate_limit(0), Fault.server_error()]
    server = mock_openai(prompt_faults={"retried": retried, "denied": [echoing_401]})
    caplog.set_level(logging.DEBUG)  # httpx and httpcore debug logging included
    backend = make_backend(server.url, api_key_env=KEY_ENV)
    done = {r.messages[-1]["content"]: c for r, c in run(backend, ask("retried", "denied"))}

    assert done["retried"].status == "ok" and done["retried"].tries == 3
    assert done["denied"].error == "HTTP 401: Bad key [redacted]"
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {SECRET}"}
    assert any(r.name == "genfair.models.openai" for r in caplog.records)  # retries were logged
    exposed = [repr(backend), json.dumps(backend.fingerprint), caplog.text]
    exposed += [str(r.args) for r in caplog.records] + [str(c) for c in done.values()]
    assert not [text for text in exposed if SECRET in text]


# --- malformed 200s (issue 16.1): retried, then an error; never an ok with a non-text ------


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (Fault.content(42), "'content' is a number, not a string"),
        (Fault.content(["A", "B"]), "'content' is a list, not a string"),
        (Fault.content(None), "'content' is missing or null, not a string"),
        (Fault.content({"text": "A"}), "'content' is an object, not a string"),
        (Fault.empty_choices(), "empty choices list"),
        (Fault.not_utf8(), "UnicodeDecodeError"),
        (
            Fault(body='{"choices": [{"message": {"content": "A \\ud800"}}]}'),
            "'content' is not valid Unicode",
        ),
    ],
    ids=["number", "list", "null", "object", "empty-choices", "not-utf8", "lone-surrogate"],
)
def test_malformed_answers_are_retried_then_an_error(
    mock_openai: MockFactory, fault: Fault, reason: str
) -> None:
    server = mock_openai(prompt_faults={"bad": [fault] * 3, "good": []})
    done = {
        r.messages[-1]["content"]: c
        for r, c in run(make_backend(server.url, max_retries=2), ask("bad", "good"))
    }
    bad = done["bad"]
    assert bad.status == "error" and bad.text is None and bad.tries == 3
    assert (
        bad.error is not None and bad.error.startswith("malformed response") and reason in bad.error
    )
    assert bad.problem() is None  # a well-formed record of the failure
    assert done["good"].status == "ok" and done["good"].text == "echo: good"


def test_malformed_then_valid_answer_is_ok(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.content(7)]})
    [(_, completion)] = run(make_backend(server.url), ask("q"))
    assert completion.status == "ok" and completion.text == "echo: q" and completion.tries == 2


@pytest.mark.parametrize("chunked", [False, True], ids=["declared-size", "chunked"])
def test_huge_answer_is_cut_off_and_an_error(mock_openai: MockFactory, chunked: bool) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.huge(300_000, chunked)]})
    began = time.perf_counter()
    [(_, completion)] = run(make_backend(server.url, max_response_mb=0.1), ask("q"))
    assert completion.status == "error" and completion.tries == 1 == server.calls  # not retried
    assert completion.error is not None and "max_response_mb = 0.1 MiB" in completion.error
    assert time.perf_counter() - began < 5
    # under the cap, the same answer is fine
    server = mock_openai(prompt_faults={"q": [Fault.huge(300_000, chunked)]})
    [(_, completion)] = run(make_backend(server.url, max_response_mb=1), ask("q"))
    assert completion.status == "ok" and len(completion.text or "") == 300_000


def _gzipped_answer(layers: int) -> bytes:
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}]}
    body = json.dumps(answer).encode()
    for _ in range(layers):
        body = zlib.compress(body, wbits=16 + zlib.MAX_WBITS)
    return body


def test_stacked_content_encodings_are_an_error_read_in_little_memory(
    mock_openai: MockFactory,
) -> None:
    """``Content-Encoding: gzip, gzip`` from a real server on 127.0.0.1: 4,910 bytes on the
    wire, 2 GiB after both layers; before, httpx inflated it whole (4.4 GB resident)."""
    stacked = (("Content-Encoding", "gzip, gzip"),)
    server = mock_openai(prompt_faults={"q": [Fault(body=stacked_gzip_bomb(), headers=stacked)]})
    tracemalloc.start()
    try:
        [(_, completion)] = run(make_backend(server.url), ask("q"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert completion.status == "error" and server.calls == 1  # not retried
    assert completion.error == (
        "Content-Encoding 'gzip, gzip': more than one coding refused "
        "(each can multiply the body's size)"
    )
    # one layer is decoded, and its bomb cut at max_response_mb
    one = (("Content-Encoding", "gzip"),)
    server = mock_openai(
        prompt_faults={
            "q": [Fault(body=gzip_bomb(), headers=one)],
            "ok": [Fault(body=_gzipped_answer(1), headers=one)],
        }
    )
    done = {r.messages[-1]["content"]: c for r, c in run(make_backend(server.url), ask("q", "ok"))}
    assert done["q"].status == "error" and "max_response_mb = 8 MiB" in (done["q"].error or "")
    assert done["ok"].status == "ok" and done["ok"].text == "fine"
    assert {r.headers["accept-encoding"] for r in server.requests} == {"gzip, deflate"}


# --- timeout_s is a total deadline (issue 16) -------------------------------------------------


def test_a_trickling_server_cannot_hold_a_call_past_timeout_s(mock_openai: MockFactory) -> None:
    # 40 bytes at 0.25 s each: every read succeeds in time, the whole answer takes 10 s
    server = mock_openai(prompt_faults={"q": [Fault.trickle(0.25, 40)]})
    began = time.perf_counter()
    [(_, completion)] = run(make_backend(server.url, timeout_s=1.0, max_retries=0), ask("q"))
    elapsed = time.perf_counter() - began
    assert completion.status == "error"
    assert completion.error == "no complete answer within timeout_s = 1 s"
    assert elapsed < 2.0, f"the call took {elapsed:.1f} s with timeout_s = 1"


def test_after_a_trickle_timeout_the_retry_on_the_same_worker_succeeds(
    mock_openai: MockFactory,
) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.trickle(0.25, 40)]})
    began = time.perf_counter()
    [(_, completion)] = run(
        make_backend(server.url, timeout_s=0.8, max_retries=1, concurrency=1), ask("q")
    )
    assert completion.status == "ok" and completion.text == "echo: q" and completion.tries == 2
    assert time.perf_counter() - began < 3.0


def test_a_slow_but_complete_trickle_within_the_deadline_is_ok(mock_openai: MockFactory) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.trickle(0.05, 4)]})
    [(_, completion)] = run(make_backend(server.url, timeout_s=2.0), ask("q"))
    assert completion.status == "ok" and completion.tries == 1


# --- secrets (issue 16) ---------------------------------------------------------------------


def test_a_key_echoed_in_an_answer_is_redacted(
    mock_openai: MockFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    other_env = "GENFAIR_TEST_OTHER_API_KEY"
    other = "other-secret-value-123456"
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv(other_env, other)
    make_backend("http://127.0.0.1:9/v1", api_key_env=other_env)  # a second configured key
    server = mock_openai(reply=f"my key is {SECRET} and theirs {other}.")
    [(_, completion)] = run(make_backend(server.url, api_key_env=KEY_ENV), ask("q"))
    assert completion.status == "ok"
    assert completion.text == "my key is [redacted] and theirs [redacted]."


@pytest.mark.parametrize("modality", ["t2i", "vlm"])
def test_images_and_vision_share_the_total_deadline(
    mock_openai: MockFactory, modality: str
) -> None:
    from genfair.models.config import OpenAIT2IConfig, OpenAIVLMConfig
    from genfair.models.openai_images import OpenAIImageBackend
    from genfair.models.vlm import OpenAIVisionBackend

    server = mock_openai(prompt_faults={"q": [Fault.trickle(0.25, 40)]})
    settings = {
        "backend": "openai",
        "model_id": "m",
        "base_url": server.url,
        "api_key_env": None,
        "timeout_s": 1.0,
        "max_retries": 0,
    }
    backend = (
        OpenAIImageBackend(OpenAIT2IConfig(**settings))
        if modality == "t2i"
        else OpenAIVisionBackend(OpenAIVLMConfig(**settings))
    )
    began = time.perf_counter()
    [(_, completion)] = run(backend, ask("q"))
    assert (
        completion.status == "error"
        and completion.error == "no complete answer within timeout_s = 1 s"
    )
    assert time.perf_counter() - began < 2.0


def test_request_decoding_and_schema_go_in_the_body(mock_openai: MockFactory) -> None:
    """A request's temperature, top_p, max_tokens replace the model's sampling; its json_schema
    becomes a structured-output response_format; a request without them keeps today's body."""
    from genfair.models.openai_images import OpenAIImageBackend

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    server = mock_openai(reply='{"ok": true}')
    backend = make_backend(
        server.url, sampling=SamplingParams(temperature=0.7, top_p=0.9, max_tokens=12)
    )
    assert backend.supports_json_schema and not OpenAIImageBackend.supports_json_schema
    plain = Request(messages=({"role": "user", "content": "plain"},))
    told = Request(
        messages=({"role": "user", "content": "told"},),
        temperature=0.0,
        top_p=0.5,
        max_tokens=30,
        json_schema=schema,
    )
    done = run(backend, [plain, told])
    assert {c.text for _, c in done} == {'{"ok": true}'}
    bodies = {r.body["messages"][-1]["content"]: r.body for r in server.requests if r.body}
    assert (
        bodies["plain"]["temperature"],
        bodies["plain"]["top_p"],
        bodies["plain"]["max_tokens"],
    ) == (0.7, 0.9, 12)
    assert "response_format" not in bodies["plain"]
    assert (
        bodies["told"]["temperature"],
        bodies["told"]["top_p"],
        bodies["told"]["max_tokens"],
    ) == (0.0, 0.5, 30)
    assert bodies["told"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": False},
    }


# --- issue 44.1 / 44.5: an endpoint's usage that is no count is never cached as one -------


@pytest.mark.parametrize(
    "bad", ["-7300000000000000000000000000000", "1e4000", "1" + "0" * 4000, "NaN", "-Infinity"]
)
def test_a_usage_that_is_no_count_is_dropped_and_the_answer_kept(
    mock_openai: MockFactory, bad: str, caplog: pytest.LogCaptureFixture
) -> None:
    body = (
        '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, '
        f'"finish_reason": "stop"}}], "usage": {{"prompt_tokens": {bad}, "completion_tokens": 2}}}}'
    )
    server = mock_openai(prompt_faults={"q": [Fault(body=body)]})
    ((_, completion),) = run(make_backend(server.url), ask("q"))
    assert completion.status == "ok" and completion.text == "fine"
    assert completion.usage == {"completion_tokens": 2} and completion.problem() is None
    assert "usage of prompt_tokens is no count" in caplog.text
