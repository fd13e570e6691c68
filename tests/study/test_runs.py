"""The study's runs: the (model, methodology) pairs composed into params.yaml, over which
dvc.yaml's generate/label/metrics stages fan out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genfair.cli import compose
from genfair.frame import load_frame
from genfair.study import steps
from genfair.study.context import step_context
from genfair.study.layout import Layout
from genfair.study.runs import (
    check_runs,
    compose_digests,
    model_hash,
    runs_for,
    study_steps_for,
)
from genfair.study_params import ConfigError, load_params

ROOT = Path(__file__).resolve().parents[2]
STUDY = ("fact_or_fair", "news_bias", "iris", "lvlm_facet", "open_bias")


def test_a_model_runs_the_methodologies_of_its_modality() -> None:
    models = {"a": {"modality": "llm"}, "b": {"modality": "t2i"}, "c": {"modality": "vlm"}}
    runs = runs_for(models, {name: {} for name in STUDY})
    assert list(runs) == [
        "a-fact_or_fair",
        "a-news_bias",
        "a-iris",
        "b-fact_or_fair",
        "b-iris",
        "b-open_bias",
        "c-iris",
        "c-lvlm_facet",
    ]
    assert runs["b-open_bias"] == {
        "model": "b",
        "methodology": "open_bias",
        "reads": {},
        "code": "src/genfair/methodologies/open_bias",
    }


def test_a_study_step_for_each_methodology_some_model_runs() -> None:
    """dvc.yaml's study stages depend on their methodology's labels and metrics folders,
    which only its runs write: a methodology no model runs has no study stage (its folders
    would be missing dependencies)."""
    models = {"a": {"modality": "llm"}, "b": {"modality": "t2i"}}
    steps = study_steps_for(models, {name: {} for name in STUDY})
    assert steps == {
        name: f"src/genfair/methodologies/{name}"
        for name in ("fact_or_fair", "news_bias", "iris", "open_bias")
    }  # lvlm_facet measures VLMs only


def test_a_study_without_a_vlm_composes_no_lvlm_facet_study_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    out = compose(["scale=smoke", "~model@models.simulated_vlm"], tmp_path / "p.yaml")
    data = yaml.safe_load(out.read_text())
    assert "lvlm_facet" in data["methodology_code"] and "lvlm_facet" not in data["study_steps"]
    check_runs(load_params(out))
    data["study_steps"] = dict(data["methodology_code"])  # edited by hand: a stage, no inputs
    out.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"params\.yaml: study_steps does not follow"):
        check_runs(load_params(out))


def test_a_run_records_the_models_its_methodology_reads_by_content() -> None:
    """OpenBias drives the study's proposer LLM and VQA model: its run carries their hashes, so
    generate@ reruns when one changes, and not when an unrelated model is added."""
    params = load_params(ROOT / "params.yaml")
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs = runs_for(params.models, params.methodologies)
    reads = runs["simulated_t2i-open_bias"]["reads"]
    assert set(reads) == {"smollm2", "simulated_vlm"} and reads["smollm2"] == model_hash(
        params.models["smollm2"]
    )
    assert all(run["reads"] == {} for key, run in runs.items() if key != "simulated_t2i-open_bias")
    # the raw and the validated config hash alike (the resolver sees raw, check_runs validated)
    assert model_hash(raw["models"]["smollm2"]) == reads["smollm2"]
    sampled = {
        **raw["models"],
        "smollm2": {
            **raw["models"]["smollm2"],
            "sampling": {**raw["models"]["smollm2"]["sampling"], "max_tokens": 17},
        },
    }
    assert (
        runs_for(sampled, raw["methodologies"])["simulated_t2i-open_bias"]["reads"]["smollm2"]
        != reads["smollm2"]
    )
    added = {**raw["models"], "extra": raw["models"]["simulated_llm"]}
    assert (
        runs_for(added, raw["methodologies"])["simulated_t2i-open_bias"]
        == runs["simulated_t2i-open_bias"]
    )
    # the proposer taken out of the study: the entry changes, so generate reruns (and names the
    # missing model) instead of keeping proposals from a model the study no longer has
    without = {name: config for name, config in raw["models"].items() if name != "smollm2"}
    assert set(runs_for(without, raw["methodologies"])["simulated_t2i-open_bias"]["reads"]) == {
        "simulated_vlm"
    }


def test_a_step_sees_only_the_models_its_run_depends_on() -> None:
    params = load_params(ROOT / "params.yaml")
    assert set(step_context(params, "simulated_t2i", "open_bias", Layout()).models) == {
        "simulated_t2i",
        "smollm2",
        "simulated_vlm",
    }
    assert set(step_context(params, "smollm2", "news_bias", Layout()).models) == {"smollm2"}


def test_the_committed_params_list_the_runs_their_models_give() -> None:
    params = load_params(ROOT / "params.yaml")
    check_runs(params)  # raises when stale
    assert params.runs is not None and "simulated_vlm-lvlm_facet" in params.runs
    assert (
        "smollm2-lvlm_facet" not in params.runs
    )  # a text model has no stage for an image benchmark


def test_composing_with_an_added_model_adds_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    out = compose(
        ["scale=smoke", "+model@models.extra=simulated_vlm", "~model@models.smollm2"],
        tmp_path / "p.yaml",
    )
    runs = yaml.safe_load(out.read_text())["runs"]
    assert {"extra-iris", "extra-lvlm_facet"} <= set(runs)
    assert not any(key.startswith("smollm2-") for key in runs)
    check_runs(load_params(out))


def test_params_edited_by_hand_name_the_stale_runs_and_the_fix(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    data["models"]["extra"] = dict(data["models"]["simulated_llm"])  # a copy: no YAML alias
    # its digests made again: this test is about runs
    data["digests"] = compose_digests(data["models"], data["methodologies"], data["instruments"])
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError,
        match=r"missing: extra-fact_or_fair, extra-iris, extra-news_bias.*genfair compose",
    ):
        check_runs(load_params(path))


def test_a_block_edited_by_hand_names_its_stale_digest_and_the_fix(tmp_path: Path) -> None:
    """Stages depend on ``digests``, not on the blocks: a block edited in params.yaml with its
    digest left as it was would leave its stages up to date, so every loader refuses it."""
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    data["methodologies"]["fact_or_fair"]["objective_rounds"] += 1
    data["models"]["extra"] = dict(data["models"]["simulated_llm"])
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    stale = r"digests\.models\.extra, digests\.methodologies\.fact_or_fair do not follow"
    for load in (load_params, load_frame):
        with pytest.raises(ConfigError, match=rf"params\.yaml: {stale}.*genfair compose"):
            load(path)
    # composed, params.yaml's digests are its blocks' (as the resolver computed them)
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    composed = compose_digests(raw["models"], raw["methodologies"], raw["instruments"])
    assert raw["digests"] == composed
    assert len({d["all"] for d in raw["digests"]["methodologies"].values()}) == len(
        raw["methodologies"]
    )


def test_a_read_model_edited_by_hand_names_the_run_and_the_fix(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    data["models"]["smollm2"]["sampling"]["max_tokens"] = 17  # OpenBias's proposer
    data["digests"] = compose_digests(data["models"], data["methodologies"], data["instruments"])
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"models read changed: simulated_t2i-open_bias\).*genfair compose"
    ):
        check_runs(load_params(path))


def test_a_pair_the_study_does_not_measure_is_an_error_not_empty_outputs(tmp_path: Path) -> None:
    params = load_params(ROOT / "params.yaml")
    with pytest.raises(ConfigError, match="smollm2 does not run lvlm_facet: it is a llm model"):
        steps.generate(params, "smollm2", "lvlm_facet")
