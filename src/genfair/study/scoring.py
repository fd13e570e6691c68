"""The study's leaderboards and headline metrics: every model side by side, per methodology.

Simulators are kept in the tables, labelled ``simulated``, and never ranked: ``rank`` is
computed among real models only, within each group of comparable scores (the
methodology's :class:`~genfair.methodologies.base.Ranking`, per modality).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.config import StudyParams
from genfair.io import read_parquet, write_json, write_parquet
from genfair.methodologies import get_methodology
from genfair.methodologies.base import Methodology, Ranking
from genfair.study.context import model_info, models_for
from genfair.study.layout import Layout
from genfair.study.steps import read_study

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
    ranks = board[ranking.column].where(rankable).groupby(keys).rank(method="min", ascending=ranking.ascending)
    board["rank"] = ranks.astype("Int64")
    return board.sort_values([*group_by, "simulated", ranking.column],
                             na_position="last", kind="stable").reset_index(drop=True)


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
    rows = method.leaderboard(model_scores(params, method.name, layout), read_study(method.name, layout))
    if rows.empty:
        return rows
    rows = rows.copy()
    info = {m: {**vars(model_info(params, m)), "incomplete": incomplete(layout, m, method.name)}
            for m in params.models}
    for column in MODEL_COLUMNS[1:]:
        values = rows["model"].map(lambda m, c=column: info[m][c])
        if column in rows:
            rows[column] = values
        else:
            rows.insert(len(rows.columns), column, values)
    rows = rows[[*MODEL_COLUMNS, *[c for c in rows.columns if c not in MODEL_COLUMNS]]]
    rows["simulated"] = rows["simulated"].astype(bool)
    return leaderboard(rows, method.ranking)


def headline(method: Methodology, board: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``model -> {name: value, ...}`` of the methodology's headline metrics (simulators
    marked, a NaN or missing value as null), each name suffixed with the better direction."""
    out: dict[str, dict[str, Any]] = {}
    if board.empty:
        return out
    for model, rows in board.groupby("model", sort=False):
        node: dict[str, Any] = {"simulated": bool(rows["simulated"].iloc[0])}
        if "incomplete" in rows and rows["incomplete"].iloc[0]:
            node["incomplete"] = True
        for item in method.headline:
            match = rows
            for column, value in item.where.items():
                match = match[match[column] == value] if column in match else match.iloc[0:0]
            if match.empty or item.column not in match:
                continue
            value = match[item.column].iloc[0]
            node[f"{item.name} ({item.better} is better)"] = (
                None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 4))
        out[str(model)] = node
    return out


def score_study(params: StudyParams, layout: Layout = Layout()) -> list[Path]:
    """``score``: one leaderboard per methodology of the study (``data/scores/``) and the
    headline metrics (``data/headline.json``)."""
    written, summary = [], {}
    for name in params.methodologies:
        method = get_methodology(name)
        board = board_for(params, method, layout)
        written.append(write_parquet(board, layout.scores / f"{name}.parquet"))
        summary[name] = headline(method, board)
        if not board.empty:
            log.info("%s leaderboard: %d rows over %d models", name, len(board), board["model"].nunique())
    written.append(write_json(summary, layout.headline))
    return written
