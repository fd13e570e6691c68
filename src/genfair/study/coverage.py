"""Planted-truth coverage of a methodology's headline intervals (issue 46.7): one call for
its author, before any study runs.

A :class:`Plant` draws one SIMULATED model's labels of a given size with a known truth per
headline; :func:`headline_coverage` draws ``reps`` label tables per size, computes each
headline's interval by each method and counts how often it holds the truth. The methods:
``percentile`` and ``bca`` (genfair's bootstrap of the headline function over the
methodology's resampling unit, :func:`genfair.methodologies.intervals.headline_intervals`),
and ``reported``: the interval the methodology's own ``metrics`` step reports (its
headline's ``interval`` columns). A 95% interval should hold the truth in about 95% of the
draws (binomial standard error ``sqrt(0.95 * 0.05 / reps)``: 0.02 at 100 draws); one clearly
below says the interval misses, typically because the statistic is biased (docs/methodology.md,
"Interval methods").
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genfair.methodologies.base import Methodology, ModelInfo, StepContext
from genfair.methodologies.intervals import headline_intervals
from genfair.metrics.bootstrap import INTERVAL_METHODS
from genfair.models.base import derive_seed

#: the methods :func:`headline_coverage` knows: genfair's bootstrap's and the reported one
METHODS = (*INTERVAL_METHODS, "reported")
COLUMNS = [
    "headline",
    "truth",
    "size",
    "method",
    "reps",
    "coverage",
    "estimate",
    "width",
    "above",
    "widened",
]


@dataclass(frozen=True)
class Plant:
    """A SIMULATED model with a known truth: ``draw(size, rng)`` gives its labels (as the
    methodology's ``label`` step writes them) at ``size`` (e.g. answers per unit, units),
    ``truth`` each headline's true value by name (a headline not named is not scored)."""

    draw: Callable[[int, np.random.Generator], pd.DataFrame]
    truth: Mapping[str, float]


def headline_coverage(
    methodology: Methodology,
    config: Any,
    plant: Plant,
    sizes: Iterable[int],
    reps: int,
    *,
    modality: str = "llm",
    methods: Sequence[str] = INTERVAL_METHODS,
    resamples: int = 500,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """How often each headline's interval holds the plant's truth, per size and method
    (:data:`COLUMNS`): ``reps`` draws of ``plant`` at each of ``sizes``; ``coverage``: the
    share of draws whose interval holds the truth; ``estimate``, ``width``: their means;
    ``above``: the share whose interval lies wholly above the truth (the misses of a
    statistic biased upward); ``widened``: the share widened to contain its estimate.
    A draw without a number or interval for a headline counts as a miss."""
    unknown = set(methods) - set(METHODS)
    if unknown or reps < 1:
        raise ValueError(f"methods {sorted(unknown)} / reps {reps}: use {METHODS}, reps >= 1")
    rows = []
    for size in sizes:
        found: dict[tuple[str, str], list[tuple[float, float, float, bool]]] = {}
        for rep in range(reps):
            rng = np.random.default_rng(derive_seed(seed, "coverage", size, rep))
            labels = plant.draw(size, rng)
            intervals = _intervals(methodology, config, modality, labels, methods, rep, resamples,
                                   confidence)  # fmt: skip
            for method, by_name in intervals.items():
                for name in plant.truth:
                    got = by_name.get(name)
                    found.setdefault((name, method), []).append(
                        (got["estimate"], got["ci_low"], got["ci_high"], got["widened"])
                        if got
                        else (np.nan, np.nan, np.nan, False)
                    )
        for (name, method), draws in found.items():
            estimate, low, high, widened = (
                np.asarray(v, dtype=float) for v in zip(*draws, strict=True)
            )
            truth = float(plant.truth[name])
            rows.append(
                {
                    "headline": name,
                    "truth": truth,
                    "size": size,
                    "method": method,
                    "reps": reps,
                    "coverage": float(np.mean((low <= truth) & (truth <= high))),
                    "estimate": float(np.nanmean(estimate)),
                    "width": float(np.nanmean(high - low)),
                    "above": float(np.mean(low > truth)),
                    "widened": float(np.mean(widened)),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _intervals(
    methodology: Methodology,
    config: Any,
    modality: str,
    labels: pd.DataFrame,
    methods: Sequence[str],
    rep: int,
    resamples: int,
    confidence: float,
) -> dict[str, dict[str, dict[str, Any]]]:
    """method -> headline -> its interval, for one draw's labels."""
    out = {}
    for method in methods:
        if method == "reported":
            out[method] = reported_intervals(methodology, config, modality, labels, seed=rep)
            continue
        every = {h.name: method for h in methodology.comparison.headline}
        out[method] = headline_intervals(
            methodology, config, modality, labels, methods=every, resamples=resamples,
            confidence=confidence, seed=rep,
        )  # fmt: skip
    return out


def reported_intervals(
    methodology: Methodology, config: Any, modality: str, labels: pd.DataFrame, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Each headline's number and interval as the methodology's ``metrics`` step reports
    them (its leaderboard row's ``column`` and ``interval`` columns) for one SIMULATED
    model's ``labels``; a headline without interval columns is left out."""
    with tempfile.TemporaryDirectory() as tmp:
        ctx = StepContext(
            model=ModelInfo("coverage", modality, "simulated", True),  # type: ignore[arg-type]
            seed=seed,
            cache_dir=Path(tmp) / "cache",
            image_dir=Path(tmp) / "images",
        )
        scores = methodology.metrics(labels, config, ctx).scores
    board = methodology.comparison.leaderboard(scores.assign(model="coverage"), None)
    out = {}
    for headline in methodology.comparison.headline:
        if headline.interval is None:
            continue
        match = board
        for column, value in headline.where.items():
            match = match[match[column] == value] if column in match else match.iloc[0:0]
        if match.empty:
            continue
        low, high = (float(match[c].iloc[0]) for c in headline.interval)
        estimate = float(match[headline.column].iloc[0])
        out[headline.name] = {"estimate": estimate, "ci_low": low, "ci_high": high,
                              "widened": False}  # fmt: skip
    return out
