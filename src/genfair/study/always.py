"""The stages every ``dvc repro`` runs (``always/dvc.yaml``), without validating ``params.yaml``
again when it has not changed.

``curation_inputs`` and ``mlflow_sync`` run on every repro, so their start-up is most of a no-op
repro's cost beyond ``dvc status`` (issue 25 point 4). Their checks are cheap; building the
validated study frame is not (pydantic). Their full paths
(:func:`genfair.study.curation_stages.curation_inputs`, :func:`sync_store` below) record what
they derived from the params in a stamp (:mod:`genfair.stamps`); :func:`quick` runs the same check
with that record when the stamp's key (the bytes of ``params.yaml``, the environment variables the
stage reads, the working directory) still matches, and reports ``False`` (take the full path)
otherwise. Nothing here imports pydantic, pandas or MLflow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genfair.curation.inputs import write_paths_fingerprint
from genfair.logs import setup
from genfair.names import PARAMS_FILE
from genfair.stamps import read_stamp, stamp_key, write_stamp
from genfair.study.layout import Layout
from genfair.study.store import (
    SQLITE,
    follow_checkout,
    listed_keys,
    missing_runs,
    redact,
    tracking_uri,
    workspace_root,
    write_store,
)

if TYPE_CHECKING:  # not at run time: the fast paths have no pydantic
    from genfair.frame import StudyFrame

log = logging.getLogger(__name__)

CURATION_STAGE = "curation_inputs"
STORE_STAGE = "mlflow_sync"


def curation_key() -> str:
    """What ``curation_inputs`` derives its input lists and hash caches from."""
    return stamp_key([PARAMS_FILE], ["GENFAIR_CACHE_DIR"])


def store_key() -> str:
    """What ``mlflow_sync`` derives the store's URI and experiment from."""
    return stamp_key([PARAMS_FILE], ["MLFLOW_TRACKING_URI"])


def write_sections(sections: dict[str, dict[str, Any]]) -> list[Path]:
    """Each curation section's fingerprint (``paths`` as configured, ``out``, ``hash_cache``)."""
    return [
        write_paths_fingerprint(
            name,
            [Path(p) for p in entry["paths"]],
            Path(entry["out"]),
            hash_cache=Path(entry["hash_cache"]),
        )
        for name, entry in sections.items()
    ]


def quick_curation_inputs() -> bool:
    """``curation_inputs`` with the input lists of the last full run: every file still hashed."""
    state = read_stamp(CURATION_STAGE, curation_key())
    if state is None:
        return False
    write_sections(state["sections"])
    return True


def quick_sync_store(layout: Layout = Layout()) -> bool:
    """``mlflow_sync``'s check with the last full run's store: done when the store holds every
    run ``track`` listed, else ``False`` (the full path logs what it lacks)."""
    state = read_stamp(STORE_STAGE, store_key())
    if state is None:
        return False
    keys = listed_keys(layout.tracking)
    if missing_runs(keys, state["uri"], state["experiment"]) != []:
        return False
    log.info("MLflow %s holds all %d runs of %s", redact(state["uri"]), len(keys), layout.tracking)
    write_store(state["uri"], state["experiment"], keys, layout, workspace_root())
    return True


def quick(stage: str, check: Callable[[], bool]) -> bool:
    """Run ``check`` as ``stage``'s fast path; ``False`` (take the full path, which reports
    any problem in one clear line) when it cannot decide or fails."""
    setup(stage)
    try:
        return check()
    except Exception:  # a damaged stamp or a moved file: the full path knows what to say
        log.debug("%s: fast path failed, taking the full one", stage, exc_info=True)
        return False


def sync_store(params: StudyFrame, layout: Layout = Layout(), *, stamp: bool = False) -> Path:
    """``mlflow_sync``: nothing to do when the store holds every run ``track`` listed; else
    log what it lacks (a fresh clone's store, another ``MLFLOW_TRACKING_URI``). Writes where
    the runs are (``data/tracking/store.json``, shown in the report), changed only when that
    changes. ``stamp``: record the store it checked for the next run's fast path
    (:mod:`genfair.study.always`); only the stage, whose ``params`` are ``params.yaml``'s."""
    key = store_key()
    keys = listed_keys(layout.tracking)
    root = workspace_root()
    uri = tracking_uri(params, root)
    experiment = params.tracking.experiment
    follow_checkout(uri, experiment, root)
    missing = missing_runs(keys, uri, experiment)
    if missing == []:
        log.info("MLflow %s holds all %d runs of %s", redact(uri), len(keys), layout.tracking)
    else:
        # here, not at the top: the model layer and MLflow only when the store lacks a run
        from genfair.study.tracking import track_study
        from genfair.study_params import study_params

        log.info(
            "MLflow %s: %s; logging what it lacks",
            redact(uri),
            f"{len(missing)} of {len(keys)} runs missing" if missing else "checking through MLflow",
        )
        track_study(study_params(params), layout)
    if (
        stamp and uri.startswith(SQLITE) and redact(uri) == uri
    ):  # a server's check goes through MLflow anyway; never a secret in a stamp
        write_stamp(STORE_STAGE, key, {"uri": uri, "experiment": experiment})
    return write_store(uri, experiment, keys, layout, root)
