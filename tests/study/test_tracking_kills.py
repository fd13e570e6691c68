"""MLflow exactly-once under kills (issue 21): whatever moment ``track`` or ``mlflow_sync``
is killed (SIGKILL at a named point, :mod:`tests.support.tracking_kill`), the next
``dvc repro`` (``track`` when it was the one killed, then ``mlflow_sync``) leaves exactly one
FINISHED run per key and no RUNNING run of genfair's in the store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from genfair.cli import compose
from genfair.methodologies import registry
from genfair.study.always import sync_store
from genfair.study.layout import Layout
from genfair.study.scoring import score_study
from genfair.study.steps import compute_metrics, generate, label, make_probes, study_step
from genfair.study.store import KEY_TAG, listed_keys
from genfair.study.tracking import track_study
from genfair.study_params import StudyParams, load_params
from tests.support.conf import with_runs
from tests.support.tracking_kill import POINTS, Quiz, QuizB

pytestmark = pytest.mark.slow  # six kills, each a fresh Python with MLflow: about 2 minutes

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("smollm2", "simulated_t2i", "simulated_vlm")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, StudyParams]]:
    """The toy quiz twice (two child runs) on the simulated LLM, scored, with the ``runs.json``
    of a first ``track``: what a killed ``track`` or ``mlflow_sync`` starts from."""
    work = tmp_path_factory.mktemp("kills")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "_registered", {**registry._registered})
        patch.setattr(registry, "_instances", {**registry._instances})
        patch.setenv("GENFAIR_CACHE_DIR", str(work / "cache"))
        patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{work / 'first.db'}")
        overrides = ["scale=smoke", *[f"~model@models.{m}" for m in MODELS]]
        raw = load_params(compose(overrides, work / "composed.yaml")).model_dump(mode="json")
        patch.chdir(work)  # the workspace root of `track` (mlartifacts/)
        registry.register(Quiz)
        registry.register(QuizB)
        raw["methodologies"] = {"toy_quiz": {"questions": 12}, "toy_quiz_b": {"questions": 12}}
        params = StudyParams.model_validate(with_runs(raw))
        layout = Layout(work)
        for name in params.methodologies:
            make_probes(params, name, layout)
            generate(params, "simulated_llm", name, layout)
            label(params, "simulated_llm", name, layout)
            compute_metrics(params, "simulated_llm", name, layout)
            study_step(params, name, layout)
        score_study(params, layout)
        track_study(params, layout)
        # an empty store, its schema made once (MLflow's migrations take seconds per store)
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=f"sqlite:///{work / 'empty.db'}").search_experiments()
        (work / "params.json").write_text(
            json.dumps(params.model_dump(mode="json")), encoding="utf-8"
        )
        yield work, params


def _kill_at(work: Path, stage: str, point: str, uri: str) -> None:
    reached = work / "reached"
    reached.unlink(missing_ok=True)
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": uri,
        "GENFAIR_CACHE_DIR": str(work / "cache"),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.tracking_kill",
            stage,
            point,
            str(work / "params.json"),
        ],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        while not reached.exists():  # the process stops for good at the point: wait for that state
            if proc.poll() is not None:
                pytest.fail(
                    f"{stage} ended (code {proc.returncode}) before "
                    f"reaching {point}:\n{proc.stdout.read()[-3000:]}"
                )
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _runs(uri: str, experiment: str) -> list:  # type: ignore[type-arg]
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id], run_view_type=ViewType.ALL) if found else []


@pytest.mark.parametrize(
    "stage,point", [("track", p) for p in POINTS] + [("mlflow_sync", "child_artifact")]
)
def test_a_killed_tracking_stage_leaves_one_finished_run_per_key(
    study: tuple[Path, StudyParams], stage: str, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, params = study
    store = shutil.copy(work / "empty.db", work / f"{stage}-{point}.db")
    uri = f"sqlite:///{store}"
    monkeypatch.setattr(
        registry, "_registered", {**registry._registered, "toy_quiz": Quiz, "toy_quiz_b": QuizB}
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(work / "cache"))
    monkeypatch.chdir(work)
    layout = Layout(work)
    _kill_at(work, stage, point, uri)
    left = _runs(uri, params.tracking.experiment)
    finished = [r for r in left if r.info.status == "FINISHED"]
    if point == "before_parent":
        assert not left
    elif point == "between_children":
        assert 0 < len(finished) < len(listed_keys(layout.tracking))
    else:  # the kill left a run of genfair's behind, keyed from its creation
        assert any(r.info.status == "RUNNING" and r.data.tags.get(KEY_TAG) for r in left)

    # the next `dvc repro`: `track` reruns when it was the one killed, `mlflow_sync` always runs
    if stage == "track":
        track_study(params, layout)
    sync_store(params, layout)
    runs = _runs(uri, params.tracking.experiment)
    assert not [r for r in runs if r.info.status == "RUNNING"], "a RUNNING run is left in the store"
    active = [r for r in runs if r.info.lifecycle_stage == "active"]
    keys = [r.data.tags.get(KEY_TAG) for r in active]
    assert all(r.info.status == "FINISHED" for r in active)
    assert sorted(keys) == sorted(
        listed_keys(layout.tracking)
    )  # one finished run per key, nothing else
    parent = next(r for r in active if r.data.tags["genfair.level"] == "study")
    assert {r.data.tags.get("mlflow.parentRunId") for r in active if r is not parent} == {
        parent.info.run_id
    }
    # and a third repro logs nothing: the fast path sees every run finished
    before = len(_runs(uri, params.tracking.experiment))
    sync_store(params, layout)
    assert len(_runs(uri, params.tracking.experiment)) == before
