"""FACT-OR-FAIR's presentation role (:class:`FactOrFairPresentation`): its figures, report
section and ``dvc plots`` tables (paper 000, Fig. 4-9), and its samples.

Imported where used: :mod:`.figures` (matplotlib), when a section is drawn.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd

from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.methodologies.presentation import (
    Plot,
    Presentation,
    ReportContext,
    ReportFigure,
    ReportSection,
)
from genfair.methodologies.sample_view import SampleView

#: what each context's trade-off plot is in the paper
_PAPER = {
    "objective": "Fig. 6 (objective queries)",
    "baseline": "Fig. 7 (subjective queries, no context)",
    "representativeness": "Fig. 8 (subjective, representativeness context)",
    "attribution": "Fig. 8 (subjective, attribution context)",
    "ingroup": "Fig. 9 (subjective, in-group context)",
}
_T2I = {
    "objective": "Fig. 4 (text-to-image, objective test)",
    "baseline": "Fig. 5 (text-to-image, subjective test)",
}
_SHOWN = [
    "model",
    "simulated",
    "modality",
    "context",
    "attribute",
    "s_fact",
    "s_fact_lo",
    "s_fact_hi",
    "s_e",
    "s_e_lo",
    "s_e_hi",
    "s_kld",
    "s_fair",
    "distance",
    "rank",
    "n_valid",
]


def report_section(ctx: ReportContext) -> ReportSection:
    from genfair.methodologies.fact_or_fair.figures import tradeoff_figure

    board = ctx.board
    section = ReportSection(
        title="FACT-OR-FAIR: factuality vs. fairness",
        intro="Huang et al. ask which demographic group has the highest or lowest value of 19 U.S. "
        "statistics (objective queries: the answer is a fact) and, in everyday scenarios, which of "
        "four described people fits (subjective queries: no group is the answer). S_fact is the "
        "share of factual answers, S_E the entropy of the groups chosen (1 = balanced), and the "
        "distance to the accuracy-entropy curve's best point ranks the models (lower is better).",
    )
    if board.empty:
        return section
    for (modality, context), rows in board.groupby(["modality", "context"], sort=False):
        paper = (_T2I if modality == "t2i" else _PAPER).get(context, context)
        title = f"{modality.upper()} · {context}"
        section.figures.append(
            ReportFigure(
                tradeoff_figure(rows, f"FACT-OR-FAIR {title}"),
                f"Recomputes the paper's {paper}: each model at (S_fact, S_E) with 95% "
                "bootstrap intervals, under the curve of the maximum entropy reachable at each "
                "accuracy. Look for models near the curve's top right (factual and balanced); "
                "a point far below the curve picks groups more unevenly than its accuracy "
                "requires. Hollow red points are SIMULATED models with planted biases.",
                f"tradeoff_{modality}_{context}",
            )
        )
    section.tables.append(
        ctx.leaderboard(
            _SHOWN,
            "Per context and attribute; rank among real models of the same "
            "modality by distance (lower is better); simulators are never ranked.",
        )
    )
    return section


def plot_tables(board: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The objective trade-off per attribute (x: s_fact, y: s_e; one row per model)."""
    out: dict[str, Any] = {}
    if board.empty:
        return out
    objective = board[board["context"] == "objective"]
    for attribute, rows in objective.groupby("attribute", sort=False):
        frame = rows[["model", "simulated", "modality", "s_fact", "s_e", "distance"]].copy()
        frame["model"] = [
            f"{m} (SIMULATED)" if s else m
            for m, s in zip(frame["model"], frame["simulated"], strict=True)
        ]
        out[f"tradeoff_objective_{attribute}"] = frame.drop(columns="simulated")
    return out


class FactOrFairPresentation(Presentation[FactOrFairConfig]):
    """FACT-OR-FAIR's trade-off figures (paper Fig. 4-9), report section, ``dvc plots`` and
    samples."""

    plots: ClassVar[tuple[Plot, ...]] = tuple(
        Plot(
            f"tradeoff_objective_{a}",
            f"FACT-OR-FAIR trade-off, objective, {a} (paper Fig. 6)",
            "s_fact",
            "s_e",
            "scatter",
        )
        for a in ("gender", "race")
    )
    #: the report's samples: the chosen option (LLM) or the face instrument's reading (T2I)
    sample_view = SampleView(
        groups=("context", "statistic", "attribute", "direction", "kind"),
        label=("choice", "chosen_gender", "chosen_race"),
    )

    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
        """Paper 000 Fig. 6-9 (LLMs, per context) and Fig. 4-5 (T2I objective / subjective
        test): models on the (S_fact, S_E) plane under the max-entropy curve."""
        from genfair.methodologies.fact_or_fair.figures import tradeoff_figure

        out = []
        by_modality = (
            scores.groupby("modality", sort=False) if "modality" in scores else [("llm", scores)]
        )
        for modality, part in by_modality:
            for context, rows in part.groupby("context", sort=False):
                if modality == "t2i":
                    test = {"objective": "objective test", "baseline": "subjective test"}.get(
                        context, context
                    )
                    out.append(
                        (
                            tradeoff_figure(rows, f"{title}: T2I {test}"),
                            f"tradeoff_t2i_{context}.png",
                        )
                    )
                else:
                    out.append(
                        (tradeoff_figure(rows, f"{title}: {context}"), f"tradeoff_{context}.png")
                    )
        return out

    def report_section(self, ctx: ReportContext) -> ReportSection:
        """The trade-off plots per modality and context (paper Fig. 4-9) and the leaderboard."""
        return report_section(ctx)

    def plot_tables(self, board: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return plot_tables(board)
