"""The study's per-methodology steps as library functions; ``stages/*.py`` call them.

Each reads validated params and its inputs and writes its outputs atomically under a
:class:`~genfair.study.layout.Layout` root. A (model, methodology) pair whose modality the
methodology does not measure still gets its (empty) outputs, so every stage of DVC's
``matrix`` has them; the log says why.

Imported where used: the Dask executor, the answers' and budget's modules (SQLAlchemy), by the
``generate`` step alone.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.frame import (
    EXECUTION,
    PARAMS_FILE,
    check_digests,
    read_params,
    usage_ledger,
)
from genfair.instruments.fanout import readings_executor
from genfair.io import file_sha256, read_json, read_parquet, write_json, write_parquet
from genfair.logs import printable
from genfair.methodologies import get_methodology
from genfair.methodologies.base import StudyResult
from genfair.methodologies.reads import fields_of, plant_fields, step_config, step_fields
from genfair.models.config import PLACEMENT_KEYS
from genfair.models.usage import (
    Usage,
    append_entry,
    budgeted,
    fold_journals,
    ledger_entry,
    recording,
    start_journal,
)
from genfair.study.context import (
    configured,
    run_models,
    runs_methodology,
    step_context,
    study_context,
)
from genfair.study.footprint import check_footprint
from genfair.study.layout import Layout
from genfair.study.runs import run_key
from genfair.study_params import ConfigError, StudyParams, params_from, planted_block

log = logging.getLogger(__name__)


def make_probes(params: StudyParams, methodology: str, layout: Layout = Layout()) -> Path:
    method, config = configured(params, methodology)
    # a run this machine cannot hold: refused before building (it reads every size, and
    # writes nothing)
    check_footprint(method, config)
    probes = method.build_probes(step_config(method, config, "probes"), params.seed)
    by = next((c for c in ("modality", "context", "prompt_type", "sector") if c in probes), None)
    counts = ", ".join(f"{k}: {v}" for k, v in probes[by].value_counts().items()) if by else ""
    log.info("%d probes%s", len(probes), f" ({counts})" if counts else "")
    return write_parquet(probes, layout.probes(methodology))


def _check_run(params: StudyParams, model: str, methodology: str) -> None:
    """A pair the study does not measure has no stage; run by hand, it is an error that says why."""
    if not runs_methodology(params, model, methodology):
        only = params.model_methodologies.get(model)
        if only is not None and methodology in params.methodologies:
            raise ConfigError(
                f"{model} does not run {methodology}: the study holds it to "
                f"{', '.join(only)} (conf/study.yaml: model_methodologies.{model})"
            )
        raise ConfigError(
            f"{model} does not run {methodology}: it is a {params.model(model).modality} model and "
            f"{methodology} measures {', '.join(configured(params, methodology)[0].modalities)} "
            "(params.yaml: runs lists the pairs the study measures)"
        )


def generate(
    params: StudyParams,
    model: str,
    methodology: str,
    layout: Layout = Layout(),
    limit: int | None = None,
) -> Path:
    """Ask the model the methodology's probes (of its modality), through the response cache,
    on the executor ``generation.executor`` names. Fails (:class:`IncompleteGeneration`)
    when too many calls end in ``error``."""
    # here, not at the top: only generate opens the response cache (SQLAlchemy, the executors),
    # and every other stage starts without them (tests/study/test_stage_startup.py)
    from genfair.models.dask_executor import calls_executor
    from genfair.study.answers import answer, cache_opener, check_errors
    from genfair.study.budget import stage_budget

    out = layout.responses(model, methodology)
    _check_run(params, model, methodology)
    budget = stage_budget(params, model, methodology)
    probes = read_parquet(layout.probes(methodology))
    if limit is not None:
        probes = probes.head(limit)
    open_cache = cache_opener(params)
    used: Usage | None = None
    written: Path | None = None
    journal = _journal(params, model, methodology)
    try:
        # a methodology may read its images here too (IRIS's stereotypes for BIS-Gen)
        with (
            calls_executor(params.generation, open_cache),
            readings_executor(params.generation),
            recording(journal) as used,
            budgeted(budget),
        ):
            responses, runtime = answer(params, model, methodology, probes, layout, open_cache)
        if budget is not None and budget.stopped:
            log.warning(
                "%s · %s: the budget stopped %d calls (%d sent, cost %.4g); nothing computed "
                "is lost",
                model,
                methodology,
                budget.stopped,
                budget.sent,
                budget.spent,
            )
        _log_status("responses", responses["status"])
        log.info("usage: %s", used.to_dict())
        check_errors(responses, params.generation.max_error_rate, f"{model} · {methodology}")
        recorded = run_params(params, model, methodology)
        if runtime:
            recorded[RUNTIME] = runtime
        write_json(recorded, layout.run_params(model, methodology))
        # the answers' totals: the same whether they came from the cache or not (the split
        # goes to the cache folder's ledger, below)
        write_json(
            {**asdict(used.total()), "rules": sorted(used.rules)}, layout.usage(model, methodology)
        )
        written = write_parquet(responses, out)
        return written
    finally:  # paid calls are recorded even when interrupted or too many failed
        if used is not None:
            _append_split(params, model, methodology, used, written)


def _append_split(
    params: StudyParams, model: str, methodology: str, used: Usage, written: Path | None
) -> None:
    """Append the run's cache/sent split to the ledger: a record beside the cache, not an
    output, so a ledger that cannot be written costs a warning, never the run."""
    ledger = usage_ledger(params.cache)
    try:
        digest = file_sha256(written) if written else None
        entry = ledger_entry(model, methodology, run_key(model, methodology), used, digest)
        if used.journal is not None:  # the line says which journal it closes
            entry["journal"] = used.journal.name
        append_entry(ledger, entry)
        if used.journal is not None:
            used.journal.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("%s: the usage ledger was not written (%s); outputs are complete", ledger, exc)


def _journal(params: StudyParams, model: str, methodology: str) -> Path | None:
    """This generate's usage journal, after folding those killed runs left into the ledger
    (:func:`genfair.models.usage.fold_journals`): a record, never the run's failure."""
    ledger = usage_ledger(params.cache)
    try:
        fold_journals(ledger)
    except OSError as exc:
        log.warning("%s: killed runs' journals not folded (%s)", ledger, exc)
    return start_journal(ledger, model, methodology, run_key(model, methodology))


