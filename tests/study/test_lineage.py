"""A run records the data it came from (DVC hashes as MLflow dataset inputs) and the
experiment it belongs to (DVC experiment name, the params that differ from the commit)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from genfair.study.lineage import (
    MAX_RUN_NAME,
    DataFile,
    DvcDatasetSource,
    Experiment,
    changed_params,
    current_experiment,
    locked_stages,
    log_data,
    stage_data,
)

#: a run's content key (genfair.study.tracking.content_key)
KEY = "0123abcd" + "e" * 56

LOCK = {
    "schema": "2.0",
    "stages": {
        "label@m-x": {
            "deps": [
                {"path": "data/responses/x/m", "md5": "a" * 32 + ".dir"},
                {"path": "src/genfair/study", "md5": "c" * 32 + ".dir"},
            ],
            "outs": [{"path": "data/labels/x/m.parquet", "md5": "b" * 32}],
        },
        "metrics@m-x": {
            "deps": [{"path": "data/labels/x/m.parquet", "md5": "b" * 32}],
            "outs": [{"path": "data/metrics/x/m", "md5": "d" * 32 + ".dir"}],
        },
    },
}


def test_stage_data_names_each_data_path_once_with_its_dvc_hash(tmp_path: Path) -> None:
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(LOCK))
    stages = locked_stages(tmp_path)
    files = stage_data(
        stages, ["generate@m-x", "label@m-x", "metrics@m-x"]
    )  # generate not locked: skipped
    assert files == [
        DataFile("data/labels/x/m.parquet", "b" * 32, "output"),
        DataFile("data/metrics/x/m", "d" * 32 + ".dir", "output"),
        DataFile("data/responses/x/m", "a" * 32 + ".dir", "input"),
    ]  # code paths are not data
    assert locked_stages(tmp_path / "nowhere") == {}


def test_data_is_logged_as_dataset_inputs_with_the_dvc_hash(tmp_path: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    files = [
        DataFile("data/metrics/x/m", "d" * 32 + ".dir", "output"),
        DataFile("data/labels/x/m.parquet", "b" * 32, "input"),
    ]
    with mlflow.start_run() as run:
        log_data(mlflow, files, "0123abcd")
    inputs = MlflowClient(uri).get_run(run.info.run_id).inputs.dataset_inputs
    got = {
        i.dataset.name: (
            i.dataset.digest,
            i.dataset.source_type,
            json.loads(i.dataset.source),
            {t.key: t.value for t in i.tags}["mlflow.data.context"],
        )
        for i in inputs
    }
    assert got == {
        "data/metrics/x/m": (
            "d" * 32 + ".dir",
            "dvc",
            {"path": "data/metrics/x/m", "rev": "0123abcd", "repo": ""},
            "output",
        ),
        "data/labels/x/m.parquet": (
            "b" * 32,
            "dvc",
            {"path": "data/labels/x/m.parquet", "rev": "0123abcd", "repo": ""},
            "input",
        ),
    }
    assert (
        DvcDatasetSource.from_dict(got["data/metrics/x/m"][2]).to_dict()
        == got["data/metrics/x/m"][2]
    )


def test_changed_params_say_what_differs_from_the_committed_study() -> None:
    committed = {"seed": 1, "methodologies": {"m": {"k": 0.5, "n": 3}}, "runs": {"a": 1}}
    current = {"seed": 1, "methodologies": {"m": {"k": 0, "n": 3, "new": True}}, "runs": {"b": 2}}
    assert changed_params(current, committed) == {
        "methodologies.m.k": "0 (was 0.5)",
        "methodologies.m.new": "True (was <unset>)",
    }
    assert changed_params(current, None) == {}


def test_a_dvc_experiment_names_the_study_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "params.yaml").write_text("seed: 1\nmethodologies:\n  m:\n    k: 0.5\n")
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "study"], cwd=tmp_path, check=True)
    monkeypatch.delenv("DVC_EXP_NAME", raising=False)
    monkeypatch.delenv("DVC_EXP_BASELINE_REV", raising=False)
    committed = current_experiment(tmp_path, tmp_path / "params.yaml")
    assert committed == Experiment("", {})
    assert committed.run_name("study-smoke", KEY) == "study-smoke 0123abcd"

    (tmp_path / "params.yaml").write_text("seed: 1\nmethodologies:\n  m:\n    k: 0\n")
    monkeypatch.setenv("DVC_EXP_NAME", "lumpy-kits")
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", "HEAD")
    exp = current_experiment(tmp_path, tmp_path / "params.yaml")
    assert exp.run_name("study-smoke", KEY) == "study-smoke lumpy-kits 0123abcd"
    assert exp.tags() == {
        "genfair.experiment": "lumpy-kits",
        "genfair.changed.methodologies.m.k": "0 (was 0.5)",
    }
    assert exp.description() == (
        "DVC experiment lumpy-kits\n"
        "the study changed from the one committed at HEAD:\n"
        "- methodology m: k 0 (was 0.5)\n\n"
        "params changed:\n"
        "- methodologies.m.k: 0 (was 0.5)"
    )
    monkeypatch.delenv("DVC_EXP_NAME")
    assert (
        current_experiment(tmp_path, tmp_path / "params.yaml").run_name("study-smoke", KEY)
        == "study-smoke (methodology m: k 0 (was 0.5)) 0123abcd"
    )


def test_run_names_are_bounded_and_distinct() -> None:
    """An uncommitted edit of many keys once named its study run with 597 characters, and two
    committed studies were both ``study-default``: a name is cut to ``MAX_RUN_NAME`` and ends
    with the run's content key."""
    edit = Experiment("", {f"methodologies.news_bias.key_{i}": "1 (was 0)" for i in range(40)})
    name = edit.run_name("study-default", "f" * 64)
    assert len(name) == MAX_RUN_NAME
    assert name.startswith("study-default (methodology news_bias: key_0, key_1")
    assert name.endswith("… ffffffff")
    first, second = Experiment("", {}), Experiment("", {})
    assert first.run_name("study-default", "1" * 64) != second.run_name("study-default", KEY)
    long_name = Experiment("x" * 200, {}).run_name("study-default", KEY)
    assert len(long_name) == MAX_RUN_NAME and long_name.endswith(" 0123abcd")
    longest_scale = Experiment("lumpy-kits", {}).run_name(f"study-{'s' * 64}", KEY)
    assert len(longest_scale) <= MAX_RUN_NAME and longest_scale.endswith(" 0123abcd")
