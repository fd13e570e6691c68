"""Asking a model a methodology's probes through the study's response cache: the ``generate``
step (:mod:`genfair.study.steps`), ``genfair fill`` (:mod:`genfair.study.fill`) and the plan
(:mod:`genfair.study.plan`) share it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from genfair.errors import IncompleteGeneration
from genfair.models import ResponseCache, build_backend
from genfair.study.context import cache_opener, configured, step_context
from genfair.study.layout import Layout
from genfair.study_params import StudyParams


def check_errors(responses: pd.DataFrame, max_error_rate: float, what: str) -> int:
    """The number of ``error`` rows; raise :class:`IncompleteGeneration` (naming ``what``,
    the count and the first error) when their share passes ``max_error_rate``. Nothing is
    lost: answered calls are in the response cache, errors are not, so a rerun asks only
    them."""
    errors = responses[responses["status"] == "error"] if len(responses) else responses
    if len(errors) and len(errors) / len(responses) > max_error_rate:
        first = (
            errors["error"].dropna().iloc[0]
            if "error" in errors and errors["error"].notna().any()
            else "?"
        )
        raise IncompleteGeneration(
            f"{what}: {len(errors)} of {len(responses)} calls failed after retries "
            f"(first: {first}); answered calls are cached, so rerun `dvc repro` "
            "when the endpoint is back and only the failed calls are asked again "
            f"(generation.max_error_rate: {max_error_rate} allows a share)"
        )
    return len(errors)


def answer(
    params: StudyParams,
    model: str,
    methodology: str,
    probes: pd.DataFrame,
    layout: Layout,
    open_cache: Callable[[], ResponseCache],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The methodology's ``generate`` of ``probes`` on the model, through the cache (its
    images exported under ``layout``): every call answered or recorded as failed; and how
    the model ran here (a local backend's engine and dtype, :attr:`LLMBackend.runtime`)."""
    method, config = configured(params, methodology, "generate", model)
    backend = build_backend(params.model(model))
    try:
        with open_cache() as cache:
            ctx = step_context(params, model, methodology, layout, backend=backend, cache=cache)
            return method.generate(probes, config, ctx), backend.runtime
    finally:
        backend.close()


__all__ = ["answer", "cache_opener", "check_errors"]
