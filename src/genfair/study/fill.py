"""``genfair fill``: answer every call of the study into the response cache, on the study's
executor (a Dask cluster: ``generation.executor: dask``), so that a later ``dvc repro``
anywhere only replays from the cache.

Each selected run (model x methodology of ``runs``) takes its methodology's probes, built in
memory as its ``probes`` stage would (once for all the methodology's models), and runs the
methodology's ``generate`` through the cache. A methodology whose calls depend on earlier
answers (proposals, then images, then questions about them) fills stage by stage, as its
``generate`` does; runs fill side by side (``jobs`` at once), so the cluster gets the calls
of many runs together. Nothing is written outside
the cache and image store (images a run exports go to a scratch folder). Resumable: a rerun
finds what is cached and asks only the rest. A run that cannot start (its probes need a
curation stage not yet run, a model that fails to load) is reported and the others go on.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextvars import copy_context
from pathlib import Path

import pandas as pd

from genfair.errors import EXPECTED
from genfair.instruments.fanout import readings_executor
from genfair.models.dask_executor import calls_executor
from genfair.study.answers import answer, cache_opener, check_errors
from genfair.study.context import configured
from genfair.study.layout import Layout
from genfair.study_params import ConfigError, StudyParams

log = logging.getLogger(__name__)


def select_runs(
    params: StudyParams, models: list[str] | None, methodologies: list[str] | None
) -> list[dict]:
    """The study's runs restricted to ``models`` and ``methodologies`` (``None``: all); an
    unknown name, or no run left, is a :class:`ConfigError` (listing the known names)."""
    runs = list((params.runs or {}).values())
    for given, known, what in (
        (models, params.models, "model"),
        (methodologies, params.methodologies, "methodology"),
    ):
        unknown = sorted(set(given or ()) - set(known))
        if unknown:
            raise ConfigError(
                f"no {what} {', '.join(map(repr, unknown))} in the study; known: {', '.join(known)}"
            )
    chosen = [
        r
        for r in runs
        if (models is None or r["model"] in models)
        and (methodologies is None or r["methodology"] in methodologies)
    ]
    if not chosen:
        raise ConfigError(
            "no run of the study matches --models / --methodologies (params.yaml: runs)"
        )
    return chosen


def fill(
    params: StudyParams,
    models: list[str] | None = None,
    methodologies: list[str] | None = None,
    jobs: int = 1,
) -> dict[str, str]:
    """Answer every call of the selected runs into the cache; per run ``model · methodology``,
    ``"ok"`` or the one-line reason it did not fill (the others still fill)."""
    runs = select_runs(params, models, methodologies)
    open_cache = cache_opener(params)
    outcome: dict[str, str] = {}
    log.info(
        "filling the cache for %d runs (%d at once, executor %s)",
        len(runs),
        jobs,
        params.generation.executor,
    )
    with (
        calls_executor(params.generation, open_cache),
        readings_executor(params.generation),  # a run may read its images (IRIS's stereotypes)
        tempfile.TemporaryDirectory(prefix="genfair-fill-") as scratch,
    ):
        layout = Layout(Path(scratch))
        built: dict[str, pd.DataFrame] = {}
        building = {name: threading.Lock() for name in {r["methodology"] for r in runs}}

        def probes_of(methodology: str) -> pd.DataFrame:
            # built once for all its models (in this process, beside the calls already out)
            with building[methodology]:
                if methodology not in built:
                    method, config = configured(params, methodology)
                    built[methodology] = method.build_probes(config, params.seed)
            return built[methodology].copy()

        def one(model: str, methodology: str) -> str:
            probes = probes_of(methodology)
            responses, _ = answer(params, model, methodology, probes, layout, open_cache)
            check_errors(
                responses, 0.0, f"{model} · {methodology}"
            )  # failed calls are not cached: not filled
            return ", ".join(f"{k} {v}" for k, v in responses["status"].value_counts().items())

        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fill") as pool:
            # each run in a copy of this context: it holds the executor
            futures = {
                pool.submit(
                    copy_context().run, one, r["model"], r["methodology"]
                ): f"{r['model']} · {r['methodology']}"
                for r in runs
            }
            for future in as_completed(futures):
                name = futures[future]
                try:
                    log.info("%s: filled (%s)", name, future.result())
                    outcome[name] = "ok"
                except EXPECTED as exc:
                    log.error("%s: not filled: %s", name, exc)
                    outcome[name] = str(exc).splitlines()[0]
    return outcome
