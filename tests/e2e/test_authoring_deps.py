"""End to end: each stage depends on exactly the methodology fields its step reads (issue 34,
point 3), on a copy of the shared smoke study: a metrics-only field reruns only that
methodology's metrics and what follows; a planted rate only the simulator's calls."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support.project import always_changed, status_stages
from tests.support.project import run as _run

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]

COMPOSE = ["genfair", "compose", "-o", "scale=smoke"]
#: the study-level stages, which read every methodology's outputs and whole config
STUDY_LEVEL = ("study@", "score", "track", "report", "plot@")


def _runs(work: Path, methodology: str) -> list[str]:
    runs = yaml.safe_load((work / "params.yaml").read_text())["runs"]
    return [key for key, run in runs.items() if run["methodology"] == methodology]


def test_a_metrics_only_field_reruns_only_metrics_and_what_follows(
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    work, env, _ = own_study
    runs = _runs(work, "fact_or_fair")
    # how answers are scored, not what is asked (FactOrFair's SCORING_FIELDS)
    _run([*COMPOSE, "-o", "methodologies.fact_or_fair.confidence_level=0.9"], work, env)
    changed = status_stages(work, env)
    per_run = {s for s in changed if not s.startswith(STUDY_LEVEL)}
    assert per_run == {f"metrics@{r}" for r in runs}, sorted(per_run)
    output = _run(["dvc", "repro"], work, env)
    ran = set(re.findall(r"Running stage '([^']+)'", output)) - always_changed(work)
    assert {s for s in ran if not s.startswith(STUDY_LEVEL)} == per_run, sorted(ran)
    assert not [s for s in ran if s.startswith("plot@") and "fact_or_fair" not in s], sorted(ran)
    assert not status_stages(work, env)


def test_a_planted_rate_reruns_only_the_simulators_calls(
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    """The real model's generate, the probes and every label and metrics stage stay up to date:
    no duplicate MLflow run of SmolLM2 for a rate it never reads. The plants are one field
    (``simulated``), so both simulators' generate rerun (the t2i one's answers all cached)."""
    work, env, _ = own_study
    plant = "methodologies.fact_or_fair.simulated.llm.objective.accuracy=0.7"
    _run([*COMPOSE, "-o", plant], work, env)
    changed = status_stages(work, env)
    assert {s for s in changed if not s.startswith(STUDY_LEVEL)} == {
        "generate@simulated_llm-fact_or_fair",
        "generate@simulated_t2i-fact_or_fair",
    }, sorted(changed)


def test_a_study_level_field_leaves_every_run_up_to_date(
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    """IRIS's scoring (S and K) is its study step's: no run of any model reruns."""
    work, env, _ = own_study
    _run([*COMPOSE, "-o", "methodologies.iris.scoring.target=50"], work, env)
    changed = status_stages(work, env)
    assert changed and all(s.startswith(STUDY_LEVEL) for s in changed), sorted(changed)
    assert "study@iris" in changed and "study@news_bias" not in changed, sorted(changed)
