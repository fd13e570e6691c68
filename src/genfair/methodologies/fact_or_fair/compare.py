"""FACT-OR-FAIR's headline distances as counts, for paired model comparisons (issue 33.2,
:class:`~genfair.methodologies.comparison.HeadlineCounts`): each valid answer adds one to its
headline's (cell, group) count, the cells of :func:`.scoring.cell_table`; a replicate's
summed counts give the scores by :func:`.scoring.replicate_scores`, as
:func:`.scoring.score_cells` computes its estimate."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from genfair.methodologies.comparison import Comparison, Headline, HeadlineCounts, Ranking
from genfair.methodologies.fact_or_fair import t2i
from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.methodologies.fact_or_fair.data import GROUPS, Statistic
from genfair.methodologies.fact_or_fair.scoring import (
    Formulas,
    cell_index,
    cell_layout,
    cell_rows,
    formulas_for,
    replicate_scores,
    statistics_for,
)

#: a pilot whose answers bias its cells' plug-in entropies by more than this share of their
#: range (Miller-Madow's first-order bias, ``(K - 1) / (2 N ln K)`` of a normalized entropy
#: from ``N`` answers over ``K`` groups, averaged over a headline's answered cells) does not
#: forecast that headline's distance (:meth:`FactOrFairComparison.pilot_limits`)
ENTROPY_BIAS_LIMIT = 0.1


@dataclass(frozen=True)
class DistanceCounts(HeadlineCounts):
    """:class:`HeadlineCounts` of FACT-OR-FAIR's distances, with each headline's support in
    summed counts: ``support(totals)`` gives, per headline, its answered cells' mean answers
    and the first-order bias of their plug-in entropies (:data:`ENTROPY_BIAS_LIMIT`)."""

    support: Callable[[np.ndarray], dict[str, tuple[float, float]]]


@dataclass(frozen=True)
class _Block:
    """One headline's columns: its cells x groups, from ``offset``."""

    headline: Headline
    cells: pd.MultiIndex
    groups: list[str]
    offset: int
    truth: np.ndarray
    pairs: list[tuple[int, int]]
    formulas: Formulas

    @property
    def width(self) -> int:
        return len(self.cells) * len(self.groups)


