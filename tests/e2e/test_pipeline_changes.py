"""End to end: what changing a study reruns, each test on its own copy of the shared smoke
study (tests/e2e/conftest.py): a no-op repro, an added model, an edited methodology config
or code, an experiment."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from tests.support.project import (
    ROOT,
    always_changed,
    commit,
    stale_after_code_edit,
    status_stages,
)
from tests.support.project import run as _run

pytestmark = [pytest.mark.e2e, pytest.mark.builds("smoke")]


def test_noop_repro_and_adding_a_model_reruns_only_its_stages(
    study: tuple[Path, dict[str, str], str],
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    work, env, _ = own_study
    original = sorted((study[0] / "mlartifacts").rglob("*"))
    # a no-op repro runs only the stages that always run; `track` checks the store and logs
    # nothing new
    again = _run(["dvc", "repro"], work, env)
    noop = set(re.findall(r"Running stage '([^']+)'", again))
    assert noop == always_changed(work), sorted(noop)
    assert (
        "holds all" in again
    )  # the MLflow store has every run: nothing logged, MLflow not even imported
    _run(
        [
            "genfair",
            "compose",
            "-o",
            "scale=smoke",
            "-o",
            "+model@models.simulated_b=simulated_llm",
        ],
        work,
        env,
    )
    output = _run(["dvc", "repro"], work, env)
    ran = set(re.findall(r"Running stage '([^']+)'", output)) - always_changed(work)
    # a text model runs the methodologies that measure text; the image ones get no stage
    own = {
        f"{step}@simulated_b-{m}"
        for step in ("generate", "label", "metrics")
        for m in ("fact_or_fair", "news_bias", "iris")
    }
    study_level = {
        f"study@{m}" for m in ("fact_or_fair", "news_bias", "iris", "lvlm_facet", "open_bias")
    }
    study_level |= {"score", "precision", "track", "report"} | {f"plot@{p}" for p in _plots(work)}
    assert own <= ran and ran <= own | study_level, sorted(ran)
    board = pd.read_parquet(work / "data/scores/fact_or_fair.parquet")
    assert {"smollm2", "simulated_llm", "simulated_b", "simulated_t2i"} == set(board["model"])
    # a copied checkout logs into its own MLflow artifacts, never the original's (issue 32)
    assert sorted((study[0] / "mlartifacts").rglob("*")) == original
    with sqlite3.connect(work / "mlflow.db") as db:
        paths = [p for (p,) in db.execute("SELECT artifact_uri FROM runs")]
        paths += [p for (p,) in db.execute("SELECT artifact_location FROM experiments")]
    db.close()
    assert paths and not [p for p in paths if str(study[0]) in p], paths


def test_editing_one_methodology_leaves_the_others_up_to_date(
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    work, env, _ = own_study
    compose = ["genfair", "compose", "-o", "scale=smoke"]
    _run([*compose, "-o", "methodologies.news_bias.max_tokens=99"], work, env)
    changed = status_stages(work, env)
    assert changed, "editing news_bias's config changed no stage"
    others = [
        s
        for s in changed
        if "news_bias" not in s
        and not s.startswith(("study@", "score", "precision", "track", "report"))
    ]
    assert not others, f"stages of other methodologies changed: {sorted(others)}"
    assert {"probes@news_bias", "generate@smollm2-news_bias"} <= changed


def _plots(work: Path) -> set[str]:
    import yaml

    return set(yaml.safe_load((work / "params.yaml").read_text())["plots"])


def test_editing_one_methodologys_code_leaves_the_others_up_to_date(
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    """A methodology's stages depend on its own folder, not on the others' (a comment is a change
    to DVC); the cross-model stages on its code@ fingerprint."""
    work, env, _ = own_study
    edited, fingerprinted = stale_after_code_edit(
        work, env, work / "src/genfair/methodologies/news_bias/lengths.py", "news_bias"
    )
    runs = [r for r in yaml_runs(work) if r.endswith("-news_bias")]
    own = {
        "probes@news_bias",
        "study@news_bias",
        "plot@news_bias-bars_unbiased",
        *(f"{step}@{r}" for step in ("generate", "label", "metrics") for r in runs),
    }
    assert edited == own | {"code@news_bias"}, sorted(edited ^ (own | {"code@news_bias"}))
    cross_model = {"score", "precision", "track", "report"}
    assert fingerprinted == own | cross_model, sorted(fingerprinted ^ (own | cross_model))
    assert not status_stages(work, env)


def yaml_runs(work: Path) -> list[str]:
    import yaml

    return list(yaml.safe_load((work / "params.yaml").read_text())["runs"])


def test_experiment_switches_scale_with_set_param(
    own_study: tuple[Path, dict[str, str], str],
) -> None:
    work, env, _ = own_study
    commit(work, env, "reproduced")
    # without SmolLM2, OpenBias's proposer: its stage 1 comes from the authors' published
    # proposals (OpenBias's generate reads its proposer, so it reruns, and would fail naming the
    # missing model)
    published = ROOT / "tests/support/open_bias_published_flickr.json"
    _run(
        [
            "dvc",
            "exp",
            "run",
            "-S",
            "scale=smoke",
            "-S",
            "methodologies.fact_or_fair.bootstrap_resamples=20",
            "-S",
            "~model@models.smollm2",
            "-S",
            "methodologies.open_bias.captions=published",
            "-S",
            f"methodologies.open_bias.published_proposals={published}",
        ],
        work,
        env,
    )
    import yaml

    params = yaml.safe_load((work / "params.yaml").read_text())
    assert params["methodologies"]["fact_or_fair"]["bootstrap_resamples"] == 20
    assert "smollm2" not in params["models"]
