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
                for figure, file in _figures(name, board, name):
                    _log_figure(mlflow, figure, f"{name}_{file}")
        _log_iris_study(mlflow, layout)
        topics = layout.topics("news_bias")
        if layout.topics_summary("news_bias").exists():
            document = json.loads(layout.topics_summary("news_bias").read_text(encoding="utf-8"))
            if document:
                mlflow.log_params({"news_bias.document.num_topics": document["num_topics"],
                                   "news_bias.document.lemmatizer": document["lemmatizer"],
                                   "news_bias.document.documents": document["documents"]})
            for table in sorted(topics.glob("*.parquet")):
                _log_table(mlflow, read_parquet(table), f"news_bias_document_{table.stem}.csv")
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
                    documents = _document_scores(layout, name, model)
                    scores = pd.concat([scores, documents], ignore_index=True) if len(documents) else scores
                    mlflow.log_params(_instrument_params(layout, model, name))
                    mlflow.log_metrics(_score_metrics(scores, METRIC_KEYS[name]))
                    if name == "iris":
                        _log_iris_model(mlflow, params, layout, model)
                    for table in sorted(folder.glob("*.parquet")):
                        _log_table(mlflow, read_parquet(table), f"{table.stem}.csv")
                    if len(documents):
                        _log_table(mlflow, documents, "document_scores.csv")
                    shown = scores.assign(model=model, simulated=simulated)
                    for figure, file in _figures(name, shown, model):
                        _log_figure(mlflow, figure, file)
                    children[run_name] = child.info.run_id
    log.info("MLflow: experiment %s, parent run %s, %d child runs at %s", params.tracking.experiment,
             parent.info.run_id, len(children), redact(uri))
    return write_json({"tracking_uri": redact(uri), "experiment_id": experiment,
                       "parent_run_id": parent.info.run_id, "child_runs": children},
                      layout.data / "tracking" / "runs.json")


#: per methodology: the columns that name a score row (the MLflow metric key's prefix)
METRIC_KEYS = {
    "iris": ("sector", "metric"),
    "fact_or_fair": ("context", "attribute"),
    "fact_or_fair_t2i": ("context", "attribute"),
    "news_bias": ("prompt_type", "level", "attribute", "measure"),
}


def _figures(methodology: str, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
    """The methodology's figures for ``scores`` (one model's or the leaderboard's)."""
    if methodology == "fact_or_fair":
        from genfair.report.plots import tradeoff_figure

        return [(tradeoff_figure(part, f"{title}: {context}"), f"tradeoff_{context}.png")
                for context, part in scores.groupby("context", sort=False)]
    if methodology == "fact_or_fair_t2i":  # paper 000 Fig. 4-5: T2I trade-off, objective / subjective test
        from genfair.report.plots import tradeoff_figure

        test = {"objective": "objective test", "baseline": "subjective test"}
        return [(tradeoff_figure(part, f"{title}: T2I {test.get(context, context)}"), f"tradeoff_{context}.png")
                for context, part in scores.groupby("context", sort=False)]
    if methodology == "news_bias":
        from genfair.report.news_plots import bias_bars

        return [(bias_bars(scores, f"{title}: news bias (95% CI)"), "bias_bars.png")]
    return []


def _log_iris_study(mlflow: Any, layout: Layout) -> None:
    """Parent run: the IRIS validation table and the per-model summary (Table 3's layout)."""
    for name in ("iris_validation", "iris_summary"):
        path = layout.scores / f"{name}.parquet"
        if path.exists():
            frame = read_parquet(path)
            if len(frame):
                _log_table(mlflow, frame, f"{name}.csv")


def _log_iris_model(mlflow: Any, params: StudyParams, layout: Layout, model: str) -> None:
    """Child run ``<model>/iris``: the S and K used (and the mode), per-sector magnitudes and
    scores, the overall IRIS score (models with all six sectors) and the Gen/Und codes."""
    from genfair.scoring.iris import tracking_record

    path = layout.scores / "iris.parquet"
    scores = read_parquet(path) if path.exists() else pd.DataFrame()
    if scores.empty or model not in set(scores["model"]):
        return
    record = tracking_record(scores[scores["model"] == model].drop(columns="simulated"),
                             methodology_config(params, "iris").scoring)[model]
    mlflow.log_params(record["params"])
    mlflow.log_metrics(record["metrics"])


def _document_scores(layout: Layout, methodology: str, model: str) -> pd.DataFrame:
    """The model's rows of the cross-model document level (news_bias only)."""
    path = layout.topics(methodology) / "scores.parquet"
    if methodology != "news_bias" or not path.exists():
        return pd.DataFrame()
    scores = read_parquet(path)
    return scores[scores["model"] == model].drop(columns="model").reset_index(drop=True)


def _instrument_params(layout: Layout, model: str, methodology: str) -> dict[str, Any]:
    """Which instruments produced the scores (e.g. news_bias's toxicity scorer)."""
    path = layout.metrics_summary(model)
    if not path.exists():
        return {}
    summary = json.loads(path.read_text(encoding="utf-8")).get(methodology, {})
    out = {f"{methodology}.instrument.{k}": v for k, v in summary.get("instruments", {}).items()}
    if "race_name_table" in summary:
        out[f"{methodology}.instrument.race_name_table"] = summary["race_name_table"]
    return out


def _score_metrics(scores: pd.DataFrame, keys: tuple[str, ...] = ("context", "attribute")) -> dict[str, float]:
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
