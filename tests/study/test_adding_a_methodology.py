"""Adding a methodology touches no file under src/: the toy quiz in this folder is
registered (decorator, or a package's entry point) and runs the whole study on the
simulated LLM: probes, generate, label, metrics, study step, score, track."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from genfair.cli import compose
from genfair.methodologies import get_methodology, names, register, registry
from genfair.methodologies.base import StudyResult
from genfair.methodologies.comparison import COMPARISON_RESAMPLES, Comparison
from genfair.study.layout import Layout
from genfair.study.scoring import score_study
from genfair.study.steps import compute_metrics, generate, label, make_probes, study_step
from genfair.study.tracking import track_study
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import BareQuiz, Quiz, QuizConfig
from tests.support.conf import ROOT, with_runs

MODELS = ("smollm2", "simulated_t2i", "simulated_vlm")


def _params(tmp_path: Path) -> StudyParams:
    overrides = ["scale=smoke", *[f"~model@models.{m}" for m in MODELS]]
    raw = load_params(compose(overrides, tmp_path / "params.yaml")).model_dump(mode="json")
    raw["methodologies"] = {"toy_quiz": {"questions": 60}}
    return StudyParams.model_validate(with_runs(raw))


def test_a_registered_methodology_runs_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    register(Quiz)
    params = _params(tmp_path)
    layout = Layout(tmp_path)
    make_probes(params, "toy_quiz", layout)
    generate(params, "simulated_llm", "toy_quiz", layout)
    label(params, "simulated_llm", "toy_quiz", layout)
    compute_metrics(params, "simulated_llm", "toy_quiz", layout)
    study_step(params, "toy_quiz", layout)
    score_study(params, layout)
    runs = json.loads(track_study(params, layout).read_text())

    scores = pd.read_parquet(layout.metrics("simulated_llm", "toy_quiz") / "scores.parquet")
    accuracy = scores.set_index("measure").loc["accuracy"]
    # the simulator's planted accuracy (0.8) lies in the quiz's interval
    assert accuracy["ci_low"] <= 0.8 <= accuracy["ci_high"] and accuracy["n"] > 40
    board = pd.read_parquet(layout.scores / "toy_quiz.parquet")
    assert board["simulated"].all() and board["rank"].isna().all()  # simulators are never ranked
    headline = json.loads(layout.headline.read_text())
    assert headline["toy_quiz"]["simulated_llm"]["accuracy (higher is better)"] == round(
        accuracy["mean"], 4
    )
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    key = runs["child_runs"][
        "simulated_llm/toy_quiz"
    ]  # runs are keyed by content hash (genfair.key)
    (run,) = client.search_runs(
        [client.get_experiment_by_name(params.tracking.experiment).experiment_id],
        filter_string=f"tags.`genfair.key` = '{key}'",
    )
    assert run.data.metrics["accuracy.mean"] == pytest.approx(accuracy["mean"])
    assert run.data.params["toy_quiz.questions"] == "60"


def test_a_package_registers_one_by_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "toy_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\ntoy_quiz = tests.study.toy_methodology:Quiz\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.setattr(registry, "_registered", {})
    monkeypatch.setattr(registry, "_instances", {})
    assert "toy_quiz" in names()
    assert isinstance(get_methodology("toy_quiz"), Quiz)
    # its code, a dependency of its stages: the top-level package of the entry point's module
    assert registry.code_path("toy_quiz", ROOT) == "tests"


def test_genfair_finds_its_own_methodologies_by_their_folders() -> None:
    """No list to edit: every package under genfair/methodologies/ is a methodology."""
    assert set(registry.builtin()) == {
        "fact_or_fair",
        "news_bias",
        "iris",
        "lvlm_facet",
        "open_bias",
    }
    assert all(get_methodology(name).name == name for name in registry.builtin())
    assert registry.code_path("iris", ROOT) == "src/genfair/methodologies/iris"
    assert registry.code_path("iris", ROOT / "tests") == str(
        ROOT / "src/genfair/methodologies/iris"
    )


def test_registry_rejects_what_is_not_a_methodology(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registered", {})
    with pytest.raises(TypeError, match="Methodology subclass"):
        register(dict)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="unknown methodology 'nope'"):
        get_methodology("nope")


def test_a_declared_plot_without_rows_keeps_its_columns(tmp_path: Path) -> None:
    """A study whose models give a plot no rows still writes its table (DVC needs the output)."""
    from genfair.io import write_parquet
    from genfair.study.scoring import write_plot
    from genfair.study_params import ConfigError

    register(Quiz)
    layout = Layout(tmp_path)
    write_parquet(
        pd.DataFrame({"model": pd.Series([], dtype=str)}), layout.scores / "toy_quiz.parquet"
    )
    table = pd.read_csv(write_plot("toy_quiz", "accuracy", layout))
    assert list(table.columns) == ["mean", "model"] and table.empty
    with pytest.raises(ConfigError, match="declares no plot 'nope'"):
        write_plot("toy_quiz", "nope", layout)


def test_a_methodology_without_a_comparison_role_compares_nothing() -> None:
    """The comparison role is optional: its default leaderboard is every model's scores (and
    the study step's ``scores`` rows), unranked, with no headline and no paired unit."""
    method = BareQuiz()
    assert type(method.comparison) is Comparison and method.comparison.methodology is method
    assert method.comparison is method.comparison  # built once, with its methodology
    scores = pd.DataFrame({"model": ["a", "b"], "measure": "accuracy", "mean": [0.5, 0.7]})
    study = StudyResult(tables={"scores": pd.DataFrame({"model": ["a"], "mean": [0.9]})})
    board = method.comparison.leaderboard(scores, study)
    assert board["mean"].tolist() == [0.5, 0.7, 0.9]
    assert method.comparison.model_rows("a", scores, study)["mean"].tolist() == [0.5, 0.7, 0.9]
    assert method.comparison.model_rows("b", scores, study)["mean"].tolist() == [0.5, 0.7]
    assert method.comparison.ranking is None and method.comparison.headline == ()
    assert method.comparison.paired_unit is None
    assert method.comparison.headline_function(QuizConfig(), "llm") is None
    assert method.comparison.paired_headline_function(QuizConfig(), "llm", study) is None
    assert method.comparison.comparison_resamples(QuizConfig()) == COMPARISON_RESAMPLES
    assert method.comparison.pilot_limits(QuizConfig(), "llm", scores) == {}


@pytest.mark.parametrize(
    ("member", "role", "home"),
    [("headline", "comparison", "compare"), ("figures", "presentation", "report")],
)
def test_a_role_member_on_the_methodology_class_is_refused(
    member: str, role: str, home: str
) -> None:
    """A member that moved to a role (comparison, presentation), left on a methodology class,
    would be ignored: the class is refused in one line naming the member and where it goes."""
    with pytest.raises(TypeError, match=rf"Stale\.{member}: a {role} member; .*{home}\.py"):
        type("Stale", (Quiz,), {member: ()})
