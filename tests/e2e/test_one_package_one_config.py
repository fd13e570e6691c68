"""A methodology is one package and one config, proven through ``dvc repro``.

The script of docs/architecture.md's "Adding a methodology": in a temporary copy of the project,
the toy quiz (tests/study/toy_methodology/) becomes a package of its own (its
``pyproject.toml`` declares two entry points: the quiz with its own presentation and comparison
roles, ``toy_quiz``, and its pipeline alone with the default roles, ``toy_quiz_bare``), is
installed, each gets its ``conf/methodology`` file (and sizes), and a study of only these two
on the simulated LLM runs under DVC; no generic file is edited. Then a study of each single
built-in methodology runs in the same copy (sharing the curated data and the response cache),
so none depends on another being in the study.
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
#: the toy package's two methodologies: the quiz with its own roles, its pipeline alone
TOY = ("toy_quiz", "toy_quiz_bare")
#: the accuracy each one's config plants in the simulated LLM's answers
PLANTED = (0.8, 0.5)
#: the simulators; SmolLM2 stays out (its answers cost time and prove nothing here)
MODELS = ("smollm2",)


def _only(methodologies: tuple[str, ...], *extra: str) -> list[str]:
    """Overrides composing a smoke study of ``methodologies`` alone on the simulators."""
    out = ["-o", "scale=smoke"]
    for name in BUILTIN:
        if name not in methodologies:
            out += ["-o", f"~methodology@methodologies.{name}"]
    for name in methodologies:
        if name not in BUILTIN:  # an added methodology, and its sizes at the scale
            out += [
                "-o",
                f"+methodology@methodologies.{name}={name}",
                "-o",
                f"+sizes/{name}@methodologies.{name}=smoke",
            ]
    for model in MODELS:
        out += ["-o", f"~model@models.{model}"]
    return [*out, *(x for o in extra for x in ("-o", o))]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The project copy, with the toy package (both its methodologies) installed outside it."""
    work = tmp_path_factory.mktemp("contract")
    env = study_env(work)
    copy_project(work)
    where = tmp_path_factory.mktemp("toy_quiz_package")
    site = install_methodology(
        ROOT / "tests/study/toy_methodology", "toy_quiz=Quiz", where, "toy_quiz_bare=BareQuiz"
    )
    env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', '')}".rstrip(":")
    # each its one config (the methodology's fields) and its sizes per scale
    # a planted rate is its methodology's own: editing it reruns only its simulated calls
    for name, accuracy in zip(TOY, PLANTED, strict=True):
        (work / f"conf/methodology/{name}.yaml").write_text(
            f"questions: 40\nsimulated: {{accuracy: {accuracy}, refusal_rate: 0.05, "
            "invalid_rate: 0.05}\n"
        )
        (work / f"conf/sizes/{name}").mkdir(parents=True)
        for scale, questions in (("smoke", 30), ("default", 40), ("paper", 200)):
            (work / f"conf/sizes/{name}/{scale}.yaml").write_text(f"questions: {questions}\n")
    commit(work, env)
    return work, env


def _check_study(
    work: Path, env: dict[str, str], methodology: str, runs: set[str], bare: str | None = None
) -> None:
    """Every output a reader looks at exists for ``methodology`` (and for ``bare``, a
    methodology with the default roles, beside it): leaderboard, headline files and their
    `dvc metrics show` rows, its `dvc plots`, MLflow child runs, report section. ``runs``:
    the study's ``model/methodology`` pairs."""
    from mlflow.tracking import MlflowClient

    params = yaml.safe_load((work / "params.yaml").read_text())
    study = [methodology, *([bare] if bare else [])]
    assert list(params["methodologies"]) == study
    assert {f"{r['model']}/{r['methodology']}" for r in params["runs"].values()} == runs
    for name in study:
        board = pd.read_parquet(work / f"data/scores/{name}.parquet")
        models = {r.split("/")[0] for r in runs if r.endswith(f"/{name}")}
        assert set(board["model"]) == models and board["simulated"].all()
    headline = json.loads((work / "data/headline.json").read_text())
    assert set(headline) == set(study)
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
    assert all(f'id="m-{name}"' in html for name in study)


