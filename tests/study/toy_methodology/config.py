"""The toy quiz's config (``conf/methodology/toy_quiz.yaml``)."""

from __future__ import annotations

from pydantic import Field

from genfair.models.config import SimulatedPolicy
from genfair.strict import Strict


class QuizConfig(Strict):
    questions: int = Field(40, ge=1)
    #: what the simulated LLM plants when it answers the quiz (a real model never reads it)
    simulated: SimulatedPolicy = SimulatedPolicy(accuracy=0.8, refusal_rate=0.05, invalid_rate=0.05)
