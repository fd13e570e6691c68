"""One model's headline numbers with bootstrap intervals, each by its headline's
:attr:`~genfair.methodologies.comparison.Headline.interval_method` (issue 46.7).

The replicates resample the methodology's unit
(:meth:`~genfair.methodologies.comparison.Comparison.paired_units`) and recompute its
:meth:`~genfair.methodologies.comparison.Comparison.headline_function`, as a
paired comparison does for two models (:mod:`genfair.study.compare`): a
:class:`~genfair.methodologies.comparison.HeadlineCounts` tallies each unit once and scores every
replicate from the units' counts weighted by how often it drew them; any other function is
called on each replicate's rows. The intervals: :func:`genfair.metrics.bootstrap.unit_intervals`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from genfair.methodologies.comparison import HeadlineCounts, PairedCounts
from genfair.metrics.bootstrap import IntervalMethod, unit_intervals

if TYPE_CHECKING:
    from genfair.methodologies.base import Methodology

#: unit positions drawn at once (bounds one interval's memory: 8 bytes each, and the
#: replicates' weights as many floats)
DRAWN = 2_000_000


def unit_counts(headlines: HeadlineCounts, labels: pd.DataFrame, rows: list) -> Any:
    """A sparse (units x width) matrix: each unit's summed counts (``rows``: its positions)."""
    from scipy import sparse

    unit = np.full(len(labels), -1)
    for i, positions in enumerate(rows):
        unit[positions] = i
    long = headlines.tally(labels)
    of = unit[long["row"].to_numpy(dtype=int)]
    keep = of >= 0
    return sparse.csr_matrix(
        (long["count"].to_numpy(float)[keep], (of[keep], long["column"].to_numpy(int)[keep])),
        shape=(len(rows), headlines.width),
    )


def draw_weights(positions: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` units is drawn, per replicate: (n x replicates) from a
    (replicates x n) array of positions (or one draw)."""
    draws = np.atleast_2d(positions)
    offsets = (np.arange(len(draws)) * n)[:, None]
    weights = np.bincount((draws + offsets).ravel(), minlength=len(draws) * n)
    return weights.reshape(len(draws), n).T.astype(float)


def headline_intervals(
    methodology: Methodology,
    config: Any,
    modality: str,
    labels: pd.DataFrame,
    *,
    methods: Mapping[str, IntervalMethod] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Each headline number of one model's ``labels`` that is finite, by name:
    ``{"estimate", "ci_low", "ci_high", "method", "widened", "n"}`` (``n``: units; ``method``:
    the one used, :attr:`~genfair.methodologies.comparison.Headline.interval_method` unless
    ``methods`` names another for that headline). Empty without a headline function, or with
    fewer than two units."""
    headlines = methodology.comparison.headline_function(config, modality)
    if headlines is None:
        return {}
    labels = labels.reset_index(drop=True)
    if isinstance(headlines, PairedCounts):  # its columns laid out for these labels
        headlines = headlines.counts(labels)
    units = methodology.comparison.paired_units(labels)
    rows = list(labels.groupby(units.to_numpy(), sort=True).indices.values())
    if len(rows) < 2:
        return {}
    observed = headlines(labels.iloc[np.concatenate(rows)])
    names = sorted(n for n, v in observed.items() if np.isfinite(v))
    declared = {h.name: h.interval_method for h in methodology.comparison.headline}
    wanted = [(methods or {}).get(n, declared.get(n, "percentile")) for n in names]
    counted = isinstance(headlines, HeadlineCounts)
    statistic = (_counted if counted else _recomputed)(headlines, labels, rows, names)
    results = unit_intervals(
        len(rows),
        statistic,
        wanted,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        vectorized=counted,
        batch=max(1, DRAWN // len(rows)),
    )
    return dict(zip(names, results, strict=True))


def _recomputed(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    labels: pd.DataFrame,
    rows: list,
    names: list[str],
) -> Callable[[np.ndarray], np.ndarray]:
    """The headline numbers of the rows of the units at ``positions``."""

    def statistic(positions: np.ndarray) -> np.ndarray:
        values = headlines(labels.iloc[np.concatenate([rows[p] for p in positions])])
        return np.array([values.get(n, np.nan) for n in names])

    return statistic


def _counted(
    headlines: HeadlineCounts, labels: pd.DataFrame, rows: list, names: list[str]
) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`_recomputed` of a :class:`HeadlineCounts`, vectorized over replicates."""
    counts = unit_counts(headlines, labels, rows).T.tocsr()

    def statistic(positions: np.ndarray) -> np.ndarray:
        scores = headlines.score(np.asarray(counts @ draw_weights(positions, len(rows))).T)
        out = np.array([scores[n] for n in names])
        return out[:, 0] if np.ndim(positions) == 1 else out

    return statistic


#: the columns of :func:`interval_table`
INTERVAL_COLUMNS = ["headline", "estimate", "ci_low", "ci_high", "ci_method", "ci_widened", "n"]


def interval_table(found: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """:func:`headline_intervals`' result as score rows, one per headline
    (:data:`INTERVAL_COLUMNS`): what a ``metrics`` step reports, the interval's method
    (``ci_method``) and whether it was widened to contain its estimate beside it, so the
    leaderboard, the report's tables and ``data/scores`` say how each interval was made."""
    rows = [
        {"headline": name, "estimate": r["estimate"], "ci_low": r["ci_low"],
         "ci_high": r["ci_high"], "ci_method": r["method"], "ci_widened": r["widened"],
         "n": r["n"]}
        for name, r in found.items()
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)
