"""The methodology contract: what every methodology provides, and what it is given.

A methodology is one paper's way of measuring and the unit of extension: it owns its whole
lifecycle, and the generic study code (:mod:`genfair.study`) only calls these methods, in the
order of the pipeline's stages::

    build_probes                        probes@<methodology>
    generate  (default: calls + judge)  generate@<model>-<methodology>
    label                               label@<model>-<methodology>
    metrics   -> MetricsResult          metrics@<model>-<methodology>
    study     -> StudyResult | None     study@<methodology>  (all models at once; optional)
    leaderboard, ranking, headline      score
    presentation  (an optional role)    plot@<methodology>-<plot>, track, report: figures,
                                        dvc plots, MLflow record, report section, samples
                                        (:mod:`genfair.methodologies.presentation`)

What a step needs beyond its inputs (seed, model, modality, folders, instruments, the backend
and response cache, the progress text) comes in one context object (:class:`StepContext`,
:class:`StudyContext`), built by the study layer. A methodology is found by its package's presence
under ``genfair/methodologies/``, by the ``genfair.methodologies`` entry point group of an installed
distribution, or, in-process, by :func:`genfair.methodologies.registry.register` (see
docs/architecture.md, "Adding a methodology").

What a call asks of a simulator is a typed question in its ``meta``
(``meta=question.meta()``; :mod:`genfair.models.questions`), validated where it is made and
where the simulator reads it, one kind per question:

- simulated LLM: :class:`~genfair.models.questions.ChoiceQuestion` (a multiple-choice answer
  with its letters and truth), :class:`~genfair.models.questions.RewriteQuestion` (a text to
  rewrite with planted swaps);
- simulated t2i: :class:`~genfair.models.questions.ImageQuestion` (a person with planted
  attributes), :class:`~genfair.models.questions.OpenSetImageQuestion` (planted classes of the
  open-set biases asked about a caption's images);
- simulated VLM: :class:`~genfair.models.questions.ImageChoiceQuestion` (one of the options,
  right with the accuracy planted for the person's group),
  :class:`~genfair.models.questions.RecallQuestion` (a FACET class with planted recall),
  :class:`~genfair.models.questions.OpenVQAQuestion` (an open-set answer from the planted class).

A methodology's planted rates are its own: a ``simulated`` section of its ``Config`` holds the
simulator policies (:mod:`genfair.models.config`'s ``Simulated*Policy``), and each question
carries the one it is answered with as its ``plant``. A simulated call's cache key covers the
simulator's model-level settings and that plant alone, so changing a planted rate reruns only
the calls that use it; conf/model's simulators hold no policy.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
import pandas as pd
from pydantic import BaseModel

from genfair.methodologies.presentation import Presentation
from genfair.metrics.bootstrap import INTERVAL_METHODS, IntervalMethod
from genfair.models.runner import Call, OnRows, Verdict

Modality = Literal["llm", "t2i", "vlm"]
MODALITIES: tuple[Modality, ...] = ("llm", "t2i", "vlm")


@dataclass
class MetricsResult:
    """A model's results on one methodology.

    ``scores``: one row per aggregate (e.g. context x attribute) with the score columns;
    ``tables``: named detail tables (per statistic...); ``summary``: nested JSON (the
    metrics folder's ``summary.json``; its ``instruments`` entry is logged to MLflow).
    """

    scores: pd.DataFrame
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class StudyResult:
    """A methodology's study-level results (all models at once).

    ``tables`` are written to ``data/study/<methodology>/<name>.parquet``; a ``scores``
    table with a ``model`` column feeds :meth:`Methodology.leaderboard`; ``summary`` is
    ``data/study/<methodology>.json``; ``params`` go to the study's MLflow run.
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


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
    bootstrap of :meth:`Methodology.headline_function` gives it (over the resampling unit,
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
        long = self.tally(labels)
        totals = np.zeros((1, self.width))
        np.add.at(totals[0], long["column"].to_numpy(dtype=int), long["count"].to_numpy(float))
        return {name: float(values[0]) for name, values in self.score(totals).items()}


@dataclass(frozen=True)
class PairedCounts:
    """A :class:`HeadlineCounts` whose columns are laid out from the labels it counts:
    ``counts(*labels)`` lays them out for one comparison's labels (e.g. OpenBias's: a block per
    bias of the knowledge bases they carry, which no config names). Called on labels, it gives
    their numbers."""

    counts: Callable[..., HeadlineCounts]

    def __call__(self, labels: pd.DataFrame) -> dict[str, float]:
        return self.counts(labels)(labels)


@dataclass(frozen=True)
class ModelInfo:
    """What a methodology may know about a model under test."""

    name: str
    modality: Modality
    backend: str
    simulated: bool
    #: the model's architecture family, when configured (e.g. autoregressive, diffusion)
    architecture: str | None = None


@dataclass
class StepContext:
    """Everything a per-model step needs beyond its tables.

    ``backend`` and ``cache`` are set for ``generate`` only; ``instrument(name)`` builds a
    configured instrument (the demographic face instrument in oracle mode for simulators).
    """

    model: ModelInfo
    seed: int
    #: the response cache's folder (instruments keep their own caches beside it)
    cache_dir: Path
    #: where this model's images for this methodology go (``<sha256>.png``)
    image_dir: Path
    #: progress text of long loops
    desc: str = ""
    backend: Any = None
    cache: Any = None
    instrument: Callable[[str], Any] = field(default=lambda name: _no_instrument(name))
    #: opens the study's response cache (a context manager), where instruments keep their
    #: readings (:func:`genfair.instruments.readings.read_images`); None: none kept
    open_cache: Callable[[], Any] | None = None
    #: the model configs (``ModelConfig``) by name of the model under test and of the study's
    #: models the methodology reads (:meth:`Methodology.models_read`, e.g. an LLM proposer or
    #: a VQA judge: it builds their backends with :func:`genfair.models.build_backend`)
    models: Mapping[str, Any] = field(default_factory=dict)

    @property
    def modality(self) -> Modality:
        return self.model.modality

    def run(
        self,
        calls: Sequence[Call],
        judge: Callable[[str, dict[str, Any]], Verdict],
        desc: str | None = None,
        backend: Any = None,
        on_rows: OnRows | None = None,
    ) -> pd.DataFrame:
        """Send ``calls`` through the response cache, whatever the modality (images are
        exported to :attr:`image_dir`); see :func:`genfair.models.generation.run`. To the
        model under test, or to ``backend``: one of the models the methodology reads (built
        from :attr:`models`, e.g. a proposer LLM or a VQA judge). The rows are also handed to
        ``on_rows`` as they arrive, a group at a time (e.g. :meth:`ahead`'s)."""
        from genfair.models.generation import run

        backend = self._generating(backend)
        return run(
            backend,
            self.cache,
            calls,
            judge,
            seed=self.seed,
            desc=desc or self.desc,
            image_dir=self.image_dir,
            on_rows=on_rows,
        )

    def ahead(
        self,
        calls_of: Callable[[list[dict[str, Any]]], Sequence[Call]],
        judge: Callable[[str, dict[str, Any]], Verdict],
        backend: Any,
    ) -> AbstractContextManager[OnRows]:
        """Follow-up calls to ``backend`` made by each row of a :meth:`run` (``calls_of(rows)``,
        e.g. the questions about one generated image): within the block, pass the yielded
        function as that run's ``on_rows`` and, on a cluster, each row's follow-ups are
        answered into the cache as soon as the row exists (:mod:`genfair.models.ahead`).
        After the block, :meth:`run` them all in the step's own order: they come from the
        cache, so the table is the same on any executor and each call is sent once."""
        from genfair.models.ahead import sending_ahead

        backend = self._generating(backend)
        return sending_ahead(backend, self.cache, calls_of, judge, seed=self.seed, desc=self.desc)

    def _generating(self, backend: Any) -> Any:
        backend = backend or self.backend
        if backend is None or self.cache is None:
            raise RuntimeError("StepContext.run is for generate steps: no backend or cache set")
        return backend


def _no_instrument(name: str) -> Any:
    raise RuntimeError(
        f"no instrument {name!r} in this context (the study layer provides instruments)"
    )


@dataclass(frozen=True)
class ModelRun:
    """One model's outputs on a methodology, for study-level steps (read lazily)."""

    model: ModelInfo
    labels: Callable[[], pd.DataFrame]
    scores: Callable[[], pd.DataFrame]
    table: Callable[[str], pd.DataFrame]


@dataclass(frozen=True)
class StudyContext:
    seed: int
    cache_dir: Path
    #: every model of the study that runs this methodology, in study order
    runs: tuple[ModelRun, ...]
    #: the methodology's probe table
    probes: Callable[[], pd.DataFrame]


@dataclass(frozen=True)
class Footprint:
    """An estimate: ``rows`` rows of ``bytes_per_row`` bytes each, held at once in memory, set
    by the config key ``key`` (under ``methodologies.<name>``); ``what`` names the table."""

    key: str
    what: str
    rows: int
    bytes_per_row: int


def table_rows(path: str | Path) -> int | None:
    """Rows of the Parquet (read from its footer) or CSV table at ``path``, None when it is
    absent or unreadable (building the probes then says why, in one line): what a
    :meth:`Methodology.footprint` reads of curated data, cheaply."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_metadata(path).num_rows
        return len(pd.read_csv(path))
    except (OSError, ValueError):  # pyarrow's and pandas's read errors derive from these
        return None


def bounded(count: int | None, rows: int | None) -> int | None:
    """``count`` capped by a table's ``rows`` (either None: the other)."""
    known = [n for n in (count, rows) if n is not None]
    return min(known) if known else None


#: a methodology's config type (:attr:`Methodology.Config`)
ConfigT = TypeVar("ConfigT", bound=BaseModel)
#: bootstrap replicates of a paired comparison of a methodology without its own setting
COMPARISON_RESAMPLES = 1000


class Methodology(ABC, Generic[ConfigT]):
    """Base class of every methodology (see the module docstring for the lifecycle), generic in
    its config type: every step receives its :attr:`Config`
    (``class Quiz(Methodology[QuizConfig])``)."""

    name: ClassVar[str]
    #: the model modalities it measures (a model of another modality does not run it)
    modalities: ClassVar[tuple[Modality, ...]]
    #: its pydantic config (``methodologies.<name>`` in params.yaml)
    Config: ClassVar[type[BaseModel]]
    #: columns that name a score row (MLflow metric keys: ``<col1>.<col2>.<score>``)
    metric_keys: ClassVar[tuple[str, ...]] = ()
    #: how the leaderboard is ranked (None: not ranked)
    ranking: ClassVar[Ranking | None] = None
    #: the few numbers that summarise a model
    headline: ClassVar[tuple[Headline, ...]] = ()
    #: the labels column whose values a paired model comparison resamples jointly (the
    #: methodology's resampling unit, e.g. ``probe_id``; a unit that is not one column is
    #: named here and given by :meth:`paired_units`); None: its models are not compared
    paired_unit: ClassVar[str | None] = None

    #: the fields of :attr:`Config` each step reads, by step (``probes``, ``generate``,
    #: ``label``, ``metrics``, ``study``): its stage depends on these alone (params.yaml's
    #: ``digests.methodologies.<name>.<step>``) and the step is handed a config that refuses
    #: any other field (:mod:`genfair.methodologies.reads`). A step not named reads every
    #: field (the safe default); score, track and report read them all
    reads: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: the fields of :attr:`Config` that plant a simulator's answers: a simulator's
    #: ``generate`` reads them too, a real model's sees their defaults (a planted rate reruns
    #: only the simulators' runs)
    plants: ClassVar[tuple[str, ...]] = ("simulated",)

    #: the modalities on which a run's later calls depend on its earlier answers (e.g. prompts
    #: built from the images it drew): ``genfair plan`` can count only the first uncached
    #: step of such a run and marks its row a lower bound; an own :meth:`generate` alone
    #: does not make a run dependent
    dependent_calls: ClassVar[tuple[Modality, ...]] = ()
    #: the instruments (``instruments.<name>``) its steps run on every image a text-to-image
    #: model draws for it (``genfair plan``'s instrument core-hours)
    measures: ClassVar[tuple[str, ...]] = ()
    #: the size settings (dotted, of its ``conf/sizes`` files) that size a headline's units,
    #: by the headline's first dotted part (e.g. a sector): ``genfair plan --target`` picks
    #: its knob among them (:mod:`genfair.study.targets`); a headline not named here, among
    #: every size setting
    size_knobs: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def applies_to(self, modality: str) -> bool:
        return modality in self.modalities

    def models_read(self, config: ConfigT) -> tuple[str, ...]:
        """The study's models, by name, that a run's steps drive besides the model under
        test (e.g. an LLM proposer, a VQA judge). Only these reach :attr:`StepContext.models`,
        and ``runs`` records a hash of each, so ``generate`` reruns when one changes.
        Default: none."""
        return ()

    # ---- probes@<methodology>

    @abstractmethod
    def build_probes(self, config: ConfigT, seed: int) -> pd.DataFrame:
        """The probe table (deterministic for ``config`` and ``seed``)."""

    def footprint(self, config: ConfigT) -> list[Footprint]:
        """What the largest tables of a run of ``config`` hold, estimated from its counts before
        any probe is built (:func:`genfair.study.footprint.check_footprint` refuses a run the
        machine cannot hold). None by default."""
        return []

    def probes_for(self, probes: pd.DataFrame, modality: str) -> pd.DataFrame:
        """The probe rows a model of ``modality`` answers (all rows, unless the table has a
        ``modality`` column: ``llm``, or several joined by ``|``)."""
        if "modality" not in probes:
            return probes
        keep = probes["modality"].astype(str).str.split("|").map(lambda m: modality in m)
        return probes[keep].reset_index(drop=True)

    # ---- generate@<model>-<methodology>

    def calls(self, probes: pd.DataFrame, config: ConfigT, modality: str) -> list[Call]:
        """The calls of the default :meth:`generate` (probes already filtered by modality)."""
        raise NotImplementedError(f"{self.name}: implement calls() or generate()")

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        """A completion's status (re-asked while not ``ok``, up to the call's attempts)."""
        return "ok"

    def generate(self, probes: pd.DataFrame, config: ConfigT, ctx: StepContext) -> pd.DataFrame:
        """The model's responses: by default every call of :meth:`calls` through the
        response cache (text, images or image+text, by the model's modality)."""
        mine = self.probes_for(probes, ctx.modality)
        return ctx.run(self.calls(mine, config, ctx.modality), self.judge)

    # ---- label@ and metrics@<model>-<methodology>

    @abstractmethod
    def label(
        self, probes: pd.DataFrame, responses: pd.DataFrame, config: ConfigT, ctx: StepContext
    ) -> pd.DataFrame:
        """Instrument outputs per response."""

    @abstractmethod
    def metrics(self, labels: pd.DataFrame, config: ConfigT, ctx: StepContext) -> MetricsResult:
        """The model's scores (pure functions of the labels)."""

    # ---- study@<methodology>, score, track

    def study(self, config: ConfigT, ctx: StudyContext) -> StudyResult | None:
        """The study-level step over all models (None: the methodology has none)."""
        return None

    #: how its results are shown (figures, ``dvc plots``, report section, samples, MLflow
    #: record): :mod:`genfair.methodologies.presentation`, optional (the default works)
    presentation_role: ClassVar[type[Presentation[Any]]] = Presentation

    @functools.cached_property
    def presentation(self) -> Presentation[ConfigT]:
        """Its :attr:`presentation_role`, built with it."""
        return self.presentation_role(self)

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
