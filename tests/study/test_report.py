"""The study report and MLflow tracking over a small study built in-process: FACT-OR-FAIR on
the simulated LLM and T2I models, plus a toy methodology (default report hook) whose probes,
answers, notes and headline carry markup that must never run."""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from genfair.cli import compose
from genfair.io import write_parquet
from genfair.methodologies import register
from genfair.methodologies.base import MetricsResult, StepContext
from genfair.methodologies.comparison import NEUTRAL, Headline
from genfair.study.always import sync_store
from genfair.study.context import models_for
from genfair.study.curation_stages import occupations_table
from genfair.study.layout import Layout
from genfair.study.report import build_report, study_fingerprint
from genfair.study.scoring import score_study, write_plot
from genfair.study.steps import compute_metrics, generate, label, make_probes, study_step
from genfair.study.store import listed_keys, missing_runs
from genfair.study.tracking import EXPERIMENT_KIND, KEY_TAG, track_study
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import Quiz, QuizConfig
from tests.study.toy_methodology.compare import QuizComparison
from tests.study.toy_methodology.report import QuizPresentation
from tests.support.browser import browser, sync_api, watched_page
from tests.support.conf import with_runs
from tests.support.mlflow_server import mlflow_server

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
#: a label a model could write (issue 32): a spreadsheet formula, mathtext, escape codes and
#: a forged log line; it names a score row, so it reaches a figure, a table, a CSV, MLflow
#: metric keys and the log
MODEL_TEXT = "=cmd|' /C calc'!A0 gender $x^{$ \x1b[2J\n12:00:00 INFO forged"


class EvilPresentation(QuizPresentation):
    def figures(self, scores: pd.DataFrame, title: str) -> list[tuple[Any, str]]:
        """The measures as bar labels, titled with the model's text (issue 32: mathtext in
        a label made ``report`` and ``track`` die)."""
        from genfair.methodologies.plotting import plt

        figure, ax = plt.subplots(figsize=(4, 2))
        ax.barh(range(len(scores)), scores["mean"], label=MODEL_TEXT)
        ax.set(yticks=range(len(scores)), yticklabels=scores["measure"], title=MODEL_TEXT)
        ax.legend()
        figure.tight_layout()
        return [(figure, "measures.png")]


class EvilComparison(QuizComparison):
    headline = (Headline(f"accuracy {IMG}", "mean", {"measure": "accuracy"}, "higher"),)


class EvilQuiz(Quiz):
    """A toy quiz whose dataset and model text is hostile markup."""

    name: ClassVar[str] = "toy_evil"
    presentation_role = EvilPresentation
    comparison_role = EvilComparison

    def build_probes(self, config: QuizConfig, seed: int) -> pd.DataFrame:
        probes = super().build_probes(config, seed)
        probes["prompt"] = probes["prompt"] + f" {SCRIPT}"
        return probes

    def metrics(self, labels: pd.DataFrame, config: QuizConfig, ctx: StepContext) -> MetricsResult:
        result = super().metrics(labels, config, ctx)
        result.scores = pd.concat(
            [result.scores, result.scores.assign(measure=MODEL_TEXT)], ignore_index=True
        )
        result.scores["note"] = IMG
        result.summary["instruments"] = {"judge": SCRIPT}
        return result


def _params(tmp_path: Path) -> StudyParams:
    drop = ["smollm2", "simulated_vlm"]
    raw = load_params(
        compose(["scale=smoke", *[f"~model@models.{m}" for m in drop]], tmp_path / "params.yaml")
    ).model_dump(mode="json")
    iris = raw["methodologies"]["iris"]
    iris["occupations_table"] = str(tmp_path / "data/curated/occupations/occupations.parquet")
    iris["ifs_und"]["persons"] = None  # no FACET crops (and no VLM) in this small study
    iris["bis_und"]["dataset"] = None
    raw["methodologies"] = {
        "fact_or_fair": raw["methodologies"]["fact_or_fair"],
        "iris": iris,
        "toy_evil": {"questions": 30},
    }
    return StudyParams.model_validate(with_runs(raw))


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[StudyParams, Layout, Path]:
    tmp = tmp_path_factory.mktemp("report-study")
    patch = pytest.MonkeyPatch()
    patch.setenv("GENFAIR_CACHE_DIR", str(tmp / "cache"))
    patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp / 'mlflow.db'}")
    register(EvilQuiz)
    params = _params(tmp)
    layout = Layout(tmp)
    occupations_table(params, layout)
    for name in params.methodologies:
        make_probes(params, name, layout)
        for model in models_for(params, name):
            generate(params, model, name, layout)
            if name == "toy_evil" and model == "simulated_llm":  # the model "writes" markup
                path = layout.responses(model, name)
                responses = pd.read_parquet(path)
                responses.loc[responses.index[:3], "text"] = IMG + SCRIPT
                write_parquet(responses, path)
            label(params, model, name, layout)
            compute_metrics(params, model, name, layout)
        study_step(params, name, layout)
    score_study(params, layout)
    yield params, layout, tmp
    patch.undo()


