"""What every methodology provides to the pipeline's stages.

A methodology is one paper's way of measuring. The stages call, in order:
``build_probes`` (probes@<methodology>), ``calls`` + ``judge`` (generate@<model>),
``label`` (label@<model>) and ``metrics`` (metrics@<model>).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import pandas as pd
from pydantic import BaseModel

from genfair.models.runner import Call, Verdict


@dataclass
class MetricsResult:
    """A model's results on one methodology.

    ``scores``: one row per aggregate (e.g. context x attribute) with the score columns;
    ``tables``: named detail tables (per statistic...); ``summary``: nested JSON for
    ``dvc metrics`` and MLflow.
    """

    scores: pd.DataFrame
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


class Methodology(Protocol):
    name: ClassVar[str]
    modality: ClassVar[str]
    Config: ClassVar[type[BaseModel]]

    def build_probes(self, config: Any, seed: int) -> pd.DataFrame: ...

    def calls(self, probes: pd.DataFrame) -> list[Call]: ...

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict: ...

    def label(self, probes: pd.DataFrame, responses: pd.DataFrame, config: Any = None) -> pd.DataFrame: ...

    def metrics(self, labels: pd.DataFrame, config: Any, seed: int) -> MetricsResult: ...
