"""The study's leaderboards and headline metrics: every model side by side, per methodology.

Simulators are kept in the tables, labelled ``simulated``, and never ranked: ``rank`` is
computed among real models only, within each group of comparable scores (the
methodology's :class:`~genfair.methodologies.comparison.Ranking`, per modality).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.io import read_parquet, write_csv, write_json, write_parquet
from genfair.methodologies import get_methodology
from genfair.methodologies.base import Methodology
from genfair.methodologies.comparison import NEUTRAL, Ranking
from genfair.names import INSTRUMENTS_FOLDER
from genfair.study.compare import compare_models, comparison_files, comparison_metrics
from genfair.study.context import model_info, models_for
from genfair.study.layout import Layout
from genfair.study.runs import check_runs
from genfair.study.steps import read_study
from genfair.study_params import ConfigError, StudyParams

log = logging.getLogger(__name__)

MODEL_COLUMNS = ("model", "backend", "modality", "simulated", "incomplete")


def leaderboard(board: pd.DataFrame, ranking: Ranking | None) -> pd.DataFrame:
    """Add ``rank`` among non-simulated models of one modality within each group."""
    if ranking is None or board.empty:
        return board.reset_index(drop=True)
    board = board.copy()
    rankable = ~board["simulated"].astype(bool)
    if ranking.unranked is not None:
        column, values = ranking.unranked
        rankable &= ~board[column].isin(values)
    group_by = ["modality", *ranking.group_by]
    keys = [board[k].fillna("") for k in group_by]
    ranks = (
        board[ranking.column]
        .where(rankable)
        .groupby(keys)
        .rank(method="min", ascending=ranking.ascending)
    )
    board["rank"] = ranks.astype("Int64")
    return board.sort_values(
        [*group_by, "simulated", ranking.column], na_position="last", kind="stable"
    ).reset_index(drop=True)


def model_scores(params: StudyParams, methodology: str, layout: Layout) -> pd.DataFrame:
    """Every model's scores table for the methodology, ``model`` first."""
    parts = []
    for model in models_for(params, methodology):
        scores = read_parquet(layout.metrics(model, methodology) / "scores.parquet")
        scores.insert(0, "model", model)
        parts.append(scores)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def incomplete(layout: Layout, model: str, methodology: str) -> bool:
    """Whether the model's scores come from part of its calls (some ended in ``error``,
    as ``generation.max_error_rate`` allowed)."""
    path = layout.metrics(model, methodology) / "summary.json"
    if not path.exists():
        return False
    return bool(json.loads(path.read_text(encoding="utf-8")).get("incomplete", {}).get("errors", 0))


def board_for(params: StudyParams, method: Methodology, layout: Layout) -> pd.DataFrame:
    """The methodology's ranked leaderboard, with the model columns first (``incomplete``:
    scores from part of the model's calls)."""
    rows = method.comparison.leaderboard(
        model_scores(params, method.name, layout), read_study(method.name, layout)
    )
    if rows.empty:
        return rows
    rows = rows.copy()
    info = {
        m: {**vars(model_info(params, m)), "incomplete": incomplete(layout, m, method.name)}
        for m in params.models
    }
    for column in MODEL_COLUMNS[1:]:
        values = rows["model"].map(lambda m, c=column: info[m][c])
        if column in rows:
            rows[column] = values
        else:
            rows.insert(len(rows.columns), column, values)
    rows = rows[[*MODEL_COLUMNS, *[c for c in rows.columns if c not in MODEL_COLUMNS]]]
    rows["simulated"] = rows["simulated"].astype(bool)
    return leaderboard(rows, method.comparison.ranking)


