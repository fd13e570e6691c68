"""Configuration of the FACT-OR-FAIR methodology (``methodologies.fact_or_fair``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Context = Literal["baseline", "representativeness", "attribution", "ingroup"]


class MaxAttempts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    objective: int = Field(5, ge=1)
    subjective: int = Field(1, ge=1)


class FactOrFairConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    modality: Literal["llm"] = "llm"
    statistics: str
    scenarios: str
    behaviours: str
    names: str
    surnames: str
    objective_rounds: int = Field(3, ge=1)
    scenarios_per_direction: int = Field(3, ge=1)
    samples_per_prompt: int = Field(100, ge=1)
    contexts: list[Context] = ["baseline", "representativeness", "attribution", "ingroup"]
    max_attempts: MaxAttempts = MaxAttempts()
    age_range: tuple[int, int] = (22, 70)
    #: statistic -> attribute -> group (or None: no ground truth, left out of S_fact)
    ground_truth_overrides: dict[str, dict[Literal["gender", "race"], str | None]] = {}
    kld_pseudocount: float = Field(0.5, ge=0.0)
    answer_instruction: str
    bootstrap_resamples: int = Field(1000, ge=0)
    confidence_level: float = Field(0.95, gt=0.0, lt=1.0)

    @model_validator(mode="after")
    def _ages(self) -> FactOrFairConfig:
        low, high = self.age_range
        if not 0 < low <= high:
            raise ValueError(f"age_range must be [low, high] with 0 < low <= high, got {list(self.age_range)}")
        return self
