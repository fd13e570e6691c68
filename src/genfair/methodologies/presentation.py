"""A methodology's presentation role: how its results are shown, never how they are made.

Optional: :class:`Presentation` itself is the default, and it works for any methodology
(figures of its scores, a sample view of its label table, a report section of its
docstring, figures and leaderboard, the instruments of its metrics summary in MLflow). A
package overrides what it draws otherwise in ``<package>/report.py``
(``class <Name>Presentation(Presentation[<Name>Config])``) and names it on its methodology
(``presentation_role = <Name>Presentation``); the generic study code calls
``methodology.presentation.<member>``::

    plots, plot_tables                  plot@<methodology>-<plot>  (data/plots/, dvc plots)
    figures, run_record                 track (MLflow)
    title, report_section               report (data/report/index.html)
    sample_view, sample_rows,           report (data/report/samples/: the rows behind the
    sample_filter                         numbers)

A role is built with its methodology (``Presentation(methodology)``) and reads the pipeline's
facts (``name``, ``metric_keys``) through :attr:`Presentation.methodology`. This module
imports :mod:`genfair.methodologies.base` for types only (base imports it for its default).
Imported where used: :mod:`.score_bars` (matplotlib), when the default figure is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import pandas as pd
from pydantic import BaseModel

from genfair.methodologies.sample_view import SampleView, join_samples

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from genfair.methodologies.base import Headline, Methodology, ModelInfo, StudyResult

#: the methodology's config type (:attr:`Methodology.Config`)
ConfigT = TypeVar("ConfigT", bound=BaseModel)


@dataclass(frozen=True)
class Plot:
    """One ``dvc plots`` figure the methodology declares: the table ``plot_tables(board)[name]``,
    written as ``data/plots/<methodology>/<name>.csv`` by the ``plot@<methodology>-<name>``
    stage, drawn with DVC's ``template`` (``linear``, ``scatter``, ``bar_horizontal``...)
    from its columns ``x`` and ``y``, under ``title``. Composing ``conf/`` lists the plots of
    the study's methodologies in ``params.yaml`` (``plots``); ``dvc.yaml`` names none."""

    name: str
    title: str
    x: str
    y: str
    template: str = "linear"


@dataclass
class ReportFigure:
    """A figure of the report: a matplotlib figure (embedded as PNG) and its caption, which
    says which paper figure it recomputes and what a reader should look for."""

    figure: Figure
    caption: str
    #: short identifier (the figure's file name in MLflow, the report's anchor)
    name: str = ""


@dataclass
class ReportTable:
    """A table of the report (every cell is escaped: model and dataset text are safe)."""

    title: str
    frame: pd.DataFrame
    caption: str = ""


@dataclass
class ReportSection:
    """A methodology's section of the study report: what it measures, its figures and
    tables. Notes are short paragraphs (plain text, escaped)."""

    title: str
    intro: str = ""
    figures: list[ReportFigure] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReportContext:
    """What :meth:`Presentation.report_section` is given: the ranked leaderboard
    (``data/scores/<methodology>.parquet``; ``model``, ``backend``, ``modality``,
    ``simulated``, ``rank`` and the methodology's columns), the study step's result, the
    models that ran it, its config, and readers of each model's metrics outputs."""

    board: pd.DataFrame
    study: StudyResult | None
    models: tuple[ModelInfo, ...]
    config: Any
    #: model -> its metrics ``summary.json`` ({} when absent)
    summary: Callable[[str], dict[str, Any]] = field(default=lambda model: {})
    #: (model, table) -> the detail table ``data/metrics/<methodology>/<model>/<table>.parquet``
    table: Callable[[str, str], pd.DataFrame] = field(default=lambda model, name: pd.DataFrame())

    def study_table(self, name: str) -> pd.DataFrame | None:
        """The study step's table ``name``; None without a study result or when it lacks the
        table or the table is empty (a report shows no empty table)."""
        frame = self.study.tables.get(name) if self.study is not None else None
        return frame if frame is not None and len(frame) else None

    def leaderboard(
        self, columns: Sequence[str], caption: str, title: str = "Leaderboard"
    ) -> ReportTable:
        """The leaderboard as a report table: ``columns`` in that order, those it has."""
        return ReportTable(
            title, self.board[[c for c in columns if c in self.board.columns]], caption
        )


