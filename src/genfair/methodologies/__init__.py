"""One package per paper. ``get_methodology(name)`` returns its implementation."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from genfair.methodologies.base import MetricsResult, Methodology

#: methodology name -> module holding a ``METHODOLOGY`` object
REGISTRY = {
    "fact_or_fair": "genfair.methodologies.fact_or_fair",
    "fact_or_fair_t2i": "genfair.methodologies.fact_or_fair.t2i",
    "news_bias": "genfair.methodologies.news_bias",
    "iris": "genfair.methodologies.iris",
}

__all__ = ["REGISTRY", "Methodology", "MetricsResult", "get_methodology"]


def get_methodology(name: str) -> Any:
    if name not in REGISTRY:
        raise KeyError(f"unknown methodology {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return import_module(REGISTRY[name]).METHODOLOGY