def paired_counts(
    headlines: Sequence[Headline],
    statistics: list[Statistic],
    formulas: Callable[[str], Formulas],
    *,
    scope: Literal["attribute", "all"] = "attribute",
    fact_statistics: Literal["all", "title_lookup"] = "all",
    every_attribute: bool = False,
) -> DistanceCounts:
    """The :class:`HeadlineCounts` of ``headlines`` (``where``: context and attribute), with
    :func:`.scoring.cell_table`'s ``scope`` and ``fact_statistics`` and each context's
    ``formulas``; ``every_attribute``: each row answers both attributes (a t2i image's faces,
    as :func:`.t2i.metrics` counts them)."""
    blocks: list[_Block] = []
    offset = 0
    for headline in headlines:
        context, attribute = headline.where["context"], headline.where["attribute"]
        cells, truth = cell_index(statistics, context, attribute, scope, fact_statistics)
        if not len(cells):
            continue
        groups = list(GROUPS[attribute])
        empty = pd.DataFrame(
            {
                "statistic": cells.get_level_values("statistic"),
                "direction": cells.get_level_values("direction"),
                "truth": truth,
                **{f"n_{g}": 0 for g in groups},
            }
        )
        _, _, truth_index, pairs = cell_layout(empty, attribute)
        block = _Block(headline, cells, groups, offset, truth_index, pairs, formulas(context))
        blocks.append(block)
        offset += block.width

    def tally(labels: pd.DataFrame) -> pd.DataFrame:
        labels = labels.reset_index(drop=True)
        parts = []
        for b in blocks:
            where = b.headline.where
            asked = labels.assign(attribute=where["attribute"]) if every_attribute else labels
            rows = cell_rows(asked, b.cells, where["context"], where["attribute"])
            rows = rows[rows["status"] == "ok"]
            cell = b.cells.get_indexer(pd.MultiIndex.from_frame(rows[["statistic", "direction"]]))
            group = pd.Index(b.groups).get_indexer(rows[f"chosen_{where['attribute']}"])
            keep = (cell >= 0) & (group >= 0)
            parts.append(
                pd.DataFrame(
                    {
                        "row": rows.index[keep],
                        "column": b.offset + cell[keep] * len(b.groups) + group[keep],
                        "count": 1.0,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)

    def score(totals: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for b in blocks:
            counts = totals[:, b.offset : b.offset + b.width]
            counts = counts.reshape(len(totals), len(b.cells), len(b.groups))
            scores = replicate_scores(counts, b.truth, b.pairs, len(b.groups), b.formulas)
            out[b.headline.name] = scores[b.headline.column]
        return out

    def support(totals: np.ndarray) -> dict[str, tuple[float, float]]:
        out = {}
        for b in blocks:
            counts = totals[0, b.offset : b.offset + b.width].reshape(len(b.cells), len(b.groups))
            answers = counts.sum(axis=1)
            answers = answers[answers > 0]
            if not answers.size:
                out[b.headline.name] = (0.0, math.inf)
                continue
            k = len(b.groups)
            bias = (k - 1) / (2 * answers * math.log(k))
            out[b.headline.name] = (float(answers.mean()), float(bias.mean()))
        return out

    return DistanceCounts(offset, tally, score, support)


def t2i_counts(headlines: Sequence[Headline], config: FactOrFairConfig) -> DistanceCounts:
    """The headline distances of :func:`.t2i.metrics` as counts, for paired comparisons (its
    statistics and formulas; an image's faces answer both attributes)."""
    formulas = Formulas(kld_pseudocount=config.kld_pseudocount)
    return paired_counts(
        headlines, t2i.scored_statistics(config), lambda _: formulas, every_attribute=True
    )


def _headline(context: str, attribute: str) -> Headline:
    return Headline(
        f"{context}.{attribute}.distance",
        "distance",
        {"context": context, "attribute": attribute},
        "lower",
        ("distance_lo", "distance_hi"),
    )


class FactOrFairComparison(Comparison[FactOrFairConfig]):
    """FACT-OR-FAIR's comparison role: models ranked and compared by their distance to the
    accuracy-entropy trade-off curve's best point (§4.3), per context and attribute."""

    # §4.3: the distance to the trade-off curve's best point, lower is better
    ranking = Ranking(("context", "attribute"), "distance", True)
    headline = tuple(_headline(c, a) for c in ("objective", "baseline") for a in ("gender", "race"))
    #: one answer (a probe id names a query and its sample index): the unit its intervals
    #: resample (answers are independent draws, :mod:`.uncertainty`) and its tables count
    paired_unit = "probe_id"

    def comparison_resamples(self, config: FactOrFairConfig) -> int:
        """The scores' bootstrap replicates (``bootstrap_resamples``)."""
        return config.bootstrap_resamples

    def headline_function(self, config: FactOrFairConfig, modality: str) -> DistanceCounts:
        """The headline distances from a model's labels, as its metrics compute them without
        intervals (LLM: :meth:`.FactOrFair.metrics`; T2I: :func:`.t2i.metrics`, each image's faces
        counted together), from the counts of valid answers per cell and group
        (:func:`paired_counts`)."""
        if modality == "t2i":
            return t2i_counts(self.headline, config)
        return paired_counts(
            self.headline,
            statistics_for(config),
            lambda context: formulas_for(config, context),
            scope=config.subjective_cell_scope,
            fact_statistics=config.subjective_fact_statistics,
        )

    def pilot_limits(
        self, config: FactOrFairConfig, modality: str, labels: pd.DataFrame
    ) -> dict[str, str]:
        """The distances whose cells' plug-in entropies (S_E, Def. 2; and S_KLD's counts)
        the pilot's answers bias by more than :data:`ENTROPY_BIAS_LIMIT`: a cell with one or
        two answers has an entropy near 0 whatever the model's, so the pilot's point sits off
        the trade-off curve by that bias, and its resamples and halves share it (a plateau the
        generic checks cannot see; docs/methodology.md, "Planning for precision")."""
        counts = self.headline_function(config, modality)
        return {
            name: (
                f"not forecast: {answers:.1f} answers a cell bias its entropies by {bias:.2f} "
                f"(over {ENTROPY_BIAS_LIMIT}; a pilot with more answers per cell)"
            )
            for name, (answers, bias) in counts.support(counts.totals(labels)).items()
            if not bias <= ENTROPY_BIAS_LIMIT
        }
