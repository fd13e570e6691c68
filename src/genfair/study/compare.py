"""Paired model comparisons (issue 33.2): for every pair of models of one modality that
answered the same probes, each headline number's difference A - B with a paired bootstrap
interval (the methodology's :attr:`~genfair.methodologies.comparison.Comparison.paired_unit`
resampled jointly, :mod:`genfair.metrics.paired`), and a mark where the Holm-adjusted
p-value across the whole study's comparisons is below ``1 - CONFIDENCE``. Simulators are
compared only with simulators, real models only with real models. A methodology's
:class:`~genfair.methodologies.comparison.HeadlineCounts` (a
:class:`~genfair.methodologies.comparison.PairedCounts` laid out for the pair first) is tallied
once per unit and every replicate scored from the units' counts weighted by how often it drew
them (fast at paper scale, ``benchmarks/test_paired_compare.py``); any other headline
function is called on each replicate's rows.

Written by ``score`` as ``data/comparisons.json`` (each difference also a ``dvc metrics``
file under ``data/headline/<methodology>/compare/``), logged to the study's MLflow run by
``track``, shown in the report as a matrix per headline.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from genfair.io import read_parquet
from genfair.methodologies.comparison import HeadlineCounts, PairedCounts
from genfair.methodologies.intervals import draw_weights, unit_counts
from genfair.metrics.paired import holm, paired_differences
from genfair.models.base import derive_seed
from genfair.names import pair_key
from genfair.study.context import configured, model_info, models_for
from genfair.study.layout import Layout
from genfair.study.steps import read_study
from genfair.study_params import StudyParams

log = logging.getLogger(__name__)

#: confidence level of every comparison (the replicates are the methodology's:
#: :meth:`~genfair.methodologies.comparison.Comparison.comparison_resamples`)
CONFIDENCE = 0.95
#: unit positions drawn at once (bounds a comparison's memory: 8 bytes each, and the
#: replicates' weights as many floats)
DRAWN = 2_000_000
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


#: a comparison's resampling unit: a labels column, or each row's unit as text from its labels
Unit = str | Callable[[pd.DataFrame], pd.Series]


def paired_rows(a: pd.DataFrame, b: pd.DataFrame, unit: Unit) -> tuple[list, list] | None:
    """Each model's row positions per common unit, in one unit order (None: fewer than two);
    a row whose unit is missing (None) is in none."""
    units = [unit(x) if callable(unit) else x[unit].astype(str) for x in (a, b)]
    common = sorted(set(units[0].dropna()) & set(units[1].dropna()))
    if len(common) < 2:
        return None
    rows = []
    for labels, of in zip((a, b), units, strict=True):
        groups = labels.groupby(of.to_numpy(), sort=False).indices
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


def _counted_statistic(
    headlines: HeadlineCounts,
    labels: tuple[pd.DataFrame, pd.DataFrame],
    pair: tuple[list, list],
    names: list[str],
) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`_statistic` of a :class:`HeadlineCounts`, vectorized: each unit's counts are
    tallied once, a replicate's totals are their sum weighted by how often it drew each unit
    (the same numbers as :func:`_statistic`'s on the same draws)."""
    units = [
        unit_counts(headlines, frame, rows).T.tocsr()
        for frame, rows in zip(labels, pair, strict=True)
    ]
    n = len(pair[0])

    def difference(positions: np.ndarray) -> np.ndarray:
        weights = draw_weights(positions, n)
        a, b = (headlines.score(np.asarray(u @ weights).T) for u in units)
        out = np.array([a[name] - b[name] for name in names])
        return out[:, 0] if np.ndim(positions) == 1 else out

    return difference


def compare_pair(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    a: pd.DataFrame,
    b: pd.DataFrame,
    unit: Unit,
    *,
    resamples: int,
    seed: int,
) -> list[tuple[str, dict[str, float]]]:
    """Each headline both models have a number for, with
    :func:`~genfair.metrics.paired.paired_differences` of A minus B over the ``unit`` values
    both answered (``unit``: a column, or a function giving each row's unit; empty: fewer
    than two)."""
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    if isinstance(headlines, PairedCounts):  # its columns laid out for these two models
        headlines = headlines.counts(a, b)
    pair = paired_rows(a, b, unit)
    if pair is None:
        return []
    ha, hb = headlines(a), headlines(b)
    names = sorted(n for n in set(ha) & set(hb) if np.isfinite(ha[n]) and np.isfinite(hb[n]))
    if not names:
        return []
    counted = isinstance(headlines, HeadlineCounts)
    results = paired_differences(
        len(pair[0]),
        (_counted_statistic if counted else _statistic)(headlines, (a, b), pair, names),
        resamples=resamples,
        confidence=CONFIDENCE,
        seed=seed,
        vectorized=counted,
        batch=max(1, DRAWN // len(pair[0])),
    )
    return list(zip(names, results, strict=True))


def compare_models(
    params: StudyParams, layout: Layout = Layout(), resamples: int | None = None
) -> pd.DataFrame:
    """Every comparison of the study (:data:`COLUMNS`), Holm-adjusted across all of them;
    ``resamples`` replicates each (default: the methodology's own, its
    :meth:`~genfair.methodologies.comparison.Comparison.comparison_resamples`)."""
    found: list[dict[str, Any]] = []
    for name in params.methodologies:
        method, config = configured(params, name)
        if method.comparison.paired_unit is None:
            continue
        infos = [model_info(params, m) for m in models_for(params, name)]
        study = functools.cache(functools.partial(read_study, name, layout))  # read if needed
        for a, b in itertools.combinations(infos, 2):
            if (a.modality, a.simulated) != (b.modality, b.simulated):
                continue  # simulators only against simulators, one modality at a time
            headlines = method.comparison.paired_headline_function(config, a.modality, study())
            paths = [layout.labels(m.name, name) for m in (a, b)]
            if headlines is None or not all(p.exists() for p in paths):
                continue
            la, lb = (read_parquet(p) for p in paths)
            results = compare_pair(
                headlines,
                la,
                lb,
                method.comparison.paired_units,
                resamples=resamples or method.comparison.comparison_resamples(config),
                seed=derive_seed(params.seed, "compare", name, a.name, b.name),
            )
            if not results:
                continue
            log.info("%s: %s vs %s over %d units", name, a.name, b.name, results[0][1]["n"])
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
                for headline, result in results
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
            pair_key(row["model_a"], row["model_b"])
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
        folder = pair_key(row["model_a"], row["model_b"]) + (
            ".SIMULATED" if row["simulated"] else ""
        )
        mark = ".marked" if row["marked"] else ""
        value = None if pd.isna(row["difference"]) else row["difference"]
        files[f"{row['methodology']}/compare/{folder}/{row['headline']}.difference{mark}.json"] = {
            "value": value
        }
    return files
