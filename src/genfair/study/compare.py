"""Paired model comparisons (issue 33.2): for every pair of models of one modality that
answered the same probes, each headline number's difference A - B with a paired bootstrap
interval (the methodology's :attr:`~genfair.methodologies.base.Methodology.paired_unit`
resampled jointly, :mod:`genfair.metrics.paired`), and a mark where the Holm-adjusted
p-value across the whole study's comparisons is below ``1 - CONFIDENCE``. Simulators are
compared only with simulators, real models only with real models.

Written by ``score`` as ``data/comparisons.json`` (each difference also a ``dvc metrics``
file under ``data/headline/<methodology>/compare/``), logged to the study's MLflow run by
``track``, shown in the report as a matrix per headline.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from genfair.config import StudyParams
from genfair.io import read_parquet
from genfair.metrics.paired import holm, paired_differences
from genfair.models.base import derive_seed
from genfair.study.context import configured, model_info, models_for
from genfair.study.layout import Layout

log = logging.getLogger(__name__)

#: confidence level of every comparison (the replicates are the methodology's:
#: :meth:`~genfair.methodologies.base.Methodology.comparison_resamples`)
CONFIDENCE = 0.95
COLUMNS = [
    "methodology",
    "headline",
    "model_a",
    "model_b",
    "simulated",
    "n_units",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "marked",
]


def _pair(a: pd.DataFrame, b: pd.DataFrame, unit: str) -> tuple[list, list] | None:
    """Each model's row positions per common unit, in one unit order (None: fewer than two)."""
    common = sorted(set(a[unit].astype(str)) & set(b[unit].astype(str)))
    if len(common) < 2:
        return None
    rows = []
    for labels in (a, b):
        groups = labels.groupby(labels[unit].astype(str), sort=False).indices
        rows.append([groups[u] for u in common])
    return rows[0], rows[1]


def _statistic(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    labels: tuple[pd.DataFrame, pd.DataFrame],
    pair: tuple[list, list],
    names: list[str],
) -> Callable[[np.ndarray], np.ndarray]:
    """A's headline numbers minus B's, both on the labels of the units at ``positions``."""

    def difference(positions: np.ndarray) -> np.ndarray:
        a, b = (
            headlines(frame.iloc[np.concatenate([rows[p] for p in positions])])
            for frame, rows in zip(labels, pair, strict=True)
        )
        return np.array([a.get(n, np.nan) - b.get(n, np.nan) for n in names])

    return difference


def compare_models(
    params: StudyParams, layout: Layout = Layout(), resamples: int | None = None
) -> pd.DataFrame:
    """Every comparison of the study (:data:`COLUMNS`), Holm-adjusted across all of them;
    ``resamples`` replicates each (default: the methodology's own, its
    :meth:`~genfair.methodologies.base.Methodology.comparison_resamples`)."""
    found: list[dict[str, Any]] = []
    for name in params.methodologies:
        method, config = configured(params, name)
        if method.paired_unit is None:
            continue
        infos = [model_info(params, m) for m in models_for(params, name)]
        for a, b in itertools.combinations(infos, 2):
            if (a.modality, a.simulated) != (b.modality, b.simulated):
                continue  # simulators only against simulators, one modality at a time
            headlines = method.headline_function(config, a.modality)
            paths = [layout.labels(m.name, name) for m in (a, b)]
            if headlines is None or not all(p.exists() for p in paths):
                continue
            la, lb = (read_parquet(p).reset_index(drop=True) for p in paths)
            pair = _pair(la, lb, method.paired_unit)
            if pair is None:
                continue
            names = sorted(set(headlines(la)) & set(headlines(lb)))
            if not names:
                continue

            results = paired_differences(
                len(pair[0]),
                _statistic(headlines, (la, lb), pair, names),
                resamples=resamples or method.comparison_resamples(config),
                confidence=CONFIDENCE,
                seed=derive_seed(params.seed, "compare", name, a.name, b.name),
            )
            log.info("%s: %s vs %s over %d units", name, a.name, b.name, len(pair[0]))
            found.extend(
                {
                    "methodology": name,
                    "headline": headline,
                    "model_a": a.name,
                    "model_b": b.name,
                    "simulated": a.simulated,
                    "n_units": result["n"],
                    **{k: result[k] for k in ("difference", "ci_low", "ci_high", "p_value")},
                }
                for headline, result in zip(names, results, strict=True)
            )
    frame = pd.DataFrame(found, columns=COLUMNS[:-2])
    frame["p_holm"] = holm(frame["p_value"].tolist()) if len(frame) else []
    frame["marked"] = frame["p_holm"] < 1 - CONFIDENCE
    return frame[COLUMNS]


def comparison_metrics(frame: pd.DataFrame) -> dict[str, Any]:
    """The comparisons as nested JSON (``data/comparisons.json``, ``dvc metrics show``):
    methodology -> headline -> ``A_vs_B`` -> difference, interval, p-values, mark."""
    out: dict[str, Any] = {}
    for row in frame.to_dict("records"):
        out.setdefault(row["methodology"], {}).setdefault(row["headline"], {})[
            f"{row['model_a']}_vs_{row['model_b']}"
        ] = {
            k: (None if pd.isna(row[k]) else (bool(row[k]) if k == "marked" else row[k]))
            for k in ("difference", "ci_low", "ci_high", "p_value", "p_holm", "marked", "n_units")
        }
    return out


def comparison_files(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``<methodology>/compare/<A>_vs_<B>/<headline>.difference[.marked].json`` ->
    ``{"value": A - B}`` (the folder ends in ``.SIMULATED`` for simulators): one ``dvc metrics``
    row per comparison, beside the headline numbers, in two columns."""
    files = {}
    for row in frame.to_dict("records"):
        folder = f"{row['model_a']}_vs_{row['model_b']}" + (
            ".SIMULATED" if row["simulated"] else ""
        )
        mark = ".marked" if row["marked"] else ""
        value = None if pd.isna(row["difference"]) else row["difference"]
        files[f"{row['methodology']}/compare/{folder}/{row['headline']}.difference{mark}.json"] = {
            "value": value
        }
    return files
