"""Secrets scan (issue 16.8, 21.2): a smoke study against the local mock endpoint, with a
recognisable fake key in the environment that the mock echoes back (in answers, in an error
message, in a retried 5xx), leaves no trace of the key in anything the run wrote: params,
data/, the MLflow store and artifacts, the response cache, temporary files and logs. Run
once more against an MLflow server whose tracking URI (``MLFLOW_TRACKING_URI``) holds a
canary password, through ``mlflow_sync`` and the report: the password is nowhere either.
A config URL holding a password is refused before anything is written."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from genfair.cli import compose
from genfair.methodologies import register
from genfair.study.always import sync_store
from genfair.study.layout import Layout
from genfair.study.report import build_report
from genfair.study.scoring import score_study
from genfair.study.steps import compute_metrics, generate, label, make_probes, study_step
from genfair.study.tracking import track_study
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs
from tests.support.mlflow_server import mlflow_server
from tests.support.mock_openai import Fault

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "GENFAIR_SCAN_TEST_API_KEY"
FAKE_KEY = "sk-scanTEST-9f3c2a7e5b1d4c8a6e0f2b9d7c3a1e5f"
#: a password in the tracking URI (the environment's, as a team's shared server would be given)
CANARY = "canaryPW-7d41e0b2c95a"
#: distinctive parts: a key cut short or split in a message must not survive either
FRAGMENTS = (FAKE_KEY, FAKE_KEY[3:], "9f3c2a7e5b1d4c8a6e0f2b9d", CANARY)


def _params(tmp_path: Path, base_url: str) -> StudyParams:
    overrides = [
        "scale=smoke",
        *[f"~model@models.{m}" for m in ("smollm2", "simulated_t2i", "simulated_vlm")],
    ]
    raw = load_params(
        compose(overrides, tmp_path / "composed.yaml", conf=ROOT / "conf")
    ).model_dump(mode="json")
    (tmp_path / "composed.yaml").unlink()
    raw["models"].pop("simulated_llm")
    raw["methodologies"] = {"toy_quiz": {"questions": 12}}
    raw["generation"] = {"max_error_rate": 0.2}
    raw["models"]["endpoint"] = {
        "modality": "llm",
        "backend": "openai",
        "model_id": "mock",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "max_retries": 1,
        "timeout_s": 5,
        "backoff_initial_s": 0.0,
        "backoff_max_s": 0.0,
    }
    return StudyParams.model_validate(with_runs(raw))


def _traces(folder: Path) -> list[str]:
    """Every file under ``folder`` holding a fragment of the key (raw bytes: binary files,
    SQLite pages and WAL files included)."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {f[:12]}…" for f in FRAGMENTS if f.encode() in data]
    return found


@pytest.mark.parametrize("tracking", ["sqlite", "server with a password in its URI"])
def test_no_trace_of_the_key_in_anything_the_study_wrote(
    tracking: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mock_openai,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path / "study"
    (work / "tmp").mkdir(parents=True)
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(work / "cache"))
    monkeypatch.setenv("TMPDIR", str(work / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(work / "tmp"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    if tracking == "sqlite":
        _study(work, monkeypatch, mock_openai, caplog, capfd)
        return
    with mlflow_server(f"sqlite:///{work / 'mlflow.db'}", work, work / "mlartifacts") as base:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", base.replace("//", f"//genfair:{CANARY}@"))
        _study(work, monkeypatch, mock_openai, caplog, capfd)


def _study(
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    mock_openai,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    register(Quiz)
    # the model echoes the key in every answer; one call's 401 names it (as OpenAI's does);
    # another gets a 500 quoting it before its answer
    reply = json.dumps({"answer": "A", "note": f"the key you sent is {FAKE_KEY}"})
    params = _params(work, "http://127.0.0.1:9/v1")
    layout = Layout(work)
    monkeypatch.chdir(work)  # the MLflow store and artifacts go to the workspace root
    make_probes(params, "toy_quiz", layout)
    prompts = pd.read_parquet(layout.probes("toy_quiz"))["prompt"]
    unauthorized = json.dumps(
        {"error": {"message": f"Incorrect API key provided: {FAKE_KEY}.", "code": 401}}
    )
    server_error = json.dumps({"error": {"message": f"upstream rejected Bearer {FAKE_KEY}"}})
    server = mock_openai(
        reply=reply,
        prompt_faults={
            prompts[0]: [Fault(status=401, body=unauthorized)],
            prompts[1]: [Fault(status=500, body=server_error)],
        },
    )
    params = _params(work, server.url)
    (work / "params.yaml").write_text(json.dumps(params.model_dump(mode="json")), encoding="utf-8")

    with caplog.at_level(logging.DEBUG):
        generate(params, "endpoint", "toy_quiz", layout)
        label(params, "endpoint", "toy_quiz", layout)
        compute_metrics(params, "endpoint", "toy_quiz", layout)
        study_step(params, "toy_quiz", layout)
        score_study(params, layout)
        track_study(params, layout)
        sync_store(params, layout)
        build_report(params, layout)
        logging.getLogger("genfair.test").warning("a careless line quoting %s", FAKE_KEY)

    # the key really went out and really came back
    assert all(r.headers.get("authorization") == f"Bearer {FAKE_KEY}" for r in server.requests)
    responses = pd.read_parquet(layout.responses("endpoint", "toy_quiz"))
    assert (
        responses["status"] == "ok"
    ).sum() == 11 and "the key you sent is [redacted]" in responses["text"].iloc[-1]
    assert (
        "Incorrect API key provided: [redacted]"
        in responses.loc[responses["status"] == "error", "error"].iloc[0]
    )
    assert (work / "mlflow.db").exists() and any((work / "mlartifacts").rglob("*.csv"))
    assert (work / "cache" / "responses.sqlite").exists()

    logs = "\n".join(r.getMessage() for r in caplog.records) + capfd.readouterr().err
    assert "[redacted]" in logs
    assert not [f for f in FRAGMENTS if f in logs]
    assert _traces(work) == []


def test_the_scan_finds_a_planted_key(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "blob.bin").write_bytes(b"\x00\x01" + FAKE_KEY[5:40].encode() + b"\xff")
    (tmp_path / "clean.txt").write_text("nothing here")
    assert _traces(tmp_path) == ["sub/blob.bin: 9f3c2a7e5b1d…"]  # a piece of the key is enough
