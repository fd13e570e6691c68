"""The base of every config model: unknown keys are refused (a typo fails with its key path),
every number is finite (``.nan`` and ``.inf`` are refused: a guard never compares against them)
and a validated config is frozen (what a stage read cannot change while it runs)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Strict"]


class Strict(BaseModel):
    """A pydantic model that forbids unknown keys and non-finite floats and is immutable;
    subclasses may add to its ``model_config`` (pydantic merges them), e.g.
    ``hide_input_in_errors=True``."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
