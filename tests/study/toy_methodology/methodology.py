"""The toy quiz's methodology classes (the package's docstring says what it is): its pipeline,
which alone is a methodology with the default roles (``toy_quiz_bare``), and the quiz with its
own roles (``toy_quiz``)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pandas as pd

from genfair.methodologies.base import (
    Methodology,
    MetricsResult,
    StepContext,
)
from genfair.metrics.intervals import proportion_ci
from genfair.models.questions import ChoiceQuestion
from genfair.models.runner import Call, Verdict

from .compare import QuizComparison
from .config import QuizConfig
from .report import QuizPresentation


class BareQuiz(Methodology):
    """Bare toy quiz: the quiz's pipeline alone, with the default presentation and comparison
    roles (a methodology that implements only the pipeline)."""

    name: ClassVar[str] = "toy_quiz_bare"
    modalities = ("llm",)
    Config = QuizConfig
    metric_keys = ("measure",)

    def build_probes(self, config: QuizConfig, seed: int) -> pd.DataFrame:
        rows = [
            {"probe_id": f"q{i}", "a": i + seed % 7, "b": 2 * i + 1}
            for i in range(config.questions)
        ]
        frame = pd.DataFrame(rows)
        frame["prompt"] = [
            f"Which is larger: A. {a} or B. {b}? Answer A or B."
            for a, b in zip(frame.a, frame.b, strict=True)
        ]
        return frame

    def calls(self, probes: pd.DataFrame, config: QuizConfig, modality: str) -> list[Call]:
        return [
            Call(
                probe_id=r["probe_id"],
                messages=({"role": "user", "content": r["prompt"]},),
                meta=ChoiceQuestion(
                    policy="toy_quiz",
                    letters=["A", "B"],
                    plant=config.simulated,
                    truth_letters=["A" if r["a"] > r["b"] else "B"],
                ).meta(),
            )
            for r in probes.to_dict("records")
        ]

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        return "ok" if _answer(text) else "invalid"

    def label(
        self, probes: pd.DataFrame, responses: pd.DataFrame, config: QuizConfig, ctx: StepContext
    ) -> pd.DataFrame:
        merged = probes.merge(responses[["probe_id", "status", "text"]], on="probe_id")
        truth = ["A" if a > b else "B" for a, b in zip(merged.a, merged.b, strict=True)]
        answers = [
            _answer(t) if s == "ok" else None
            for t, s in zip(merged.text, merged.status, strict=True)
        ]
        return merged.assign(
            answer=answers, correct=[a == t for a, t in zip(answers, truth, strict=True)]
        )[["probe_id", "status", "answer", "correct"]]

    def metrics(self, labels: pd.DataFrame, config: QuizConfig, ctx: StepContext) -> MetricsResult:
        valid = labels[labels["status"] == "ok"]
        ci = proportion_ci(int(valid["correct"].sum()), len(valid), 0.95)
        scores = pd.DataFrame([{"measure": "accuracy", **ci}])
        return MetricsResult(scores=scores, summary={"answered": len(valid)})


class Quiz(BareQuiz):
    """Toy quiz: which of two numbers is larger (a test of the methodology contract)."""

    name: ClassVar[str] = "toy_quiz"
    presentation_role = QuizPresentation
    comparison_role = QuizComparison


def _answer(text: str | None) -> str | None:
    try:
        value = json.loads(text or "").get("answer")
    except (ValueError, AttributeError):
        return None
    return value if value in ("A", "B") else None
