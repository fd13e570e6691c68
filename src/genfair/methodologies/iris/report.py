"""IRIS's presentation role (:class:`IrisPresentation`): its figures, report section and
``dvc plots`` table (paper 002), its samples and its MLflow record.

Imported where used: :mod:`.figures` (matplotlib), when a section is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from genfair.methodologies.iris.config import IrisConfig
from genfair.methodologies.iris.scoring import IrisScoringConfig, tracking_record
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
    "sector",
    "magnitude",
    "S",
    "K",
    "score",
    "gen_code",
    "und_code",
    "n_metrics",
    "n_missing",
]


def report_section(ctx: ReportContext) -> ReportSection:
    from genfair.methodologies.iris.figures import sector_figure

    board = ctx.board
    scoring = ctx.config.scoring if ctx.config is not None else IrisScoringConfig()
    tau = float(scoring.tau)
    section = ReportSection(
        title="IRIS: fairness of unified multimodal models",
        intro="Zhao et al. score fairness in six sectors: three dimensions (IFS, ideal fairness: "
        "outputs match an even split; RFS, real-world fairness: they match real statistics; BIS, "
        "bias inertia: steering prompts move them) for generation (Gen) and understanding (Und). "
        "Each sector's granular metrics become a magnitude M and a score S·exp(-K·M) (higher is "
        "fairer); a score above τ gives the sector's letter of the model's personality codes.",
    )
    if board.empty:
        return section
    section.figures.append(
        ReportFigure(
            sector_figure(board, "IRIS sector scores", tau=tau),
            "Recomputes the paper's sector chart and Table 3's codes: each model's six sector "
            "scores and overall IRIS score (only for models with all six sectors), the τ line "
            "that splits each code letter. Look for sectors far below τ, and for whether "
            "generation and understanding agree. S is calibrated on this study's models "
            "unless fixed in the config, so scores compare models within a study. Hatched "
            "bars are SIMULATED models with planted biases. IRIS scores are not ranked.",
            "sectors",
        )
    )
    section.tables.append(
        ctx.leaderboard(
            _SHOWN,
            "Magnitude M, the S and K used, the score and the codes, per model and sector.",
            title="Scores per sector",
        )
    )
    missing = _missing_penalties(ctx.study_table("granular"))
    if missing:
        section.notes.append(missing)
    validation = ctx.study_table("validation")
    if validation is not None:
        section.tables.append(
            ReportTable(
                "Validation",
                validation,
                "The paper's checks that the scores move as the metrics do.",
            )
        )
    return section


def _missing_penalties(granular: pd.DataFrame | None) -> str:
    """Which BIS-Gen quality/semantic penalties were not computed, for which models, and the
    instruments that would compute them ("" when none is missing)."""
    if granular is None or granular.empty:
        return ""
    rows = granular[
        (granular["sector"] == "BIS-Gen")
        & granular["metric"].str.fullmatch(r"Penalty_(QPS|FQP|SIL|SCL)")
        & granular["value"].isna()
    ]
    if rows.empty:
        return ""
    per_model = rows.groupby("model")["metric"].apply(lambda m: ", ".join(m))
    listed = "; ".join(f"{model}: {metrics}" for model, metrics in per_model.items())
    return (
        f"BIS-Gen is partial where its quality or semantic penalties are not computed ({listed}). "
        "QPS and FQP need instruments.image_quality.checkpoint (a CLIP or one-output IQA model), "
        "SIL instruments.image_semantics.clip and SCL instruments.image_semantics.dino: no "
        "weights ship with genfair (docs/methodology.md)."
    )


def plot_tables(board: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Sector scores (``label`` x ``score``)."""
    if board.empty:
        return {}
    label = [
        f"{m}{' (SIMULATED)' if s else ''} · {sector}"
        for m, s, sector in zip(board["model"], board["simulated"], board["sector"], strict=True)
    ]
    return {
        "sectors": pd.DataFrame(
            {
                "label": label,
                "sector": board["sector"].to_numpy(),
                "score": board["score"].to_numpy(),
            }
        )
    }


class IrisPresentation(Presentation[IrisConfig]):
    """IRIS's sector chart and correlation matrix, report section, ``dvc plots``, samples and
    MLflow record (S, K, sector scores and codes)."""

    plots: ClassVar[tuple[Plot, ...]] = (
        Plot(
            "sectors", "IRIS sector scores (higher is fairer)", "score", "label", "bar_horizontal"
        ),
    )
    #: the report's samples: the occupation chosen or named (understanding), the face
    #: instrument's reading (generation); a vision probe's photo, a generated image
    sample_view = SampleView(
        groups=("sector", "profile", "gender", "age_group", "skin_group", "occupation",
                "prompt_type", "face_status"),
        label=("choice", "mapped_occupation"),
        answer=("answer", "text"),
        probe_image="image",
    )  # fmt: skip

    def run_record(
        self,
        model: str,
        config: IrisConfig,
        scores: pd.DataFrame,
        summary: dict[str, Any],
        study: StudyResult | None,
    ) -> tuple[dict[str, Any], dict[str, float]]:
        """The S and K used (and the mode), per-sector magnitudes and scores, the overall
        IRIS score (models with all six sectors) and the Gen/Und codes."""
        board = study.tables["scores"] if study else pd.DataFrame()
        if board.empty or model not in set(board["model"]):
            return {}, {}
        record = tracking_record(
            board[board["model"] == model].drop(columns="simulated"), config.scoring
        )[model]
        return record["params"], record["metrics"]

    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
        """For the leaderboard (the study's IRIS scores; a model's granular metrics have
        none): the sector chart with the codes, and Fig. 4(c), the sector-score correlation
        matrix, for >= 3 models."""
        if scores.empty or "score" not in scores or "sector" not in scores:
            return []
        from genfair.methodologies.iris.figures import sector_figure, study_figures

        return [
            (sector_figure(scores, f"{title}: IRIS sector scores"), "sectors.png"),
            *study_figures(scores, title),
        ]

    def report_section(self, ctx: ReportContext) -> ReportSection:
        """The sector chart with the codes, the scores per sector, the validation table."""
        return report_section(ctx)

    def plot_tables(self, board: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return plot_tables(board)
