"""IRIS's study-level step (paper 002 §3.5, §4.1): scores for every model at once.

S/K calibration and the validation statistics need every model, so they run in
``study@iris``, not in ``metrics@<model>``: each model's granular metrics (its metrics
folder's ``scores.parquet``) are stacked, scored with
:func:`genfair.methodologies.iris.scoring.score_models` and validated with
:func:`genfair.methodologies.iris.validation.validation_table`. Tables
(``data/study/iris/``):

- ``scores``: one row per model x sector (and ``IRIS`` overall: models with all six sectors
  only), magnitude, S, K, score, ``partial``, Gen/Und codes (marked `` (partial)`` when a
  letter comes from a partial sector), ``simulated`` (the leaderboard);
- ``summary``: the same, one row per model (Table 3's layout, ``partial_<sector>`` columns);
- ``granular``: every granular metric of every model;
- ``validation``: Cronbach's alpha per sector and ranking stability, or one
  ``not_computed`` row saying why (e.g. fewer than two models share a sector);
- ``sector_correlation``: Fig. 4(c), the correlation of the six sector scores across models;
- ``architecture_test``: Fig. 4(d), Welch's t-test of scores between architecture groups
  (each model's ``architecture``, its config's optional field; n/a with the reason when a
  group has fewer than 2 models);
- ``tournament_floor``: the RFS-Und JSD rows beside the oracle floor of the tournament prior
  (the JSD a perfectly calibrated model would get), and the excess over it.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pandas as pd

from genfair.methodologies.base import StudyContext, StudyResult
from genfair.methodologies.iris.scoring import IrisScoringConfig, model_summary, score_models
from genfair.methodologies.iris.validation import COLUMNS as VALIDATION_COLUMNS
from genfair.methodologies.iris.validation import validation_table
from genfair.methodologies.iris.validity import architecture_welch, sector_correlation

log = logging.getLogger(__name__)


def granular_table(ctx: StudyContext) -> pd.DataFrame:
    """Every model's granular metrics, with ``model`` and ``simulated`` columns first."""
    parts = []
    for run in ctx.runs:
        frame = run.scores()
        frame.insert(0, "simulated", run.model.simulated)
        frame.insert(0, "model", run.model.name)
        parts.append(frame)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _validation(granular: pd.DataFrame, seed: int, config: IrisScoringConfig) -> pd.DataFrame:
    try:
        return validation_table(granular, seed=seed, alpha_items=config.alpha_items)
    except ValueError as exc:  # e.g. fewer than two models share a sector
        log.warning("IRIS validation not computed: %s", exc)
        row = dict.fromkeys(VALIDATION_COLUMNS, math.nan)
        row |= {
            "analysis": "not_computed",
            "target": "all",
            "perturbed": "",
            "change": "",
            "statistic": str(exc),
            "n_models": granular["model"].nunique(),
        }
        return pd.DataFrame([row], columns=VALIDATION_COLUMNS)


def architectures(ctx: StudyContext) -> dict[str, str | None]:
    """Each model's ``architecture`` (its config's optional field; None when unset)."""
    return {run.model.name: run.model.architecture for run in ctx.runs}


def tournament_floor(granular: pd.DataFrame) -> pd.DataFrame:
    """RFS-Und JSD rows with their ``oracle_floor`` and ``excess`` = value - floor."""
    if "oracle_floor" not in granular.columns:
        return pd.DataFrame(
            columns=["model", "simulated", "metric", "value", "oracle_floor", "excess", "note"]
        )
    rows = granular[(granular["sector"] == "RFS-Und") & (granular["core"] == "M5")]
    out = rows[["model", "simulated", "metric", "value", "oracle_floor", "note"]].copy()
    out.insert(5, "excess", out["value"] - out["oracle_floor"])
    return out.reset_index(drop=True)


def score_study(ctx: StudyContext, config: IrisScoringConfig) -> StudyResult | None:
    """The IRIS study tables and the summary entry (None without a model running IRIS)."""
    granular = granular_table(ctx)
    if granular.empty:
        return None
    simulated = granular.groupby("model", sort=False)["simulated"].first()
    scores = score_models(granular, config)
    scores.insert(1, "simulated", scores["model"].map(simulated).astype(bool))
    summary = model_summary(scores.drop(columns="simulated"))
    summary.insert(1, "simulated", summary["model"].map(simulated).astype(bool))
    validation = _validation(granular, ctx.seed, config)
    plain = scores.drop(columns="simulated")
    correlation = sector_correlation(plain)
    scored = set(plain["model"])
    welch = architecture_welch(plain, {m: a for m, a in architectures(ctx).items() if m in scored})
    shown = [
        "model",
        "simulated",
        "sector",
        "partial",
        "magnitude",
        "S",
        "K",
        "score",
        "gen_code",
        "und_code",
    ]
    log.info(
        "IRIS scores (%s mode):\n%s", config.mode, scores[shown].round(3).to_string(index=False)
    )
    entry: dict[str, Any] = {}
    for row in scores.to_dict("records"):
        node = entry.setdefault(
            row["model"],
            {
                "simulated": bool(row["simulated"]),
                **{k: None if pd.isna(row[k]) else str(row[k]) for k in ("gen_code", "und_code")},
            },
        )
        node[row["sector"]] = {
            k: (None if pd.isna(row[k]) else round(float(row[k]), 6))
            for k in ("score", "magnitude", "S", "K")
        }
        node[row["sector"]]["partial"] = bool(row["partial"])
        if row["partial"] and row["sector"] != "IRIS":
            node.setdefault("partial_sectors", []).append(row["sector"])
    tables = {
        "scores": scores,
        "summary": summary,
        "granular": granular,
        "validation": validation,
        "sector_correlation": correlation,
        "architecture_test": welch,
        "tournament_floor": tournament_floor(granular),
    }
    return StudyResult(tables=tables, summary=entry, params={"scoring.mode": config.mode})
