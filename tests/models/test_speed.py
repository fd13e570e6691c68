"""``genfair try``'s speed probe (issue 45.7): an endpoint's latency and calls per second at
1 and at its ``concurrency``, against a real HTTP server on 127.0.0.1 answering after a fixed
delay, one request at a time (as ``transformers serve``) or side by side (as vLLM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from genfair.models.config import OpenAIModelConfig
from genfair.models.speed import ROUNDS, SERIAL_CALLS, Speed, measure
from tests.support.mock_openai import PATH, MockOpenAI

DELAY_S = 0.2
CONCURRENCY = 4


def _config(url: str, **fields: object) -> OpenAIModelConfig:
    return OpenAIModelConfig.model_validate(
        {
            "modality": "llm",
            "backend": "openai",
            "model_id": "served",
            "base_url": url,
            "api_key_env": None,
            "concurrency": CONCURRENCY,
            "max_retries": 0,
            **fields,
        }
    )


def test_a_server_answering_one_at_a_time_gains_nothing_from_concurrency() -> None:
    with MockOpenAI(latency_s=DELAY_S, serial=True) as server:
        speed = measure(_config(server.url))
        assert server.max_in_flight >= 2  # the concurrent round did reach it side by side
    assert speed.calls == SERIAL_CALLS + ROUNDS * CONCURRENCY and not speed.failed
    assert speed.latency_s is not None and speed.latency_s >= DELAY_S
    assert speed.serial_per_s is not None and speed.serial_per_s <= 1 / DELAY_S
    assert speed.gain is not None and speed.gain < 1.5  # one at a time: no faster than alone
    assert "concurrency 4 buys nothing" in speed.summary()


def test_a_server_answering_side_by_side_gains_with_concurrency() -> None:
    with MockOpenAI(latency_s=DELAY_S) as server:
        speed = measure(_config(server.url))
        bodies = [r.body for r in server.requests if r.path == PATH]
    assert len({b["messages"][0]["content"] for b in bodies}) == len(bodies)  # each its own
    assert speed.gain is not None and speed.gain > 2  # up to 4x: 4 sleeps side by side
    assert "concurrency 4 pays" in speed.summary()


def test_failed_probe_calls_give_no_figure() -> None:
    speed = measure(_config("http://127.0.0.1:9/v1", timeout_s=2))  # nothing listens
    assert speed.failed == speed.calls and speed.gain is None
    assert "no figure" in speed.summary()


@pytest.mark.parametrize(
    ("serial", "concurrent", "verdict"),
    [(2.0, 1.0, "slower than one at a time"), (2.0, 2.8, "buys nothing"), (2.0, 7.0, "pays")],
)
def test_the_verdict_follows_the_gain(serial: float, concurrent: float, verdict: str) -> None:
    speed = Speed(4, 11, latency_s=0.5, serial_per_s=serial, concurrent_per_s=concurrent)
    assert verdict in speed.summary()


def test_try_prints_the_endpoints_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from genfair.cli import main

    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAI(latency_s=0.01, reply="A", serial=True) as server:
        served = [
            "+model@models.served=vllm_local",
            f"models.served.base_url={server.url}",
            "models.served.concurrency=2",
        ]
        args = ["try", "served", "fact_or_fair", "--limit", "4", "--out", str(tmp_path)]
        assert main([*args, *(a for o in served for a in ("-o", o))]) == 0
    out = capsys.readouterr().out
    assert "endpoint speed (" in out and "calls/s at concurrency 1" in out and " at 2 (" in out
