"""OpenBias's presentation role (:class:`OpenBiasPresentation`): its figures (the severity
ranking and context-aware vs context-free severity, paper 003 Figs. 3, 4 and 9), its report
title and its samples (every step's rows, a VQA row with the image it asked about).

Imported where used: :mod:`.figures` (matplotlib), when a figure is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.methodologies.presentation import Presentation
from genfair.methodologies.sample_view import SampleView


class OpenBiasPresentation(Presentation[OpenBiasConfig]):
    """OpenBias's severity figures, report title and samples."""

    title: ClassVar[str] = "OpenBias: open-set bias discovery in text-to-image models"
    #: the report's samples: every step's rows (proposal, knowledge base, image, VQA), the
    #: VQA answer's class as the label
    sample_view = SampleView(
        groups=("step", "caption_id", "bias_id", "vqa_model"),
        label=("label",),
        answer=("answer", "text"),
        prompt="messages",
    )

    def sample_rows(
        self, probes: pd.DataFrame, responses: pd.DataFrame, labels: pd.DataFrame, images: Path
    ) -> pd.DataFrame:
        """The default rows, a VQA row showing the generated image it asked about."""
        rows = super().sample_rows(probes, responses, labels, images)
        if rows.empty or not {"step", "image_probe_id", "file"} <= set(responses):
            return rows
        files = responses.dropna(subset=["file"]).drop_duplicates("probe_id")
        file_of = dict(zip(files["probe_id"].astype(str), files["file"].astype(str), strict=True))
        vqa = responses[responses["step"] == "vqa"].dropna(subset=["image_probe_id"])
        image_of = {
            str(q): str(images / file_of[str(i)])
            for q, i in zip(vqa["probe_id"], vqa["image_probe_id"], strict=True)
            if str(i) in file_of
        }
        asked = pd.Series(
            [image_of.get(str(p)) for p in rows["probe_id"]], index=rows.index, dtype="object"
        )
        rows["image"] = rows["image"].where(rows["image"].notna(), asked).astype("object")
        return rows

    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
        """The severity ranking and context-aware vs context-free severity (paper Figs. 3, 4, 9)."""
        from genfair.methodologies.open_bias.figures import aware_vs_free_figure, ranking_figure

        if scores.empty or "severity_context_aware" not in scores:
            return []
        return [
            (ranking_figure(scores, title), "open_bias_severity_ranking.png"),
            (aware_vs_free_figure(scores, title), "open_bias_context_aware_vs_free.png"),
        ]
