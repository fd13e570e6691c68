"""News bias's presentation role (:class:`NewsBiasPresentation`): its figures, report section
and ``dvc plots`` table (paper 001, Figs. 2-10), its samples and its MLflow record.

Imported where used: :mod:`.figures` (matplotlib), when a section is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from genfair.methodologies.news_bias.config import NewsBiasConfig
from genfair.methodologies.presentation import (
    Plot,
    Presentation,
    ReportContext,
    ReportFigure,
    ReportSection,
    ReportTable,
)
from genfair.methodologies.sample_view import SampleView

if TYPE_CHECKING:
    from genfair.methodologies.base import StudyResult

_SHOWN = [
    "model",
    "simulated",
    "prompt_type",
    "level",
    "attribute",
    "measure",
    "mean",
    "ci_low",
    "ci_high",
    "n",
    "rank",
    "prejudice_group",
    "prejudice_pct",
]


def report_section(ctx: ReportContext) -> ReportSection:
    from genfair.methodologies.news_bias.figures import bias_bars

    board = ctx.board
    section = ReportSection(
        title="News bias of AI-generated content",
        intro="Fang et al. have each LLM write news articles from real headlines and compare them "
        "with the originals: W (word level) is the average change of gender and race word shares, "
        "S and T (sentence level) the changes of sentiment and toxicity towards each group, and "
        "the document level compares topic distributions. Lower W is less biased; S and T are "
        "best close to 0. The biased prompt asks for an androcentric journalist's article: a "
        "model that refuses it more is not penalised (refusal rates are shown, never ranked).",
    )
    if board.empty:
        return section
    section.figures.append(
        ReportFigure(
            bias_bars(board, "News bias per model, level and prompt (95% CI)"),
            "Recomputes the paper's Figs. 2-10 bars: per level, attribute and measure, each "
            "model's mean with its 95% interval, unbiased and biased prompts side by side, and "
            "the refusal rates. Look for bars whose interval excludes 0 and for how much the "
            "biased prompt raises them. Hatched bars are SIMULATED models with planted biases.",
            "bias_bars",
        )
    )
    section.tables.append(
        ctx.leaderboard(
            _SHOWN,
            "Rank among real models, per prompt, level, attribute and "
            "measure (lower is less biased); simulators and refusal rates are never "
            "ranked.",
        )
    )
    for name in ("perplexity", "chi2", "example_topics"):
        frame = ctx.study_table(name)
        if frame is not None:
            section.tables.append(
                ReportTable(
                    f"Document level: {name}",
                    frame,
                    "From the study-level topic model over every model's articles.",
                )
            )
    return section


def plot_tables(board: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Bars of the word and sentence levels, unbiased prompt (``label`` x ``mean``)."""
    if board.empty:
        return {}
    rows = board[(board["prompt_type"] == "unbiased") & board["level"].isin(["word", "sentence"])]
    label = [
        f"{m}{' (SIMULATED)' if s else ''} · {lv} · {a} · {ms}"
        for m, s, lv, a, ms in zip(
            rows["model"],
            rows["simulated"],
            rows["level"],
            rows["attribute"],
            rows["measure"],
            strict=True,
        )
    ]
    return {
        "bars_unbiased": pd.DataFrame(
            {
                "label": label,
                "mean": rows["mean"].to_numpy(),
                "ci_low": rows["ci_low"].to_numpy(),
                "ci_high": rows["ci_high"].to_numpy(),
            }
        )
    }


class NewsBiasPresentation(Presentation[NewsBiasConfig]):
    """News bias's bars with intervals (paper Figs. 2-10), report section, ``dvc plots``,
    samples and MLflow record (the race name table)."""

    plots: ClassVar[tuple[Plot, ...]] = (
        Plot(
            "bars_unbiased",
            "News bias, unbiased prompt, mean per model, level and measure (paper Figs. 2-10)",
            "mean",
            "label",
            "bar_horizontal",
        ),
    )
    #: the report's samples: each rewrite (its words, sentences and document are measured
    #: in the metrics step, not labelled per row)
    sample_view = SampleView(groups=("prompt_type",), answer=("generated_text",), probe="pair_id")

    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
        """Paper 001 Figs. 2-10 style bars with their confidence intervals."""
        from genfair.methodologies.news_bias.figures import bias_bars

        return [(bias_bars(scores, f"{title}: news bias (95% CI)"), "bias_bars.png")]

    def report_section(self, ctx: ReportContext) -> ReportSection:
        """The bias bars with intervals (paper Figs. 2-10), the leaderboard, document-level
        tests."""
        return report_section(ctx)

    def plot_tables(self, board: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return plot_tables(board)

    def run_record(
        self,
        model: str,
        config: NewsBiasConfig,
        scores: pd.DataFrame,
        summary: dict[str, Any],
        study: StudyResult | None,
    ) -> tuple[dict[str, Any], dict[str, float]]:
        params, metrics = super().run_record(model, config, scores, summary, study)
        if "race_name_table" in summary:
            key = f"{self.methodology.name}.instrument.race_name_table"
            params[key] = summary["race_name_table"]
        return params, metrics
