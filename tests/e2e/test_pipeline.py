"""End to end: the DVC pipeline at smoke scale in a temporary copy of the project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
COPY = [".dvc/config", ".dvc/.gitignore", "dvc.yaml", "conf", "stages", "data/reference", "src"]

pytestmark = pytest.mark.e2e


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{output[-4000:]}"
    return output


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """A git + DVC copy of the project, composed at smoke scale and reproduced once."""
    work = tmp_path_factory.mktemp("study")
    for item in COPY:
        source, target = ROOT / item, work / item
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_SITE_CACHE_DIR": str(work / ".site-cache"),
        "GENFAIR_CACHE_DIR": str(work / ".genfair-cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    _run(["genfair", "compose", "-o", "scale=smoke"], work, env)
    for args in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "study"]):
        _run(args, work, env)
    output = _run(["dvc", "repro"], work, env)
    return work, env, output


def test_outputs_have_stable_schemas(study: tuple[Path, dict[str, str], str]) -> None:
    work, _, _ = study
    probes = pd.read_parquet(work / "data/probes/fact_or_fair.parquet")
    assert {"probe_id", "kind", "context", "statistic", "direction", "prompt", "options"} <= set(probes)
    assert set(probes["context"]) == {"objective", "baseline", "representativeness", "attribution", "ingroup"}
    for model in ("smollm2", "simulated_llm"):
        responses = pd.read_parquet(work / f"data/responses/{model}/fact_or_fair.parquet")
        assert len(responses) == len(probes)
        assert set(responses["status"]) <= {"ok", "refused", "invalid", "error"}
        assert (responses["status"] == "ok").mean() > 0.5, f"{model}: too few valid answers"
        scores = pd.read_parquet(work / f"data/metrics/{model}/fact_or_fair/scores.parquet")
        assert len(scores) == 10  # 5 contexts x 2 attributes
        assert scores[["s_fact", "s_e", "s_kld", "s_fair", "distance"]].notna().all().all()
    board = pd.read_parquet(work / "data/scores/fact_or_fair.parquet")
    simulated = board[board["model"] == "simulated_llm"]
    assert simulated["simulated"].all() and simulated["rank"].isna().all()
    assert (board.loc[board["model"] == "smollm2", "rank"] == 1).all()


def test_mlflow_parent_and_child_runs(study: tuple[Path, dict[str, str], str]) -> None:
    from mlflow.tracking import MlflowClient

    work, _, _ = study
    runs = json.loads((work / "data/tracking/runs.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    parent = client.get_run(runs["parent_run_id"])
    assert parent.data.tags["genfair.scale"] == "smoke"
    assert set(runs["child_runs"]) == {"smollm2/fact_or_fair", "simulated_llm/fact_or_fair"}
    sim = client.get_run(runs["child_runs"]["simulated_llm/fact_or_fair"])
    assert sim.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert sim.data.tags["genfair.simulated"] == "true" and "SIMULATED" in sim.data.tags["genfair.label"]
    real = client.get_run(runs["child_runs"]["smollm2/fact_or_fair"])
    assert real.data.tags["genfair.simulated"] == "false"
    assert {"objective.gender.s_fact", "baseline.race.distance", "ingroup.race.s_fair_lo"} <= set(real.data.metrics)
    assert real.data.params["model.model_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    artifacts = {a.path for a in client.list_artifacts(real.info.run_id)}
    assert {"per_statistic.csv", "scores.csv", "tradeoff_objective.png"} <= artifacts


def test_noop_repro_and_adding_a_model_reruns_only_its_stages(study: tuple[Path, dict[str, str], str]) -> None:
    work, env, _ = study
    assert "Data and pipelines are up to date" in _run(["dvc", "repro"], work, env)
    _run(["genfair", "compose", "-o", "scale=smoke", "-o", "+model@models.simulated_b=simulated_llm"], work, env)
    output = _run(["dvc", "repro"], work, env)
    for stage in ("generate@simulated_b", "label@simulated_b", "metrics@simulated_b", "score", "track"):
        assert f"Running stage '{stage}'" in output
    for stage in ("probes@fact_or_fair", "generate@smollm2", "label@smollm2", "metrics@smollm2",
                  "generate@simulated_llm"):
        assert f"Running stage '{stage}'" not in output
    board = pd.read_parquet(work / "data/scores/fact_or_fair.parquet")
    assert {"smollm2", "simulated_llm", "simulated_b"} == set(board["model"])


def test_experiment_switches_scale_with_set_param(study: tuple[Path, dict[str, str], str]) -> None:
    work, env, _ = study
    _run(["git", "add", "-A"], work, env)
    _run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "with b"], work, env)
    _run(["dvc", "exp", "run", "-S", "scale=smoke", "-S", "methodologies.fact_or_fair.bootstrap_resamples=20",
          "-S", "~model@models.smollm2"], work, env)
    import yaml

    params = yaml.safe_load((work / "params.yaml").read_text())
    assert params["methodologies"]["fact_or_fair"]["bootstrap_resamples"] == 20
    assert "smollm2" not in params["models"]
