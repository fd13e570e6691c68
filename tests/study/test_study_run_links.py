"""One study run in MLflow holds every model it compares (issue 45.4): a study changed by a
model added gets a new study run that links every model run it compares (the unchanged one
stays nested under the study run that logged it: MLflow gives a run one parent), named by
what changed in words and described truly. A SQLite MLflow store in a temporary folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from genfair.cli import compose
from genfair.methodologies import registry
from genfair.study.layout import Layout
from genfair.study.lineage import MAX_RUN_NAME, Experiment, in_words
from genfair.study.scoring import score_study
from genfair.study.steps import compute_metrics, generate, label, make_probes, study_step
from genfair.study.tracking import MODEL_RUNS, track_study
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def test_changes_in_words() -> None:
    changes = {
        "models.served.model_id": "x (was <unset>)",
        "models.served.backend": "openai (was <unset>)",
        "models.old.backend": "<unset> (was hf)",
        "models.smollm2.sampling.max_tokens": "32 (was 16)",
        "methodologies.iris.sizes": "smoke (was default)",
        "digests.models.served": "abc (was <unset>)",
        "digests.methodologies.fact_or_fair.all": "1 (was 2)",
        "runs.served-fact_or_fair.model": "served (was <unset>)",
        "seed": "2 (was 1)",
    }
    assert in_words(changes) == [
        "+ model served",
        "- model old",
        "model smollm2: sampling.max_tokens 32 (was 16)",
        "methodology iris: sizes smoke (was default)",
        "seed 2 (was 1)",
        "methodology fact_or_fair: its code or inputs",
    ]
    name = Experiment("", changes).run_name("study-default", "0123abcd" * 8)
    assert name.startswith("study-default (+ model served; - model old; model smollm2")
    assert len(name) <= MAX_RUN_NAME and name.endswith(" 0123abcd")
    described = Experiment("", changes).description()
    assert described.startswith("the study changed from the one committed at HEAD:\n")
    assert "the committed study" not in described and "- + model served" in described
    assert Experiment("", {}).description() == "the study committed at HEAD: no param changed"
    assert "no committed version" in Experiment("", {}, None).description()
    # config text is shown as it is in MLflow's Markdown (checked in its UI): no HTML, no image
    shown = Experiment("", {"models.m.description": "![x](http://e/p.png) (was <unset>)"})
    assert r"- models.m.description: \!\[x\](http://e/p.png) (was \<unset>)" in (
        shown.description()
    )


def _study(work: Path, models: tuple[str, ...], base: dict) -> StudyParams:
    raw = {**base, "models": {m: base["models"]["simulated_llm"] for m in models}}
    raw["methodologies"] = {"toy_quiz": {"questions": 8}}
    params = StudyParams.model_validate(with_runs(raw))
    (work / "params.yaml").write_text(yaml.safe_dump(params.model_dump(mode="json")))
    layout = Layout(work)
    make_probes(params, "toy_quiz", layout)
    for model in models:
        generate(params, model, "toy_quiz", layout)
        label(params, model, "toy_quiz", layout)
        compute_metrics(params, model, "toy_quiz", layout)
    study_step(params, "toy_quiz", layout)
    score_study(params, layout)
    track_study(params, layout)
    return params


def test_a_changed_study_run_links_every_model_run_it_compares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setattr(registry, "_registered", {**registry._registered})
    monkeypatch.setattr(registry, "_instances", {**registry._instances})
    registry.register(Quiz)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("DVC_EXP_NAME", raising=False)
    monkeypatch.delenv("DVC_EXP_BASELINE_REV", raising=False)
    overrides = ["scale=smoke", "~model@models.smollm2", "~model@models.simulated_t2i"]
    base = load_params(compose(overrides, tmp_path / "composed.yaml")).model_dump(mode="json")
    monkeypatch.chdir(tmp_path)  # the workspace root of `track`
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)

    first = _study(tmp_path, ("sim_a",), base)
    subprocess.run([*GIT, "add", "params.yaml"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "study"], cwd=tmp_path, check=True)
    second = _study(tmp_path, ("sim_a", "sim_b"), base)  # a model added, not committed

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(first.tracking.experiment).experiment_id
    runs = {r.info.run_id: r for r in client.search_runs([experiment])}
    studies = [r for r in runs.values() if r.data.tags.get("genfair.level") == "study"]
    latest = max(studies, key=lambda r: r.info.start_time)
    earlier = min(studies, key=lambda r: r.info.start_time)
    assert len(studies) == 2 and second.models.keys() == {"sim_a", "sim_b"}
    assert latest.info.run_name.startswith("study-smoke (+ model sim_b) ")
    linked = {
        tag.removeprefix("genfair.model_run."): run_id
        for tag, run_id in latest.data.tags.items()
        if tag.startswith("genfair.model_run.")
    }
    assert linked.keys() == {"sim_a/toy_quiz", "sim_b/toy_quiz"}
    parents = {
        name: runs[run_id].data.tags["mlflow.parentRunId"] for name, run_id in linked.items()
    }
    assert parents == {"sim_a/toy_quiz": earlier.info.run_id, "sim_b/toy_quiz": latest.info.run_id}
    note = latest.data.tags["mlflow.note.content"]
    assert note.startswith("the study changed from the one committed at HEAD:\n- + model sim\\_b")
    assert f"{MODEL_RUNS} (2):" in note
    assert f"[sim_a/toy_quiz](#/experiments/{experiment}/runs/{linked['sim_a/toy_quiz']})" in note
    assert "sim_a/toy_quiz" in note.split("unchanged: nested under")[0].splitlines()[-1]
    assert note.index(MODEL_RUNS) < note.index("params changed:")  # the links above the list
    # a rerun logs nothing and rewrites no link
    track_study(second, Layout(tmp_path))
    again = client.get_run(latest.info.run_id).data.tags
    assert again["mlflow.note.content"] == note
    assert len(client.search_runs([experiment])) == len(runs)
