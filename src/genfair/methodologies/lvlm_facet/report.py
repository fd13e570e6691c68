"""LVLM-FACET's presentation role (:class:`LvlmFacetPresentation`): its figures (pooled recall
per group, disparity heat maps; paper 004), its report title and its samples (the labels'
``prompt``, the kind of question, shown as ``question``).

Imported where used: :mod:`.figures` (matplotlib), when a figure is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES
from genfair.methodologies.presentation import Presentation
from genfair.methodologies.sample_view import SampleView

if TYPE_CHECKING:
    from genfair.methodologies.base import Headline


class LvlmFacetPresentation(Presentation[LvlmFacetConfig]):
    """LVLM-FACET's recall and disparity figures, report title and samples."""

    title: ClassVar[str] = "LVLM-FACET: recall of vision-language models per demographic group"
    #: the report's samples (the labels' ``prompt``, the kind of question, shown as
    #: ``question``: ``prompt`` is the prompt's text)
    sample_view = SampleView(
        groups=("question", "class", *ATTRIBUTES),
        label=("label",),
        answer=("answer",),
        prompt="text",
        probe_image="image_path",
    )

    def sample_rows(
        self, probes: pd.DataFrame, responses: pd.DataFrame, labels: pd.DataFrame, images: Path
    ) -> pd.DataFrame:
        labels = labels.rename(columns={"prompt": "question"})
        return super().sample_rows(probes, responses, labels, images)

    def sample_filter(self, headline: Headline) -> dict[str, str]:
        where = {"question" if k == "prompt" else k: v for k, v in headline.where.items()}
        return {k: str(v) for k, v in where.items() if k in self.sample_view.groups}

    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
        """Pooled recall per group with intervals (every model) and one class x pair
        disparity heatmap per model."""
        from genfair.methodologies.lvlm_facet.figures import disparity_heatmap, recall_figure

        if scores.empty or "measure" not in scores:
            return []
        out = []
        figure = recall_figure(scores, f"{title}: pooled recall per group")
        if figure is not None:
            out.append((figure, "recall_per_group.png"))
        models = list(dict.fromkeys(scores["model"])) if "model" in scores else [None]
        for model in models:
            rows = scores if model is None else scores[scores["model"] == model]
            simulated = "simulated" in rows and bool(rows["simulated"].astype(bool).any())
            name = f"{model} (SIMULATED)" if simulated else (model or title)
            heat = disparity_heatmap(rows, f"{title}: {name} disparity per class")
            if heat is not None:
                out.append(
                    (
                        heat,
                        "disparity_heatmap.png"
                        if len(models) == 1
                        else f"disparity_heatmap_{model}.png",
                    )
                )
        return out
