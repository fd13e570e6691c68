"""Confidence intervals of the FACT-OR-FAIR scores (not in paper 000; docs/methodology.md).

The scores are smooth functions of the cells' answer distributions, but plug-in entropy
and KL are biased: near a uniform answer distribution the plug-in S_E lies *above* almost
every bootstrap replicate (a replicate's entropy is lower than its source's), so the
percentile interval sits below the estimate (paper scale, 18 statistics, n = 300 per cell,
uniform k = 4: S_E 0.9967 with the percentile interval [0.9913, 0.9945]; ``smoothed`` gives
[0.9967, 1], which holds the truth 1). Methods (``interval_method``):

- ``smoothed`` (default): a bias-corrected parametric bootstrap. Each cell's counts are
  redrawn from Multinomial(n, p~), p~ = (counts + 1/2) / (n + k/2) (the Jeffreys-smoothed cell,
  so an unseen group still varies), and the law of ``t* - theta(p~)`` stands for that of
  ``t - theta``, ``theta(p~)`` being the population score of the smoothed cells:
  ``[t - (q_hi - theta(p~)), t - (q_lo - theta(p~))]``. The estimator's bias is subtracted
  instead of being added a second time, as the percentile interval does. With ``clusters``
  (t2i images) it falls back to ``basic`` on resampled clusters.
- ``basic``: the reverse-percentile bootstrap ``[2 t - q_hi, 2 t - q_lo]`` from the observed
  cells (multinomial redraws; with ``clusters``, each cell's clusters resampled with
  replacement, so faces of one image move together).
- ``posterior``: the equal-tailed credible interval of the population score under
  independent Jeffreys priors Dirichlet(1/2, ..., 1/2) on every cell's answer
  distribution: posterior draws of each cell's probabilities pushed through the score
  formulas (S_fact weights each cell by its number of valid answers; KL without
  smoothing). Independent answers only (no ``clusters``). Shrinking 30+ cells toward
  uniform biases the pooled S_fact, so it under-covers (docs).
- ``percentile``: the bootstrap percentile interval (genfair before issue 12), kept for
  comparison; it is not valid for these biased statistics.

The scores' own boundary points (S_E = 1, S_KLD = 1) are added by exact simulation tests in
:func:`genfair.methodologies.fact_or_fair.scoring.score_cells`. Every method's interval is
clipped to the score's range ([0, 1]; distance [0, sqrt 2]) and then widened, if needed, to contain
the estimate: the reported interval always contains its estimate, and a superset of an interval
keeps at least its coverage. The target is the population score: the score formula applied to the
cells' true answer probabilities (for S_KLD without smoothing; S_fact with the observed cell sizes
as weights).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal

import numpy as np

IntervalMethod = Literal["basic", "smoothed", "posterior", "percentile"]
INTERVAL_METHODS: tuple[str, ...] = ("basic", "smoothed", "posterior", "percentile")
#: Jeffreys prior of the ``posterior`` and ``smoothed`` methods, added to every group of every cell
JEFFREYS = 0.5

#: ``scorer(replicate_counts, population)`` -> score name -> one value per replicate;
#: ``population`` is True for posterior draws (score the probabilities, no smoothing)
Scorer = Callable[[np.ndarray, bool], Mapping[str, np.ndarray]]


def bootstrap_counts(
    counts: np.ndarray,
    resamples: int,
    rng: np.random.Generator,
    clusters: list[np.ndarray] | None = None,
) -> np.ndarray:
    """``resamples`` bootstrap replicates of a (cells x k) count matrix, shape (B, cells, k).

    Without ``clusters``: each cell redrawn from Multinomial(n_cell, observed distribution),
    i.e. its answers resampled with replacement (answers are independent draws). With
    ``clusters`` (one (clusters x k) array per cell, summing to the cell's counts): each
    cell's clusters resampled with replacement and summed, so answers that share a cluster
    (faces of one image) move together.
    """
    counts = np.asarray(counts, dtype=float)
    cells, k = counts.shape
    out = np.zeros((resamples, cells, k))
    for i in range(cells):
        if clusters is not None:
            members = np.asarray(clusters[i], dtype=float).reshape(-1, k)
            if not np.allclose(members.sum(axis=0), counts[i]):
                raise ValueError(
                    f"cell {i}: its clusters sum to {members.sum(axis=0).tolist()}, "
                    f"not to the cell's counts {counts[i].tolist()}"
                )
            if len(members):
                picks = rng.integers(0, len(members), size=(resamples, len(members)))
                out[:, i] = members[picks].sum(axis=1)
            continue
        n = int(round(counts[i].sum()))
        if n:
            out[:, i] = rng.multinomial(n, counts[i] / n, size=resamples)
    return out


def posterior_counts(
    counts: np.ndarray, resamples: int, rng: np.random.Generator, prior: float = JEFFREYS
) -> np.ndarray:
    """Posterior draws ``n_cell * p`` with ``p ~ Dirichlet(counts + prior)`` per cell, shape
    (B, cells, k); an empty cell stays empty (it has no answers to weigh)."""
    counts = np.asarray(counts, dtype=float)
    gamma = rng.standard_gamma(counts + prior, size=(resamples, *counts.shape))
    p = gamma / gamma.sum(axis=-1, keepdims=True)
    return p * counts.sum(axis=-1)[None, :, None]


def interval(
    estimate: float,
    replicates: np.ndarray,
    level: float,
    method: IntervalMethod,
    lower: float = 0.0,
    upper: float = 1.0,
    center: float | None = None,
) -> tuple[float, float]:
    """One score's interval from its replicates (NaN replicates dropped), clipped to
    ``[lower, upper]`` and widened to contain ``estimate``; NaN when either is missing."""
    values = np.asarray(replicates, dtype=float)
    values = values[~np.isnan(values)]
    if math.isnan(estimate) or not values.size:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    q_lo, q_hi = np.quantile(values, [tail, 1.0 - tail])
    if method in ("basic", "smoothed"):
        c = estimate if center is None else center
        lo, hi = estimate - (q_hi - c), estimate - (q_lo - c)
    elif method in ("posterior", "percentile"):
        lo, hi = q_lo, q_hi
    else:
        raise ValueError(f"interval_method must be one of {list(INTERVAL_METHODS)}; got {method!r}")
    lo, hi = min(max(lo, lower), upper), min(max(hi, lower), upper)
    return float(min(lo, estimate)), float(max(hi, estimate))


def score_intervals(
    counts: np.ndarray,
    scorer: Scorer,
    estimates: Mapping[str, float],
    *,
    resamples: int,
    level: float,
    seed: int,
    method: IntervalMethod = "basic",
    clusters: list[np.ndarray] | None = None,
    upper: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """``<score>_lo`` and ``<score>_hi`` for every score in ``estimates``.

    ``counts`` is the (cells x k) matrix the estimates come from; ``scorer`` recomputes the
    scores on a batch of replicates. ``upper`` gives a score's upper bound where it is not 1.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"interval_method must be one of {list(INTERVAL_METHODS)}; got {method!r}")
    rng = np.random.default_rng(seed)
    centers: dict[str, float] = {}
    if method == "posterior":
        if clusters is not None:
            raise ValueError(
                "interval_method 'posterior' assumes independent answers; clustered "
                "data (faces of one image) needs interval_method 'basic'"
            )
        replicates = scorer(posterior_counts(counts, resamples, rng), True)
    elif method == "smoothed" and clusters is None:
        n = counts.sum(axis=-1, keepdims=True)
        smooth = np.where(n > 0, (counts + JEFFREYS) / (n + JEFFREYS * counts.shape[-1]), 0.0)
        centers = {name: float(v[0]) for name, v in scorer((n * smooth)[None], True).items()}
        replicates = scorer(bootstrap_counts(n * smooth, resamples, rng), False)
    else:
        replicates = scorer(bootstrap_counts(counts, resamples, rng, clusters), False)
    bounds = dict(upper or {})
    out: dict[str, float] = {}
    for name, estimate in estimates.items():
        lo, hi = interval(
            float(estimate),
            replicates[name],
            level,
            method,
            0.0,
            bounds.get(name, 1.0),
            centers.get(name),
        )
        out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
    return out
