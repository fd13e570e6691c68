"""MLflow logging: one parent run per study, one child run per model and methodology.

The store, not ``dvc.lock``, decides what is logged: ``track`` (when its inputs change) and
``mlflow_sync`` (on every ``dvc repro``, :mod:`genfair.study.store`) log only the runs the
configured store lacks, each keyed by a content hash of its inputs (tag ``genfair.key``). A
fresh clone, a new tracking server or a teammate's machine gets every run on its first
``dvc repro``; a rerun logs nothing twice.

Tracking URI: ``MLFLOW_TRACKING_URI`` if set, else ``tracking.uri`` from params, else a
SQLite store ``mlflow.db`` in the repository root, with artifacts in ``mlartifacts/`` (a
copied or moved checkout's store is pointed at its own ``mlartifacts/`` first:
:func:`genfair.study.store.follow_checkout`).
Inside ``dvc exp run --temp`` (a copy under ``.dvc/tmp/exps``) the root is the main
workspace, so no run is lost with the temporary copy. Secrets never reach MLflow: model
configs hold only the *name* of the key's environment variable, and URIs are logged
without credentials.

Imported where used: genfair.study.lineage (MLflow), genfair.study.precision (SQLAlchemy) and
genfair.methodologies.plotting (matplotlib), each by the one record that needs it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from genfair.frame import PARAMS_FILE, usage_ledger
from genfair.io import file_sha256, read_json, read_parquet, spreadsheet_safe, write_json
from genfair.methodologies import get_methodology
from genfair.models.usage import latest_split, read_ledger
from genfair.names import flatten, mlflow_key
from genfair.study.context import methodologies_for, model_info
from genfair.study.layout import Layout
from genfair.study.steps import read_study
from genfair.study.store import (
    KEY_TAG,
    UNFINISHED,
    display_uri,
    follow_checkout,
    redact,
    tracking_uri,
    workspace_root,
)
from genfair.study_params import StudyParams, run_config

if TYPE_CHECKING:
    from genfair.study.lineage import DataFile, Experiment

log = logging.getLogger(__name__)


def git_commit(root: Path) -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return f"{commit}{'-dirty' if dirty else ''}"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


#: the experiment kind MLflow's UI reads (``mlflow.experimentKind``): a classic ML
#: experiment opens on its runs table, not on the GenAI "Traces" overview
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


def _experiment(client: Any, name: str, root: Path, uri: str) -> str:
    found = client.get_experiment_by_name(name)
    # a local store keeps artifacts in the repository (mlartifacts/); a tracking server
    # chooses where (its --artifacts-destination, proxied to every client)
    local = not uri.startswith(("http://", "https://"))
    experiment = (
        found.experiment_id
        if found
        else client.create_experiment(
            name, artifact_location=(root / "mlartifacts").as_uri() if local else None
        )
    )
    if not found or found.tags.get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
        client.set_experiment_tag(experiment, *EXPERIMENT_KIND)
    return experiment


def content_key(*parts: Any) -> str:
    """A SHA-256 over JSON-able parts and files (by their bytes): the same inputs give the
    same key on any machine, so a store that holds the key holds the run."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            files = (
                sorted(p for p in part.rglob("*") if p.is_file())
                if part.is_dir()
                else [part]
                if part.exists()
                else []
            )
            for file in files:
                digest.update(file.name.encode())
                digest.update(hashlib.sha256(file.read_bytes()).digest())
        else:
            digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def _existing(client: Any, experiment: str) -> dict[str, Any]:
    """``genfair.key`` -> the finished run of the experiment. Every other run of genfair's
    (found by the key tag, which a run gets when it is created) is a leftover of a killed
    ``track`` or ``mlflow_sync``, or a duplicate: it is terminated (status KILLED) and
    deleted, so the store never shows it as a live run and its key is logged again once."""
    from mlflow.entities import ViewType

    found: dict[str, Any] = {}
    token = None
    while True:
        page = client.search_runs(
            [experiment],
            filter_string=f"tags.`{KEY_TAG}` != ''",
            max_results=1000,
            run_view_type=ViewType.ALL,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        for run in page:
            key, info = run.data.tags.get(KEY_TAG), run.info
            active = info.lifecycle_stage == "active"
            if active and info.status == "FINISHED" and key not in found:
                found[key] = run
                continue
            if info.status in UNFINISHED:
                if (
                    not active
                ):  # deleted while running (an older genfair): MLflow edits only active runs
                    client.restore_run(info.run_id)
                client.set_terminated(info.run_id, "KILLED")
                active = True
            if active:
                client.delete_run(info.run_id)
        token = page.token
        if not token:
            return found


def track_study(params: StudyParams, layout: Layout = Layout()) -> Path:
    """``track``: log to the configured MLflow store the runs it lacks. It always runs (the
    store, not ``dvc.lock``, says what is logged): each run is keyed by a content hash of
    what it logs (``genfair.key`` tag), so a fresh clone's store gets every run and a rerun
    duplicates none. ``data/tracking/runs.json`` lists the keys (deterministic, no machine
    path)."""
    import mlflow
    from mlflow.tracking import MlflowClient

    # here, not at the top: lineage imports mlflow, and the report imports this module
    from genfair.study.lineage import current_experiment, locked_stages, stage_data

    root = workspace_root()
    uri = tracking_uri(params, root)
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    follow_checkout(uri, params.tracking.experiment, root)
    experiment = _experiment(client, params.tracking.experiment, root, uri)
    commit = git_commit(root)
    studies = {name: read_study(name, layout) for name in params.methodologies}
    children = {
        f"{model}/{name}": _child_key(params, model, name, layout)
        for model in params.models
        for name in methodologies_for(params, model)
    }
    parent_key = content_key(
        "study",
        params.scale,
        params.seed,
        sorted(children.values()),
        *[layout.scores / f"{n}.parquet" for n in params.methodologies],
        *[layout.study(n) for n in params.methodologies],
        layout.comparisons,
        layout.precision,
    )
    existing = _existing(client, experiment)
    stages = locked_stages(layout.root)
    ledger = read_ledger(usage_ledger(params.cache))
    logged = 0
    runs: dict[str, tuple[str, bool]] = {}  # model/methodology -> its run id, nested here
    if parent_key in existing:
        parent_id = existing[parent_key].info.run_id
    else:
        data = stage_data(stages, ["score", *[f"study@{n}" for n in params.methodologies]])
        parent_id = _log_parent(
            mlflow,
            params,
            layout,
            experiment,
            commit,
            studies,
            parent_key,
            data,
            current_experiment(layout.root, layout.root / PARAMS_FILE),
        )
        logged += 1
    for model in params.models:
        for name in methodologies_for(params, model):
            key = children[f"{model}/{name}"]
            if key in existing:
                run = existing[key]
                nested = run.data.tags.get("mlflow.parentRunId") == parent_id
                runs[f"{model}/{name}"] = (run.info.run_id, nested)
                continue
            data = stage_data(
                stages, [f"{stage}@{model}-{name}" for stage in ("generate", "label", "metrics")]
            )
            run_id = _log_child(
                mlflow,
                params,
                layout,
                experiment,
                commit,
                studies,
                model,
                name,
                key,
                parent_id,
                data,
                split_metrics(ledger, layout.responses(model, name)),
            )
            runs[f"{model}/{name}"] = (run_id, True)
            logged += 1
    _link_model_runs(client, experiment, parent_id, runs)
    log.info(
        "MLflow %s, experiment %s: %d runs logged, %d already there",
        redact(uri),
        params.tracking.experiment,
        logged,
        1 + len(children) - logged,
    )
    return write_json(
        {
            "tracking_uri": display_uri(uri, root),
            "experiment": params.tracking.experiment,
            "parent_run": parent_key,
            "child_runs": children,
        },
        layout.tracking,
    )


def _child_key(params: StudyParams, model: str, name: str, layout: Layout) -> str:
    return content_key(
        "model",
        model,
        name,
        params.scale,
        params.seed,
        params.model(model).model_dump(mode="json"),
        run_config(params, name, model).model_dump(mode="json"),  # its own plants, if any
        layout.metrics(model, name),
        layout.study(name),
    )


def _log_parent(
    mlflow: Any,
    params: StudyParams,
    layout: Layout,
    experiment: str,
    commit: str,
    studies: dict[str, Any],
    key: str,
    data: list[DataFile],
    exp: Experiment,
) -> str:
    # the key tag is set when the run is created: a kill at any later point leaves a run that
    # the next `track` finds by its key and replaces (``_existing``)
    tags = {
        "genfair.level": "study",
        "genfair.scale": params.scale,
        "git_commit": commit,
        KEY_TAG: key,
        **exp.tags(),
    }
    with mlflow.start_run(
        experiment_id=experiment,
        run_name=exp.run_name(f"study-{params.scale}", key),
        tags=tags,
        description=exp.description(),
    ) as parent:
        from genfair.study.lineage import log_data  # mlflow: see track_study

        log_data(mlflow, data, commit)
        _log_params(
            mlflow,
            {
                "seed": params.seed,
                "scale": params.scale,
                "git_commit": commit,
                "models": ",".join(params.models),
                "methodologies": ",".join(params.methodologies),
                # the sizes each methodology ran at (conf/study.yaml may pick others than the scale)
                **{f"{name}.sizes": params.sizes_of(name) for name in params.methodologies},
            },
        )
        if layout.comparisons.is_file():  # paired model comparisons (genfair.study.compare)
            compared = flatten(read_json(layout.comparisons), "compare.")
            # numbers only (a NaN bound is None); marked as 1 / 0
            _log_metrics(
                mlflow, {k: float(v) for k, v in compared.items() if isinstance(v, int | float)}
            )
        # each headline's half-width and its forecast at the paper's size (issue 47: the
        # precision stage's)
        from genfair.study import precision

        forecast = precision.read_forecast(layout.precision)
        if forecast is not None:
            _log_metrics(mlflow, precision.half_width_metrics(forecast))
        for name in params.methodologies:
            method = get_methodology(name)
            board_path = layout.scores / f"{name}.parquet"
            if board_path.exists():
                board = read_parquet(board_path)
                if len(board):
                    _log_table(mlflow, board, f"leaderboard_{name}.csv")
                    for figure, file in method.presentation.figures(board, name):
                        _log_figure(mlflow, figure, f"{name}_{file}")
            study = studies[name]
            if study is not None:
                _log_params(mlflow, {f"{name}.{k}": v for k, v in study.params.items()})
                for table, frame in study.tables.items():
                    _log_table(mlflow, frame, f"{name}_study_{table}.csv")
        return parent.info.run_id


def _log_child(
    mlflow: Any,
    params: StudyParams,
    layout: Layout,
    experiment: str,
    commit: str,
    studies: dict[str, Any],
    model: str,
    name: str,
    key: str,
    parent_id: str,
    data: list[DataFile],
    split: dict[str, float],
) -> str:
    config = params.model(model)
    info = model_info(params, model)
    method = get_methodology(name)
    tags = {
        "genfair.level": "model",
        "genfair.model": model,
        "genfair.methodology": name,
        "genfair.backend": config.backend,
        "genfair.modality": config.modality,
        "genfair.simulated": str(info.simulated).lower(),
        KEY_TAG: key,
        **(
            {"genfair.label": "SIMULATED planted-bias model, not a real model"}
            if info.simulated
            else {}
        ),
    }
    with mlflow.start_run(
        experiment_id=experiment,
        run_name=f"{model}/{name} {key[:8]}",
        parent_run_id=parent_id,
        tags=tags,
    ) as child:
        from genfair.study.lineage import log_data  # mlflow: see track_study

        log_data(mlflow, data, commit)
        method_config = run_config(params, name, model)
        model_params = flatten(config.model_dump(mode="json"), "model.")
        method_params = flatten(method_config.model_dump(mode="json"), f"{name}.")
        _log_params(
            mlflow,
            {
                **model_params,
                **method_params,
                "scale": params.scale,
                "sizes": params.sizes_of(name),
                "seed": params.seed,
                "git_commit": commit,
            },
        )
        folder = layout.metrics(model, name)
        summary_path = folder / "summary.json"
        summary = (
            json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
        )
        scores = read_parquet(folder / "scores.parquet")
        rows = method.comparison.model_rows(model, scores, studies[name])
        extra_params, extra_metrics = method.presentation.run_record(
            model, method_config, rows, summary, studies[name]
        )
        _log_params(mlflow, extra_params)
        usage = {  # the tokens and images of the run's answers (genfair.models.usage)
            f"usage.{k}": float(v)
            for k, v in summary.get("usage", {}).items()
            if isinstance(v, int | float)
        }
        _log_metrics(
            mlflow,
            {**_score_metrics(rows, method.metric_keys), **extra_metrics, **usage, **split},
        )
        for table in sorted(folder.glob("*.parquet")):
            _log_table(mlflow, read_parquet(table), f"{table.stem}.csv")
        if len(rows) > len(scores):
            _log_table(mlflow, rows.iloc[len(scores) :], "study_scores.csv")
        shown = rows.assign(model=model, simulated=info.simulated, modality=info.modality)
        for figure, file in method.presentation.figures(shown, model):
            _log_figure(mlflow, figure, file)
        return str(child.info.run_id)


#: where a study run's description lists its model runs (issue 45.4)
MODEL_RUNS = "model runs it compares"
_LINKS = re.compile(rf"\n\n{MODEL_RUNS} \(\d+\):(\n- [^\n]*)*")


def _link_model_runs(
    client: Any, experiment: str, parent_id: str, runs: dict[str, tuple[str, bool]]
) -> None:
    """Link every model run the study compares from its study run: a tag each
    (``genfair.model_run.<model>/<methodology>``: the run id) and a list of links in its
    description. A model run unchanged since an earlier study stays nested under the study run
    that logged it (MLflow gives a run one parent): the list says so."""
    from genfair.study.lineage import PARAMS_CHANGED  # mlflow: see track_study

    run = client.get_run(parent_id)
    note = _LINKS.sub("", run.data.tags.get("mlflow.note.content", ""))
    links = f"\n\n{MODEL_RUNS} ({len(runs)}):\n" + "\n".join(
        f"- [{name}](#/experiments/{experiment}/runs/{run_id})"
        + ("" if nested else " (unchanged: nested under the earlier study run that logged it)")
        for name, (run_id, nested) in sorted(runs.items())
    )
    head, listed, changes = note.partition(PARAMS_CHANGED)  # the links before the long list
    wanted = {
        "mlflow.note.content": head + links + listed + changes,
        **{mlflow_key(f"genfair.model_run.{name}"): run_id for name, (run_id, _) in runs.items()},
    }
    for tag, value in wanted.items():
        if run.data.tags.get(tag) != value:
            client.set_tag(parent_id, tag, value)


def split_metrics(ledger: list[dict[str, Any]], responses: Path) -> dict[str, float]:
    """``usage.sent.*`` and ``usage.cached.*``: the split of the latest generate (in the
    cache folder's ledger) that wrote these responses; none when the ledger lacks it (e.g.
    generated on another machine). Logged with the run, never an output: outputs are the
    same whether the cache answered or not."""
    split = latest_split(ledger, file_sha256(responses)) if responses.is_file() else None
    if split is None:
        return {}
    return {
        f"usage.{source}.{name}": float(value)
        for source, counts in split.items()
        for name, value in asdict(counts).items()
    }


def _score_metrics(scores: pd.DataFrame, keys: tuple[str, ...]) -> dict[str, float]:
    """One MLflow metric per numeric cell: ``<key values>.<column>``."""
    metrics = {}
    for row in scores.to_dict("records"):
        prefix = ".".join(str(row[k]) for k in keys if k in row and not pd.isna(row[k]))
        for column, value in row.items():
            if column not in keys and isinstance(value, (int, float)) and not pd.isna(value):
                metrics[f"{prefix}.{column}"] = float(value)
    return metrics


def _log_params(mlflow: Any, params: dict[str, Any]) -> None:
    """Log ``params`` under keys MLflow takes: a config key (a model's ``extra_body`` key is
    the endpoint's) or a label from data is mapped by :func:`genfair.names.mlflow_key`."""
    mlflow.log_params({mlflow_key(k): v for k, v in params.items()})


def _log_metrics(mlflow: Any, metrics: dict[str, float]) -> None:
    """Log ``metrics`` under keys MLflow takes (a score row's labels can be a model's text,
    an OpenBias bias name): :func:`genfair.names.mlflow_key`."""
    mlflow.log_metrics({mlflow_key(k): v for k, v in metrics.items()})


def _log_table(mlflow: Any, frame: pd.DataFrame, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        spreadsheet_safe(frame).to_csv(path, index=False)  # opened by people: no formulas
        mlflow.log_artifact(str(path))


def _log_figure(mlflow: Any, figure: Any, name: str) -> None:
    from genfair.methodologies.plotting import as_data, one_pass, plt

    mlflow.log_figure(one_pass(as_data(figure)), name)
    plt.close(figure)
