"""The methodology contract: what every methodology provides, and what it is given.

A methodology is one paper's way of measuring and the unit of extension: it owns its whole
lifecycle, and the generic study code (:mod:`genfair.study`) only calls these methods, in the
order of the pipeline's stages::

    build_probes                        probes@<methodology>
    generate  (default: calls + judge)  generate@<model>-<methodology>
    label                               label@<model>-<methodology>
    metrics   -> MetricsResult          metrics@<model>-<methodology>
    study     -> StudyResult | None     study@<methodology>  (all models at once; optional)
    comparison  (an optional role)      score: leaderboard, ranking, headline numbers, paired
                                        comparisons (:mod:`genfair.methodologies.comparison`)
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

import pandas as pd
from pydantic import BaseModel

from genfair.methodologies.comparison import MEMBERS as COMPARISON_MEMBERS
from genfair.methodologies.comparison import Comparison
from genfair.methodologies.presentation import MEMBERS as PRESENTATION_MEMBERS
from genfair.methodologies.presentation import Presentation
from genfair.models.ahead import sending_ahead
from genfair.models.generation import run
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
    table with a ``model`` column feeds :meth:`Comparison.leaderboard`; ``summary`` is
    ``data/study/<methodology>.json``; ``params`` go to the study's MLflow run.
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


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

    #: its comparison role's class (:class:`~genfair.methodologies.comparison.Comparison`)
    comparison_role: ClassVar[type[Comparison[Any]]] = Comparison

    @functools.cached_property
    def comparison(self) -> Comparison[ConfigT]:
        """Its comparison role: leaderboard, ranking, headline numbers, paired comparisons
        (:mod:`genfair.methodologies.comparison`; default: nothing compared)."""
        return self.comparison_role(self)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _refuse_misplaced(cls)


#: each optional role: its members, its class and the package module that holds a methodology's own
_ROLES = (
    ("comparison", COMPARISON_MEMBERS, "Comparison", "compare.py", "Comparison role"),
    ("presentation", PRESENTATION_MEMBERS, "Presentation", "report.py", "Presentation role"),
)


def _refuse_misplaced(cls: type) -> None:
    """Refuse a methodology class that defines a role's member itself (it would be ignored):
    one line naming the member and where it goes."""
    for role, members, base, home, section in _ROLES:
        for name in members:
            if name in vars(cls):
                raise TypeError(
                    f"{cls.__module__}.{cls.__qualname__}.{name}: a {role} member; define it on "
                    f"a {base} subclass (its package's {home}) set as the class's {role}_role "
                    f'(docs/architecture.md, "{section}")'
                )
