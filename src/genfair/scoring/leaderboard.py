"""The study's leaderboards: every model's scores side by side, per methodology.

Simulators are kept in the tables, labelled ``simulated``, and never ranked: ``rank`` is
computed among real models only, within each group of comparable scores.

* ``fact_or_fair``: per context and attribute, by the trade-off distance (lower is better).
* ``fact_or_fair_t2i``: the same, over the T2I objective and subjective (``baseline``) tests.
* ``news_bias``: per prompt type, level, attribute and measure, by the bias measure's mean
  (``W``, ``S``, ``T``: lower is less biased); refusal rates are listed, not ranked (a
  refusal of a biased prompt is not a worse answer). The document level comes from the
  cross-model ``news_topics`` stage.
* ``iris``: not a ranking but IRIS sector / overall scores, codes and the validation table,
  computed over every model at once (:mod:`genfair.scoring.iris_study`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from genfair.config import StudyParams
from genfair.io import read_parquet, write_json, write_parquet
from genfair.pipeline import Layout, methodologies_for

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ranking:
    """How a methodology's scores table is ranked."""

    group_by: tuple[str, ...]
    column: str
    ascending: bool
    #: (column, values) of rows that are shown but never ranked
    unranked: tuple[str, tuple[str, ...]] | None = None
    #: score columns copied into ``summary.json``
    shown: tuple[str, ...] = ()


RANKINGS = {
    "fact_or_fair": Ranking(("context", "attribute"), "distance", True,
                            shown=("s_fact", "s_e", "s_kld", "s_fair", "distance")),
    "fact_or_fair_t2i": Ranking(("context", "attribute"), "distance", True,
                                shown=("s_fact", "s_e", "s_kld", "s_fair", "distance")),
    "news_bias": Ranking(("prompt_type", "level", "attribute", "measure"), "mean", True,
                         unranked=("level", ("refusal",)), shown=("mean", "ci_low", "ci_high", "n")),
}


def leaderboard(scores: pd.DataFrame, methodology: str) -> pd.DataFrame:
    """Add ``rank`` among non-simulated models within each group of the methodology."""
    spec = RANKINGS[methodology]
    board = scores.copy()
    rankable = ~board["simulated"]
    if spec.unranked is not None:
        column, values = spec.unranked
        rankable &= ~board[column].isin(values)
    keys = [board[k].fillna("") for k in spec.group_by]
    ranks = board[spec.column].where(rankable).groupby(keys).rank(method="min", ascending=spec.ascending)
    board["rank"] = ranks.astype("Int64")
    return board.sort_values([*spec.group_by, "simulated", spec.column],
                             na_position="last", kind="stable").reset_index(drop=True)


def _document_scores(layout: Layout) -> pd.DataFrame:
    path = layout.topics("news_bias") / "scores.parquet"
    return read_parquet(path) if path.exists() else pd.DataFrame()


def score_study(params: StudyParams, layout: Layout = Layout()) -> list[Path]:
    frames: dict[str, list[pd.DataFrame]] = {}
    documents = _document_scores(layout)
    for model, config in params.models.items():
        for name in methodologies_for(params, model):
            if name == "iris":  # IRIS scores and validation: genfair.scoring.iris_study, below
                continue
            scores = read_parquet(layout.metrics(model, name) / "scores.parquet")
            if name == "news_bias" and not documents.empty:
                extra = documents[documents["model"] == model].drop(columns="model")
                scores = pd.concat([scores, extra[scores.columns]], ignore_index=True)
            scores.insert(0, "simulated", config.backend == "simulated")
            scores.insert(0, "backend", config.backend)
            scores.insert(0, "model", model)
            frames.setdefault(name, []).append(scores)
    written, summary = [], {}
    # every leaderboard file exists (DVC declares them all): empty for a methodology left
    # out of the study
    for name in RANKINGS:
        if name not in frames:
            written.append(write_parquet(pd.DataFrame(), layout.scores / f"{name}.parquet"))
    for name, parts in frames.items():
        spec = RANKINGS[name]
        board = leaderboard(pd.concat(parts, ignore_index=True), name)
        written.append(write_parquet(board, layout.scores / f"{name}.parquet"))
        summary[name] = _summary(board, spec)
        shown = ["model", "simulated", *spec.group_by, spec.column, "rank"]
        log.info("%s leaderboard:\n%s", name, board[shown].round(3).to_string(index=False))
    from genfair.scoring.iris_study import score_iris

    iris_files, iris_summary = score_iris(params, layout)
    written.extend(iris_files)
    if iris_summary:
        summary["iris"] = iris_summary
    written.append(write_json(summary, layout.scores / "summary.json"))
    return written


def _summary(board: pd.DataFrame, spec: Ranking) -> dict:
    """Nested ``model -> group... -> score`` for ``dvc metrics show``."""
    out: dict = {}
    for row in board.to_dict("records"):
        node = out.setdefault(row["model"], {"simulated": bool(row["simulated"])})
        for key in spec.group_by:
            value = row[key]
            node = node.setdefault("all" if pd.isna(value) else str(value), {})
        for score in spec.shown:
            value = row.get(score)
            node[score] = None if pd.isna(value) else round(float(value), 6)
        node["rank"] = None if pd.isna(row["rank"]) else int(row["rank"])
    return out
