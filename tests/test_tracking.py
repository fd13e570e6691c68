"""MLflow plumbing that needs no server: URIs, workspace root, secrets, flattening."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from genfair.study.store import follow_checkout, redact, tracking_uri, workspace_root
from genfair.study.tracking import flatten
from genfair.study_params import load_params


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


def _log_one_run(root: Path, experiment: str = "genfair") -> str:
    """What ``track`` does in the checkout ``root`` (local store), for one run with a file."""
    from mlflow.tracking import MlflowClient

    from genfair.study.tracking import _experiment

    uri = f"sqlite:///{root / 'mlflow.db'}"
    follow_checkout(uri, experiment, root)
    client = MlflowClient(tracking_uri=uri)
    run = client.create_run(_experiment(client, experiment, root, uri))
    note = root / "note.txt"
    note.write_text(f"logged in {root.name}", encoding="utf-8")
    client.log_artifact(run.info.run_id, str(note))
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def _paths_in_store(store: Path) -> list[str]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT artifact_location FROM experiments").fetchall()
        rows += db.execute("SELECT artifact_uri FROM runs").fetchall()
    db.close()
    return [path for (path,) in rows]


def test_a_copied_checkout_logs_into_its_own_artifacts(tmp_path: Path) -> None:
    """Issue 32: after `cp -a study copy`, the copy's runs went to study/mlartifacts."""
    study, copy = tmp_path / "study", tmp_path / "copy"
    study.mkdir()
    first = _log_one_run(study)
    shutil.copytree(study, copy, symlinks=True)  # cp -a
    shutil.rmtree(study)  # moved, not copied: nothing may still point there

    second = _log_one_run(copy)
    assert not study.exists(), "the copy wrote into the original"
    for run in (first, second):
        assert (copy / "mlartifacts" / run / "artifacts" / "note.txt").is_file()
    paths = _paths_in_store(copy / "mlflow.db")
    assert len(paths) == 4 and not [p for p in paths if str(study) in p], paths

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{copy / 'mlflow.db'}")
    assert [f.path for f in client.list_artifacts(first)] == ["note.txt"]
    # a store outside the checkout is shared: it keeps the artifact root it was given
    follow_checkout(f"sqlite:///{copy / 'mlflow.db'}", "genfair", tmp_path / "elsewhere")
    assert _paths_in_store(copy / "mlflow.db") == paths
