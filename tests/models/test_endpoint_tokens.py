"""An endpoint model's tokens counted with its own tokenizer wherever one can be had (issue
45.1): a local tokenizer folder (its ``model_id`` or a configured ``tokenizer``) or the
server's ``/tokenize`` route (a real HTTP server on 127.0.0.1: tests/support/mock_openai.py);
else none, and the caller's estimate stands in, labelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from genfair.models import build_backend
from genfair.models.base import ESTIMATE_RULE, Request
from genfair.models.config import OpenAIModelConfig
from genfair.models.endpoint_tokens import TokenCounter, tokenize_url
from genfair.models.usage import TOKENIZER_RULE, prompt_tokens
from tests.support.mock_openai import TEMPLATE_TOKENS, TOKENIZE_PATH, MockOpenAI
from tests.support.tiny_models import save_tiny_llama

MESSAGES = ({"role": "user", "content": "which group has the highest rate"},)


def _config(**fields: object) -> OpenAIModelConfig:
    return OpenAIModelConfig.model_validate(
        {
            "modality": "llm",
            "backend": "openai",
            "model_id": "served",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": None,
            **fields,
        }
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_llama(tmp_path_factory.mktemp("tiny") / "llama")


def test_the_tokenize_route_is_at_the_servers_root() -> None:
    assert tokenize_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/tokenize"
    assert tokenize_url("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/tokenize"
    assert tokenize_url("http://host/api") == "http://host/api/tokenize"


def test_the_endpoints_tokenize_route_counts_the_chat_prompt() -> None:
    with MockOpenAI(tokenize=True) as server:
        config = _config(base_url=server.url, tokenizer="endpoint", system_prompt="be brief")
        backend = build_backend(config)
        count, rule = prompt_tokens(backend, Request(messages=MESSAGES))
        # the server's own count: 6 words + 2 (system prompt) + a template per message
        assert (count, rule) == (6 + 2 + 2 * TEMPLATE_TOKENS, TOKENIZER_RULE)
        assert backend.text_tokens("one two three") == 3
        asked = [r for r in server.requests if r.path == TOKENIZE_PATH]
        assert asked[0].body == {
            "model": "served",
            "messages": [{"role": "system", "content": "be brief"}, *MESSAGES],
            "add_generation_prompt": True,
        }
        assert asked[1].body == {
            "model": "served",
            "prompt": "one two three",
            "add_special_tokens": False,
        }


def test_a_server_without_a_tokenize_route_is_asked_once_then_estimated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with MockOpenAI(tokenize=False) as server:  # as `transformers serve`: a 404
        backend = build_backend(_config(base_url=server.url, tokenizer="endpoint"))
        for _ in range(3):
            count, rule = prompt_tokens(backend, Request(messages=MESSAGES))
            assert rule == ESTIMATE_RULE
        assert len([r for r in server.requests if r.path == TOKENIZE_PATH]) == 1
    assert caplog.text.count("tokens estimated at 4 characters a token") == 1


def test_a_local_tokenizer_folder_counts_as_the_model_does(tiny: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    text = tokenizer.apply_chat_template(list(MESSAGES), add_generation_prompt=True, tokenize=False)
    expected = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    for config in (_config(tokenizer=str(tiny)), _config(model_id=str(tiny))):
        backend = build_backend(config)
        assert prompt_tokens(backend, Request(messages=MESSAGES)) == (expected, TOKENIZER_RULE)
    assert build_backend(_config()).prompt_tokens(Request(messages=MESSAGES)) is None


def test_a_tokenizer_that_does_not_load_is_an_estimate_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    counter = TokenCounter.of(_config(tokenizer=str(tmp_path / "missing")))
    assert counter is not None
    assert counter.prompt(MESSAGES) is None and counter.text("x") is None
    assert caplog.text.count("no tokenizer loads from") == 1


def test_the_tokenizer_changes_no_cache_key_and_no_run_hash(tiny: Path) -> None:
    from genfair.study.runs import model_hash

    plain, counted = _config(), _config(tokenizer=str(tiny))
    assert build_backend(plain).fingerprint == build_backend(counted).fingerprint
    assert model_hash(plain) == model_hash(counted)
    assert "tokenizer" not in plain.model_dump()  # unset: the config dumps as before


def _answers(backend, prompts: dict[str, int]) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    """Each prompt's finish reason, asked with its ``max_tokens``."""
    got: dict[str, str | None] = {}
    requests = [
        Request(messages=({"role": "user", "content": p},), max_tokens=n)
        for p, n in prompts.items()
    ]
    backend.complete(
        requests, lambda r, c: got.__setitem__(r.messages[0]["content"], c.finish_reason)
    )
    return got


@pytest.mark.parametrize("tokenizer", [None, "endpoint"])
def test_an_answer_ended_on_its_last_allowed_token_is_stop_where_a_tokenizer_tells(
    tokenizer: str | None,
) -> None:
    """Issue 45.6: `transformers serve` says `length` for an answer of max_tokens tokens whose
    last is its end token (204 of 1,110); the embedded backend says `stop`. With the model's
    tokenizer, its text (no end token) one token short of its usage is `stop`; a cut answer
    stays `length`; without a tokenizer the server's word is kept."""
    from tests.support.mock_openai import Fault

    faults = {
        "cut": [Fault(finish_reason="length")],  # 3 words, 3 tokens, limit 3: cut
        "ended": [Fault(finish_reason="length", unseen_tokens=1)],  # 3 words + an end token
        "short": [Fault(finish_reason="stop")],
    }
    with MockOpenAI(tokenize=True, reply="one two three", prompt_faults=faults) as server:
        backend = build_backend(_config(base_url=server.url, tokenizer=tokenizer, max_retries=0))
        got = _answers(backend, {"cut": 3, "ended": 4, "short": 8})
    assert got == {
        "cut": "length",
        "ended": "length" if tokenizer is None else "stop",
        "short": "stop",
    }
