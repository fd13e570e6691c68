"""MLflow logging: one parent run per study run, one child run per model and methodology.

Tracking URI: ``MLFLOW_TRACKING_URI`` if set, else ``tracking.uri`` from params, else a
SQLite store ``mlflow.db`` in the repository root, with artifacts in ``mlartifacts/``.
Inside ``dvc exp run --temp`` (a copy under ``.dvc/tmp/exps``) the root is the main
workspace, so no run is lost with the temporary copy. Secrets never reach MLflow: model
configs hold only the *name* of the key's environment variable, and URIs are logged
without credentials.
"""

from __future__ import annotations

import json
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
from genfair.methodologies import get_methodology
from genfair.study.context import methodologies_for, model_info
from genfair.study.layout import Layout
from genfair.study.steps import read_study

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

    root = workspace_root()
    uri = tracking_uri(params, root)
    mlflow.set_tracking_uri(uri)
    experiment = _experiment(mlflow, params.tracking.experiment, root)
    commit = git_commit(root)
    children: dict[str, str] = {}
    studies = {name: read_study(name, layout) for name in params.methodologies}
    with mlflow.start_run(experiment_id=experiment, run_name=f"study-{params.scale}") as parent:
        mlflow.set_tags({"genfair.level": "study", "genfair.scale": params.scale, "git_commit": commit})
        mlflow.log_params({"seed": params.seed, "scale": params.scale, "git_commit": commit,
                           "models": ",".join(params.models), "methodologies": ",".join(params.methodologies)})
        for name in params.methodologies:
            method = get_methodology(name)
            board_path = layout.scores / f"{name}.parquet"
            if board_path.exists():
                board = read_parquet(board_path)
                if len(board):
                    _log_table(mlflow, board, f"leaderboard_{name}.csv")
                    for figure, file in method.figures(board, name):
                        _log_figure(mlflow, figure, f"{name}_{file}")
            study = studies[name]
            if study is not None:
                mlflow.log_params({f"{name}.{k}": v for k, v in study.params.items()})
                for table, frame in study.tables.items():
                    _log_table(mlflow, frame, f"{name}_study_{table}.csv")
        for model, config in params.models.items():
            info = model_info(params, model)
            for name in methodologies_for(params, model):
                method = get_methodology(name)
                run_name = f"{model}/{name}"
                with mlflow.start_run(experiment_id=experiment, run_name=run_name, nested=True) as child:
                    mlflow.set_tags({
                        "genfair.level": "model", "genfair.model": model, "genfair.methodology": name,
                        "genfair.backend": config.backend, "genfair.modality": config.modality,
                        "genfair.simulated": str(info.simulated).lower(),
                        **({"genfair.label": "SIMULATED planted-bias model, not a real model"} if info.simulated else {}),
                    })
                    method_config = methodology_config(params, name)
                    model_params = flatten(config.model_dump(mode="json"), "model.")
                    method_params = flatten(method_config.model_dump(mode="json"), f"{name}.")
                    mlflow.log_params({**model_params, **method_params, "scale": params.scale,
                                       "seed": params.seed, "git_commit": commit})
                    folder = layout.metrics(model, name)
                    summary_path = folder / "summary.json"
                    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
                    scores = read_parquet(folder / "scores.parquet")
                    rows = method.model_rows(model, scores, studies[name])
                    extra_params, extra_metrics = method.run_record(model, method_config, rows, summary, studies[name])
                    mlflow.log_params(extra_params)
                    mlflow.log_metrics({**_score_metrics(rows, method.metric_keys), **extra_metrics})
                    for table in sorted(folder.glob("*.parquet")):
                        _log_table(mlflow, read_parquet(table), f"{table.stem}.csv")
                    if len(rows) > len(scores):
                        _log_table(mlflow, rows.iloc[len(scores):], "study_scores.csv")
                    shown = rows.assign(model=model, simulated=info.simulated, modality=info.modality)
                    for figure, file in method.figures(shown, model):
                        _log_figure(mlflow, figure, file)
                    children[run_name] = child.info.run_id
    log.info("MLflow: experiment %s, parent run %s, %d child runs at %s", params.tracking.experiment,
             parent.info.run_id, len(children), redact(uri))
    return write_json({"tracking_uri": redact(uri), "experiment_id": experiment,
                       "parent_run_id": parent.info.run_id, "child_runs": children}, layout.tracking)


def _score_metrics(scores: pd.DataFrame, keys: tuple[str, ...]) -> dict[str, float]:
    """One MLflow metric per numeric cell: ``<key values>.<column>``."""
    metrics = {}
    for row in scores.to_dict("records"):
        prefix = ".".join(str(row[k]) for k in keys if k in row and not pd.isna(row[k]))
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