#: the blocks of params.yaml besides the run's models and methodology that its steps read;
#: generate@ depends on them all (dvc.yaml) and records them for label@ and metrics@
RUN_BLOCKS = ("seed", "generation", "instruments")
#: run_params.json's record of how a local model ran here (engine, dtype): read by no step
RUNTIME = "runtime"
#: settings no result depends on: label@ and metrics@ take them from params.yaml
SETTINGS = ("scale", "cache", "tracking")


def run_params(params: StudyParams, model: str, methodology: str) -> dict[str, Any]:
    """What a run's steps read of the study's params: :data:`RUN_BLOCKS`, the model under
    test and the models the methodology reads, the methodology's config. ``generate``
    records it beside the responses, so the run's labels and metrics are computed under
    the parameters its responses were generated with, and their stages need not parse
    ``params.yaml`` (DVC parses it once per stage that lists params)."""
    written = params.model_dump(
        mode="json",
        exclude_unset=True,
        include={*RUN_BLOCKS, "models", "methodologies"},
        exclude={"generation": set(EXECUTION), "models": {"__all__": set(PLACEMENT_KEYS)}},
    )
    return {
        **{k: v for k, v in written.items() if k in RUN_BLOCKS},
        "models": {m: written["models"][m] for m in run_models(params, model, methodology)},
        "methodologies": {methodology: generate_fields(params, model, methodology, written)},
    }


def generate_fields(
    params: StudyParams, model: str, methodology: str, written: dict[str, Any]
) -> dict[str, Any]:
    """The fields of the methodology's block that ``generate`` of ``model`` reads (its
    ``reads``, and its plants for a simulator): what it records, and depends on."""
    method = get_methodology(methodology)
    config = params.model(model)
    simulated = config.backend == "simulated"
    keep = {*step_fields(method, "generate"), *(plant_fields(method) if simulated else ())}
    # a simulator's own plants in place of the methodology's (genfair.study_params.run_config)
    block = planted_block(
        written["methodologies"][methodology], getattr(config, "plants", {}).get(methodology)
    )
    return {k: v for k, v in block.items() if k in keep}


def recorded_params(
    model: str, methodology: str, layout: Layout = Layout(), path: str = PARAMS_FILE
) -> StudyParams:
    """The params ``generate@<model>-<methodology>`` recorded (:func:`run_params`), with
    :data:`SETTINGS` and the methodology's block from ``path``: the params of the run's label
    and metrics steps (each reads only the fields of the block it declares)."""
    recorded = layout.run_params(model, methodology)
    written = read_json(
        recorded, ConfigError, f"generate@{run_key(model, methodology)} writes it (`dvc repro`)"
    )
    written.pop(RUNTIME, None)
    raw = read_params(path)
    # the methodology's own fields from params.yaml: each step reads those it declares (its
    # stage depends on their digest), generate's record holds generate's alone
    check_digests(raw, path, fields_of)
    block = (raw.get("methodologies") or {}).get(methodology)
    own = {"methodologies": {methodology: block}} if isinstance(block, dict) else {}
    # where readings run is params.yaml's now, not generate's record (which leaves it out)
    generation = raw.get("generation")
    if isinstance(generation, dict):
        where = {k: generation[k] for k in EXECUTION if k in generation}
        written["generation"] = {**(written.get("generation") or {}), **where}
    return params_from(
        {**{k: raw[k] for k in SETTINGS if k in raw}, **written, **own}, str(recorded)
    )


