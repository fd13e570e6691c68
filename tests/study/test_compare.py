"""Paired model comparisons in the study (issue 33.2): every pair of models of one modality
that answered the same probes, simulators only against simulators, each headline's
difference with its paired interval and Holm mark; written by score, shown in the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.cli import compose
from genfair.io import write_parquet
from genfair.methodologies import register
from genfair.study.compare import compare_models, comparison_files, comparison_metrics
from genfair.study.layout import Layout
from genfair.study.report import build_report, comparisons_view
from genfair.study.steps import compute_metrics
from genfair.study.tracking import track_study
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs

N = 80


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory) -> StudyParams:
    register(Quiz)
    overrides = [
        "scale=smoke",
        *[f"~model@models.{m}" for m in ("smollm2", "simulated_t2i", "simulated_vlm")],
    ]
    path = tmp_path_factory.mktemp("compare") / "params.yaml"
    raw = load_params(compose(overrides, path)).model_dump(mode="json")
    raw["methodologies"] = {"toy_quiz": {"questions": N}}
    raw["models"]["simulated_llm_2"] = {**raw["models"]["simulated_llm"], "model_id": "sim-2"}
    for name in ("real_a", "real_b"):
        raw["models"][name] = {
            "backend": "openai",
            "model_id": name,
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": None,
        }
    return StudyParams.model_validate(with_runs(raw))


def _labels(layout: Layout, model: str, correct: np.ndarray) -> None:
    frame = pd.DataFrame(
        {
            "probe_id": [f"q{i}" for i in range(N)],
            "status": "ok",
            "answer": "A",
            "correct": correct,
        }
    )
    write_parquet(frame, layout.labels(model, "toy_quiz"))


def test_pairs_of_one_kind_are_compared_and_a_planted_gap_is_marked(
    params: StudyParams, tmp_path: Path
) -> None:
    layout = Layout(tmp_path)
    rng = np.random.default_rng(5)
    easy = rng.uniform(size=N) < 0.5
    _labels(layout, "simulated_llm", easy)
    other = easy ^ (rng.uniform(size=N) < 0.1)  # flips 10% either way: no planted gap
    _labels(layout, "simulated_llm_2", other)
    _labels(layout, "real_a", np.ones(N, dtype=bool))
    _labels(layout, "real_b", np.arange(N) % 2 == 0)  # 50 points less accurate
    compared = compare_models(params, layout, resamples=300)
    pairs = {(r.model_a, r.model_b): r for r in compared.itertuples()}
    # simulators only against simulators: never simulated_llm vs real_a
    assert set(pairs) == {("simulated_llm", "simulated_llm_2"), ("real_a", "real_b")}
    real = pairs[("real_a", "real_b")]
    assert real.difference == pytest.approx(0.5) and real.ci_low > 0 and real.marked
    assert not real.simulated and real.n_units == N
    sim = pairs[("simulated_llm", "simulated_llm_2")]
    assert sim.difference == pytest.approx(easy.mean() - other.mean())
    assert sim.simulated and sim.ci_low <= sim.difference <= sim.ci_high
    assert sim.p_holm >= sim.p_value  # Holm never lowers a p-value

    written = comparison_metrics(compared)
    entry = written["toy_quiz"]["accuracy"]["real_a_vs_real_b"]
    assert entry["marked"] is True and entry["n_units"] == N
    json.dumps(written)  # JSON-able as written
    files = comparison_files(compared)  # dvc metrics: one row per comparison
    assert files["toy_quiz/compare/real_a_vs_real_b/accuracy.difference.marked.json"] == {
        "value": pytest.approx(0.5)
    }
    assert any(
        f.startswith("toy_quiz/compare/simulated_llm_vs_simulated_llm_2.SIMULATED/") for f in files
    )

    layout.comparisons.parent.mkdir(parents=True, exist_ok=True)
    layout.comparisons.write_text(json.dumps(written))
    (view,) = comparisons_view(params, layout, {"simulated_llm", "simulated_llm_2"})
    cells = {row[0]["text"]: [c["text"] for c in row[1:]] for row in view["rows"]}
    assert cells["real_a"][view["columns"].index("real_b") - 1].startswith("0.5 [")
    assert cells["real_a"][view["columns"].index("real_b") - 1].endswith("*")
    assert cells["real_b"][view["columns"].index("real_a") - 1].startswith("-0.5 [")


def test_identical_models_are_said_identical_not_a_degenerate_interval(
    params: StudyParams, tmp_path: Path
) -> None:
    layout = Layout(tmp_path)
    same = np.arange(N) % 3 == 0
    _labels(layout, "real_a", same)
    _labels(layout, "real_b", same)
    compared = compare_models(params, layout, resamples=100)
    (real,) = [r for r in compared.itertuples() if r.model_a == "real_a"]
    assert (real.difference, real.ci_low, real.ci_high) == (0, 0, 0)
    layout.comparisons.parent.mkdir(parents=True, exist_ok=True)
    layout.comparisons.write_text(json.dumps(comparison_metrics(compared)))
    (view,) = comparisons_view(params, layout, set())
    cells = {row[0]["text"]: [c["text"] for c in row[1:]] for row in view["rows"]}
    assert cells["real_a"] == ["", "0 (identical on every probe)"]
    assert cells["real_b"] == ["0 (identical on every probe)", ""]
    assert "(identical on every probe): the two models score the same" in view["caption"]


def test_models_without_common_units_or_labels_are_not_compared(
    params: StudyParams, tmp_path: Path
) -> None:
    layout = Layout(tmp_path)
    _labels(layout, "real_a", np.ones(N, dtype=bool))  # real_b has no labels
    assert compare_models(params, layout, resamples=50).empty


def test_track_logs_the_comparisons_on_the_study_run_and_the_report_shows_them(
    params: StudyParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``score`` writes reaches the study's MLflow run (a local store) and the report's
    matrix, end to end from the labels."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    raw = params.model_dump(mode="json")
    raw["models"] = {m: raw["models"][m] for m in ("real_a", "real_b")}
    params = StudyParams.model_validate(with_runs(raw))
    layout = Layout(tmp_path)
    _labels(layout, "real_a", np.ones(N, dtype=bool))
    _labels(layout, "real_b", np.arange(N) % 2 == 0)
    for model in ("real_a", "real_b"):  # the models' own runs, beside the study's
        answers = pd.DataFrame({"probe_id": [f"q{i}" for i in range(N)], "status": "ok"})
        write_parquet(answers, layout.responses(model, "toy_quiz"))
        compute_metrics(params, model, "toy_quiz", layout)
    compared = compare_models(params, layout, resamples=100)
    layout.comparisons.parent.mkdir(parents=True, exist_ok=True)
    layout.comparisons.write_text(json.dumps(comparison_metrics(compared)))

    runs = json.loads(track_study(params, layout).read_text())
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(params.tracking.experiment).experiment_id
    (run,) = client.search_runs(
        [experiment], filter_string=f"tags.`genfair.key` = '{runs['parent_run']}'"
    )
    logged = run.data.metrics
    key = "compare.toy_quiz.accuracy.real_a_vs_real_b"
    assert logged[f"{key}.difference"] == pytest.approx(0.5)
    assert logged[f"{key}.marked"] == 1.0 and logged[f"{key}.n_units"] == N
    assert logged[f"{key}.ci_low"] > 0

    html = build_report(params, layout).read_text(encoding="utf-8")
    assert 'id="comparisons"' in html and "real_a" in html and "0.5 [" in html


def test_the_study_step_result_and_the_unit_hook_reach_the_methodology(
    params: StudyParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compare_models`` hands the study step's result (as written) to
    ``paired_headline_function`` and resamples the units of ``paired_units`` (here pairs of
    questions: 40 units), as IRIS needs for its S and K and its units per sector."""
    layout = Layout(tmp_path)
    _labels(layout, "real_a", np.ones(N, dtype=bool))
    _labels(layout, "real_b", np.arange(N) % 2 == 0)
    folder = layout.study("toy_quiz")
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"scale": 10.0}), encoding="utf-8")
    seen = []

    def scaled(self, config, modality, study):
        seen.append(study.summary)

        def accuracy(labels: pd.DataFrame) -> dict[str, float]:
            return {"accuracy": study.summary["scale"] * float(labels["correct"].mean())}

        return accuracy

    monkeypatch.setattr(Quiz.comparison_role, "paired_headline_function", scaled)
    monkeypatch.setattr(
        Quiz.comparison_role, "paired_units", lambda self, labels: labels.index.to_series() // 2
    )
    compared = compare_models(params, layout, resamples=50)
    (row,) = [r for r in compared.itertuples() if r.model_a == "real_a"]
    assert seen and seen[0] == {"scale": 10.0}
    assert row.difference == pytest.approx(5.0) and row.n_units == N // 2
