"""The IRIS part of the cross-model ``score`` stage (paper 002 §3.5, §4.1).

S/K calibration and the validation statistics need every model, so they run here, not in
``metrics@<model>``: each model's granular metrics (``data/metrics/<model>/iris/
scores.parquet``) are stacked, scored with :func:`genfair.scoring.iris.score_models` and
validated with :func:`genfair.scoring.iris_validation.validation_table`. Outputs:

- ``data/scores/iris.parquet``: one row per model x sector (and ``IRIS`` overall: models with
  all six sectors only), magnitude, S, K, score, Gen/Und codes, ``simulated``;
- ``data/scores/iris_summary.parquet``: the same, one row per model (Table 3's layout);
- ``data/scores/iris_granular.parquet``: every granular metric of every model;
- ``data/scores/iris_validation.parquet``: Cronbach's alpha per sector and ranking stability,
  or one ``not_computed`` row saying why (e.g. fewer than two models share a sector).

Without ``iris`` in the study the four files are written empty (they are DVC outputs).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.config import StudyParams, methodology_config
from genfair.io import read_parquet, write_parquet
from genfair.scoring.iris import model_summary, score_models
from genfair.scoring.iris_validation import COLUMNS as VALIDATION_COLUMNS
from genfair.scoring.iris_validation import validation_table

log = logging.getLogger(__name__)

NAME = "iris"
FILES = ("iris", "iris_summary", "iris_granular", "iris_validation")


def iris_models(params: StudyParams) -> list[str]:
    from genfair.pipeline import methodologies_for

    return [m for m in params.models if NAME in methodologies_for(params, m)] if NAME in params.methodologies else []


def granular_table(params: StudyParams, layout: Any) -> pd.DataFrame:
    parts = []
    for model in iris_models(params):
        frame = read_parquet(layout.metrics(model, NAME) / "scores.parquet")
        frame.insert(0, "simulated", params.model(model).backend == "simulated")
        frame.insert(0, "model", model)
        parts.append(frame)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _validation(granular: pd.DataFrame, seed: int) -> pd.DataFrame:
    try:
        return validation_table(granular, seed=seed)
    except ValueError as exc:  # e.g. fewer than two models share a sector
        log.warning("IRIS validation not computed: %s", exc)
        row = dict.fromkeys(VALIDATION_COLUMNS, math.nan)
        row |= {"analysis": "not_computed", "target": "all", "perturbed": "", "change": "",
                "statistic": str(exc), "n_models": granular["model"].nunique()}
        return pd.DataFrame([row], columns=VALIDATION_COLUMNS)


def score_iris(params: StudyParams, layout: Any) -> tuple[list[Path], dict[str, Any]]:
    """Write the four IRIS score tables; return them and the ``summary.json`` entry."""
    out = {name: layout.scores / f"{name}.parquet" for name in FILES}
    granular = granular_table(params, layout)
    if granular.empty:
        return [write_parquet(pd.DataFrame(), path) for path in out.values()], {}
    config = methodology_config(params, NAME).scoring
    simulated = granular.groupby("model", sort=False)["simulated"].first()
    scores = score_models(granular, config)
    scores.insert(1, "simulated", scores["model"].map(simulated).astype(bool))
    summary = model_summary(scores.drop(columns="simulated"))
    summary.insert(1, "simulated", summary["model"].map(simulated).astype(bool))
    validation = _validation(granular, params.seed)
    written = [
        write_parquet(scores, out["iris"]),
        write_parquet(summary, out["iris_summary"]),
        write_parquet(granular, out["iris_granular"]),
        write_parquet(validation, out["iris_validation"]),
    ]
    shown = ["model", "simulated", "sector", "magnitude", "S", "K", "score", "gen_code", "und_code"]
    log.info("IRIS scores (%s mode):\n%s", config.mode, scores[shown].round(3).to_string(index=False))
    entry: dict[str, Any] = {}
    for row in scores.to_dict("records"):
        node = entry.setdefault(row["model"], {"simulated": bool(row["simulated"]),
                                               **{k: None if pd.isna(row[k]) else str(row[k])
                                                  for k in ("gen_code", "und_code")}})
        node[row["sector"]] = {k: (None if pd.isna(row[k]) else round(float(row[k]), 6))
                               for k in ("score", "magnitude", "S", "K")}
    return written, entry
