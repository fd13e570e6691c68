"""Where the study's MLflow runs go, and whether the store still holds them: without MLflow.

``mlflow_sync`` runs on every ``dvc repro`` (MLflow follows the store, not ``dvc.lock``), so
its common case must cost almost nothing: it reads the run keys of ``data/tracking/runs.json``
and asks a SQLite store for them with ``sqlite3`` (importing MLflow alone takes seconds). Only
when the store lacks a run, or cannot be read this way (a tracking server, an unknown schema),
does ``mlflow_sync`` (:func:`genfair.study.always.sync_store`) hand over to
:func:`genfair.study.tracking.track_study`, which logs what is missing.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from genfair.io import write_json
from genfair.study.layout import Layout
from genfair.urls import strip_in_text

if TYPE_CHECKING:  # not at run time: mlflow_sync's fast path (genfair.study.always) has no pydantic
    from genfair.frame import StudyFrame

log = logging.getLogger(__name__)

#: the tag that keys a run by the content hash of what it logs
KEY_TAG = "genfair.key"
#: MLflow run statuses of a run still being logged, or left so by a kill
UNFINISHED = ("RUNNING", "SCHEDULED")

#: the prefix of a local SQLite store's URI
SQLITE = "sqlite:///"
# MLflow's SQLite schema (stable since MLflow 1.x: experiments, runs, tags)
_FINISHED_KEYS = """
    SELECT t.value FROM tags t
    JOIN runs r ON r.run_uuid = t.run_uuid
    JOIN experiments e ON e.experiment_id = r.experiment_id
    WHERE t.key = ? AND e.name = ? AND r.status = 'FINISHED'
      AND r.lifecycle_stage = 'active' AND e.lifecycle_stage = 'active'
"""
# runs of genfair's left unfinished by a kill (deleted ones included: an older genfair deleted
# them without ending them), which only MLflow's client can end
_UNFINISHED_RUNS = f"""
    SELECT count(*) FROM tags t
    JOIN runs r ON r.run_uuid = t.run_uuid
    JOIN experiments e ON e.experiment_id = r.experiment_id
    WHERE t.key = ? AND e.name = ? AND r.status IN {UNFINISHED}
"""


def workspace_root(cwd: Path | None = None) -> Path:
    """The main workspace, also from inside a DVC temporary experiment copy."""
    cwd = (cwd or Path.cwd()).resolve()
    parts = cwd.parts
    for i in range(len(parts) - 2):
        if parts[i : i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return cwd


def tracking_uri(params: StudyFrame, root: Path | None = None) -> str:
    return (
        os.environ.get("MLFLOW_TRACKING_URI")
        or params.tracking.uri
        or (f"{SQLITE}{(root or workspace_root()) / 'mlflow.db'}")
    )


#: where a local store keeps paths of artifacts (MLflow 3's schema; a missing table is skipped)
_ARTIFACT_COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("logged_models", "artifact_location"),
    ("model_versions", "storage_location"),
)
_ARTIFACTS = "mlartifacts"


def follow_checkout(uri: str, experiment: str, root: Path) -> None:
    """Point a local store that was copied or moved with its checkout at the checkout's own
    artifacts.

    MLflow keeps an experiment's artifact root (``<root>/mlartifacts``) and every run's
    artifact URI as absolute paths, so after ``cp -a study copy`` the copy's runs would be
    logged into ``study/mlartifacts``. When the SQLite store lies inside ``root`` and
    ``experiment``'s artifact root is another folder's ``mlartifacts``, every path under that
    folder is moved to ``root`` (the copy carries ``mlartifacts/`` along). A store outside
    the checkout is shared, and a tracking server chooses its own artifact root: neither is
    touched."""
    if not uri.startswith(SQLITE):
        return
    store = Path(uri[len(SQLITE) :])
    if not store.is_file() or not store.resolve().is_relative_to(root.resolve()):
        return
    new = root.resolve() / _ARTIFACTS
    with closing(sqlite3.connect(store, timeout=60)) as db, db:  # one transaction
        found = db.execute(
            "SELECT artifact_location FROM experiments WHERE name = ?", (experiment,)
        ).fetchone()
        location = found[0] if found else None
        if (
            not location
            or location == new.as_uri()
            or not location.startswith("file:///")
            or not location.endswith(f"/{_ARTIFACTS}")  # not genfair's layout: leave it
        ):
            return
        old_uri = location.removesuffix(_ARTIFACTS)
        old_path = unquote(old_uri.removeprefix("file://"))
        prefixes = [(old_uri, new.parent.as_uri() + "/"), (old_path, f"{new.parent}/")]
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        for table, column in _ARTIFACT_COLUMNS:
            for before, after in prefixes if table in tables else []:
                db.execute(
                    f"UPDATE {table} SET {column} = ? || substr({column}, ?) "  # noqa: S608
                    f"WHERE substr({column}, 1, ?) = ?",
                    (after, len(before) + 1, len(before), before),
                )
    log.info(
        "MLflow store %s was moved or copied: its artifact paths now point at %s (were %s)",
        store,
        new,
        location,
    )


def redact(uri: str) -> str:
    """``uri`` without ``user:password@`` nor credential-looking query parameters."""
    return strip_in_text(uri)


def display_uri(uri: str, root: Path) -> str:
    """The tracking URI without credentials nor this machine's paths (for committed files)."""
    uri = redact(uri)
    if uri.startswith(SQLITE):
        path = Path(uri[len(SQLITE) :])
        try:
            return f"{SQLITE}{path.resolve().relative_to(root.resolve())}"
        except ValueError:
            return f"{SQLITE}<outside the repository>/{path.name}"
    return uri


def listed_keys(runs_file: Path) -> list[str]:
    """The run keys ``track`` wrote (parent first); none when it has not run yet."""
    if not runs_file.is_file():
        return []
    runs = json.loads(runs_file.read_text(encoding="utf-8"))
    return [runs["parent_run"], *runs["child_runs"].values()]


def missing_runs(keys: list[str], uri: str, experiment: str) -> list[str] | None:
    """The keys without a finished run in ``experiment`` of the store at ``uri``; ``None``
    when only MLflow can tell (not a SQLite store, or a schema this query does not know) or
    must act (a run of genfair's left unfinished by a kill, which ``track`` ends)."""
    if not uri.startswith(SQLITE):
        return None
    path = Path(uri[len(SQLITE) :])
    if not path.is_file():
        return list(keys)  # no store yet: every run is missing
    try:
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as db:
            found = {value for (value,) in db.execute(_FINISHED_KEYS, (KEY_TAG, experiment))}
            (unfinished,) = db.execute(_UNFINISHED_RUNS, (KEY_TAG, experiment)).fetchone()
    except sqlite3.Error:
        return None
    if unfinished:
        return None
    return [key for key in keys if key not in found]


def write_store(uri: str, experiment: str, keys: list[str], layout: Layout, root: Path) -> Path:
    """``data/tracking/store.json``: where the runs are, without credentials or this machine's paths
    (rewritten only when that changes: ``mlflow_sync`` runs on every ``dvc repro``)."""
    return write_json(
        {"tracking_uri": display_uri(uri, root), "experiment": experiment, "runs": len(keys)},
        layout.tracking_store,
        if_changed=True,
    )
