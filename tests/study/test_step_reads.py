"""Each step reads the methodology fields it declares, and its stage depends on their digest
alone (genfair.methodologies.reads; issue 34, point 3). A step that reads a field it did not
declare fails, naming the fix, instead of leaving its stage wrongly up to date."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from genfair.errors import UndeclaredRead
from genfair.frame import methodology_digests
from genfair.methodologies import get_methodology, register
from genfair.methodologies.reads import STEPS, digest_fields, step_config, step_fields
from genfair.methodologies.registry import builtin
from genfair.study.layout import Layout
from genfair.study.steps import generate, label, make_probes
from genfair.study_params import load_params
from tests.study.toy_methodology import Quiz, QuizConfig
from tests.support.conf import with_runs

ROOT = Path(__file__).resolve().parents[2]


class MetricsBlindQuiz(Quiz):
    """The toy quiz declaring that its metrics step reads no field, while its label step
    reads ``questions``: a declaration the label step breaks."""

    name: ClassVar[str] = "toy_quiz_blind"
    reads: ClassVar[dict[str, tuple[str, ...]]] = {"metrics": (), "label": ()}

    def label(self, probes, responses, config, ctx):  # type: ignore[no-untyped-def]
        assert config.questions > 0  # an undeclared read
        return super().label(probes, responses, config, ctx)


def test_a_step_reading_an_undeclared_field_fails_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    register(MetricsBlindQuiz)
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["models"] = {"simulated_llm": raw["models"]["simulated_llm"]}
    raw["methodologies"] = {"toy_quiz_blind": {"questions": 6}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(with_runs(raw)))
    params, layout = load_params(path), Layout(tmp_path)
    make_probes(params, "toy_quiz_blind", layout)
    generate(params, "simulated_llm", "toy_quiz_blind", layout)  # reads questions, simulated
    with pytest.raises(
        UndeclaredRead,
        match=r"toy_quiz_blind's label step read the config field 'questions', which it does "
        r"not declare: add it to toy_quiz_blind's reads\['label'\]",
    ):
        label(params, "simulated_llm", "toy_quiz_blind", layout)


def test_a_real_model_never_sees_the_planted_rates() -> None:
    planted = QuizConfig(questions=3, simulated={"accuracy": 0.3})
    real = step_config(Quiz(), planted, "generate", simulated=False)
    simulator = step_config(Quiz(), planted, "generate", simulated=True)
    assert real.simulated == QuizConfig().simulated and simulator.simulated.accuracy == 0.3
    assert real.questions == simulator.questions == 3
    with pytest.raises(UndeclaredRead, match="'simulated'"):  # plants are generate's alone
        _ = step_config(Quiz(), planted, "metrics").simulated


@pytest.mark.parametrize("name", builtin())
def test_each_field_moves_the_digests_of_the_steps_that_read_it_alone(name: str) -> None:
    """Every field of each methodology's composed block, changed, moves ``all`` and the
    digests of exactly the steps that declare it (its plants: ``plants`` alone)."""
    method = get_methodology(name)
    block = yaml.safe_load((ROOT / "params.yaml").read_text())["methodologies"][name]
    fields = digest_fields(method)
    before = methodology_digests(block, fields)
    for field in block:
        after = methodology_digests({**block, field: "changed"}, fields)
        moved = {step for step in before if before[step] != after[step]}
        readers = {step for step, keys in fields.items() if field in keys}
        assert moved == {"all", *readers}, (field, moved)


def test_scoring_fields_are_the_metrics_steps_alone() -> None:
    """The examples of issue 34: FACT-OR-FAIR's interval level, IRIS's S and K, OpenBias's
    severity and News Bias's topic model are read by no step that asks the model."""
    for name, field, steps in (
        ("fact_or_fair", "confidence_level", {"metrics"}),
        ("iris", "scoring", {"study"}),
        ("open_bias", "severity", {"metrics"}),
        ("news_bias", "documents", {"study"}),
    ):
        method = get_methodology(name)
        assert {s for s in STEPS if field in step_fields(method, s)} == steps, name


def test_only_a_simulators_run_depends_on_the_plants() -> None:
    params = load_params(ROOT / "params.yaml")
    assert params.runs
    for key, run in params.runs.items():
        simulated = params.model(run["model"]).backend == "simulated"
        assert ("plants" in run) == simulated, key
        if simulated:
            assert run["plants"] == params.digests["methodologies"][run["methodology"]]["plants"]


def test_a_declaration_naming_no_field_is_refused() -> None:
    class Typo(Quiz):
        name: ClassVar[str] = "toy_typo"
        reads: ClassVar[dict[str, tuple[str, ...]]] = {"metrics": ("questoins",)}

    with pytest.raises(UndeclaredRead, match=r"reads\['metrics'\] names questoins"):
        step_fields(Typo(), "metrics")
