"""MLflow plumbing that needs no server: URIs, workspace root, secrets, flattening."""

from __future__ import annotations

from pathlib import Path

import pytest

from genfair.config import load_params
from genfair.study.store import redact, tracking_uri, workspace_root
from genfair.study.tracking import flatten


def test_workspace_root_escapes_dvc_temporary_experiment_copies(tmp_path: Path) -> None:
    inner = tmp_path / "repo" / ".dvc" / "tmp" / "exps" / "tmpabc123"
    inner.mkdir(parents=True)
    assert workspace_root(inner) == (tmp_path / "repo").resolve()
    assert workspace_root(tmp_path) == tmp_path.resolve()


def test_tracking_uri_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    params = load_params()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri(params, tmp_path) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    configured = params.model_copy(
        update={"tracking": params.tracking.model_copy(update={"uri": "http://a:5000"})}
    )
    assert tracking_uri(configured, tmp_path) == "http://a:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://env:5000")
    assert tracking_uri(configured, tmp_path) == "http://env:5000"


def test_redact_drops_credentials_from_uris() -> None:
    assert redact("https://alice:s3cret@mlflow.example.org/") == "https://mlflow.example.org/"
    assert redact("postgresql://u:p@db:5432/mlflow") == "postgresql://db:5432/mlflow"
    assert redact("sqlite:////abs/mlflow.db") == "sqlite:////abs/mlflow.db"


def test_model_params_logged_to_mlflow_hold_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from genfair.models.config import OpenAIModelConfig

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-log")
    config = OpenAIModelConfig(backend="openai", model_id="gpt-4o-mini")
    logged = flatten(config.model_dump(mode="json"), "model.")
    assert logged["model.api_key_env"] == "OPENAI_API_KEY"
    assert not any("sk-test" in str(v) for v in logged.values())
    assert logged["model.sampling.temperature"] == 0.0


def test_flatten_nests_with_dots_and_stringifies_lists() -> None:
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": None}) == {
        "a.b": 1,
        "a.c": "[1, 2]",
        "d": None,
    }
