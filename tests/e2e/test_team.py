"""A team's shared state, with real servers on 127.0.0.1: the MLflow server of
``scripts/mlflow_server.sh`` (PostgreSQL backend store, proxied artifacts) and a DVC remote on a
loopback S3. One checkout reproduces a smoke study, tracks it through the server and pushes
it (outputs and run cache); a second checkout (a git clone) pulls it, and its ``dvc repro``
runs only the always-running stages and logs nothing new to the server.

The first checkout's DVC cache starts as a teammate's would after ``dvc pull --run-cache``:
hard links to the shared smoke study's cache (tests/support/studies.py). The stages it has in
common with that study are restored from DVC's run cache; the others run (OpenBias from the
published proposals, the study-level stages, ``track`` through the server, the report)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.mlflow_server import MlflowServer, team_mlflow_server
from tests.support.project import GIT, LIGHT_SMOKE, copy_study, run, study_env
from tests.support.servers import PostgresServer, S3Server
from tests.support.studies import check_declared, shared_study

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke", "team")]


@dataclass
class Team:
    server: MlflowServer
    work: Path
    env: dict[str, str]
    output: str


def _all_runs(uri: str) -> list:  # type: ignore[type-arg]
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    ids = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)]
    return client.search_runs(ids, run_view_type=ViewType.ALL)


@pytest.fixture(scope="module")
def team(
    request: pytest.FixtureRequest,
    postgres: PostgresServer,
    s3: S3Server,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Team]:
    """The first checkout: reproduced with the team's MLflow server, committed, pushed."""
    smoke = shared_study(request, "smoke")
    check_declared(request.node, "team")
    with team_mlflow_server(postgres, tmp_path_factory.mktemp("mlflow")) as server:
        work = tmp_path_factory.mktemp("first")
        env = study_env(work, MLFLOW_TRACKING_URI=server.uri, **s3.env)
        copy_study(work, env, *LIGHT_SMOKE)
        shutil.copytree(smoke.work / ".dvc/cache", work / ".dvc/cache", copy_function=os.link)
        bucket = s3.create_bucket()
        run(["dvc", "remote", "add", "-d", "team", f"s3://{bucket}/dvc"], work, env)
        run(["dvc", "remote", "modify", "team", "endpointurl", s3.endpoint], work, env)
        output = run(["dvc", "repro"], work, env)
        run(["git", "add", "-A"], work, env)
        run([*GIT, "commit", "-qm", "smoke study"], work, env)
        run(["dvc", "push", "--run-cache"], work, env)
        yield Team(server, work, env, output)


def test_runs_params_metrics_and_figures_through_the_server(team: Team) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=team.server.uri)
    runs = json.loads((team.work / "data/tracking/runs.json").read_text())
    assert runs["tracking_uri"] == team.server.uri
    logged = {r.data.tags["genfair.key"]: r for r in _all_runs(team.server.uri)}
    keys = [runs["parent_run"], *runs["child_runs"].values()]
    assert sorted(logged) == sorted(keys) and all(
        r.info.status == "FINISHED" for r in logged.values()
    )
    parent = logged[runs["parent_run"]]
    assert parent.info.run_name == f"study-smoke {runs['parent_run'][:8]}"
    assert parent.data.params["scale"] == "smoke"
    child = logged[runs["child_runs"]["simulated_llm/fact_or_fair"]]
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert child.data.params["model.backend"] == "simulated"
    assert any(name.endswith(".s_fair") for name in child.data.metrics)
    # artifacts went through the server (proxied) into its --artifacts-destination
    assert child.info.artifact_uri.startswith("mlflow-artifacts:")
    figures = [a.path for a in client.list_artifacts(child.info.run_id) if a.path.endswith(".png")]
    assert figures
    local = Path(
        client.download_artifacts(child.info.run_id, figures[0], str(team.work / "download"))
    )
    assert local.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(team.server.artifacts.rglob(figures[0]))
    assert not (team.work / "mlartifacts").exists() and not (team.work / "mlflow.db").exists()


def test_each_run_records_the_dvc_hashes_of_its_data(team: Team) -> None:
    runs = json.loads((team.work / "data/tracking/runs.json").read_text())
    lock = yaml.safe_load((team.work / "dvc.lock").read_text())["stages"]
    logged = {r.data.tags["genfair.key"]: r for r in _all_runs(team.server.uri)}
    child = logged[runs["child_runs"]["simulated_llm/fact_or_fair"]]
    inputs = {i.dataset.name: i for i in child.inputs.dataset_inputs}
    metrics_out = lock["metrics@simulated_llm-fact_or_fair"]["outs"][0]
    assert inputs[metrics_out["path"]].dataset.digest == metrics_out["md5"]
    source = json.loads(inputs[metrics_out["path"]].dataset.source)
    assert source == {
        "path": metrics_out["path"],
        "rev": child.data.params["git_commit"],
        "repo": "",
    }
    probes = lock["probes@fact_or_fair"]["outs"][0]
    assert inputs[probes["path"]].dataset.digest == probes["md5"]  # an input of generate
    assert {t.key: t.value for t in inputs[probes["path"]].tags}["mlflow.data.context"] == "input"
    parent = logged[runs["parent_run"]]
    assert "data/headline.json" in {i.dataset.name for i in parent.inputs.dataset_inputs}


def test_a_second_checkout_pulls_the_study_and_adds_no_run(team: Team, tmp_path: Path) -> None:
    before = len(_all_runs(team.server.uri))
    clone = tmp_path / "second"
    run(["git", "clone", "-q", str(team.work), str(clone)], tmp_path, team.env)
    env = study_env(
        clone,
        MLFLOW_TRACKING_URI=team.server.uri,
        **{k: v for k, v in team.env.items() if k.startswith("AWS_")},
    )
    run(["dvc", "pull", "--run-cache"], clone, env)
    output = run(["dvc", "repro"], clone, env)
    ran = set(re.findall(r"Running stage '([^']+)'", output))
    assert ran == {"always/dvc.yaml:curation_inputs", "always/dvc.yaml:mlflow_sync"}, sorted(ran)
    assert "0 runs logged" in output
    assert len(_all_runs(team.server.uri)) == before
    for path in ("data/headline.json", "data/scores/fact_or_fair.parquet"):
        assert (clone / path).read_bytes() == (team.work / path).read_bytes()
