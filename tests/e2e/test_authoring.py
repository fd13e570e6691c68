"""Authoring, tried as a new user would (issue 34), on one copy of the shared smoke study.

The pronoun quiz (tests/study/pronoun_quiz.py: complete "The <occupation> said that ___ would
be late" with he, she or they) is added the way docs/architecture.md's "Adding a methodology"
says: installed as a package of its own, its config (a categorical plant, he 0.6 / she 0.3 /
they 0.1, for the SIMULATED LLM) and sizes under conf/, and one line in the user's study file,
``conf/study.yaml``. A plain ``genfair compose`` and ``dvc repro`` then run it. The copy is
built once for the module (``quiz``); each test leaves it as it found it, so they pass alone
and in any order.

What each change reruns is read from ``dvc status`` (no stage runs for it), except where a
rerun's output is the point: an experiment on a metrics-only field (``genfair exp -S``, the
selection kept without repeating it), a new plant (the simulated answers follow it), and the
study steps a methodology's new metrics make stale (``dvc status`` once those metrics ran).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml

from genfair.study.layout import Layout
from tests.support.conf import ROOT
from tests.support.project import (
    always_changed,
    commit,
    install_methodology,
    run,
    stale_after_code_edit,
    status_stages,
)
from tests.support.studies import Study, study_copy

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]

#: the quiz's config: its sizes picked by the scale as a built-in methodology's are, and its
#: categorical plant (the methodology's own field, read by a simulator's generate alone)
CONFIG = """\
defaults:
  - _self_
  - /sizes/pronoun_quiz@_here_: ${scale}
occupations: [nurse, engineer, teacher, pilot, secretary, carpenter]
samples: 20
temperature: 1.0
confidence_level: 0.95
simulated:
  kind: categorical
  distribution: {he: 0.6, she: 0.3, they: 0.1}
  answer: text
"""
PLANT = {"he": 0.6, "she": 0.3, "they": 0.1}
SIZES = {"smoke": 10, "default": 20, "paper": 100}
MODELS = ("simulated_llm", "smollm2")
#: the stages the quiz adds
OWN = {"probes@pronoun_quiz", "study@pronoun_quiz", "code@pronoun_quiz", "plot@pronoun_quiz-gap"}
OWN |= {f"{step}@{m}-pronoun_quiz" for step in ("generate", "label", "metrics") for m in MODELS}
#: the stages downstream of every run: a study step (which reads its own methodology's
#: outputs alone: :func:`_study_steps_after`) and the study-level ones
STUDY_LEVEL = ("study@", "score", "precision", "track", "report", "plot@")


@dataclass(frozen=True)
class Quiz:
    work: Path
    env: dict[str, str]
    output: str  # the first `dvc repro`'s
    scores_before: dict[str, bytes]  # the smoke study's leaderboards before the quiz
    headline_before: dict


@pytest.fixture(scope="module")
def quiz(
    study: tuple[Path, dict[str, str], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Quiz]:
    """The smoke study with the quiz added the guide's way, reproduced."""
    copy = study_copy(Study(*study), tmp_path_factory.mktemp("authoring") / "study")
    work, env = copy.work, dict(copy.env)
    scores = {p.name: p.read_bytes() for p in (work / "data/scores").glob("*.parquet")}
    headline = json.loads((work / "data/headline.json").read_text())
    # 1. the package, installed where the study's Python finds it
    site = install_methodology(
        ROOT / "tests/study/pronoun_quiz.py",
        "pronoun_quiz=PronounQuiz",
        tmp_path_factory.mktemp("pronoun_quiz"),
    )
    env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', '')}".rstrip(":")
    # 2-3. its config and its sizes per scale
    (work / "conf/methodology/pronoun_quiz.yaml").write_text(CONFIG)
    (work / "conf/sizes/pronoun_quiz").mkdir(parents=True)
    for scale, samples in SIZES.items():
        (work / f"conf/sizes/pronoun_quiz/{scale}.yaml").write_text(f"samples: {samples}\n")
    # 4. the study: this one runs at smoke scale (conf/config.yaml), and the quiz is a line of
    # the study file
    config = work / "conf/config.yaml"
    config.write_text(config.read_text().replace("  - scale: default\n", "  - scale: smoke\n"))
    selection = work / "conf/study.yaml"
    selection.write_text(
        selection.read_text() + "  - /methodology@methodologies.pronoun_quiz: pronoun_quiz\n"
    )
    assert "note" not in run(["genfair", "compose"], work, env)  # plain: nothing dropped
    commit(work, env, "add the pronoun quiz")
    output = run(["dvc", "repro"], work, env)
    commit(work, env, "reproduced")
    yield Quiz(work, env, output, scores, headline)