#: the members a methodology class no longer holds: they are its presentation role's
MEMBERS = (
    "title", "plots", "sample_view", "figures", "plot_tables", "report_section", "sample_rows",
    "sample_filter", "run_record",
)  # fmt: skip


class Presentation(Generic[ConfigT]):
    """How a methodology's results are shown (the module docstring lists where), generic in
    its config type; every member is optional and this class is the default."""

    #: the section title of the study report (default: the methodology's name)
    title: ClassVar[str] = ""
    #: its ``dvc plots`` (tables from :meth:`plot_tables`)
    plots: ClassVar[tuple[Plot, ...]] = ()
    #: what the report's sample browser shows of its rows (:meth:`sample_rows`)
    sample_view: ClassVar[SampleView] = SampleView()

    def __init__(self, methodology: Methodology[ConfigT]) -> None:
        self.methodology = methodology

    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Figure, str]]:
        """(figure, file name) pairs of the paper's figures for a model's or the
        leaderboard's scores. Default: bars of each numeric score column, a bar per row
        named by its model and the methodology's ``metric_keys``
        (:func:`genfair.methodologies.score_bars.score_bars`); none for no scores."""
        from genfair.methodologies.score_bars import score_bars

        figure = score_bars(scores, f"{title}: scores", self.methodology.metric_keys)
        return [] if figure is None else [(figure, "scores.png")]

    def run_record(
        self,
        model: str,
        config: ConfigT,
        scores: pd.DataFrame,
        summary: dict[str, Any],
        study: StudyResult | None,
    ) -> tuple[dict[str, Any], dict[str, float]]:
        """Extra MLflow params and metrics of a model's run (default: the instruments named
        in the metrics summary, no extra metrics)."""
        params = {
            f"{self.methodology.name}.instrument.{k}": v
            for k, v in summary.get("instruments", {}).items()
        }
        return params, {}

    def plot_tables(self, board: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """The tables of :attr:`plots` by name, from the leaderboard (a declared plot missing
        here is written with its columns and no rows). Default: none."""
        return {}

    def report_section(self, ctx: ReportContext) -> ReportSection:
        """This methodology's section of the study report. The default works for any
        methodology: its docstring's first paragraph, the figures of :meth:`figures` over
        the leaderboard (captioned with their file names), and the leaderboard itself.
        Override it to caption the paper's figures and add tables."""
        name = self.methodology.name
        doc = (type(self.methodology).__doc__ or "").strip().split("\n\n")[0]
        figures = [
            ReportFigure(
                fig,
                f"{name}: {file} (the methodology's figure over every model's "
                "scores; simulators are labelled).",
                file,
            )
            for fig, file in (self.figures(ctx.board, name) if len(ctx.board) else [])
        ]
        tables = [
            ReportTable(
                "Leaderboard",
                ctx.board,
                "Every model's scores; rank among real models only (simulators are never ranked).",
            )
        ]
        return ReportSection(
            title=self.title or name,
            intro=" ".join(doc.split()),
            figures=figures,
            tables=tables if len(ctx.board) else [],
        )

    def sample_rows(
        self, probes: pd.DataFrame, responses: pd.DataFrame, labels: pd.DataFrame, images: Path
    ) -> pd.DataFrame:
        """The rows behind a model's numbers, for the report's sample browser: one row per
        label row, with the :data:`~genfair.methodologies.sample_view.SAMPLE_FIELDS`
        (``image``: a path from the study root, or None) and the grouping columns (every other
        column, as text). ``images`` is the model's image folder (from the study root).
        Default: :func:`join_samples` of :attr:`sample_view`; override it to join otherwise."""
        return join_samples(self.sample_view, probes, responses, labels, images)

    def sample_filter(self, headline: Headline) -> dict[str, str]:
        """The sample browser's filter that a headline number links to: its ``where`` entries
        that name a grouping column (values that no row has are dropped by the report).
        Override it where the leaderboard's columns are named otherwise than the labels'."""
        groups = self.sample_view.groups
        return {k: str(v) for k, v in headline.where.items() if not groups or k in groups}