def test_a_disk_full_during_the_report_leaves_no_temporary_file(
    study: tuple[StudyParams, Layout, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21.4: the report's write fails (ENOSPC at the rename) and nothing but the last
    good report is left in its folder (it used to leave ``index.tmp``)."""
    import errno

    params, layout, _ = study
    build_report(params, layout)
    good = layout.report.read_bytes()

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("genfair.io.os.replace", full)
    with pytest.raises(OSError, match="No space left"):
        build_report(params, layout)
    listed = sorted(p.name for p in layout.report.parent.iterdir())
    assert listed == ["build.js", "index.html", "samples"]
    assert layout.report.read_bytes() == good


def test_two_renders_of_the_same_study_are_the_same_page_bytes(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    """Issue 48.6: the page printed its render time, so every rebuild changed it (and
    ``dvc.lock``); now the page states the study's fingerprint, and the git commit and render
    time go to ``build.js`` beside it, outside the DVC output."""
    params, layout, _ = study
    first = build_report(params, layout, now=datetime(2026, 1, 1, 9, 0, tzinfo=UTC)).read_bytes()
    build = (layout.report.parent / "build.js").read_text("utf-8")
    later = datetime(2026, 1, 2, 10, 30, tzinfo=UTC)
    assert build_report(params, layout, now=later).read_bytes() == first
    assert "rendered 2026-01-01 09:00 UTC" in build and b"09:00 UTC" not in first
    assert re.search(r"git commit ([0-9a-f]{40}(-dirty)?|unknown), ", build), build
    assert "rendered 2026-01-02 10:30 UTC" in (layout.report.parent / "build.js").read_text()
    assert f"study fingerprint\n<code>{study_fingerprint(layout)}</code>" in first.decode()
    # the fingerprint follows the numbers: another headline.json, another fingerprint
    before = study_fingerprint(layout)
    original = layout.headline.read_bytes()
    try:
        layout.headline.write_bytes(original.replace(b"}", b" }", 1))
        assert study_fingerprint(layout) != before
    finally:
        layout.headline.write_bytes(original)


def test_a_neutral_headline_is_shown_as_reported_not_ranked(
    study: tuple[StudyParams, Layout, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46.6: a number reported for information says so in the headline table, with
    its value and no direction or rank."""
    params, layout, _ = study
    answered = Headline("answered", "n", {"measure": "accuracy"}, NEUTRAL)
    monkeypatch.setattr(EvilComparison, "headline", (*EvilComparison.headline, answered))
    html = build_report(params, layout).read_text(encoding="utf-8")
    row = re.search(
        r"<tr><td>toy_evil</td><td>answered</td><td>(.*?)</td>(.*?)</tr>", html, re.DOTALL
    )
    assert row is not None and row[1] == "reported, not ranked"
    board = pd.read_parquet(layout.scores / "toy_evil.parquet")
    (n,) = board.loc[board["measure"] == "accuracy", "n"]  # the one model's answers counted
    assert f'<td class="num">{n} <a' in row[2] and "(#" not in row[2]  # its value, no rank
    assert "reported, not ranked" in html.split('id="headline"')[1].split("</p>")[0]


def test_a_report_rerun_rewrites_only_the_sample_files_whose_rows_changed(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    """Issue 43.6: every report run rewrote each model's sample file (28 MB a model at paper
    size), changed or not; now a file keeps its inode and mtime unless its rows changed."""
    params, layout, _ = study
    build_report(params, layout)
    folder = layout.report.parent / "samples"

    def seen() -> dict[Path, tuple[int, int]]:
        return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*.js")}

    before = seen()
    assert len(before) >= 3
    build_report(params, layout)
    assert seen() == before
    path = layout.responses("simulated_llm", "toy_evil")
    original = path.read_bytes()
    try:
        responses = pd.read_parquet(path)
        responses.loc[responses.index[-1], "text"] = "an answer edited by hand"
        write_parquet(responses, path)
        build_report(params, layout)
        changed = folder / "toy_evil" / "simulated_llm.js"
        after = seen()
        assert after[changed] != before[changed]
        assert "an answer edited by hand" in changed.read_text("utf-8")
        assert {p: s for p, s in after.items() if p != changed} == {
            p: s for p, s in before.items() if p != changed
        }
    finally:
        path.write_bytes(original)


def test_report_escapes_model_and_dataset_text(study: tuple[StudyParams, Layout, Path]) -> None:
    params, layout, _ = study
    html = build_report(params, layout).read_text(encoding="utf-8")
    # two scripts only: the samples' index (JSON, not run) and the sample browser; no model
    # text is in either (the rows are in samples/, escaped)
    # three scripts: the samples' index (JSON, not run), build.js's provenance line and the
    # sample browser; no model text among them
    assert html.lower().count("<script") == 3 and "<img src=x" not in html
    assert '<script src="build.js"></script>' in html
    assert '<script type="application/json" id="samples-index">' in html
    index = html.split('id="samples-index">')[1].split("</script>")[0]
    assert "<" not in index and "alert" not in index
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, as text
    rows = (layout.report.parent / "samples/toy_evil/simulated_llm.js").read_text("utf-8")
    assert "alert(1)" in rows and "<" not in rows and ">" not in rows  # escaped in the file
    assert "onerror=alert(2)" in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    for section in (
        'id="study"',
        'id="headline"',
        'id="m-fact_or_fair"',
        'id="m-iris"',
        'id="m-toy_evil"',
        'id="instruments"',
    ):
        assert section in html
    assert "http://" not in html and "https://" not in html  # nothing to fetch
    assert html.count("SIMULATED") >= 4
    # the headline table: both simulators, never ranked; estimates with their intervals
    table = html.split('id="headline-table"')[1].split("</table>")[0]
    assert "(#" not in table
    board = pd.read_parquet(layout.scores / "fact_or_fair.parquet").set_index(
        ["model", "context", "attribute"]
    )
    row = board.loc[("simulated_llm", "objective", "gender")]
    shown = [f"{round(row[c], 4):.4g}" for c in ("distance", "distance_lo", "distance_hi")]
    assert f"{shown[0]} [{shown[1]}, {shown[2]}]" in table
    # section titles from the methodologies' own metadata
    assert "FACT-OR-FAIR: factuality vs. fairness" in html


def test_model_text_reaches_figures_tables_csvs_and_mlflow_inert(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    """Issue 32: a score label holding mathtext, a formula and escape codes is drawn, shown
    escaped, logged to MLflow under a key it takes, and is text in the CSVs people open."""
    import csv

    from genfair.names import mlflow_key

    params, layout, tmp = study
    html = build_report(params, layout).read_text(encoding="utf-8")
    section = html.split('id="m-toy_evil"')[1].split("</section>")[0]
    assert 'measures.png"><img src="data:image/png;base64,' in section  # the figure, drawn
    assert "gender $x^{$" in section and "&#39; /C calc&#39;!A0" in section
    runs = json.loads(track_study(params, layout).read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(params.tracking.experiment).experiment_id
    by_key = {r.data.tags.get(KEY_TAG): r for r in client.search_runs([experiment])}
    child = by_key[runs["child_runs"]["simulated_llm/toy_evil"]]
    assert mlflow_key(f"{MODEL_TEXT}.mean") in child.data.metrics
    assert "measures.png" in [a.path for a in client.list_artifacts(child.info.run_id)]
    parent = next(r for r in by_key.values() if r.data.tags.get("genfair.level") == "study")
    board = client.download_artifacts(parent.info.run_id, "leaderboard_toy_evil.csv", str(tmp))
    with open(board, newline="", encoding="utf-8") as fh:
        measures = {row["measure"] for row in csv.DictReader(fh)}
    assert measures == {"accuracy", "'" + MODEL_TEXT}  # text, never a formula


def test_dvc_metric_files_hold_one_number_per_model(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    _, layout, _ = study
    files = sorted((layout.headline_dir / "fact_or_fair").rglob("*.json"))
    assert [str(f.relative_to(layout.headline_dir / "fact_or_fair")) for f in files] == sorted(
        f"{m}.SIMULATED/{c}.{a}.distance.lower_better.json"
        for m in ("simulated_llm", "simulated_t2i")
        for c in ("objective", "baseline")
        for a in ("gender", "race")
    )
    values = [json.loads(f.read_text()) for f in files]
    assert all(set(v) == {"value"} and isinstance(v["value"], float) for v in values)
    plot = pd.read_csv(write_plot("fact_or_fair", "tradeoff_objective_gender", layout))
    assert {"model", "s_fact", "s_e"} <= set(plot) and plot["model"].str.contains("SIMULATED").all()


def test_track_logs_what_the_store_lacks_and_never_duplicates(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    params, layout, tmp = study
    store = f"sqlite:///{tmp / 'mlflow.db'}"
    runs = json.loads(track_study(params, layout).read_text())
    assert str(tmp) not in json.dumps(runs)  # no machine path in the committed file
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(params.tracking.experiment)
    assert experiment.tags[EXPERIMENT_KIND[0]] == EXPERIMENT_KIND[1]
    first = client.search_runs([experiment.experiment_id])
    assert (
        len(first) == 1 + len(runs["child_runs"]) == 6
    )  # parent + 2 models on fact_or_fair and iris + 1 on the toy
    again = json.loads(track_study(params, layout).read_text())
    assert again == runs
    second = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_id for r in second) == sorted(r.info.run_id for r in first)
    child = next(
        r
        for r in second
        if r.data.tags.get(KEY_TAG) == runs["child_runs"]["simulated_llm/fact_or_fair"]
    )
    assert child.data.tags["genfair.simulated"] == "true" and child.data.metrics
    # the tokens of the run's answers (usage.json, through the metrics summary; issue 33.3)
    assert child.data.metrics["usage.calls"] > 0 and child.data.metrics["usage.prompt_tokens"] > 0
    # sent and answered from the cache apart, from the cache folder's ledger: a fresh cache
    metrics = child.data.metrics
    assert (
        metrics["usage.sent.calls"] == metrics["usage.calls"] and metrics["usage.cached.calls"] == 0
    )
    # a fresh store gets every run again
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'fresh.db'}"
    try:
        track_study(params, layout)
    finally:
        os.environ["MLFLOW_TRACKING_URI"] = store
    fresh = MlflowClient(tracking_uri=f"sqlite:///{tmp / 'fresh.db'}")
    assert (
        len(
            fresh.search_runs(
                [fresh.get_experiment_by_name(params.tracking.experiment).experiment_id]
            )
        )
        == 6
    )


def test_mlflow_sync_asks_the_store_without_mlflow_and_logs_what_it_lacks(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    params, layout, tmp = study
    store, experiment = f"sqlite:///{tmp / 'mlflow.db'}", params.tracking.experiment
    track_study(params, layout)
    keys = listed_keys(layout.tracking)
    assert len(keys) == 6 and missing_runs(keys, store, experiment) == []
    assert missing_runs(keys, f"sqlite:///{tmp / 'none.db'}", experiment) == keys  # no store yet
    assert (
        missing_runs(keys, "http://127.0.0.1:5000", experiment) is None
    )  # a server: MLflow must tell
    client = MlflowClient(tracking_uri=store)
    lost = next(
        r
        for r in client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
        if r.data.tags[KEY_TAG] == keys[1]
    )
    client.delete_run(lost.info.run_id)
    assert missing_runs(keys, store, experiment) == [keys[1]]
    written = json.loads(sync_store(params, layout).read_text())  # logs the lost run again
    assert missing_runs(keys, store, experiment) == []
    assert written == {"tracking_uri": written["tracking_uri"], "experiment": experiment, "runs": 6}
    assert str(tmp) not in written["tracking_uri"]  # no machine path in the committed file
    html = build_report(params, layout).read_text(
        encoding="utf-8"
    )  # the report says where the runs are
    assert f"MLflow: 6 runs in experiment <b>{experiment}</b>" in html


@pytest.mark.browser
def test_report_renders_offline_in_chromium(
    study: tuple[StudyParams, Layout, Path], tmp_path: Path
) -> None:
    sync_api()
    params, layout, _ = study
    report = build_report(params, layout)
    with watched_page() as (page, seen):
        page.goto(report.as_uri(), wait_until="load")
        for section in (
            "#study",
            "#headline",
            "#m-fact_or_fair",
            "#m-iris",
            "#m-toy_evil",
            "#instruments",
        ):
            assert page.locator(section).is_visible(), section
        figures = page.locator("section.methodology figure img")
        assert figures.count() >= 4  # LLM and T2I trade-off plots, IRIS sectors
        sizes = figures.evaluate_all("imgs => imgs.map(i => [i.complete, i.naturalWidth])")
        assert all(done and width > 100 for done, width in sizes), sizes
        assert page.locator("#models .sim").count() == 2
        assert page.locator("#build").inner_text().startswith("git commit ")  # build.js ran
        assert IMG in page.locator("#m-toy_evil").inner_text()  # shown as text
        assert SCRIPT in page.locator("#instruments").inner_text()
        # the model's markup in the sample browser: found by search, shown as text, inert
        page.locator("#m-toy_evil a.samples-link", has_text="simulated_llm").click()
        page.wait_for_selector("#sb-table tbody tr")
        page.fill("#sb-search", "onerror=alert(2)")
        assert page.locator("#sb-info").inner_text().startswith("Rows 1–3 of 3 matching")
        assert IMG in page.locator("#sb-table tbody").inner_text()
        page.locator("#sb-table tbody tr").first.click()
        assert page.locator("#sb-detail pre.raw").text_content() == IMG + SCRIPT
        page.locator("#sb-detail summary").click()
        assert SCRIPT in page.locator("#sb-detail details pre").text_content()
        assert page.locator("img[src=x]").count() == 0
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert not seen.dialogs and not seen.errors, (seen.dialogs, seen.errors)
    assert all(u.startswith(("file://", "data:")) for u in seen.requests), seen.requests
    assert (tmp_path / "report.png").stat().st_size > 10_000


@pytest.mark.browser
def test_mlflow_ui_shows_runs_params_figures_and_compares(
    study: tuple[StudyParams, Layout, Path],
) -> None:
    """The real MLflow server on the study's store, checked through Chromium."""
    sync_api()
    params, layout, tmp = study
    runs = json.loads(track_study(params, layout).read_text())
    store = f"sqlite:///{tmp / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(params.tracking.experiment).experiment_id
    by_key = {r.data.tags.get(KEY_TAG): r for r in client.search_runs([experiment])}
    iris_t2i = by_key[runs["child_runs"]["simulated_t2i/iris"]].info.run_id
    fof_llm = by_key[runs["child_runs"]["simulated_llm/fact_or_fair"]].info.run_id
    with mlflow_server(store, tmp) as base:
        with browser() as chromium:
            page = chromium.new_page(viewport={"width": 1500, "height": 1000})
            # the link `make ui` prints: the experiment's runs table (classic ML view)
            page.goto(f"{base}/#/experiments/{experiment}?workflowType=machine_learning")
            page.wait_for_url(re.compile(r".*/runs.*"), timeout=60_000)
            page.get_by_text("study-smoke").first.wait_for(timeout=60_000)
            # every model x methodology run: expand the study run's children
            page.wait_for_timeout(1000)
            toggles = page.locator(
                '[role="gridcell"] button[data-component-id*="runnamecellrenderer"]'
            )
            for i in range(toggles.count()):
                toggles.nth(i).click()
            for name, key in runs["child_runs"].items():  # named with their key's start
                page.get_by_text(f"{name} {key[:8]}", exact=True).first.wait_for(timeout=60_000)
            # a run page: metrics, params (IRIS's S and K), tags (SIMULATED), figure artifacts
            page.goto(
                f"{base}/#/experiments/{experiment}/runs/{iris_t2i}?workflowType=machine_learning"
            )
            page.get_by_text("iris.S.IFS-Gen").first.wait_for(timeout=60_000)
            text = page.locator("body").inner_text()
            assert "iris.K.IFS-Gen" in text and "iris.score.IFS-Gen" in text
            assert "genfair.simulated" in text or "SIMULATED" in text
            page.goto(
                f"{base}/#/experiments/{experiment}/runs/{fof_llm}/artifacts?workflowType=machine_learning"
            )
            page.get_by_text("tradeoff_objective.png").first.wait_for(timeout=60_000)
            # comparing two runs
            page.goto(
                f"{base}/#/compare-runs?runs="
                + urllib.parse.quote(json.dumps([iris_t2i, fof_llm]))
                + f"&experiments={urllib.parse.quote(json.dumps([experiment]))}"
            )
            page.get_by_text("simulated_t2i/iris").first.wait_for(timeout=60_000)
            assert "simulated_llm/fact_or_fair" in page.locator("body").inner_text()
