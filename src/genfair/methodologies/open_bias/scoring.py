"""OpenBias labels -> per-bias severities and the ranking (paper 003, §3.2; math in
:mod:`genfair.methodologies.open_bias.severity`).

Input: one row per (bias, caption, image) with the mapped VQA ``label`` (a class of the bias or
``unknown``), keyed by ``bias_id`` and ``caption_id`` -- never by the bias name alone (upstream
kept one answer per bias *name* per image, so two biases with the same name under different
"refers to" overwrote each other).

Which classes count in ``|C|``: every class of the bias in the knowledge base, predicted or
not, minus ``excluded_classes``. Default: none excluded (the paper's text). The authors'
``make_plots.py`` drops ``other`` and ``non-binary`` ("never predicted by the VQA model"):
``excluded_classes: [other, non-binary]``. Answers of an excluded class, like ``unknown``,
then count for no class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from genfair.limits import MAX_RESAMPLES
from genfair.methodologies.open_bias.knowledge_base import KnowledgeBase
from genfair.methodologies.open_bias.severity import Bootstrap, rank_biases, severity_summary
from genfair.methodologies.open_bias.vqa import UNKNOWN
from genfair.strict import Strict

__all__ = ["SeverityConfig", "bias_counts", "severity_table"]


class SeverityConfig(Strict):
    """How severities, intervals and the ranking are computed."""

    #: "mean": paper Eq. 5 (mean of per-caption distributions); "pooled": authors' code
    context_free_pooling: Literal["mean", "pooled"] = "mean"
    #: classes left out of |C| (authors' code: ["other", "non-binary"])
    excluded_classes: tuple[str, ...] = ()
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    ci_method: Literal["percentile", "BCa"] = "percentile"
    n_resamples: int = Field(2000, ge=100, le=MAX_RESAMPLES)
    seed: int = 0
    #: the headline ranking (the paper's Figs. 3-4 rank by context-aware severity)
    rank_by: Literal["context_aware", "context_free"] = "context_aware"


def bias_counts(
    labels: pd.DataFrame,
    classes: Sequence[str],
    excluded: Sequence[str] = (),
    unknown: str = UNKNOWN,
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """One bias's labels (``caption_id``, ``label``) -> ``(counts, unknown, caption_ids,
    classes)``: counts per caption (rows, in first-appearance order) and kept class (columns,
    sorted); ``unknown`` counts answers that are ``unknown`` or an excluded class."""
    kept = sorted({str(c) for c in classes} - {str(e) for e in excluded} - {unknown})
    allowed = set(kept) | {str(e) for e in excluded} | {unknown}
    bad = sorted(set(labels["label"].astype(str)) - allowed)
    if bad:
        raise ValueError(
            f"labels {bad} are neither a class of the bias ({sorted(classes)}) nor {unknown!r}"
        )
    captions = list(dict.fromkeys(labels["caption_id"].astype(str)))
    row = {c: i for i, c in enumerate(captions)}
    column = {c: j for j, c in enumerate(kept)}
    counts = np.zeros((len(captions), len(kept)))
    other = np.zeros(len(captions))
    for caption_id, label in zip(
        labels["caption_id"].astype(str), labels["label"].astype(str), strict=True
    ):
        if label in column:
            counts[row[caption_id], column[label]] += 1
        else:
            other[row[caption_id]] += 1
    return counts, other, captions, kept


def severity_table(
    labels: pd.DataFrame,
    knowledge_base: KnowledgeBase | Mapping[str, Sequence[str]],
    config: SeverityConfig | None = None,
) -> pd.DataFrame:
    """One row per bias of the knowledge base (rows with a ``status`` other than ``ok``, i.e.
    failed calls, are left out): both severities with intervals, majority class,
    numbers of captions and images, a ``status`` (``ok``, ``no_answers``, ``no_known_answers``,
    ``too_few_classes``), ranked by ``config.rank_by`` with ``rank_context_aware`` and
    ``rank_context_free`` columns."""
    config = config or SeverityConfig()
    missing = {"bias_id", "caption_id", "label"} - set(labels.columns)
    if missing:
        raise ValueError(
            f"labels lack columns {sorted(missing)} (one row per bias, caption and image)"
        )
    if "status" in labels.columns:  # failed calls are recorded upstream, not answers
        labels = labels[labels["status"] == "ok"]
    if isinstance(knowledge_base, KnowledgeBase):
        classes_of = {b.bias_id: b.classes for b in knowledge_base.biases}
        labels_of = {b.bias_id: b.label for b in knowledge_base.biases}
    else:
        classes_of = {k: list(v) for k, v in knowledge_base.items()}
        labels_of = {k: k for k in knowledge_base}
    unknown_biases = sorted(set(labels["bias_id"].astype(str)) - set(classes_of))
    if unknown_biases:
        raise ValueError(f"labels name biases not in the knowledge base: {unknown_biases[:5]}")
    bootstrap = Bootstrap(config.confidence, config.ci_method, config.n_resamples, config.seed)
    grouped = dict(tuple(labels.groupby(labels["bias_id"].astype(str), sort=False)))
    rows = []
    for bias_id, classes in classes_of.items():
        group = grouped.get(bias_id, labels.iloc[0:0])
        counts, other, _, kept = bias_counts(group, classes, config.excluded_classes)
        row = {"bias_id": bias_id, "label": labels_of[bias_id], "classes": kept}
        if len(kept) < 2:
            row.update(status="too_few_classes", n_classes=len(kept))
        elif len(group) == 0:
            row.update(status="no_answers", n_classes=len(kept))
        else:
            summary = severity_summary(counts, kept, other, config.context_free_pooling, bootstrap)
            status = "ok" if summary["n_images_known"] > 0 else "no_known_answers"
            row.update(summary, status=status)
        rows.append(row)
    table = pd.DataFrame(rows)
    for column in ("severity_context_aware", "severity_context_free"):
        if column not in table.columns:
            table[column] = math.nan
    free_rank = rank_biases(table, "context_free").set_index("bias_id")["rank"]
    ranked = rank_biases(table, config.rank_by)
    ranked["rank_context_free"] = ranked["bias_id"].map(free_rank)
    aware_rank = rank_biases(table, "context_aware").set_index("bias_id")["rank"]
    ranked["rank_context_aware"] = ranked["bias_id"].map(aware_rank)
    return ranked.drop(columns="rank")