def label(params: StudyParams, model: str, methodology: str, layout: Layout = Layout()) -> Path:
    out = layout.labels(model, methodology)
    _check_run(params, model, methodology)
    method, config = configured(params, methodology, "label")
    probes = read_parquet(layout.probes(methodology))
    responses = read_parquet(layout.responses(model, methodology))
    # the instruments' readings run where generation.executor/instrument_workers say; the
    # executor starts workers (or imports Dask) only when there is something to read
    with readings_executor(params.generation):
        labels = method.label(
            probes, responses, config, step_context(params, model, methodology, layout)
        )
    _log_status("labels", labels["status"])
    return write_parquet(labels, out)


def compute_metrics(
    params: StudyParams,
    model: str,
    methodology: str,
    layout: Layout = Layout(),
    log_scores: bool = True,
) -> Path:
    """The model's scores, detail tables and ``summary.json`` in its metrics folder (the
    scores table logged, unless the caller prints it: ``genfair try``)."""
    folder = layout.metrics(model, methodology)
    _check_run(params, model, methodology)
    method, config = configured(params, methodology, "metrics")
    labels = read_parquet(layout.labels(model, methodology))
    result = method.metrics(labels, config, step_context(params, model, methodology, layout))
    write_parquet(result.scores, folder / "scores.parquet")
    for table, frame in result.tables.items():
        write_parquet(frame, layout.named(folder, table, suffix=".parquet"))
    if log_scores:
        log.info("scores:")
        for line in brief(result.scores).splitlines():  # one record a row: cells are data
            log.info("  %s", line)
    status = read_parquet(layout.responses(model, methodology))["status"]
    errors = int((status == "error").sum())
    if errors:  # allowed by generation.max_error_rate: the scores come from part of the calls
        log.warning(
            "%s · %s: scores from incomplete data (%d of %d calls failed)",
            model,
            methodology,
            errors,
            len(status),
        )
    used = layout.usage(model, methodology)  # absent: generated before usage was recorded
    usage = {"usage": read_json(used, ConfigError, "generate writes it")} if used.exists() else {}
    return write_json(
        {**result.summary, "incomplete": {"errors": errors, "calls": int(len(status))}, **usage},
        folder / "summary.json",
    )


def study_step(params: StudyParams, methodology: str, layout: Layout = Layout()) -> Path:
    """The methodology's study-level step over every model that runs it (an empty
    ``summary.json`` when it has none, or no model runs it)."""
    method, config = configured(params, methodology, "study")
    folder = layout.study(methodology)
    folder.mkdir(parents=True, exist_ok=True)
    result = method.study(config, study_context(params, methodology, layout))
    if result is None:
        log.info("%s: no study-level step to run", methodology)
        write_json({}, folder / "params.json")
        return write_json({}, folder / "summary.json")
    for table, frame in result.tables.items():
        write_parquet(frame, layout.named(folder, table, suffix=".parquet"))
        log.info("%s: %s, %d rows", methodology, table, len(frame))
    write_json(result.params, folder / "params.json")
    return write_json(result.summary, folder / "summary.json")


def _log_status(what: str, status: pd.Series) -> None:
    log.info("%s: %s", what, ", ".join(f"{k} {v}" for k, v in status.value_counts().items()))


def brief(scores: pd.DataFrame, width: int = 12) -> str:
    """A scores table for logs and the CLI: its numeric columns rounded, its labels (text
    columns, pandas 3's ``str`` dtype included), at most ``width`` columns."""
    if not len(scores):
        return "(no scores)"
    keep = [
        c
        for c in scores.columns
        if scores[c].dtype.kind in "fiub"
        or scores[c].dtype == object
        or pd.api.types.is_string_dtype(scores[c].dtype)
    ][:width]
    shown = scores[keep].round(3)
    for column in shown.columns[shown.dtypes.map(lambda d: d.kind not in "fiub")]:
        # a label from a model (a bias name) is data: its newline or escape code is escaped
        shown[column] = shown[column].map(lambda v: printable(v) if isinstance(v, str) else v)
    return shown.to_string(index=False)


def read_study(methodology: str, layout: Layout = Layout()) -> StudyResult | None:
    """``study@<methodology>``'s outputs as written (None when it had nothing to compute)."""
    folder = layout.study(methodology)
    summary_path = folder / "summary.json"
    if not summary_path.exists():
        return None
    tables = {path.stem: read_parquet(path) for path in sorted(folder.glob("*.parquet"))}
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    params_path = folder / "params.json"
    params = json.loads(params_path.read_text(encoding="utf-8")) if params_path.exists() else {}
    if not tables and not summary:
        return None
    return StudyResult(tables=tables, summary=summary, params=params)
