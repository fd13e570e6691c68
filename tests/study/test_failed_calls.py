"""Failed calls are never frozen (issue 16.2): a generate step with too many errors fails with
a message naming the model, the count and the first error; nothing answered is lost, and
the rerun sends only the calls that failed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from genfair.cli import compose
from genfair.errors import IncompleteGeneration
from genfair.methodologies import register
from genfair.study.layout import Layout
from genfair.study.scoring import score_study
from genfair.study.steps import compute_metrics, generate, label, make_probes
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs
from tests.support.mock_openai import Fault

REPLY = '{"answer": "A"}'


def _params(tmp_path: Path, base_url: str, max_error_rate: float = 0.0) -> StudyParams:
    overrides = [
        "scale=smoke",
        *[f"~model@models.{m}" for m in ("smollm2", "simulated_t2i", "simulated_vlm")],
    ]
    raw = load_params(compose(overrides, tmp_path / "params.yaml")).model_dump(mode="json")
    raw["models"].pop("simulated_llm")
    raw["methodologies"] = {"toy_quiz": {"questions": 12}}
    raw["generation"] = {"max_error_rate": max_error_rate}
    raw["models"]["endpoint"] = {
        "modality": "llm",
        "backend": "openai",
        "model_id": "mock",
        "base_url": base_url,
        "api_key_env": None,
        "max_retries": 1,
        "timeout_s": 5,
        "backoff_initial_s": 0.0,
        "backoff_max_s": 0.0,
    }
    return StudyParams.model_validate(with_runs(raw))


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """A study folder holding the toy quiz's probes (the endpoint's URL plays no part in them)."""
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    register(Quiz)
    layout = Layout(tmp_path)
    make_probes(_params(tmp_path, "http://127.0.0.1:9/v1"), "toy_quiz", layout)
    return layout


def test_endpoint_down_fails_the_stage_and_the_rerun_sends_only_failed_calls(
    tmp_path: Path, layout: Layout, mock_openai
) -> None:
    prompts = pd.read_parquet(layout.probes("toy_quiz"))["prompt"]
    # three questions fail on every try of the first run (2 tries: max_retries 1): down for them
    server = mock_openai(
        reply=REPLY, prompt_faults={p: [Fault.server_error(503)] * 2 for p in prompts[:3]}
    )
    params = _params(tmp_path, server.url)
    with pytest.raises(
        IncompleteGeneration, match=r"endpoint · toy_quiz: 3 of 12 calls failed .*first: .*503"
    ):
        generate(params, "endpoint", "toy_quiz", layout)
    assert not layout.responses("endpoint", "toy_quiz").exists()  # no output: DVC reruns the stage

    before = server.calls
    generate(params, "endpoint", "toy_quiz", layout)  # the endpoint is back
    assert server.calls - before == 3  # the 9 answered calls came from the cache
    responses = pd.read_parquet(layout.responses("endpoint", "toy_quiz"))
    assert (responses["status"] == "ok").all() and len(responses) == 12


def test_an_allowed_error_share_marks_the_scores_incomplete(
    tmp_path: Path, layout: Layout, mock_openai
) -> None:
    prompt = pd.read_parquet(layout.probes("toy_quiz"))["prompt"].iloc[0]
    down = mock_openai(reply=REPLY, prompt_faults={prompt: [Fault.server_error(500)] * 10})
    params = _params(tmp_path, down.url, max_error_rate=0.2)
    generate(params, "endpoint", "toy_quiz", layout)
    label(params, "endpoint", "toy_quiz", layout)
    compute_metrics(params, "endpoint", "toy_quiz", layout)
    score_study(params, layout)
    board = pd.read_parquet(layout.scores / "toy_quiz.parquet")
    assert board.set_index("model").loc["endpoint", "incomplete"]
    assert json.loads(layout.headline.read_text())["toy_quiz"]["endpoint"]["incomplete"] is True