def _params(work: Path) -> dict:
    return yaml.safe_load((work / "params.yaml").read_text())


def _stale(quiz: Quiz, *overrides: str) -> set[str]:
    """The stages ``dvc status`` lists, but the study-level ones, once ``genfair compose``
    ran with ``overrides``; ``params.yaml`` is restored after."""
    try:
        run(["genfair", "compose", *(x for o in overrides for x in ("-o", o))], quiz.work, quiz.env)
        return {s for s in status_stages(quiz.work, quiz.env) if not s.startswith(STUDY_LEVEL)}
    finally:
        run(["git", "checkout", "--", "params.yaml"], quiz.work, quiz.env)


def _study_steps_after(quiz: Quiz, override: str, stages: set[str]) -> set[str]:
    """The study steps ``dvc status`` lists once ``stages`` ran with ``override`` composed;
    the study is put back as it was after (``params.yaml``, ``dvc.lock``, the outputs).
    ``stages`` run without committing (no run-cache entry, so a later run of the same change
    runs, not restores), so ``dvc status`` lists them too: nothing else per run."""
    try:
        run(["genfair", "compose", "-o", override], quiz.work, quiz.env)
        run(["dvc", "repro", "--single-item", "--no-commit", *sorted(stages)], quiz.work, quiz.env)
        stale = status_stages(quiz.work, quiz.env)
        assert {s for s in stale if not s.startswith(STUDY_LEVEL)} <= stages, sorted(stale)
        return {s for s in stale if s.startswith("study@")}
    finally:
        run(["git", "checkout", "--", "params.yaml", "dvc.lock"], quiz.work, quiz.env)
        run(["dvc", "checkout", "--force", *sorted(stages)], quiz.work, quiz.env)


def test_a_new_methodology_runs_through_dvc_with_its_categorical_plant(quiz: Quiz) -> None:
    ran = set(re.findall(r"Running stage '([^']+)'", quiz.output)) - always_changed(quiz.work)
    assert OWN <= ran, sorted(OWN - ran)
    steps = {"probes", "generate", "label", "metrics"}
    others = {s for s in ran - OWN if s.split("@")[0] in steps}
    assert not others, sorted(others)  # no other methodology's probes or model stages
    params = _params(quiz.work)
    assert params["methodologies"]["pronoun_quiz"]["simulated"]["distribution"] == PLANT
    assert params["sizes"]["pronoun_quiz"] == "smoke" and params["scale"] == "smoke"
    # the SIMULATED LLM answered from the plant: each share's interval holds it
    layout = Layout(quiz.work)
    scores = pd.read_parquet(
        layout.metrics("simulated_llm", "pronoun_quiz") / "scores.parquet"
    ).set_index("measure")
    assert scores.loc["share_he", "n"] == 6 * SIZES["smoke"]
    for word, p in PLANT.items():
        assert scores.loc[f"share_{word}", "ci_low"] <= p <= scores.loc[f"share_{word}", "ci_high"]
    gap = scores.loc["share_he - share_she"]
    assert gap["ci_low"] <= PLANT["he"] - PLANT["she"] <= gap["ci_high"]
    labels = pd.read_parquet(layout.labels("simulated_llm", "pronoun_quiz"))
    assert set(labels["answer"].dropna()) <= set(PLANT) and labels["answer"].notna().all()
    # the leaderboard labels the simulator as one; the real model ran through the same path
    board = pd.read_parquet(quiz.work / "data/scores/pronoun_quiz.parquet")
    assert dict(zip(board["model"], board["simulated"], strict=False)) == {
        "simulated_llm": True,
        "smollm2": False,
    }
    # its headline: data/headline.json, its own file, `dvc metrics show`
    headline = json.loads((quiz.work / "data/headline.json").read_text())
    assert {k: v for k, v in headline.items() if k != "pronoun_quiz"} == quiz.headline_before
    (value,) = [
        v for k, v in headline["pronoun_quiz"]["simulated_llm"].items() if "share_he_minus_she" in k
    ]
    assert value == round(gap["mean"], 4)
    (file,) = (quiz.work / "data/headline/pronoun_quiz/simulated_llm.SIMULATED").glob("*.json")
    assert json.loads(file.read_text())["value"] == value
    assert "pronoun_quiz" in run(["dvc", "metrics", "show"], quiz.work, quiz.env)
    # the other methodologies' leaderboards are the bytes they were
    after = {p.name: p.read_bytes() for p in (quiz.work / "data/scores").glob("*.parquet")}
    assert {k: v for k, v in after.items() if k != "pronoun_quiz.parquet"} == quiz.scores_before


