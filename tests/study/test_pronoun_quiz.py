"""The pronoun quiz (tests/study/pronoun_quiz.py) plants he 0.6, she 0.3, they 0.1 through the
categorical plant of its own config, and its steps recover the plant from the SIMULATED LLM's
answers: each share within its 99.9% binomial interval (fixed seed), per occupation too."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from genfair.methodologies import register, registry
from genfair.models.config import SimulatedModelConfig
from genfair.models.simulated import SimulatedLLM
from tests.study.pronoun_quiz import GAP, PronounQuiz, PronounQuizConfig, pronoun
from tests.support.contexts import run_steps

SEED = 11
PLANT = {"he": 0.6, "she": 0.3, "they": 0.1}


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quiz registered for this module's tests only."""
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    monkeypatch.setattr(registry, "_instances", dict(registry._instances))
    register(PronounQuiz)


def _scores(config: PronounQuizConfig, tmp: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    backend = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    _, _, labels, result = run_steps("pronoun_quiz", config, "llm", SEED, tmp, backend)
    return labels, result.scores.set_index("measure")


def _inside(count: int, n: int, p: float) -> bool:
    """``p`` lies in the 99.9% Wilson interval of ``count`` of ``n`` (scipy)."""
    from scipy.stats import binomtest

    ci = binomtest(count, n).proportion_ci(0.999, method="wilson")
    return ci.low <= p <= ci.high


def test_the_default_plant_is_the_issues_example() -> None:
    plant = PronounQuizConfig().simulated
    assert plant.kind == "categorical" and plant.distribution == PLANT and plant.answer == "text"


def test_the_simulated_shares_match_the_plant(tmp_path: Path) -> None:
    config = PronounQuizConfig(samples=100)  # 6 occupations: 600 answers
    labels, scores = _scores(config, tmp_path)
    answers = labels["answer"]
    assert answers.notna().all() and len(answers) == 600  # bare words, all parsed
    for word, p in PLANT.items():
        count = int((answers == word).sum())
        assert _inside(count, len(answers), p), (word, count)
        assert scores.loc[f"share_{word}", "mean"] == count / len(answers)
    # the check has power: a simulator that ignored the plant (uniform answers) would fail it
    assert not _inside(int((answers == "he").sum()), len(answers), 1 / 3)
    assert not _inside(int((answers == "they").sum()), len(answers), 1 / 3)
    # the gap's estimate is the difference of the shares; a t-test (scipy) does not reject the
    # planted 0.3 at the 0.1% level, and does reject 0
    from scipy.stats import ttest_1samp

    gap = scores.loc[GAP]
    assert gap["mean"] == pytest.approx(
        scores.loc["share_he", "mean"] - scores.loc["share_she", "mean"]
    )
    signs = answers.map({"he": 1, "she": -1, "they": 0}).to_numpy(float)
    assert ttest_1samp(signs, PLANT["he"] - PLANT["she"]).pvalue > 0.001
    assert ttest_1samp(signs, 0.0).pvalue < 0.001


def test_a_plant_per_occupation_is_recovered_per_occupation(tmp_path: Path) -> None:
    plant = PronounQuizConfig().simulated.model_copy(
        update={"by_group": {"nurse": {"he": 0.1, "she": 0.8, "they": 0.1}}}
    )
    config = PronounQuizConfig(occupations=("nurse", "pilot"), samples=250, simulated=plant)
    labels, _ = _scores(config, tmp_path)
    for occupation, planted in (("nurse", 0.8), ("pilot", PLANT["she"])):
        mine = labels[labels["occupation"] == occupation]["answer"]
        assert _inside(int((mine == "she").sum()), len(mine), planted), occupation


@pytest.mark.parametrize(
    ("text", "word"),
    [("she", "she"), (" He.", "he"), ('{"answer": "they"}', "they"), ("it", None), ("", None)],
)
def test_an_answer_is_read_as_a_word_or_json(text: str, word: str | None) -> None:
    assert pronoun(text) == word


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        ({"distribution": {"he": 0.6, "she": 0.3}}, r"simulated.*must sum to 1, got 0\.9"),
        ({"distribution": {"he": 0.5, "it": 0.5}}, r"names options \['it'\]"),
        ({"by_group": {"nurse": {"she": 1.0}}}, "no distribution for group 'engineer'"),
    ],
)
def test_a_bad_plant_is_refused_when_params_load(plant: dict, message: str) -> None:
    from genfair.errors import ConfigError
    from genfair.frame import read_params
    from genfair.study_params import params_from
    from tests.support.conf import ROOT

    raw = read_params(ROOT / "params.yaml")
    raw["methodologies"]["pronoun_quiz"] = {"simulated": {"kind": "categorical", **plant}}
    with pytest.raises(ConfigError, match=rf"params.yaml: methodologies.pronoun_quiz.*{message}"):
        params_from(raw, "params.yaml")
