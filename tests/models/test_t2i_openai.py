"""The OpenAI-compatible image backend against the local mock server (tests/support)."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from genfair.models import build_backend
from genfair.models.cache import ResponseCache
from genfair.models.config import OpenAIT2IConfig
from genfair.models.images import ImageStore, sha256_bytes
from genfair.models.openai_images import OpenAIImageBackend
from genfair.models.t2i import generate_images, prompt_call
from tests.support.mock_openai import IMAGES_PATH, Fault, MockOpenAI

MockFactory = Callable[..., MockOpenAI]
KEY_ENV = "GENFAIR_TEST_OPENAI_API_KEY"
SECRET = "sk-test-Zq8v1TOPSECRETimagekey"


def make_backend(base_url: str, **overrides: Any) -> OpenAIImageBackend:
    settings: dict[str, Any] = {
        "modality": "t2i",
        "backend": "openai",
        "model_id": "dall-e-3",
        "base_url": base_url,
        "api_key_env": None,
        "timeout_s": 2.0,
        "max_retries": 3,
        "backoff_initial_s": 0.001,
        "backoff_max_s": 0.01,
        **overrides,
    }
    backend = build_backend(OpenAIT2IConfig(**settings))
    assert isinstance(backend, OpenAIImageBackend)
    return backend


def draw(
    backend: OpenAIImageBackend, tmp_path, prompts: list[str], max_attempts: int = 1, seed: int = 1
):
    calls = [
        prompt_call(f"p{i}", text, 0, max_attempts=max_attempts) for i, text in enumerate(prompts)
    ]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        return generate_images(backend, cache, calls, seed=seed), ImageStore.beside(cache)


def test_images_are_requested_decoded_and_stored(mock_openai: MockFactory, tmp_path) -> None:
    server = mock_openai()
    backend = make_backend(
        server.url, size="1024x1024", quality="hd", style="natural", concurrency=2
    )
    frame, store = draw(backend, tmp_path, ["a doctor", "a nurse", "a pilot"])
    assert (frame["status"] == "ok").all() and (frame["width"] == 8).all()
    assert frame["text"].tolist() == ["revised: a doctor", "revised: a nurse", "revised: a pilot"]
    bodies = {r.body["prompt"]: r.body for r in server.requests}
    assert {r.path for r in server.requests} == {IMAGES_PATH}
    assert bodies["a doctor"] == {
        "model": "dall-e-3",
        "prompt": "a doctor",
        "n": 1,
        "size": "1024x1024",
        "response_format": "b64_json",
        "quality": "hd",
        "style": "natural",
    }
    from tests.support.mock_openai import _png_b64

    for row in frame.itertuples():  # the stored bytes are exactly the ones the server sent
        sent = base64.b64decode(_png_b64(row.text.removeprefix("revised: ")))
        assert store.read(row.image) == sent and row.image == sha256_bytes(sent)


def test_optional_fields_and_seed(mock_openai: MockFactory, tmp_path) -> None:
    server = mock_openai()
    backend = make_backend(
        server.url, send_seed=True, send_response_format=False, extra_body={"background": "opaque"}
    )
    draw(backend, tmp_path, ["x"], seed=5)
    body = server.requests[0].body
    assert "response_format" not in body and "quality" not in body
    assert body["background"] == "opaque" and isinstance(body["seed"], int)


@pytest.mark.parametrize(
    "refusal", [Fault.content_policy(), Fault.moderation_blocked(), Fault.image_without_data()]
)
def test_refusals_are_recorded_and_re_asked(
    mock_openai: MockFactory, tmp_path, refusal: Fault
) -> None:
    server = mock_openai(prompt_faults={"a doctor": [refusal, refusal]})
    frame, _ = draw(make_backend(server.url), tmp_path, ["a doctor"], max_attempts=5)
    assert frame.loc[0, "status"] == "ok" and frame.loc[0, "attempts"] == 3
    assert server.calls == 3  # a refusal is an answer: not retried by the transport
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 3  # two refusals and the image, each its own entry


def test_refused_to_the_end_is_recorded(mock_openai: MockFactory, tmp_path) -> None:
    server = mock_openai(prompt_faults={"q": [Fault.content_policy()] * 5})
    frame, _ = draw(make_backend(server.url), tmp_path, ["q"], max_attempts=2)
    assert frame.loc[0, "status"] == "refused" and frame.loc[0, "attempts"] == 2
    assert frame.loc[0, "finish_reason"] == "content_policy_violation"
    assert "mock error 400" in frame.loc[0, "text"]


@pytest.mark.parametrize(
    "fault",
    [Fault.rate_limit(0), Fault.server_error(503), Fault.malformed(), Fault.delay(3.0)],
    ids=["429", "503", "malformed", "timeout"],
)
def test_transient_failures_are_retried(mock_openai: MockFactory, tmp_path, fault: Fault) -> None:
    server = mock_openai(prompt_faults={"q": [fault]})
    frame, _ = draw(make_backend(server.url, timeout_s=0.3), tmp_path, ["q"])
    assert frame.loc[0, "status"] == "ok" and frame.loc[0, "tries"] == 2 == server.calls


def test_other_400s_and_urls_are_final_errors_not_cached(
    mock_openai: MockFactory, tmp_path
) -> None:
    url_only = Fault(body=json.dumps({"data": [{"url": "https://example.invalid/x.png"}]}))
    server = mock_openai(prompt_faults={"bad": [Fault(status=400)], "url": [url_only]})
    frame, _ = draw(make_backend(server.url), tmp_path, ["bad", "url"], max_attempts=3)
    assert frame["status"].tolist() == ["error", "error"] and server.calls == 2
    assert frame.loc[0, "error"] == "HTTP 400: mock error 400"
    assert "send_response_format" in frame.loc[1, "error"]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 0


def test_key_is_sent_but_never_exposed(
    mock_openai: MockFactory,
    tmp_path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    echo = Fault(
        status=400,
        body=json.dumps({"error": {"code": "content_policy_violation", "message": f"no {SECRET}"}}),
    )
    server = mock_openai(prompt_faults={"q": [Fault.rate_limit(0), echo]})
    caplog.set_level(logging.DEBUG)
    backend = make_backend(server.url, api_key_env=KEY_ENV)
    frame, _ = draw(backend, tmp_path, ["q"], max_attempts=1)
    assert frame.loc[0, "status"] == "refused" and frame.loc[0, "text"] == "no [redacted]"
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {SECRET}"}
    exposed = [repr(backend), json.dumps(backend.fingerprint), caplog.text, frame.to_json()]
    assert not [text for text in exposed if SECRET in text]
