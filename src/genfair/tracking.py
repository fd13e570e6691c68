"""MLflow logging: one parent run per study run, one child run per model and methodology.

Tracking URI: ``MLFLOW_TRACKING_URI`` if set, else ``tracking.uri`` from params, else a
SQLite store ``mlflow.db`` in the repository root, with artifacts in ``mlartifacts/``.
Inside ``dvc exp run --temp`` (a copy under ``.dvc/tmp/exps``) the root is the main
workspace, so no run is lost with the temporary copy. Secrets never reach MLflow: model
configs hold only the *name* of the key's environment variable, and URIs are logged
without credentials.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.config import StudyParams, methodology_config
from genfair.io import read_parquet, write_json
from genfair.pipeline import Layout, methodologies_for

log = logging.getLogger(__name__)


def workspace_root(cwd: Path | None = None) -> Path:
    """The main workspace, also from inside a DVC temporary experiment copy."""
    cwd = (cwd or Path.cwd()).resolve()
    parts = cwd.parts
    for i in range(len(parts) - 2):
        if parts[i : i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return cwd


def tracking_uri(params: StudyParams, root: Path | None = None) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or params.tracking.uri or (
        f"sqlite:///{(root or workspace_root()) / 'mlflow.db'}"
    )


def redact(uri: str) -> str:
    """Drop ``user:password@`` from a URI."""
    return re.sub(r"//[^/@]+@", "//", uri)


def git_commit(root: Path) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
        return f"{commit}{'-dirty' if dirty else ''}"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists become strings."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): data if isinstance(data, (int, float, str, bool)) or data is None else str(data)}


def _experiment(mlflow: Any, name: str, root: Path) -> str:
    found = mlflow.get_experiment_by_name(name)
    if found:
        return found.experiment_id
    return mlflow.create_experiment(name, artifact_location=(root / "mlartifacts").as_uri())


def track_study(params: StudyParams, layout: Layout = Layout()) -> Path:
    import mlflow

    from genfair.report.plots import tradeoff_figure

    root = workspace_root()
    uri = tracking_uri(params, root)
    mlflow.set_tracking_uri(uri)
    experiment = _experiment(mlflow, params.tracking.experiment, root)
    commit = git_commit(root)
    children: dict[str, str] = {}
    with mlflow.start_run(experiment_id=experiment, run_name=f"study-{params.scale}") as parent:
        mlflow.set_tags({"genfair.level": "study", "genfair.scale": params.scale, "git_commit": commit})
        mlflow.log_params({"seed": params.seed, "scale": params.scale, "git_commit": commit,
                           "models": ",".join(params.models), "methodologies": ",".join(params.methodologies)})
        for name in params.methodologies:
            board_path = layout.scores / f"{name}.parquet"
            if board_path.exists():
                board = read_parquet(board_path)
                _log_table(mlflow, board, f"leaderboard_{name}.csv")
                for context, part in board.groupby("context", sort=False):
                    _log_figure(mlflow, tradeoff_figure(part, f"{name}: {context}"), f"tradeoff_{name}_{context}.png")
        for model, config in params.models.items():
            simulated = config.backend == "simulated"
            for name in methodologies_for(params, model):
                run_name = f"{model}/{name}"
                with mlflow.start_run(experiment_id=experiment, run_name=run_name, nested=True) as child:
                    mlflow.set_tags({
                        "genfair.level": "model", "genfair.model": model, "genfair.methodology": name,
                        "genfair.backend": config.backend, "genfair.simulated": str(simulated).lower(),
                        **({"genfair.label": "SIMULATED planted-bias model, not a real model"} if simulated else {}),
                    })
                    model_params = flatten(config.model_dump(mode="json"), "model.")
                    method_params = flatten(methodology_config(params, name).model_dump(mode="json"), f"{name}.")
                    mlflow.log_params({**model_params, **method_params, "scale": params.scale,
                                       "seed": params.seed, "git_commit": commit})
                    folder = layout.metrics(model, name)
                    scores = read_parquet(folder / "scores.parquet")
                    mlflow.log_metrics(_score_metrics(scores))
                    for table in sorted(folder.glob("*.parquet")):
                        _log_table(mlflow, read_parquet(table), f"{table.stem}.csv")
                    shown = scores.assign(model=model, simulated=simulated)
                    for context, part in shown.groupby("context", sort=False):
                        _log_figure(mlflow, tradeoff_figure(part, f"{model}: {context}"), f"tradeoff_{context}.png")
                    children[run_name] = child.info.run_id
    log.info("MLflow: experiment %s, parent run %s, %d child runs at %s", params.tracking.experiment,
             parent.info.run_id, len(children), redact(uri))
    return write_json({"tracking_uri": redact(uri), "experiment_id": experiment,
                       "parent_run_id": parent.info.run_id, "child_runs": children},
                      layout.data / "tracking" / "runs.json")


def _score_metrics(scores: pd.DataFrame) -> dict[str, float]:
    metrics = {}
    keys = ("context", "attribute")
    for row in scores.to_dict("records"):
        prefix = ".".join(str(row[k]) for k in keys if k in row)
        for column, value in row.items():
            if column not in keys and isinstance(value, (int, float)) and not pd.isna(value):
                metrics[f"{prefix}.{column}"] = float(value)
    return metrics


def _log_table(mlflow: Any, frame: pd.DataFrame, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        frame.to_csv(path, index=False)
        mlflow.log_artifact(str(path))


def _log_figure(mlflow: Any, figure: Any, name: str) -> None:
    import matplotlib.pyplot as plt

    mlflow.log_figure(figure, name)
    plt.close(figure)
