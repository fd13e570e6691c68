"""The study's leaderboard: every model's scores side by side, per methodology.

Simulators are kept in the table, labelled ``simulated``, and never ranked: ``rank`` is
computed among real models only (1 = closest to the trade-off curve for FACT-OR-FAIR).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from genfair.config import StudyParams
from genfair.io import read_parquet, write_json, write_parquet
from genfair.pipeline import Layout, methodologies_for

log = logging.getLogger(__name__)

#: per methodology: the score that ranks models and whether lower is better
RANKED_BY = {"fact_or_fair": ("distance", True)}
GROUP_BY = {"fact_or_fair": ["context", "attribute"]}


def leaderboard(scores: pd.DataFrame, methodology: str) -> pd.DataFrame:
    """Add ``rank`` among non-simulated models within each group of the methodology."""
    column, ascending = RANKED_BY[methodology]
    board = scores.copy()
    real = board[~board["simulated"]]
    board["rank"] = real.groupby(GROUP_BY[methodology])[column].rank(method="min", ascending=ascending)
    board["rank"] = board["rank"].astype("Int64")
    return board.sort_values([*GROUP_BY[methodology], "simulated", column]).reset_index(drop=True)


def score_study(params: StudyParams, layout: Layout = Layout()) -> list[Path]:
    frames: dict[str, list[pd.DataFrame]] = {}
    for model, config in params.models.items():
        for name in methodologies_for(params, model):
            scores = read_parquet(layout.metrics(model, name) / "scores.parquet")
            scores.insert(0, "simulated", config.backend == "simulated")
            scores.insert(0, "backend", config.backend)
            scores.insert(0, "model", model)
            frames.setdefault(name, []).append(scores)
    written, summary = [], {}
    for name, parts in frames.items():
        board = leaderboard(pd.concat(parts, ignore_index=True), name)
        written.append(write_parquet(board, layout.scores / f"{name}.parquet"))
        summary[name] = _summary(board, name)
        log.info("%s leaderboard:\n%s", name, board[["model", "simulated", *GROUP_BY[name], "distance", "rank"]]
                 .round(3).to_string(index=False))
    written.append(write_json(summary, layout.scores / "summary.json"))
    return written


def _summary(board: pd.DataFrame, methodology: str) -> dict:
    """Nested ``model -> group... -> score`` for ``dvc metrics show``."""
    column, _ = RANKED_BY[methodology]
    out: dict = {}
    for row in board.to_dict("records"):
        node = out.setdefault(row["model"], {"simulated": bool(row["simulated"])})
        for key in GROUP_BY[methodology]:
            node = node.setdefault(row[key], {})
        for score in ("s_fact", "s_e", "s_kld", "s_fair", column):
            value = row.get(score)
            node[score] = None if pd.isna(value) else round(float(value), 6)
        node["rank"] = None if pd.isna(row["rank"]) else int(row["rank"])
    return out