def headline_rows(method: Methodology, board: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per model and headline number of the methodology: ``model``, ``simulated``,
    ``name``, ``better``, ``value``, ``low`` and ``high`` (its interval, when declared; None
    for NaN) and ``rank`` (among real models; None for simulators, an unranked row or a
    :data:`~genfair.methodologies.comparison.NEUTRAL` number, reported and not ranked), in
    leaderboard order."""
    out: list[dict[str, Any]] = []
    if board.empty:
        return out
    for model, rows in board.groupby("model", sort=False):
        for item in method.comparison.headline:
            match = rows
            for column, value in item.where.items():
                match = match[match[column] == value] if column in match else match.iloc[0:0]
            if match.empty or item.column not in match:
                continue
            rank = match["rank"].iloc[0] if "rank" in match else None
            low, high = item.interval or (None, None)
            out.append(
                {
                    "model": str(model),
                    "simulated": bool(rows["simulated"].iloc[0]),
                    "name": item.name,
                    "better": item.better,
                    "value": _number(match, item.column),
                    "low": _number(match, low),
                    "high": _number(match, high),
                    "rank": None
                    if rank is None or pd.isna(rank) or item.better == NEUTRAL
                    else int(rank),
                }
            )
    return out


def _number(match: pd.DataFrame, column: str | None) -> float | None:
    """The first row's ``column`` rounded to 4 places; None for no column, None or NaN."""
    value = match[column].iloc[0] if column is not None and column in match else None
    return (
        None
        if value is None or (isinstance(value, float) and math.isnan(value))
        else round(float(value), 4)
    )


def headline(method: Methodology, board: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``model -> {name: value, ...}`` of the methodology's headline metrics (simulators
    marked, a NaN or missing value as null), each name suffixed with the better direction."""
    out: dict[str, dict[str, Any]] = {}
    if board.empty:
        return out
    for model in dict.fromkeys(board["model"]):
        rows = board[board["model"] == model]
        out[str(model)] = {"simulated": bool(rows["simulated"].iloc[0])}
        if "incomplete" in rows and rows["incomplete"].iloc[0]:
            out[str(model)]["incomplete"] = True
    for row in headline_rows(method, board):
        out[row["model"]][f"{row['name']} ({direction(row['better'])})"] = row["value"]
    return out


#: what a :data:`~genfair.methodologies.comparison.NEUTRAL` headline says instead of a direction
REPORTED = "reported, not ranked"


def direction(better: str) -> str:
    """How a headline's direction reads in ``data/headline.json``: "lower is better", or
    :data:`REPORTED`."""
    return REPORTED if better == NEUTRAL else f"{better} is better"


#: file-name suffix of a headline metric file: which way is better, or none (reported)
BETTER = {
    "lower": "lower_better",
    "higher": "higher_better",
    "closer to 0": "0_best",
    NEUTRAL: "reported",
}


def metric_files(method: Methodology, board: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``<model>/<name>.<better>.json`` -> ``{"value": value}`` (a simulator's folder is
    ``<model>.SIMULATED``): one file per model and headline number, so ``dvc metrics show``
    prints one row per number, named for what it is and which way is better, in two columns
    (path, value) that fit 120 characters."""
    files: dict[str, dict[str, Any]] = {}
    for row in headline_rows(method, board):
        folder = f"{row['model']}.SIMULATED" if row["simulated"] else row["model"]
        files[f"{folder}/{row['name']}.{BETTER[row['better']]}.json"] = {"value": row["value"]}
    return files


def instrument_metric_files(layout: Layout) -> list[Path]:
    """The validated instruments' accuracy per attribute
    (``data/metrics/instruments/<name>.json``) as
    ``data/headline/instruments/<name>.<attribute>.accuracy.higher_better.json``
    (``{"value": value}``): the instrument's headline numbers beside the models'."""
    written = []
    folder = layout.instruments
    for path in sorted(folder.glob("*.json")) if folder.exists() else []:
        summary = json.loads(path.read_text(encoding="utf-8"))
        for attribute, entry in summary.items():
            if isinstance(entry, dict) and entry.get("accuracy") is not None:
                written.append(
                    write_json(
                        {"value": entry["accuracy"]},
                        layout.headline_dir
                        / INSTRUMENTS_FOLDER
                        / f"{path.stem}.{attribute}.accuracy.{BETTER['higher']}.json",
                    )
                )
    return written


def write_plot(methodology: str, plot: str, layout: Layout = Layout()) -> Path:
    """``plot@<methodology>-<plot>``: the table of one declared ``dvc plots`` figure
    (:attr:`~genfair.methodologies.presentation.Presentation.plots`) from the methodology's
    leaderboard, as ``data/plots/<methodology>/<plot>.csv`` (its columns and no rows when
    the leaderboard has none to show)."""
    shown = get_methodology(methodology).presentation
    spec = next((p for p in shown.plots if p.name == plot), None)
    if spec is None:
        raise ConfigError(
            f"{methodology} declares no plot {plot!r} (its plots: "
            f"{', '.join(p.name for p in shown.plots) or 'none'}): recompose params.yaml "
            "with `genfair compose`"
        )
    board = read_parquet(layout.named(layout.scores, methodology, suffix=".parquet"))
    frame = shown.plot_tables(board).get(plot)
    if frame is None:
        log.warning("%s: no rows for plot %s (the study's models give none)", methodology, plot)
        frame = pd.DataFrame(columns=list(dict.fromkeys([spec.x, spec.y])))
    return write_csv(frame, layout.named(layout.plots, methodology, plot, suffix=".csv"))


def score_study(params: StudyParams, layout: Layout = Layout()) -> list[Path]:
    """``score``: one leaderboard per methodology of the study (``data/scores/``), the
    headline metrics (``data/headline.json``, and one file per number under
    ``data/headline/`` for ``dvc metrics``), the paired model comparisons
    (``data/comparisons.json``, :mod:`genfair.study.compare`)."""
    check_runs(params)
    written, summary = [], {}
    shutil.rmtree(
        layout.headline_dir, ignore_errors=True
    )  # a methodology taken out leaves no stale file
    for name in params.methodologies:
        method = get_methodology(name)
        board = board_for(params, method, layout)
        written.append(write_parquet(board, layout.named(layout.scores, name, suffix=".parquet")))
        summary[name] = headline(method, board)
        for file, values in metric_files(method, board).items():
            written.append(write_json(values, layout.headline_dir / name / file))
        if not board.empty:
            log.info(
                "%s leaderboard: %d rows over %d models", name, len(board), board["model"].nunique()
            )
    written.extend(instrument_metric_files(layout))
    written.append(write_json(summary, layout.headline))
    compared = compare_models(params, layout)
    log.info("%d paired comparisons, %d marked", len(compared), int(compared["marked"].sum()))
    written.append(write_json(comparison_metrics(compared), layout.comparisons))
    for file, values in comparison_files(compared).items():
        written.append(write_json(values, layout.headline_dir / file))
    return written