def test_each_change_makes_stale_only_the_steps_that_read_it(quiz: Quiz) -> None:
    """A metrics-only field, a planted rate, another methodology's code; and the same for the
    built-in methodologies' fields (FACT-OR-FAIR's interval level, IRIS's study-level S/K)."""
    metrics = {f"metrics@{m}-pronoun_quiz" for m in MODELS}
    assert _stale(quiz, "methodologies.pronoun_quiz.confidence_level=0.9") == metrics
    # once they ran, its own study step and no other methodology's (the news LDA's included):
    # runs' outputs are filed by methodology first, and study@<m> reads its own folders only
    level = "methodologies.pronoun_quiz.confidence_level=0.9"
    assert _study_steps_after(quiz, level, metrics) == {"study@pronoun_quiz"}
    # a planted rate: the simulator's calls only (a real model never reads its plant)
    plant = "methodologies.pronoun_quiz.simulated.distribution={he: 0.2, she: 0.5, they: 0.3}"
    assert _stale(quiz, plant) == {"generate@simulated_llm-pronoun_quiz"}
    # another methodology's code: none of the quiz's stages
    edited, fingerprinted = stale_after_code_edit(
        quiz.work,
        quiz.env,
        quiz.work / "src/genfair/methodologies/news_bias/lengths.py",
        "news_bias",
    )
    assert not {s for s in edited | fingerprinted if "pronoun_quiz" in s}, sorted(edited)
    # built-in methodologies: a field only their metrics read, a planted rate, a study-level one
    runs = [k for k, r in _params(quiz.work)["runs"].items() if r["methodology"] == "fact_or_fair"]
    stale = _stale(quiz, "methodologies.fact_or_fair.confidence_level=0.9")
    assert stale == {f"metrics@{r}" for r in runs}, sorted(stale)
    stale = _stale(quiz, "methodologies.fact_or_fair.simulated.llm.objective.accuracy=0.7")
    assert stale == {
        "generate@simulated_llm-fact_or_fair",
        "generate@simulated_t2i-fact_or_fair",  # one field holds both simulators' plants
    }, sorted(stale)
    run(["genfair", "compose", "-o", "methodologies.iris.scoring.target=50"], quiz.work, quiz.env)
    try:
        changed = status_stages(quiz.work, quiz.env)
    finally:
        run(["git", "checkout", "--", "params.yaml"], quiz.work, quiz.env)
    assert changed and all(s.startswith(STUDY_LEVEL) for s in changed), sorted(changed)
    assert "study@iris" in changed and "study@news_bias" not in changed, sorted(changed)
    assert not status_stages(quiz.work, quiz.env)


def test_an_experiment_keeps_the_selection_and_reruns_only_metrics(quiz: Quiz) -> None:
    """``genfair exp -S`` on a metrics-only field: no override repeats the selection, only
    the quiz's metrics and what follows run, and its MLflow runs are named distinctly."""
    from mlflow.tracking import MlflowClient

    work, env = quiz.work, quiz.env
    before = _params(work)
    try:
        out = run(
            ["genfair", "exp", "-S", "methodologies.pronoun_quiz.confidence_level=0.9"], work, env
        )
        params = _params(work)
        assert "note" not in out and list(params["methodologies"]) == list(before["methodologies"])
        assert params["methodologies"]["pronoun_quiz"]["confidence_level"] == 0.9
        assert params["sizes"]["pronoun_quiz"] == "smoke"  # a size was not set
        ran = set(re.findall(r"Running stage '([^']+)'", out)) - always_changed(work)
        per_run = {s for s in ran if not s.startswith(STUDY_LEVEL)}
        assert per_run == {f"metrics@{m}-pronoun_quiz" for m in MODELS}, sorted(ran)
        scores = pd.read_parquet(
            Layout(work).metrics("simulated_llm", "pronoun_quiz") / "scores.parquet"
        ).set_index("measure")
        assert (scores["ci_high"] - scores["ci_low"]).gt(0).all()
        # its runs in MLflow: bounded names, each with its key's start; its sizes recorded
        tracked = json.loads((work / "data/tracking/runs.json").read_text())
        key = tracked["child_runs"]["simulated_llm/pronoun_quiz"]
        client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
        experiment = client.get_experiment_by_name("genfair").experiment_id
        (child,) = client.search_runs([experiment], filter_string=f"tags.`genfair.key` = '{key}'")
        assert child.info.run_name == f"simulated_llm/pronoun_quiz {key[:8]}"
        assert child.data.params["sizes"] == "smoke" and child.data.params["scale"] == "smoke"
        (parent,) = client.search_runs(
            [experiment], filter_string=f"tags.`genfair.key` = '{tracked['parent_run']}'"
        )
        assert len(parent.info.run_name) <= 80 and parent.info.run_name.startswith("study-smoke ")
        assert parent.info.run_name.endswith(tracked["parent_run"][:8])
        assert parent.data.params["pronoun_quiz.sizes"] == "smoke"
        html = (work / "data/report/index.html").read_text(encoding="utf-8")
        assert "pronoun_quiz (smoke sizes)" in html
    finally:  # the study as the fixture built it
        run(["git", "checkout", "--", "."], work, env)
        run(["dvc", "checkout", "--force"], work, env)
    assert not status_stages(work, env)


