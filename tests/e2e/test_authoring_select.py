"""A methodology selected once stays selected (issue 34.1), on a copy of the shared smoke study.

The way docs/architecture.md ("Adding a methodology", "The study file") says: the toy quiz
installed as a package of its own, its config and sizes under conf/, and one line in the user's
``conf/study.yaml``. Then a plain ``genfair compose`` and a ``genfair exp -S`` that sets one of
its fields both keep it (before: the methodology lived in one command's overrides, and the next
plain compose dropped it without a word), and its sizes are recorded in ``params.yaml`` and its
MLflow run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.project import commit, run
from tests.support.toy_package import install_toy_quiz

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]

#: the toy quiz's config: its sizes picked by the scale, as a built-in methodology's are
TOY_CONF = """\
defaults:
  - _self_
  - /sizes/toy_quiz@_here_: ${scale}
questions: 40
simulated: {accuracy: 0.8, refusal_rate: 0.05, invalid_rate: 0.05}
"""


def _params(work: Path) -> dict:
    return yaml.safe_load((work / "params.yaml").read_text())


def test_a_methodology_in_the_study_file_survives_compose_and_exp(
    own_study: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    work, env, _ = own_study
    env = dict(env)
    install_toy_quiz(tmp_path / "package", tmp_path / "site", env)
    (work / "conf/methodology/toy_quiz.yaml").write_text(TOY_CONF)
    for scale, questions in (("smoke", 12), ("default", 40), ("paper", 200)):
        (work / "conf/sizes/toy_quiz").mkdir(parents=True, exist_ok=True)
        (work / f"conf/sizes/toy_quiz/{scale}.yaml").write_text(f"questions: {questions}\n")
    # the smoke study's lasting scale, where the study file says it is (conf/config.yaml)
    config = work / "conf/config.yaml"
    config.write_text(config.read_text().replace("  - scale: default\n", "  - scale: smoke\n"))
    before = _params(work)
    study = work / "conf/study.yaml"
    study.write_text(study.read_text() + "  - /methodology@methodologies.toy_quiz: toy_quiz\n")

    out = run(["genfair", "compose"], work, env)  # plain: no override repeats the selection
    assert "note" not in out
    params = _params(work)
    assert list(params["methodologies"]) == [*before["methodologies"], "toy_quiz"]
    assert params["methodologies"]["toy_quiz"]["questions"] == 12
    assert params["sizes"]["toy_quiz"] == "smoke" and params["scale"] == "smoke"
    assert "simulated_llm-toy_quiz" in params["runs"]
    # the built study is untouched by the move of the selection into the study file
    for key in ("models", "curation", "instruments"):
        assert params[key] == before[key], key
    for name, block in before["methodologies"].items():
        assert params["methodologies"][name] == block, name
    commit(work, env, "select the toy quiz")

    # an experiment setting one of its fields: no override repeats the selection either
    out = run(["genfair", "exp", "-S", "methodologies.toy_quiz.questions=10"], work, env)
    params = _params(work)
    assert "toy_quiz" in params["methodologies"] and "note" not in out
    assert params["methodologies"]["toy_quiz"]["questions"] == 10
    assert params["sizes"]["toy_quiz"] == "custom"  # no sizes file holds 10 questions
    assert list(params["methodologies"])[:-1] == list(before["methodologies"])

    # its outputs and its MLflow run, named distinctly, with its sizes
    from mlflow.tracking import MlflowClient

    tracked = json.loads((work / "data/tracking/runs.json").read_text())
    key = tracked["child_runs"]["simulated_llm/toy_quiz"]
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("genfair").experiment_id
    (child,) = client.search_runs([experiment], filter_string=f"tags.`genfair.key` = '{key}'")
    assert child.info.run_name == f"simulated_llm/toy_quiz {key[:8]}"
    assert child.data.params["sizes"] == "custom" and child.data.params["scale"] == "smoke"
    (parent,) = client.search_runs(
        [experiment], filter_string=f"tags.`genfair.key` = '{tracked['parent_run']}'"
    )
    assert len(parent.info.run_name) <= 80 and parent.info.run_name.startswith("study-smoke ")
    assert parent.info.run_name.endswith(tracked["parent_run"][:8])
    assert parent.data.params["toy_quiz.sizes"] == "custom"
    assert parent.data.params["fact_or_fair.sizes"] == "smoke"
    html = (work / "data/report/index.html").read_text(encoding="utf-8")
    assert "toy_quiz (custom sizes)" in html and "fact_or_fair (smoke sizes)" in html
