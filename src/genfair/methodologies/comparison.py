"""The comparison role of a methodology: what its leaderboard holds, how it ranks, its headline
numbers, and how two models are compared on them (issue 48: one of the contract's roles).

Optional, and the default works: a methodology whose class sets no
:attr:`~genfair.methodologies.base.Methodology.comparison_role` gets this :class:`Comparison`,
whose leaderboard is every model's scores (plus the study step's ``scores`` rows), unranked,
with no headline number and no paired comparison. A methodology overrides it with a subclass
in its package's ``compare.py`` (``class QuizComparison(Comparison[QuizConfig])``), set as
its ``comparison_role``; an instance is built with its methodology (``m.comparison``) and reads
the pipeline's facts through :attr:`Comparison.methodology`.

Used by the ``score`` stage (:mod:`genfair.study.scoring`: leaderboard, ranking, headline),
MLflow (:mod:`genfair.study.tracking`: a model's rows), paired comparisons and their precision
(:mod:`genfair.study.compare`, :mod:`genfair.study.precision`) and the headline intervals
(:mod:`genfair.methodologies.intervals`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
import pandas as pd
from pydantic import BaseModel

from genfair.metrics.bootstrap import INTERVAL_METHODS, IntervalMethod

if TYPE_CHECKING:
    from genfair.methodologies.base import Methodology, StudyResult

#: a methodology's config type (:attr:`~genfair.methodologies.base.Methodology.Config`)
ConfigT = TypeVar("ConfigT", bound=BaseModel)
#: bootstrap replicates of a paired comparison of a methodology without its own setting
COMPARISON_RESAMPLES = 1000


@dataclass(frozen=True)
class Ranking:
    """How a methodology's leaderboard is ranked: ``rank`` among real models (never
    simulators) within each ``group_by`` group, by ``column``."""

    group_by: tuple[str, ...]
    column: str
    ascending: bool
    #: (column, values) of rows that are shown but never ranked
    unranked: tuple[str, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Headline:
    """One headline number: the ``column`` of the leaderboard row matching ``where``,
    named ``name`` with the direction that is better (``dvc metrics show``, MLflow, the
    report's summary), or ``better=NEUTRAL`` for a number reported for information and never
    ranked; ``interval``: the (low, high) columns of its confidence interval, shown beside it
    in the report. ``interval_method``: ``percentile`` or ``bca``, the interval genfair's
    bootstrap of :meth:`Comparison.headline_function` gives it (over the resampling unit,
    :func:`genfair.methodologies.intervals.headline_intervals`, which a ``metrics`` step may
    report, and :func:`genfair.study.coverage.headline_coverage`); ``bca`` for a biased
    statistic where the coverage says so (docs/methodology.md, "Interval methods")."""

    name: str
    column: str
    where: Mapping[str, Any]
    better: Literal["lower", "higher", "closer to 0", "neither"]
    interval: tuple[str, str] | None = None
    interval_method: IntervalMethod = "percentile"

    def __post_init__(self) -> None:
        if self.interval_method not in INTERVAL_METHODS:
            raise ValueError(
                f"Headline {self.name!r}: interval_method={self.interval_method!r}; use one of "
                f"{', '.join(map(repr, INTERVAL_METHODS))}"
            )
        if self.better not in BETTER_VALUES:  # a dataclass checks no Literal: this does
            raise ValueError(
                f"Headline {self.name!r}: better={self.better!r}; use one of "
                f'{", ".join(map(repr, BETTER_VALUES))} (docs/architecture.md, "Ranking and '
                'headline numbers")'
            )


#: :attr:`Headline.better` of a number reported, not ranked (no direction is better, e.g. a
#: share given for information): no rank beside it, its ``dvc metrics`` file ``.reported``
NEUTRAL = "neither"
#: the directions a headline number may be better in (:attr:`Headline.better`)
BETTER_VALUES = ("lower", "higher", "closer to 0", NEUTRAL)


@dataclass(frozen=True)
class HeadlineCounts:
    """Headline numbers that are functions of counts summed over a model's labels rows, so a
    paired comparison (:mod:`genfair.study.compare`) tallies each unit's counts once and
    scores every replicate from their weighted sum instead of recomputing from its rows.

    ``tally(labels)``: each row's counts, long: columns ``row`` (position in ``labels``),
    ``column`` (``0`` to ``width - 1``) and ``count`` (a row may add to several columns).
    ``score(totals)``: from a (replicates x ``width``) array of summed counts, each headline's
    value per replicate by :attr:`Headline.name`. Called on labels, it gives their numbers.
    """

    width: int
    tally: Callable[[pd.DataFrame], pd.DataFrame]
    score: Callable[[np.ndarray], dict[str, np.ndarray]]

    def __call__(self, labels: pd.DataFrame) -> dict[str, float]:
        return {name: float(values[0]) for name, values in self.score(self.totals(labels)).items()}

    def totals(self, labels: pd.DataFrame) -> np.ndarray:
        """The (1 x ``width``) counts of ``labels``, summed."""
        long = self.tally(labels)
        totals = np.zeros((1, self.width))
        np.add.at(totals[0], long["column"].to_numpy(dtype=int), long["count"].to_numpy(float))
        return totals


@dataclass(frozen=True)
class PairedCounts:
    """A :class:`HeadlineCounts` whose columns are laid out from the labels it counts:
    ``counts(*labels)`` lays them out for one comparison's labels (e.g. OpenBias's: a block per
    bias of the knowledge bases they carry, which no config names). Called on labels, it gives
    their numbers."""

    counts: Callable[..., HeadlineCounts]

    def __call__(self, labels: pd.DataFrame) -> dict[str, float]:
        return self.counts(labels)(labels)


class Comparison(Generic[ConfigT]):
    """A methodology's comparison role (the module docstring says what it is for), generic in
    its config type like the methodology (``Comparison[QuizConfig]``). Every member is
    optional; the defaults compare nothing."""

    #: how the leaderboard is ranked (None: not ranked)
    ranking: ClassVar[Ranking | None] = None
    #: the few numbers that summarise a model
    headline: ClassVar[tuple[Headline, ...]] = ()
    #: the labels column whose values a paired model comparison resamples jointly (the
    #: methodology's resampling unit, e.g. ``probe_id``; a unit that is not one column is
    #: named here and given by :meth:`paired_units`); None: its models are not compared
    paired_unit: ClassVar[str | None] = None

    def __init__(self, methodology: Methodology[ConfigT]) -> None:
        #: the methodology compared (its name, config type and pipeline facts)
        self.methodology = methodology

    def leaderboard(self, scores: pd.DataFrame, study: StudyResult | None) -> pd.DataFrame:
        """The leaderboard's rows before ranking: every model's scores (``model`` column
        first) plus the study step's ``scores`` rows when it has them."""
        return _with_study_rows(scores, study)

    def model_rows(
        self, model: str, scores: pd.DataFrame, study: StudyResult | None
    ) -> pd.DataFrame:
        """The rows that describe one model in its MLflow run and figures: its scores plus
        its rows of the study step's ``scores`` table."""
        return _with_study_rows(scores, study, model)

    def headline_function(
        self, config: ConfigT, modality: str
    ) -> Callable[[pd.DataFrame], dict[str, float]] | None:
        """A cheap function from one model's labels (of ``modality``) to its headline numbers
        by :attr:`Headline.name` (no intervals): what a paired comparison recomputes on every
        resample of :attr:`paired_unit` (:mod:`genfair.study.compare`). A
        :class:`HeadlineCounts` (or :class:`PairedCounts`) is fast at any scale (each unit
        tallied once); any other
        callable is called on every replicate's rows. Only numbers of one model's own labels
        can be paired (not one computed across models). Default: None (not compared).

        A plain callable gets the rows of the drawn units, a unit drawn k times k times: each
        row keeps its index, so the j-th occurrence of an index is the unit's j-th copy (a
        headline averaged over units tells the copies apart by it)."""
        return None

    def paired_headline_function(
        self, config: ConfigT, modality: str, study: StudyResult | None
    ) -> Callable[[pd.DataFrame], dict[str, float]] | None:
        """:meth:`headline_function` for a methodology whose per-model headline numbers also
        need the study step's result (``study``; e.g. IRIS's S and K, calibrated over the
        study's models and held fixed in every replicate). Default: the headline function."""
        return self.headline_function(config, modality)

    def paired_units(self, labels: pd.DataFrame) -> pd.Series:
        """Each labels row's resampling unit, as text (:attr:`paired_unit`'s column by
        default; None: the row is in no unit); override it where the unit differs by row
        (e.g. by sector)."""
        return labels[self.paired_unit].astype(str)

    def comparison_resamples(self, config: ConfigT) -> int:
        """Bootstrap replicates of each paired comparison (:mod:`genfair.study.compare`): the
        :data:`COMPARISON_RESAMPLES`; a methodology whose config sets its own bootstrap's
        replicates returns them (a smoke study stays quick, a paper-scale one gets the paper's
        replicates)."""
        return COMPARISON_RESAMPLES

    def pilot_limits(self, config: ConfigT, modality: str, labels: pd.DataFrame) -> dict[str, str]:
        """Headlines (by :attr:`Headline.name`) a pilot of these labels cannot forecast
        (:mod:`genfair.study.precision`), each with its one-line reason (``"not forecast:
        ..."``), from what the methodology knows of its own estimators and the generic checks
        cannot see (e.g. a plug-in entropy of cells with one or two answers each, whose
        resamples and halves share its bias). Default: none."""
        return {}


#: the members a methodology class no longer holds: they are its comparison role's
MEMBERS = (
    "headline", "ranking", "paired_unit", "headline_function", "paired_headline_function",
    "paired_units", "comparison_resamples", "pilot_limits", "leaderboard", "model_rows",
)  # fmt: skip


def _with_study_rows(
    scores: pd.DataFrame, study: StudyResult | None, model: str | None = None
) -> pd.DataFrame:
    """``scores`` and the study's ``scores`` rows (of ``model``, when given) in its columns."""
    extra = study.tables.get("scores") if study else None
    if extra is None or extra.empty or "model" not in extra:
        return scores
    if model is not None:
        extra = extra[extra["model"] == model].drop(columns="model")
    return pd.concat(
        [scores, extra[[c for c in scores.columns if c in extra.columns]]], ignore_index=True
    )