def test_a_new_plant_changes_the_simulated_answers_only(quiz: Quiz) -> None:
    work, env = quiz.work, quiz.env
    layout = Layout(work)
    answered = ["probe_id", "sample_index", "status", "text"]
    real = pd.read_parquet(layout.responses("smollm2", "pronoun_quiz"))[answered]
    conf = work / "conf/methodology/pronoun_quiz.yaml"
    try:
        conf.write_text(CONFIG.replace("{he: 0.6, she: 0.3, they: 0.1}", "{she: 1.0}"))
        run(["genfair", "compose"], work, env)
        run(["dvc", "repro", "label@simulated_llm-pronoun_quiz"], work, env)
        labels = pd.read_parquet(layout.labels("simulated_llm", "pronoun_quiz"))
        assert set(labels["answer"]) == {"she"} and len(labels) == 6 * SIZES["smoke"]
        assert "generate@smollm2-pronoun_quiz" not in status_stages(work, env)
        assert pd.read_parquet(layout.responses("smollm2", "pronoun_quiz"))[answered].equals(real)
    finally:
        run(["git", "checkout", "--", "."], work, env)
        run(["dvc", "checkout", "--force"], work, env)
    assert not status_stages(work, env)


def test_a_second_simulator_on_the_quiz_alone_with_its_own_plant(quiz: Quiz) -> None:
    """Issue 46.1-2: a second simulated LLM, selected in the study file and held there to the
    quiz (``model_methodologies``), with its own plant for it (``plants`` in its model file).
    ``dvc status`` lists its own three stages and study-level ones (the study steps among
    them: each depends on every model's digest), no run of FACT-OR-FAIR, news bias or IRIS;
    its answers follow its plant, the first simulator's the quiz's; editing its plant makes
    stale its generate alone."""
    work, env = quiz.work, quiz.env
    layout = Layout(work)
    study, model = work / "conf/study.yaml", work / "conf/model/simulated_llm_she.yaml"
    own = (
        "plants:\n  pronoun_quiz:\n    simulated: {kind: categorical, answer: text, distribution: "
    )
    before = pd.read_parquet(layout.labels("simulated_llm", "pronoun_quiz"))
    try:
        model.write_text(
            (work / "conf/model/simulated_llm.yaml").read_text() + own + "{she: 1.0}}\n"
        )
        study.write_text(
            study.read_text()
            + "  - /model@models.second: simulated_llm_she\n"
            + "model_methodologies:\n  second: [pronoun_quiz]\n"
        )
        run(["genfair", "compose"], work, env)
        assert [k for k in _params(work)["runs"] if k.startswith("second-")] == [
            "second-pronoun_quiz"
        ]
        ours = {f"{step}@second-pronoun_quiz" for step in ("generate", "label", "metrics")}
        stale = status_stages(work, env)
        assert {s for s in stale if not s.startswith(STUDY_LEVEL)} == ours, sorted(stale)
        run(["dvc", "repro", "--single-item", *sorted(ours)], work, env)
        labels = pd.read_parquet(layout.labels("second", "pronoun_quiz"))
        assert set(labels["answer"]) == {"she"} and len(labels) == 6 * SIZES["smoke"]
        first = pd.read_parquet(layout.labels("simulated_llm", "pronoun_quiz"))
        assert first.equals(before)
        model.write_text(model.read_text().replace("{she: 1.0}", "{she: 0.5, they: 0.5}"))
        run(["genfair", "compose"], work, env)
        stale = status_stages(work, env)
        assert {s for s in stale if not s.startswith(STUDY_LEVEL)} == {
            "generate@second-pronoun_quiz"
        }, sorted(stale)
    finally:
        model.unlink(missing_ok=True)
        run(["git", "checkout", "--", "."], work, env)  # conf/, params.yaml, dvc.lock
        for kind in ("responses", "labels", "metrics"):
            for path in (work / "data" / kind / "pronoun_quiz").glob("second*"):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert not status_stages(work, env)
