"""One package per paper, each a :class:`~genfair.methodologies.base.Methodology`;
``get_methodology(name)`` finds it (genfair's own, or one a package registers)."""

from __future__ import annotations

from genfair.methodologies.base import (
    Methodology,
    MetricsResult,
    StepContext,
    StudyContext,
    StudyResult,
)
from genfair.methodologies.registry import get_methodology, names, register

__all__ = [
    "Methodology",
    "MetricsResult",
    "StepContext",
    "StudyContext",
    "StudyResult",
    "get_methodology",
    "names",
    "register",
]