def test_an_installed_methodology_runs_through_dvc(copy: tuple[Path, dict[str, str]]) -> None:
    """The toy package's two methodologies in one study: the quiz with its own roles, and its
    pipeline alone (``toy_quiz_bare``), which the default roles show and compare on nothing."""
    work, env = copy
    run(["genfair", "compose", *_only(TOY)], work, env)
    params = yaml.safe_load((work / "params.yaml").read_text())
    code = params["methodology_code"]["toy_quiz"]
    assert Path(code).is_absolute() and Path(code, "__init__.py").is_file()  # the installed package
    assert params["methodology_code"]["toy_quiz_bare"] == code  # one package, two entry points
    run(["dvc", "repro"], work, env)
    _check_study(work, env, "toy_quiz", {f"simulated_llm/{name}" for name in TOY}, "toy_quiz_bare")
    scores = {
        name: pd.read_parquet(Layout(work).metrics("simulated_llm", name) / "scores.parquet")
        for name in TOY
    }
    for name, planted in zip(TOY, PLANTED, strict=True):  # each its own config's planted accuracy
        (row,) = scores[name].to_dict("records")
        assert row["n"] > 20 and row["ci_low"] <= planted <= row["ci_high"], name
    value = json.loads(
        (
            work / "data/headline/toy_quiz/simulated_llm.SIMULATED/accuracy.higher_better.json"
        ).read_text()
    )
    assert value["value"] == round(scores["toy_quiz"]["mean"].iloc[0], 4)
    html = (work / "data/report/index.html").read_text(encoding="utf-8")
    assert "Toy quiz: which number is larger" in html
    # the pipeline alone: the default roles show it (its section headed by its name, its
    # docstring, the figure of its leaderboard, its label table's samples) and compare it on
    # nothing (no headline number, no headline file, no dvc plot)
    assert '<a href="#m-toy_quiz_bare">toy_quiz_bare</a>' in html
    assert "Bare toy quiz: the quiz" in html
    assert 'id="m-toy_quiz_bare-scores.png"' in html
    assert "#samples/toy_quiz_bare/simulated_llm" in html
    samples = (work / "data/report/samples/toy_quiz_bare/simulated_llm.js").read_text()
    rows = json.loads(samples.removeprefix("genfairSamples(").removesuffix(");\n"))
    assert rows["n"] == 30 and {"prompt", "label", "status"} <= set(rows["columns"])
    assert json.loads((work / "data/headline.json").read_text())["toy_quiz_bare"] == {
        "simulated_llm": {"simulated": True}
    }
    assert not list((work / "data/headline/toy_quiz_bare").rglob("*.json"))
    assert not [p for p in params["plots"].values() if p["methodology"] == "toy_quiz_bare"]
    # their code is a dependency: an edit reruns their stages, then (through their code@
    # fingerprints) the cross-model score, precision, track and report, nothing else
    edited, fingerprinted = stale_after_code_edit(work, env, Path(code, "__init__.py"), *TOY)
    own = {
        f"{stage}@{step}"
        for name in TOY
        for stage, step in (
            ("probes", name),
            ("generate", f"simulated_llm-{name}"),
            ("label", f"simulated_llm-{name}"),
            ("metrics", f"simulated_llm-{name}"),
            ("study", name),
        )
    } | {"plot@toy_quiz-accuracy"}
    assert edited == own | {f"code@{name}" for name in TOY}, sorted(edited)
    assert fingerprinted == own | {"score", "precision", "track", "report"}, sorted(fingerprinted)
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
    run(["genfair", "compose", *_only((methodology,), *EXTRA.get(methodology, ()))], work, env)
    run(["dvc", "repro"], work, env)
    _check_study(work, env, methodology, RUNS[methodology])
