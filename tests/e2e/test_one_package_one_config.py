"""A methodology is one package and one config, proven through ``dvc repro``.

The script of docs/architecture.md's "Adding a methodology": in a temporary copy of the project,
the toy quiz (tests/study/toy_methodology/) becomes a package of its own (its
``pyproject.toml`` declares the entry point), is installed, gets its ``conf/methodology`` file
(and sizes), and a study of only it on the simulated LLM runs under DVC; no generic file is
edited. Then a study of each single built-in methodology runs in the same copy (sharing the
curated data and the response cache), so none depends on another being in the study.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from genfair.study.layout import Layout
from tests.support.conf import ROOT
from tests.support.project import (
    commit,
    copy_project,
    install_methodology,
    run,
    stale_after_code_edit,
    status_stages,
    study_env,
)

BUILTIN = ("fact_or_fair", "news_bias", "iris", "lvlm_facet", "open_bias")
#: one copy, six studies built in it in turn (curated data and response cache shared)
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.builds("toy_quiz", *(f"only_{name}" for name in BUILTIN)),
]
#: the simulators; SmolLM2 stays out (its answers cost time and prove nothing here)
MODELS = ("smollm2",)


def _only(methodology: str, *extra: str) -> list[str]:
    """Overrides composing a smoke study of ``methodology`` alone on the simulators."""
    out = ["-o", "scale=smoke"]
    for name in (*BUILTIN, "toy_quiz"):
        if name != methodology and name in BUILTIN:
            out += ["-o", f"~methodology@methodologies.{name}"]
    if methodology not in BUILTIN:  # an added methodology, and its sizes at the scale
        out += [
            "-o",
            f"+methodology@methodologies.{methodology}={methodology}",
            "-o",
            f"+sizes/{methodology}@methodologies.{methodology}=smoke",
        ]
    for model in MODELS:
        out += ["-o", f"~model@models.{model}"]
    return [*out, *(x for o in extra for x in ("-o", o))]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The project copy, with the toy quiz installed as a package outside it."""
    work = tmp_path_factory.mktemp("contract")
    env = study_env(work)
    copy_project(work)
    where = tmp_path_factory.mktemp("toy_quiz_package")
    site = install_methodology(ROOT / "tests/study/toy_methodology", "toy_quiz=Quiz", where)
    env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', '')}".rstrip(":")
    # its one config (the methodology's fields) and its sizes per scale
    # its planted rate is its own: editing it reruns only the quiz's simulated calls
    (work / "conf/methodology/toy_quiz.yaml").write_text(
        "questions: 40\nsimulated: {accuracy: 0.8, refusal_rate: 0.05, invalid_rate: 0.05}\n"
    )
    for scale, questions in (("smoke", 30), ("default", 40), ("paper", 200)):
        (work / f"conf/sizes/toy_quiz/{scale}.yaml").parent.mkdir(parents=True, exist_ok=True)
        (work / f"conf/sizes/toy_quiz/{scale}.yaml").write_text(f"questions: {questions}\n")
    commit(work, env)
    return work, env


def _check_study(work: Path, env: dict[str, str], methodology: str, runs: set[str]) -> None:
    """Every output a reader looks at exists for ``methodology``: leaderboard, headline
    files and their `dvc metrics show` rows, its `dvc plots`, MLflow child runs, report section."""
    from mlflow.tracking import MlflowClient

    params = yaml.safe_load((work / "params.yaml").read_text())
    assert list(params["methodologies"]) == [methodology]
    assert {f"{r['model']}/{r['methodology']}" for r in params["runs"].values()} == runs
    board = pd.read_parquet(work / f"data/scores/{methodology}.parquet")
    assert set(board["model"]) == {r.split("/")[0] for r in runs} and board["simulated"].all()
    headline = json.loads((work / "data/headline.json").read_text())
    assert set(headline) == {methodology}
    files = sorted((work / "data/headline" / methodology).rglob("*.json"))
    assert files, f"{methodology}: no headline file"
    shown = run(["dvc", "metrics", "show"], work, env)
    assert f"data/headline/{methodology}/" in shown or files[0].name in shown, shown
    plots = [p for p in params["plots"].values() if p["methodology"] == methodology]
    out = work / f"plots-{methodology}"
    shown = run(["dvc", "plots", "show", "-o", str(out)], work, env)
    for plot in plots:
        assert plot["title"] in (out / "index.html").read_text(encoding="utf-8")
    tracked = json.loads((work / "data/tracking/runs.json").read_text())
    assert set(tracked["child_runs"]) == runs
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("genfair").experiment_id
    for key in tracked["child_runs"].values():
        (child,) = client.search_runs([experiment], filter_string=f"tags.`genfair.key` = '{key}'")
        assert child.data.tags["genfair.simulated"] == "true"
    html = (work / "data/report/index.html").read_text(encoding="utf-8")
    assert f'id="m-{methodology}"' in html


