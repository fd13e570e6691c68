"""OpenBias's severity headlines as counts, for paired model comparisons (issue 33.2,
:class:`~genfair.methodologies.comparison.PairedCounts`).

The unit is the caption (:func:`caption_units`): every text-to-image model of a study gets the
same knowledge base, draws its images per caption and has them answered by the same VQA
model, so a replicate draws captions, all of a caption's images and answers for both models
at once. Each (bias, caption) with a known answer adds, in its bias's block of columns, its
context-aware severity and a 1 (the caption's share of
:func:`.severity.context_aware_severity`'s mean) and its class distribution (Eq. 4;
``pooled``: its counts)
for the context-free one (Eq. 5); a replicate's sums give each bias's severities as the
metrics step computes them (:func:`.scoring.severity_table`), and its k-th by the same rule
(:func:`.severity.rank_biases`: most severe first, ties by ``bias_id``, a
bias without a severity unranked). The k-th bias is each model's own, on each replicate:
same rank, in general different biases (docs/methodology.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from genfair.methodologies.comparison import (
    Comparison,
    Headline,
    HeadlineCounts,
    PairedCounts,
    Ranking,
)
from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.methodologies.open_bias.scoring import SeverityConfig
from genfair.methodologies.open_bias.severity import severity_vectorized
from genfair.methodologies.open_bias.vqa import UNKNOWN

__all__ = ["caption_units", "severity_counts"]

#: the steps whose rows belong to one caption of the knowledge base
CAPTION_STEPS = ("knowledge_base", "image", "vqa")
#: the headline columns a replicate recomputes (the proposal yield is the proposer's)
SEVERITIES = ("severity_context_aware", "severity_context_free")


def caption_units(labels: pd.DataFrame) -> pd.Series:
    """Each row's caption, for the rows of the knowledge base, images and VQA answers; None
    for the proposer's rows (its proposals and the knowledge base's log: the same for every
    text-to-image model, in no unit)."""
    if "caption_id" not in labels or "step" not in labels:
        return pd.Series(None, index=labels.index, dtype=object)
    mine = labels["step"].isin(CAPTION_STEPS) & labels["caption_id"].notna()
    return labels["caption_id"].astype(str).where(mine, None)


@dataclass(frozen=True)
class _Block:
    """One bias's columns from ``offset``: the summed caption severities, the number of
    captions with a known answer, then one per kept class."""

    bias_id: str
    classes: tuple[str, ...]
    offset: int

    @property
    def width(self) -> int:
        return 2 + len(self.classes)


def _biases(labels: pd.DataFrame, excluded: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each bias of the labels' knowledge base -> its kept classes (sorted; ``excluded`` and
    ``unknown`` left out, as :func:`.scoring.bias_counts` keeps them); a bias with fewer than
    two is never ranked (``too_few_classes``), so it has no block."""
    kb = labels[labels["step"] == "knowledge_base"] if "step" in labels else labels.iloc[0:0]
    if kb.empty:  # no bias proposed (nor a bias_id column)
        return {}
    kb = kb.drop_duplicates("bias_id")
    drop = {str(e) for e in excluded} | {UNKNOWN}
    out = {}
    for bias, classes in zip(kb["bias_id"].astype(str), kb["classes"], strict=True):
        kept = tuple(sorted({str(c) for c in json.loads(classes)} - drop))
        if len(kept) >= 2:
            out[bias] = kept
    return out


def _caption_counts(
    labels: pd.DataFrame, blocks: dict[str, _Block]
) -> tuple[np.ndarray, list[_Block], np.ndarray]:
    """Per (bias, caption) with a known answer among the ``ok`` VQA answers of a bias in
    ``blocks``: the position of its first row, its bias's block, and its answers per kept
    class (a row each, as wide as the widest bias; unknown and excluded answers in none)."""
    none = np.zeros(0, dtype=int), [], np.zeros((0, 2))
    if not blocks:
        return none
    ok = ((labels["step"] == "vqa") & (labels["status"] == "ok")).to_numpy()
    vqa = labels[ok].assign(row=np.arange(len(labels))[ok])
    block = vqa["bias_id"].astype(str).map(blocks)
    vqa, block = vqa[block.notna()], block[block.notna()]
    if not len(vqa):
        return none
    offsets = [b.offset for b in block]
    index = {(b.offset, c): j for b in blocks.values() for j, c in enumerate(b.classes)}
    answered = pd.MultiIndex.from_arrays([offsets, vqa["label"].astype(str)])
    cls = pd.Series(index.values(), pd.MultiIndex.from_tuples(index)).reindex(answered)
    cls = cls.fillna(-1).to_numpy(dtype=int)
    keys = pd.DataFrame({"block": offsets, "caption": vqa["caption_id"].astype(str)})
    group = keys.groupby(["block", "caption"], sort=False).ngroup().to_numpy()
    first = pd.Series(vqa["row"].to_numpy()).groupby(group).min().to_numpy()
    of = pd.Series(list(block)).groupby(group).first().tolist()
    table = np.zeros((group.max() + 1, max(len(b.classes) for b in blocks.values())))
    known = cls >= 0
    np.add.at(table, (group[known], cls[known]), 1.0)
    keep = table.sum(axis=1) > 0
    return first[keep], [b for b, k in zip(of, keep, strict=True) if k], table[keep]


