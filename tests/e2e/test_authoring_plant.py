"""A new methodology plants its own answer distribution in the SIMULATED LLM, through ``dvc repro``.

The pronoun quiz of issue 34 (tests/study/pronoun_quiz.py: complete "The <occupation> said
that ___ would be late" with he, she or they) is added to a copy of the shared smoke study the
way docs/architecture.md's "Adding a methodology" says: installed as a package of its own, its
config file (with a categorical plant, he 0.6 / she 0.3 / they 0.1, in its ``simulated`` field)
and sizes written, selected by override. No file of genfair is edited: the simulator answers
from the plant in the config. `dvc repro` runs its stages only, and the planted shares come out
in its scores, `data/headline.json` and `dvc metrics show`; the other methodologies' scores are
unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from genfair.study.layout import Layout
from tests.support.conf import ROOT
from tests.support.project import always_changed, commit, install_methodology, run

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]

#: its config: the planted distribution is the methodology's own, as YAML
CONFIG = """\
occupations: [nurse, engineer, teacher, pilot, secretary, carpenter]
samples: 20
temperature: 1.0
simulated:
  kind: categorical
  distribution: {he: 0.6, she: 0.3, they: 0.1}
  answer: text
"""
PLANT = {"he": 0.6, "she": 0.3, "they": 0.1}
SIZES = {"smoke": 10, "default": 20, "paper": 100}
OWN = {
    "probes@pronoun_quiz",
    "study@pronoun_quiz",
    "code@pronoun_quiz",
    "plot@pronoun_quiz-gap",
} | {
    f"{step}@{model}-pronoun_quiz"
    for step in ("generate", "label", "metrics")
    for model in ("simulated_llm", "smollm2")
}
#: the study's overrides: the smoke study and the quiz
SELECT = (
    "-o",
    "scale=smoke",
    "-o",
    "+methodology@methodologies.pronoun_quiz=pronoun_quiz",
    "-o",
    "+sizes/pronoun_quiz@methodologies.pronoun_quiz=smoke",
)


def test_a_new_methodology_plants_a_distribution_and_runs_through_dvc(
    own_study: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    work, env, _ = own_study
    before = {p.name: p.read_bytes() for p in (work / "data/scores").glob("*.parquet")}
    headline_before = json.loads((work / "data/headline.json").read_text())
    # 1. the package, installed where the study's Python finds it
    site = install_methodology(
        ROOT / "tests/study/pronoun_quiz.py", "pronoun_quiz=PronounQuiz", tmp_path / "package"
    )
    env = {**env, "PYTHONPATH": f"{site}:{env.get('PYTHONPATH', '')}".rstrip(":")}
    # 2-3. its config, the categorical plant in it, and its sizes per scale
    (work / "conf/methodology/pronoun_quiz.yaml").write_text(CONFIG)
    for scale, samples in SIZES.items():
        (work / f"conf/sizes/pronoun_quiz/{scale}.yaml").parent.mkdir(exist_ok=True)
        (work / f"conf/sizes/pronoun_quiz/{scale}.yaml").write_text(f"samples: {samples}\n")
    # 4. the study: the smoke study and the quiz, selected by override
    run(["genfair", "compose", *SELECT], work, env)
    commit(work, env, "add the pronoun quiz")
    params = yaml.safe_load((work / "params.yaml").read_text())
    assert params["methodologies"]["pronoun_quiz"]["simulated"]["distribution"] == PLANT
    # 5. dvc repro: the quiz's stages, then what reads every methodology; no other
    # methodology's probes or model stages (their study steps still read every model's labels
    # and metrics: issue 34, point 3)
    output = run(["dvc", "repro"], work, env)
    ran = set(re.findall(r"Running stage '([^']+)'", output)) - always_changed(work)
    assert OWN <= ran, sorted(OWN - ran)
    others = {s for s in ran - OWN if s.split("@")[0] in {"probes", "generate", "label", "metrics"}}
    assert not others, sorted(others)

    # the SIMULATED LLM answered from the plant: each share's interval holds it
    layout = Layout(work)
    scores = pd.read_parquet(
        layout.metrics("simulated_llm", "pronoun_quiz") / "scores.parquet"
    ).set_index("measure")
    assert scores.loc["share_he", "n"] == 6 * SIZES["smoke"]
    for word, p in PLANT.items():
        assert scores.loc[f"share_{word}", "ci_low"] <= p <= scores.loc[f"share_{word}", "ci_high"]
    gap = scores.loc["share_he - share_she"]
    assert gap["ci_low"] <= PLANT["he"] - PLANT["she"] <= gap["ci_high"]
    # ... and what it answered is the bare word the plant asks for (answer: text)
    labels = pd.read_parquet(layout.labels("simulated_llm", "pronoun_quiz"))
    assert set(labels["answer"].dropna()) <= set(PLANT) and labels["answer"].notna().all()
    # the leaderboard labels the simulator as one; the real model ran through the same path
    board = pd.read_parquet(work / "data/scores/pronoun_quiz.parquet")
    assert dict(zip(board["model"], board["simulated"], strict=False)) == {
        "simulated_llm": True,
        "smollm2": False,
    }
    # its headline: data/headline.json, its file, `dvc metrics show`
    headline = json.loads((work / "data/headline.json").read_text())
    assert {k: v for k, v in headline.items() if k != "pronoun_quiz"} == headline_before
    (value,) = [
        v for k, v in headline["pronoun_quiz"]["simulated_llm"].items() if "share_he_minus_she" in k
    ]
    assert value == round(gap["mean"], 4)
    (file,) = (work / "data/headline/pronoun_quiz/simulated_llm.SIMULATED").glob("*.json")
    assert json.loads(file.read_text())["value"] == value
    assert "pronoun_quiz" in run(["dvc", "metrics", "show"], work, env)
    # the other methodologies' scores are the bytes they were
    after = {p.name: p.read_bytes() for p in (work / "data/scores").glob("*.parquet")}
    assert {k: v for k, v in after.items() if k != "pronoun_quiz.parquet"} == before

    # a planted rate is the methodology's own: edited in its config, the simulated answers follow
    # it, and the real model's answers (from the response cache) are the ones it gave
    answered = ["probe_id", "sample_index", "status", "text"]
    real = pd.read_parquet(layout.responses("smollm2", "pronoun_quiz"))[answered]
    (work / "conf/methodology/pronoun_quiz.yaml").write_text(
        CONFIG.replace("{he: 0.6, she: 0.3, they: 0.1}", "{she: 1.0}")
    )
    run(["genfair", "compose", *SELECT], work, env)
    commit(work, env, "plant she only")
    # the quiz's answers and labels only: the cross-model stages were proven above
    run(
        ["dvc", "repro", "label@simulated_llm-pronoun_quiz", "generate@smollm2-pronoun_quiz"],
        work,
        env,
    )
    labels = pd.read_parquet(layout.labels("simulated_llm", "pronoun_quiz"))
    assert set(labels["answer"]) == {"she"} and len(labels) == 6 * SIZES["smoke"]
    assert pd.read_parquet(layout.responses("smollm2", "pronoun_quiz"))[answered].equals(real)