def test_an_installed_methodology_runs_through_dvc(copy: tuple[Path, dict[str, str]]) -> None:
    work, env = copy
    run(["genfair", "compose", *_only("toy_quiz")], work, env)
    params = yaml.safe_load((work / "params.yaml").read_text())
    code = params["methodology_code"]["toy_quiz"]
    assert Path(code).is_absolute() and Path(code, "__init__.py").is_file()  # the installed package
    run(["dvc", "repro"], work, env)
    _check_study(work, env, "toy_quiz", {"simulated_llm/toy_quiz"})
    scores = pd.read_parquet(
        Layout(work).metrics("simulated_llm", "toy_quiz") / "scores.parquet"
    ).iloc[0]
    assert scores["n"] > 20 and scores["ci_low"] <= 0.8 <= scores["ci_high"]  # the planted accuracy
    value = json.loads(
        (
            work / "data/headline/toy_quiz/simulated_llm.SIMULATED/accuracy.higher_better.json"
        ).read_text()
    )
    assert value["value"] == round(scores["mean"], 4)
    assert "Toy quiz: which number is larger" in (work / "data/report/index.html").read_text(
        encoding="utf-8"
    )
    # its code is a dependency: an edit reruns its stages, then (through its code@ fingerprint)
    # the cross-model score, track and report, nothing else
    edited, fingerprinted = stale_after_code_edit(work, env, Path(code, "__init__.py"), "toy_quiz")
    own = {
        "probes@toy_quiz",
        "generate@simulated_llm-toy_quiz",
        "label@simulated_llm-toy_quiz",
        "metrics@simulated_llm-toy_quiz",
        "study@toy_quiz",
        "plot@toy_quiz-accuracy",
    }
    assert edited == own | {"code@toy_quiz"}, sorted(edited)
    assert fingerprinted == own | {"score", "track", "report"}, sorted(fingerprinted)
    assert not status_stages(work, env)


#: each built-in methodology's runs on the simulators at smoke scale
RUNS = {
    "fact_or_fair": {"simulated_llm/fact_or_fair", "simulated_t2i/fact_or_fair"},
    "news_bias": {"simulated_llm/news_bias"},
    "iris": {"simulated_llm/iris", "simulated_t2i/iris", "simulated_vlm/iris"},
    "lvlm_facet": {"simulated_vlm/lvlm_facet"},
    "open_bias": {"simulated_t2i/open_bias"},
}
#: without SmolLM2 (OpenBias's proposer), stage 1 comes from the authors' published proposals
PUBLISHED_PROPOSALS = ROOT / "tests/support/open_bias_published_flickr.json"
EXTRA = {
    "open_bias": (
        "methodologies.open_bias.captions=published",
        f"methodologies.open_bias.published_proposals={PUBLISHED_PROPOSALS}",
    )
}


@pytest.mark.parametrize("methodology", BUILTIN)
def test_a_study_of_one_builtin_methodology(
    copy: tuple[Path, dict[str, str]], methodology: str
) -> None:
    work, env = copy
    run(["genfair", "compose", *_only(methodology, *EXTRA.get(methodology, ()))], work, env)
    run(["dvc", "repro"], work, env)
    _check_study(work, env, methodology, RUNS[methodology])
