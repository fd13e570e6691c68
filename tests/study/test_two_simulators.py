"""Two simulators differ by default (issue 46.3): a simulated call's seed derives from the
model's key in the study, so two simulators of one config and plant are independent draws
(cached apart), each the same on every rerun; a simulator built outside a study keeps the
study seed."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from genfair.methodologies import register
from genfair.models import build_backend
from genfair.models.config import SimulatedModelConfig
from genfair.study.layout import Layout
from genfair.study.steps import generate, make_probes
from genfair.study_params import StudyParams
from tests.study.toy_methodology import Quiz
from tests.support.conf import ROOT, with_runs

QUESTIONS = 60


@pytest.fixture
def params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StudyParams:
    """The toy quiz on two simulated LLMs of one config (conf/model/simulated_llm.yaml)."""
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    register(Quiz)
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    simulator = yaml.safe_load((ROOT / "conf/model/simulated_llm.yaml").read_text())
    raw["models"] = {"first": simulator, "second": copy.deepcopy(simulator)}
    raw["methodologies"] = {"toy_quiz": {"questions": QUESTIONS}}
    raw.pop("model_methodologies", None)
    return StudyParams.model_validate(with_runs(raw))


def _answers(params: StudyParams, model: str, layout: Layout) -> pd.Series:
    return pd.read_parquet(generate(params, model, "toy_quiz", layout))["text"]


def test_two_simulators_of_one_config_are_independent_draws(
    params: StudyParams, tmp_path: Path
) -> None:
    layout = Layout(tmp_path)
    make_probes(params, "toy_quiz", layout)
    first, second = (_answers(params, m, layout) for m in ("first", "second"))
    assert len(first) == len(second) == QUESTIONS
    assert (first != second).sum() > QUESTIONS / 4  # not a clone
    again = Layout(tmp_path / "again")
    make_probes(params, "toy_quiz", again)
    assert _answers(params, "first", again).equals(first)  # the same draw on a rerun


def test_a_simulator_outside_a_study_keeps_the_study_seed(params: StudyParams) -> None:
    raw = yaml.safe_load((ROOT / "conf/model/simulated_llm.yaml").read_text())
    assert build_backend(SimulatedModelConfig.model_validate(raw)).call_seed(7) == 7
    keyed = [build_backend(params.model(m)).call_seed(7) for m in ("first", "second")]
    assert len(set(keyed)) == 2 and 7 not in keyed
