"""Re-asks against a real OpenAI-compatible server on 127.0.0.1, counted where they arrive: a
model declared ``deterministic`` is not asked an identical greedy question twice, and a model
config's ``max_attempts`` caps the methodology's re-asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import TypeAdapter

from genfair.models import build_backend
from genfair.models.cache import ResponseCache
from genfair.models.config import EmbeddedModelConfig, ModelConfig
from genfair.models.runner import Call, run_calls
from tests.support.mock_openai import MockOpenAI

SEED = 7
PROBES = ("a", "b", "c")


def judge(text: str, meta: dict[str, Any]) -> str:
    return "ok" if text.startswith("OK") else "invalid"  # the mock's "echo: ..." is invalid


def calls(max_attempts: int = 5, **decoding: Any) -> list[Call]:
    return [Call.text(p, f"question {p}", max_attempts=max_attempts, **decoding) for p in PROBES]


def model(url: str, **settings: Any) -> ModelConfig:
    config = {"backend": "openai", "model_id": "served", "base_url": url, "api_key_env": None}
    return TypeAdapter(ModelConfig).validate_python({**config, **settings})


@pytest.fixture
def sent(
    mock_openai: Callable[..., MockOpenAI], tmp_path: Any
) -> Callable[..., tuple[int, list[int]]]:
    """Runs the calls on a fresh server and cache: the requests the server received, and
    each call's recorded attempts."""

    def run(config: dict[str, Any], batch: list[Call]) -> tuple[int, list[int]]:
        server = mock_openai()
        backend = build_backend(model(server.url, **config))
        with ResponseCache(tmp_path / f"{len(list(tmp_path.iterdir()))}.sqlite") as cache:
            frame = run_calls(backend, cache, batch, judge, seed=SEED)
        assert set(frame["status"]) == {"invalid"}
        return server.calls, list(frame["attempts"])

    return run


def test_an_undeclared_endpoint_is_asked_again_up_to_the_papers_attempts(sent) -> None:
    assert sent({}, calls()) == (15, [5, 5, 5])


def test_a_deterministic_endpoint_is_not_asked_the_same_greedy_question_twice(sent) -> None:
    assert sent({"deterministic": True}, calls()) == (3, [1, 1, 1])


def test_a_deterministic_endpoint_sampling_for_a_call_is_asked_again(sent) -> None:
    # the call's own temperature makes each attempt (a new seed) a new draw
    assert sent({"deterministic": True}, calls(temperature=0.7)) == (15, [5, 5, 5])
    # and a model sampling by default is, too
    sampled = {"deterministic": True, "sampling": {"temperature": 0.7}}
    assert sent(sampled, calls()) == (15, [5, 5, 5])


def test_a_models_max_attempts_caps_the_methodologys(sent) -> None:
    assert sent({"max_attempts": 2}, calls()) == (6, [2, 2, 2])
    # a cap, never a raise: a call the methodology asks once is asked once
    assert sent({"max_attempts": 4}, calls(max_attempts=1)) == (3, [1, 1, 1])


def test_the_new_settings_left_at_their_defaults_keep_the_configs_hash() -> None:
    served = model("http://127.0.0.1:9/v1").model_dump(mode="json")
    assert "deterministic" not in served and "max_attempts" not in served
    declared = model("http://127.0.0.1:9/v1", deterministic=True, max_attempts=2)
    dumped = declared.model_dump(mode="json")
    assert (dumped["deterministic"], dumped["max_attempts"]) == (True, 2)
    embedded = EmbeddedModelConfig(
        backend="embedded", model_id="m", package="p", gguf_file="f", revision="r"
    ).model_dump(mode="json")
    assert not {"dtype", "engine", "max_attempts"} & set(embedded)


def test_max_attempts_is_bounded() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        model("http://127.0.0.1:9/v1", max_attempts=0)


def test_the_log_line_adds_up(mock_openai, tmp_path, caplog) -> None:
    server = mock_openai()
    backend = build_backend(model(server.url, max_attempts=3))
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        for _ in range(2):  # sent, then read back
            with caplog.at_level("INFO", logger="genfair.models.runner"):
                run_calls(backend, cache, calls(), judge, seed=SEED, desc="served")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("served:")]
    assert lines == [
        "served: 3 calls + 6 re-asks = 0 answers from the cache + 9 sent",
        "served: 3 calls + 6 re-asks = 9 answers from the cache + 0 sent",
    ]
    assert server.calls == 9
