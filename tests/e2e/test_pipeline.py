"""End to end: the DVC pipeline at smoke scale in a temporary copy of the project, the shared
smoke study (tests/e2e/conftest.py), which these tests read; test_pipeline_changes.py changes
copies of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from genfair.study.layout import Layout
from tests.support.project import run as _run

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]


def test_outputs_have_stable_schemas(study: tuple[Path, dict[str, str], str]) -> None:
    work, _, _ = study
    probes = pd.read_parquet(work / "data/probes/fact_or_fair.parquet")
    assert set(probes["modality"]) == {"llm", "t2i"}
    probes = probes[probes["modality"] == "llm"]
    assert {"probe_id", "kind", "context", "statistic", "direction", "prompt", "options"} <= set(
        probes
    )
    assert set(probes["context"]) == {
        "objective",
        "baseline",
        "representativeness",
        "attribution",
        "ingroup",
    }
    for model in ("smollm2", "simulated_llm"):
        responses = pd.read_parquet(Layout(work).responses(model, "fact_or_fair"))
        assert len(responses) == len(probes)
        assert set(responses["status"]) <= {"ok", "refused", "invalid", "error"}
        assert (responses["status"] == "ok").mean() > 0.5, f"{model}: too few valid answers"
        scores = pd.read_parquet(Layout(work).metrics(model, "fact_or_fair") / "scores.parquet")
        assert len(scores) == 10  # 5 contexts x 2 attributes
        assert scores[["s_fact", "s_e", "s_kld", "s_fair", "distance"]].notna().all().all()
    board = pd.read_parquet(work / "data/scores/fact_or_fair.parquet")
    board = board[board["modality"] == "llm"]
    simulated = board[board["model"] == "simulated_llm"]
    assert simulated["simulated"].all() and simulated["rank"].isna().all()
    assert (board.loc[board["model"] == "smollm2", "rank"] == 1).all()


def test_news_bias_word_sentence_and_document_levels(
    study: tuple[Path, dict[str, str], str],
) -> None:
    work, _, _ = study
    corpus = pd.read_parquet(work / "data/curated/news.parquet")
    assert len(corpus) == 293 and corpus["headline_derived"].all()  # gensim's ABC articles
    report = json.loads((work / "data/curated/news_report.json").read_text())
    assert report["duplicates_content"] == 7
    probes = pd.read_parquet(work / "data/probes/news_bias.parquet")
    assert len(probes) == 6 and set(probes["prompt_type"]) == {"unbiased", "biased"}
    for model in ("smollm2", "simulated_llm"):
        labels = pd.read_parquet(Layout(work).labels(model, "news_bias"))
        assert len(labels) == 6 and set(labels["status"]) <= {"ok", "refused", "error"}
        scores = pd.read_parquet(Layout(work).metrics(model, "news_bias") / "scores.parquet")
        assert {"refusal", "word", "sentence"} <= set(scores["level"])
    document = pd.read_parquet(work / "data/study/news_bias/scores.parquet")
    assert set(document["model"]) == {"smollm2", "simulated_llm"}
    assert (document["level"] == "document").all()
    perplexity = pd.read_parquet(work / "data/study/news_bias/perplexity.parquet")
    assert set(perplexity["num_topics"]) == {2, 3}
    board = pd.read_parquet(work / "data/scores/news_bias.parquet")
    assert {"word", "sentence", "document", "refusal"} <= set(board["level"])
    assert board.loc[board["simulated"], "rank"].isna().all()
    assert board.loc[board["level"] == "refusal", "rank"].isna().all()


def _mlflow_run(client, key: str):  # type: ignore[no-untyped-def]
    """The run logged under ``key`` (runs.json lists content keys, tag ``genfair.key``)."""
    experiment = client.get_experiment_by_name("genfair").experiment_id
    (run,) = client.search_runs([experiment], filter_string=f"tags.`genfair.key` = '{key}'")
    return run


def test_mlflow_parent_and_child_runs(study: tuple[Path, dict[str, str], str]) -> None:
    from mlflow.tracking import MlflowClient

    work, _, _ = study
    runs = json.loads((work / "data/tracking/runs.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    parent = _mlflow_run(client, runs["parent_run"])
    assert runs["tracking_uri"] == "sqlite:///mlflow.db"  # no machine path in the committed file
    assert parent.data.tags["genfair.scale"] == "smoke"
    # each methodology's sizes, and a bounded name that ends with the run's key (issue 34.5)
    assert parent.data.params["fact_or_fair.sizes"] == "smoke"
    assert parent.info.run_name == f"study-smoke {runs['parent_run'][:8]}"
    assert set(runs["child_runs"]) == {
        "smollm2/fact_or_fair",
        "simulated_llm/fact_or_fair",
        "smollm2/news_bias",
        "simulated_llm/news_bias",
        "simulated_t2i/fact_or_fair",
        "smollm2/iris",
        "simulated_llm/iris",
        "simulated_t2i/iris",
        "simulated_vlm/iris",
        "simulated_vlm/lvlm_facet",
        "simulated_t2i/open_bias",
    }
    sim = _mlflow_run(client, runs["child_runs"]["simulated_llm/fact_or_fair"])
    assert sim.data.params["sizes"] == "smoke" and sim.data.params["scale"] == "smoke"
    assert sim.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert (
        sim.data.tags["genfair.simulated"] == "true"
        and "SIMULATED" in sim.data.tags["genfair.label"]
    )
    real = _mlflow_run(client, runs["child_runs"]["smollm2/fact_or_fair"])
    assert real.data.tags["genfair.simulated"] == "false"
    assert {"objective.gender.s_fact", "baseline.race.distance", "ingroup.race.s_fair_lo"} <= set(
        real.data.metrics
    )
    assert real.data.params["model.model_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    artifacts = {a.path for a in client.list_artifacts(real.info.run_id)}
    assert {"per_statistic.csv", "scores.csv", "tradeoff_objective.png"} <= artifacts
    news = _mlflow_run(client, runs["child_runs"]["simulated_llm/news_bias"])
    assert {
        "unbiased.word.gender.W.mean",
        "biased.refusal.refusal_rate.mean",
        "unbiased.document.gender.W.n",
    } <= set(news.data.metrics)
    assert news.data.params["news_bias.instrument.toxicity"] == "alt-profanity-check"
    artifacts = {a.path for a in client.list_artifacts(news.info.run_id)}
    assert {"bias_bars.png", "prompt_comparison.csv", "study_scores.csv"} <= artifacts


def test_simulated_t2i_images_labels_scores_and_mlflow_run(
    study: tuple[Path, dict[str, str], str],
) -> None:
    from mlflow.tracking import MlflowClient

    work, _, _ = study
    probes = pd.read_parquet(work / "data/probes/fact_or_fair.parquet")
    probes = probes[probes["modality"] == "t2i"]
    # objective + subjective, 2 directions, 2 images per query, on the smoke scale's statistics
    asked = yaml.safe_load((work / "params.yaml").read_text())["methodologies"]["fact_or_fair"]
    assert len(asked["only_statistics"]) == 8 and set(probes["statistic"]) == set(
        asked["only_statistics"]
    )
    assert len(probes) == 8 * 2 * 2 * 2
    responses = pd.read_parquet(Layout(work).responses("simulated_t2i", "fact_or_fair"))
    assert (
        len(responses) == len(probes) and (responses["status"] == "ok").all()
    )  # refusals re-asked
    folder = Layout(work).images("simulated_t2i", "fact_or_fair")
    assert {p.name for p in folder.glob("*.png")} == set(responses["file"])
    # each image held once: the image store's file, its export and DVC's cache object
    # (docs/scale-out.md, "Disk")
    image = next(folder.glob("*.png"))
    assert os.path.samefile(image, work / ".genfair-cache/images" / image.name[:2] / image.name)
    assert image.stat().st_nlink >= 3
    labels = pd.read_parquet(Layout(work).labels("simulated_t2i", "fact_or_fair"))
    assert set(labels["source"].dropna()) == {"oracle"}
    assert set(labels["status"]) <= {"ok", "no_face", "refused", "error"}
    scores = pd.read_parquet(
        Layout(work).metrics("simulated_t2i", "fact_or_fair") / "scores.parquet"
    )
    assert len(scores) == 4  # objective, baseline (subjective) x gender, race
    assert scores[["s_fact", "s_e", "s_kld", "s_fair", "distance"]].notna().all().all()
    board = pd.read_parquet(work / "data/scores/fact_or_fair.parquet")
    board = board[board["modality"] == "t2i"]
    assert set(board["model"]) == {"simulated_t2i"} and board["rank"].isna().all()
    runs = json.loads((work / "data/tracking/runs.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    run = _mlflow_run(client, runs["child_runs"]["simulated_t2i/fact_or_fair"])
    assert (
        run.data.tags["genfair.simulated"] == "true"
        and "SIMULATED" in run.data.tags["genfair.label"]
    )
    assert {"objective.gender.s_fact", "baseline.race.distance"} <= set(run.data.metrics)
    assert run.data.params["fact_or_fair.instrument.label_source"] == "oracle"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {
        "tradeoff_t2i_objective.png",
        "tradeoff_t2i_baseline.png",
        "per_statistic.csv",
    } <= artifacts


def test_facet_curation_and_instrument_validation_stages(
    study: tuple[Path, dict[str, str], str],
) -> None:
    work, _, _ = study
    fixture = work / "data/curated/facet_fixture"
    assert (fixture / "annotations.csv").is_file() and "FIXTURE" in (
        fixture / "README.md"
    ).read_text()
    persons = pd.read_parquet(work / "data/curated/facet/persons.parquet")
    assert len(persons) > 0 and persons["fixture"].all()
    assert {f"{p}.png" for p in persons["person_id"]} == {
        p.name for p in (work / "data/curated/facet/crops").glob("*.png")
    }
    report = json.loads((work / "data/curated/facet/report.json").read_text())
    assert report["fixture"] is True and report["persons_written"] == len(persons)
    folder = Layout(work).instruments / "face_demographics"
    per_attribute = pd.read_parquet(folder / "per_attribute.parquet")
    assert {"has_face", "n_faces", "gender"} <= set(per_attribute["attribute"])
    per_group = pd.read_parquet(folder / "per_group.parquet")
    assert {"attribute", "group", "support", "recall"} <= set(per_group)
    summary = json.loads((Layout(work).instruments / "face_demographics.json").read_text())
    assert summary["images"] == 205 and summary["has_face"]["accuracy"] > 0.9


def test_iris_occupations_sectors_scores_and_mlflow(
    study: tuple[Path, dict[str, str], str],
) -> None:
    from mlflow.tracking import MlflowClient

    work, env, _ = study
    occupations = pd.read_parquet(work / "data/curated/occupations/occupations.parquet")
    assert (
        len(occupations) == 52
        and occupations["has_us"].sum() == 32
        and occupations["has_eu"].sum() == 11
    )
    probes = pd.read_parquet(work / "data/probes/iris.parquet")
    assert set(zip(probes["sector"], probes["modality"], strict=True)) == {
        ("IFS-Gen", "t2i"),
        ("RFS-Und", "llm|vlm"),
        ("IFS-Und", "vlm"),
        ("BIS-Und", "vlm"),
    }
    assert (probes["sector"] == "RFS-Und").sum() == 18  # 18 profiles x 1 round at smoke scale
    sectors = {
        "smollm2": {"RFS-Und"},
        "simulated_llm": {"RFS-Und"},
        "simulated_t2i": {"IFS-Gen", "RFS-Gen", "BIS-Gen"},
        "simulated_vlm": {"IFS-Und", "RFS-Und", "BIS-Und"},
    }
    for model, expected in sectors.items():
        granular = pd.read_parquet(Layout(work).metrics(model, "iris") / "scores.parquet")
        assert set(granular["sector"]) == expected
    t2i = pd.read_parquet(Layout(work).responses("simulated_t2i", "iris"))
    assert {"IFS-Gen", "BIS-Gen"} == set(t2i["sector"])
    ok = t2i[t2i["status"] == "ok"]
    assert {p.name for p in Layout(work).images("simulated_t2i", "iris").glob("*.png")} == set(
        ok["file"]
    )
    rounds = pd.read_parquet(Layout(work).labels("smollm2", "iris"))
    assert len(rounds) == 18 and set(rounds["status"]) <= {"ok", "refused", "invalid", "error"}
    scores = pd.read_parquet(work / "data/scores/iris.parquet")
    assert set(scores["model"]) == set(sectors) and (scores["mode"] == "table9").all()
    assert scores.loc[scores["model"] == "simulated_t2i", "gen_code"].notna().all()
    assert "IRIS" not in set(scores["sector"])  # no model runs all six sectors
    assert scores.loc[scores["model"] != "smollm2", "simulated"].all()
    validation = pd.read_parquet(work / "data/study/iris/validation.parquet")
    assert len(validation) > 0
    runs = json.loads((work / "data/tracking/runs.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    run = _mlflow_run(client, runs["child_runs"]["simulated_t2i/iris"])
    assert (
        run.data.params["iris.mode"] == "table9" and run.data.params["iris.S.IFS-Gen"] == "58000.0"
    )
    assert run.data.params["iris.gen_code"] != "-"
    # BIS-Gen lacks its quality and semantic penalties: a partial score, logged as such
    assert {
        "iris.score.IFS-Gen",
        "iris.magnitude_partial.BIS-Gen",
        "IFS-Gen.RD_gender.value",
    } <= set(run.data.metrics)
    parent = {
        a.path for a in client.list_artifacts(_mlflow_run(client, runs["parent_run"]).info.run_id)
    }
    assert {"iris_study_validation.csv", "iris_study_summary.csv", "leaderboard_iris.csv"} <= parent
    # SIMULATED VLM on the FACET fixture crops (IFS-Und) and the counterfactual FIXTURE (BIS-Und)
    crops = probes[probes["sector"] == "IFS-Und"]
    persons = pd.read_parquet(work / "data/curated/facet/persons.parquet")
    assert set(crops["person_id"]) == set(persons["person_id"][persons["occupation"].notna()])
    labels = pd.read_parquet(Layout(work).labels("simulated_vlm", "iris"))
    ifs = labels[labels["sector"] == "IFS-Und"]
    assert len(ifs) == 5 * len(crops) and set(ifs["tier"].dropna()) <= {
        "exact",
        "alias",
        "embedding",
        "unmappable",
    }
    vlm = pd.read_parquet(
        Layout(work).metrics("simulated_vlm", "iris") / "scores.parquet"
    ).set_index("metric")
    for metric in (
        "AD_single_gender",
        "SPD_single_gender",
        "ac_diff_gender",
        "dhr_inconsistency_gender",
    ):
        assert 0 <= vlm.loc[metric, "value"] and "FIXTURE" in vlm.loc[metric, "note"]
    assert vlm.loc["AD_single_gender", "value"] > 0  # planted: male 0.9 / female 0.6
    bis = labels[labels["sector"] == "BIS-Und"]
    assert bis["instance_id"].nunique() == 10 and bis["fixture"].all()  # smoke: max_sets 10
    # the answer mapper's embeddings are readings in the study's cache (issue 43.1)
    assert "text_embedding" in _run(["genfair", "cache", "stats"], work, env)
    run = _mlflow_run(client, runs["child_runs"]["simulated_vlm/iris"])
    assert run.data.tags["genfair.simulated"] == "true"
    assert {"IFS-Und.AD_single_gender.value", "BIS-Und.ac_diff_gender.value"} <= set(
        run.data.metrics
    )


def test_lvlm_facet_on_the_fixture(study: tuple[Path, dict[str, str], str]) -> None:
    """paper 004 on the FACET FIXTURE's single-person images, asked of the SIMULATED vlm only."""
    from mlflow.tracking import MlflowClient

    work, env, _ = study
    probes = pd.read_parquet(work / "data/probes/lvlm_facet.parquet")
    assert len(probes) == 3 * 3 and set(probes["prompt"]) == {
        "direct",
        "is_there",
        "person_is",
    }  # smoke: 3 images
    assert probes["fixture"].all() and probes["image_sha256"].str.len().eq(64).all()
    labels = pd.read_parquet(Layout(work).labels("simulated_vlm", "lvlm_facet"))
    assert len(labels) == len(probes) and set(labels["status"]) <= {"ok", "refused"}
    assert labels["encoder"].str.startswith("sentence-transformers/all-MiniLM").all()
    for model in (
        "smollm2",
        "simulated_llm",
        "simulated_t2i",
    ):  # not vlm models: no stage, no output
        assert not Layout(work).metrics(model, "lvlm_facet").exists()
    scores = pd.read_parquet(Layout(work).metrics("simulated_vlm", "lvlm_facet") / "scores.parquet")
    assert set(scores["measure"]) == {"recall", "disparity"}
    headline = json.loads((work / "data/headline.json").read_text())["lvlm_facet"]["simulated_vlm"]
    assert (
        headline["simulated"] is True and len(headline) == 1 + 9
    )  # attribute x prompt disparities
    assert (
        pd.read_parquet(work / "data/scores/lvlm_facet.parquet")["rank"].isna().all()
    )  # a simulator
    runs = json.loads((work / "data/tracking/runs.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    run = _mlflow_run(client, runs["child_runs"]["simulated_vlm/lvlm_facet"])
    assert run.data.params["lvlm_facet.instrument.encoder"].startswith("sentence-transformers/")
    assert {"recall_per_group.png", "disparity_heatmap.png", "recalls.csv"} <= {
        a.path for a in client.list_artifacts(run.info.run_id)
    }
    assert "text_embedding" in _run(["genfair", "cache", "stats"], work, env)  # matcher's


def test_report_metrics_and_plots_are_readable(study: tuple[Path, dict[str, str], str]) -> None:
    work, env, _ = study
    html = (work / "data/report/index.html").read_text(encoding="utf-8")
    for section in ("study", "headline", "m-fact_or_fair", "m-news_bias", "m-iris", "instruments"):
        assert f'id="{section}"' in html
    # three scripts: the samples' index (JSON), the sample browser and build.js, the build's
    # commit and render time kept beside the page (docs/report.md)
    assert html.count("data:image/png;base64,") >= 5 and html.count("<script") == 3
    shown = _run(["dvc", "metrics", "show"], work, {**env, "COLUMNS": "120"})
    lines = [line for line in shown.splitlines() if line.strip()]
    assert len(lines) <= 60 and max(map(len, lines)) <= 120, shown
    assert any("smollm2/objective.gender.distance.lower_better.json" in line for line in lines)
    _run(["dvc", "plots", "show", "-o", str(work / "plots-out")], work, env)
    page = (work / "plots-out/index.html").read_text(encoding="utf-8")
    for title in (
        "FACT-OR-FAIR trade-off, objective, gender",
        "News bias, unbiased prompt",
        "IRIS sector scores",
    ):
        assert title in page
