"""Structural validation of IRIS scores (paper 002 §4.1, §A.2.2, Figure 4(a)-(b), Tables 7-8).

- **Internal consistency**: Cronbach's alpha per sector over models x granular metrics
  (the items are the normalized deviations u, all oriented "higher = more bias").
- **Ranking stability**: Spearman's rho between the original model ranking and the ranking
  after (a) scaling the weight of one dimension's metric set (IFS, RFS or BIS, both tasks)
  in the overall score by ±10%, (b) scaling one granular metric's weight within its sector
  by ±10%, (c) optionally, random weights drawn uniformly from [1-p, 1+p] per metric, and
  (d) leaving out each granular metric (leave-one-out, Tables 7-8) for the overall and the
  sector ranking. A weight w scales the metric's axis: M = sqrt(sum_i (w_i u_i)^2).

Rankings only depend on magnitudes: every score is S · exp(-K · M) with S, K > 0, a
strictly decreasing function of M, so perturbing S or K (or S_tot, K_tot) can never change
a ranking within a sector or of the overall score; only weights and metric sets can.
The overall ranking covers the models with all six sectors (the paper's seven UMLLMs).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import chain
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from genfair.methodologies.iris.scoring import DIMENSIONS, OVERALL, SECTORS, normalize_frame

__all__ = [
    "cronbach_alpha",
    "cronbach_alpha_covariance",
    "cronbach_alpha_per_sector",
    "ranking_stability",
    "validation_table",
]

AlphaItems = Literal["deviation", "raw_nonconstant"]
COLUMNS = [
    "analysis",
    "target",
    "perturbed",
    "change",
    "statistic",
    "value",
    "p_value",
    "n_models",
    "n_items",
]


def _matrix(items: ArrayLike) -> np.ndarray:
    x = np.asarray(items, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"items must be 2-D (respondents/models x items); got shape {x.shape}")
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"Cronbach's alpha needs >= 2 models and >= 2 items; got {n} x {k}")
    if not np.isfinite(x).all():
        raise ValueError("items must be finite: drop models or items with NaN first")
    return x


def cronbach_alpha(items: ArrayLike) -> float:
    """Cronbach's alpha, item-variance form (Cronbach 1951; §4.1):

    alpha = k / (k - 1) · (1 - sum_i var(x_i) / var(sum_i x_i)), sample variances (ddof 1),
    rows = models, columns = k items. NaN if the total score has zero variance.
    """
    x = _matrix(items)
    k = x.shape[1]
    total = x.sum(axis=1).var(ddof=1)
    if total == 0:
        return math.nan
    return float(k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / total))


def cronbach_alpha_covariance(items: ArrayLike) -> float:
    """Cronbach's alpha from the mean inter-item covariance (an independent form):

    alpha = k · c_bar / (v_bar + (k - 1) · c_bar), with v_bar the mean item variance and
    c_bar the mean off-diagonal entry of the item covariance matrix C.
    """
    x = _matrix(items)
    k = x.shape[1]
    c = np.cov(x, rowvar=False, ddof=1)
    v_bar = np.trace(c) / k
    c_bar = (c.sum() - np.trace(c)) / (k * (k - 1))
    denominator = v_bar + (k - 1) * c_bar
    if denominator == 0:
        return math.nan
    return float(k * c_bar / denominator)


#: the authors' validation/internal_consistency.py drops items whose variance is at most this
CONSTANT_ITEM_VARIANCE = 1e-9


def _wide(normalized: pd.DataFrame, sector: str, items: AlphaItems = "deviation") -> pd.DataFrame:
    """models x metrics of one sector (u, or the raw value without near-constant columns),
    complete cases only."""
    part = normalized[normalized["sector"] == sector]
    wide = part.pivot(
        index="model", columns="metric", values="u" if items == "deviation" else "value"
    )
    if items == "raw_nonconstant":
        wide = wide.loc[:, wide.var() > CONSTANT_ITEM_VARIANCE]
    wide = wide.dropna(axis=1, how="all")  # a metric nobody computed is no item
    return wide.dropna(axis=0, how="any")


def cronbach_alpha_per_sector(
    granular: pd.DataFrame, items: AlphaItems = "deviation"
) -> pd.DataFrame:
    """Cronbach's alpha per sector over models x granular metrics (§4.1, Fig. 4(a)).

    ``items``: ``deviation`` (default): the normalized deviations u, every metric kept;
    ``raw_nonconstant``: the raw values, metrics whose sample variance over the models is
    at most :data:`CONSTANT_ITEM_VARIANCE` dropped first (the authors'
    validation/internal_consistency.py; the paper's §4.1 says neither). Metrics uncomputed
    for every model are dropped; then models missing any remaining metric are dropped
    (listwise). Rows: ``sector, alpha, alpha_covariance, n_models, n_items``; alpha is NaN
    where fewer than 2 models or items remain.
    """
    normalized = normalize_frame(granular)
    rows = []
    for sector in SECTORS:
        if sector not in set(normalized["sector"]):
            continue
        wide = _wide(normalized, sector, items)
        n, k = wide.shape
        if n >= 2 and k >= 2:
            alpha, alpha_cov = (
                cronbach_alpha(wide.to_numpy()),
                cronbach_alpha_covariance(wide.to_numpy()),
            )
        else:
            alpha = alpha_cov = math.nan
        rows.append(
            {
                "sector": sector,
                "alpha": alpha,
                "alpha_covariance": alpha_cov,
                "n_models": n,
                "n_items": k,
            }
        )
    return pd.DataFrame(
        rows, columns=["sector", "alpha", "alpha_covariance", "n_models", "n_items"]
    )


def _magnitudes(normalized: pd.DataFrame, weights: pd.Series, keep: pd.Series) -> pd.DataFrame:
    """models x (sectors + IRIS) of weighted magnitudes over the kept, computed metrics."""
    part = normalized[keep & normalized["u"].notna()]
    wu2 = (part["u"] * weights[part.index]) ** 2
    by_sector = wu2.groupby([part["model"], part["sector"]]).sum().unstack("sector")
    out = np.sqrt(by_sector)
    out[OVERALL] = np.sqrt(wu2.groupby(part["model"]).sum())
    return out


def _rho(base: pd.Series, other: pd.Series) -> tuple[float, float, int]:
    from scipy.stats import spearmanr

    both = pd.concat([base, other], axis=1).dropna()
    if len(both) < 3:
        return math.nan, math.nan, len(both)
    if (both.nunique() < 2).any():
        return math.nan, math.nan, len(both)  # all models tied: no ranking to correlate
    # ranking by score = ranking by -magnitude; rho is the same for either sign on both
    result = spearmanr(-both.iloc[:, 0], -both.iloc[:, 1])
    return float(result.statistic), float(result.pvalue), len(both)


def ranking_stability(
    granular: pd.DataFrame,
    perturbation: float = 0.10,
    n_random: int = 0,
    seed: int = 0,
    leave_one_out: bool = True,
) -> pd.DataFrame:
    """Spearman's rho of model rankings under weight changes and leave-one-out (§A.2.2).

    Systematic (always): for each dimension (IFS, RFS, BIS) and change in {-p, +p}, the
    weights of its metrics in both tasks become 1 ± p and the overall ranking is compared
    (``analysis == "dimension_weight"``, target IRIS); for each granular metric and change,
    its weight becomes 1 ± p and its sector's ranking is compared (``"metric_weight"``).
    Random (``n_random`` draws, seeded): every metric's weight ~ U[1-p, 1+p], all sectors
    and the overall ranking compared (``"random_weight"``). Leave-one-out: each metric
    removed, its sector's and the overall ranking compared (``"leave_one_out"``, as Tables
    7-8 do for the overall score). Overall rankings are over models with all six sectors.
    Returns the tidy table of :data:`COLUMNS` (statistic = ``spearman_rho``; ``n_models``:
    models ranked; ``n_items``: granular metrics in the study). rho is NaN where fewer than
    3 models remain or all of them tie.
    """
    if not 0 < perturbation < 1:
        raise ValueError(f"perturbation must be in (0, 1), e.g. 0.10 for ±10%; got {perturbation}")
    if n_random < 0:
        raise ValueError(f"n_random must be >= 0; got {n_random}")
    normalized = normalize_frame(granular)
    everything = pd.Series(True, index=normalized.index)
    base = _magnitudes(normalized, pd.Series(1.0, index=normalized.index), everything)
    complete = [
        m for m in base.index if all(s in base.columns and pd.notna(base.at[m, s]) for s in SECTORS)
    ]
    base.loc[[m for m in base.index if m not in complete], OVERALL] = np.nan
    present = [s for s in SECTORS if s in base.columns]
    trials = chain(
        _weight_trials(normalized, perturbation, leave_one_out),
        _random_trials(normalized, present, perturbation, n_random, seed),
    )
    rows: list[dict] = []
    for analysis, perturbed, change, weights, kept, targets in trials:
        magnitudes = _magnitudes(normalized, weights, kept).reindex(index=base.index)
        magnitudes.loc[[m for m in magnitudes.index if m not in complete], OVERALL] = np.nan
        for target in targets:
            rho, p, n = _rho(
                base[target], magnitudes.get(target, pd.Series(np.nan, index=base.index))
            )
            rows.append(
                {
                    "analysis": analysis,
                    "target": target,
                    "perturbed": perturbed,
                    "change": change,
                    "statistic": "spearman_rho",
                    "value": rho,
                    "p_value": p,
                    "n_models": n,
                    "n_items": int(normalized["metric"].nunique()),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


#: one perturbation of :func:`ranking_stability`: (analysis, perturbed, change, each row's
#: weight, the rows kept, the rankings compared)
_Trial = tuple[str, str, str, pd.Series, pd.Series, list[str]]


def _weight_trials(
    normalized: pd.DataFrame, perturbation: float, leave_one_out: bool
) -> Iterator[_Trial]:
    """The systematic perturbations: each dimension's weights, then each granular metric's
    weight (and, with ``leave_one_out``, the metric removed)."""
    ones = pd.Series(1.0, index=normalized.index)
    everything = pd.Series(True, index=normalized.index)
    changes = ((-1, f"-{perturbation:.0%}"), (1, f"+{perturbation:.0%}"))
    dimension = normalized["sector"].str.split("-").str[0]
    for dim in DIMENSIONS:
        if not (dimension == dim).any():
            continue
        for sign, label in changes:
            weights = ones.where(dimension != dim, 1 + sign * perturbation)
            yield "dimension_weight", dim, label, weights, everything, [OVERALL]

    metrics = normalized[["sector", "metric"]].drop_duplicates().itertuples(index=False)
    for sector, metric in metrics:
        hit = (normalized["sector"] == sector) & (normalized["metric"] == metric)
        name = f"{sector}/{metric}"
        for sign, label in changes:
            weights = ones.where(~hit, 1 + sign * perturbation)
            yield "metric_weight", name, label, weights, everything, [sector]
        if leave_one_out:
            yield "leave_one_out", name, "removed", ones, ~hit, [sector, OVERALL]


def _random_trials(
    normalized: pd.DataFrame, present: list[str], perturbation: float, n_random: int, seed: int
) -> Iterator[_Trial]:
    """``n_random`` seeded draws of every granular metric's weight ~ U[1-p, 1+p], shared by
    all models; every sector ``present`` and the overall ranking compared."""
    everything = pd.Series(True, index=normalized.index)
    rng = np.random.default_rng(seed)
    keys = normalized[["sector", "metric"]].apply(tuple, axis=1)
    distinct = list(dict.fromkeys(keys))
    for draw in range(n_random):
        w = dict(
            zip(
                distinct,
                rng.uniform(1 - perturbation, 1 + perturbation, size=len(distinct)),
                strict=True,
            )
        )
        weights = keys.map(w).astype(float)
        yield (
            "random_weight",
            f"draw {draw}",
            f"U[±{perturbation:.0%}]",
            weights,
            everything,
            [*present, OVERALL],
        )


def validation_table(
    granular: pd.DataFrame,
    perturbation: float = 0.10,
    n_random: int = 0,
    seed: int = 0,
    alpha_items: AlphaItems = "deviation",
) -> pd.DataFrame:
    """One tidy table: Cronbach's alpha per sector (``analysis == "cronbach_alpha"``,
    ``value`` = item-variance alpha over ``alpha_items``) followed by
    :func:`ranking_stability`'s rows."""
    alpha = cronbach_alpha_per_sector(granular, alpha_items)
    rows = pd.DataFrame(
        {
            "analysis": "cronbach_alpha",
            "target": alpha["sector"],
            "perturbed": "",
            "change": "",
            "statistic": "cronbach_alpha",
            "value": alpha["alpha"],
            "p_value": math.nan,
            "n_models": alpha["n_models"],
            "n_items": alpha["n_items"],
        },
        columns=COLUMNS,
    )
    stability = ranking_stability(granular, perturbation, n_random, seed)
    return pd.concat([rows, stability], ignore_index=True)