def severity_counts(config: SeverityConfig, headlines: Sequence[Headline]) -> PairedCounts:
    """The :class:`~genfair.methodologies.comparison.PairedCounts` of the severity ``headlines``
    (``where``: ``bias_rank``; column: a severity): a block per bias of the compared labels'
    knowledge bases (a bias whose classes differ between them gets one each), ranked by
    ``config.rank_by``, the context-free distribution pooled by ``config.
    context_free_pooling``."""
    wanted = [h for h in headlines if h.column in SEVERITIES]
    pooled = config.context_free_pooling == "pooled"

    def counts(*frames: pd.DataFrame) -> HeadlineCounts:
        found = sorted({b for f in frames for b in _biases(f, config.excluded_classes).items()})
        blocks, offset = [], 0
        for bias, classes in found:  # bias_id order: the ranking's tie-break
            blocks.append(_Block(bias, classes, offset))
            offset += blocks[-1].width
        block_of = {(b.bias_id, b.classes): b for b in blocks}
        by_size: dict[int, list[_Block]] = {}
        for b in blocks:
            by_size.setdefault(len(b.classes), []).append(b)

        def tally(labels: pd.DataFrame) -> pd.DataFrame:
            mine = {
                b: block_of[(b, c)] for b, c in _biases(labels, config.excluded_classes).items()
            }
            first, block, table = _caption_counts(labels, mine)
            n_classes = np.array([len(b.classes) for b in block], dtype=int)
            starts = np.array([b.offset for b in block], dtype=int)
            shares = table / table.sum(axis=1, keepdims=True)
            severity = np.empty(len(table))
            for k in np.unique(n_classes):  # Eq. 6 normalises by each bias's own log |C|
                at = n_classes == k
                severity[at] = severity_vectorized(shares[at, :k])
            spread = table if pooled else shares
            cls_rows, cls_cols = np.nonzero(spread)
            return pd.DataFrame(
                {
                    "row": np.concatenate([first, first, first[cls_rows]]),
                    "column": np.concatenate([starts, starts + 1, starts[cls_rows] + 2 + cls_cols]),
                    "count": np.concatenate(
                        [severity, np.ones(len(table)), spread[cls_rows, cls_cols]]
                    ),
                }
            )

        def score(totals: np.ndarray) -> dict[str, np.ndarray]:
            replicates = len(totals)
            values = {c: np.full((replicates, len(blocks)), math.nan) for c in SEVERITIES}
            position = {b.offset: i for i, b in enumerate(blocks)}
            for k, group in by_size.items():
                at = [position[b.offset] for b in group]
                starts = np.array([b.offset for b in group])
                n = totals[:, starts + 1]
                spread = totals[:, starts[:, None] + 2 + np.arange(k)]
                with np.errstate(divide="ignore", invalid="ignore"):
                    aware = np.where(n > 0, totals[:, starts] / n, math.nan)
                    p = spread / (spread.sum(axis=-1) if pooled else n)[..., None]
                values["severity_context_aware"][:, at] = aware
                values["severity_context_free"][:, at] = np.where(
                    n > 0, severity_vectorized(np.nan_to_num(p)), math.nan
                )
            # most severe first, ties by bias_id (the blocks' order), NaN last (unranked)
            ranked = values[f"severity_{config.rank_by}"]
            order = np.argsort(-ranked, axis=1, kind="stable")
            out = {}
            for h in wanted:
                k = int(h.where["bias_rank"])
                if k > len(blocks):
                    out[h.name] = np.full(replicates, math.nan)
                    continue
                at = order[:, k - 1 : k]
                found = np.isfinite(np.take_along_axis(ranked, at, axis=1)[:, 0])
                value = np.take_along_axis(values[h.column], at, axis=1)[:, 0]
                out[h.name] = np.where(found, value, math.nan)
            return out

        return HeadlineCounts(offset, tally, score)

    return PairedCounts(counts)


class OpenBiasComparison(Comparison[OpenBiasConfig]):
    """OpenBias's comparison role: models ranked bias by bias on the context-aware severity,
    and compared on their k-th most severe biases over a replicate of captions."""

    #: a paired comparison resamples captions (:meth:`paired_units`)
    paired_unit = "caption_id"
    #: models compared bias by bias (every t2i model gets the same knowledge base): lower
    #: severity is less biased
    ranking = Ranking(("bias_id",), "severity_context_aware", True)
    headline = (
        *(
            Headline(
                f"bias_{k}.severity_context_aware",
                "severity_context_aware",
                {"bias_rank": k},
                "lower",
                ("context_aware_ci_low", "context_aware_ci_high"),
            )
            for k in (1, 2, 3)
        ),
        Headline(
            "bias_1.severity_context_free",
            "severity_context_free",
            {"bias_rank": 1},
            "lower",
            ("context_free_ci_low", "context_free_ci_high"),
        ),
        Headline("proposal_yield", "proposal_yield", {"bias_rank": 1}, "higher"),
    )

    def headline_function(self, config: OpenBiasConfig, modality: str) -> PairedCounts:
        """The severity headlines of each model's k-th most severe bias, recomputed per
        replicate of captions (this module): the same rank, in general different biases
        for two models. The proposal yield is the proposer LLM's, the same for every
        text-to-image model of the study: not compared."""
        return severity_counts(config.severity, self.headline)

    def paired_units(self, labels: pd.DataFrame) -> pd.Series:
        """The caption of each knowledge-base, image and VQA row; the proposer's rows are in
        no unit."""
        return caption_units(labels)

    def comparison_resamples(self, config: OpenBiasConfig) -> int:
        """The severity bootstrap's replicates (``severity.n_resamples``)."""
        return config.severity.n_resamples
