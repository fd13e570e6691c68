"""Study parameters: the committed params.yaml loads; every bad key is named with its path."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.models.config import EmbeddedModelConfig, SimulatedModelConfig
from genfair.study_params import ConfigError, load_params, methodology_config

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params.yaml"


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(PARAMS.read_text(encoding="utf-8"))


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def error_of(tmp_path: Path, raw: dict, mutate) -> str:
    data = copy.deepcopy(raw)
    mutate(data)
    with pytest.raises(ConfigError) as info:
        load_params(write(tmp_path, data))
    return str(info.value)


def test_committed_params_load(raw):
    params = load_params(PARAMS)
    assert params.seed == raw["seed"]
    assert set(params.models) == set(raw["models"])
    assert isinstance(params.models["smollm2"], EmbeddedModelConfig)
    assert isinstance(params.models["simulated_llm"], SimulatedModelConfig)
    config = methodology_config(params, "fact_or_fair")
    assert isinstance(config, FactOrFairConfig)
    assert config.objective_rounds == raw["methodologies"]["fact_or_fair"]["objective_rounds"]
    assert config.ground_truth_overrides == {"Homelessness Rate": {"race": None}}
    assert config.kld_pseudocount == 0.5


def test_sampling_typo_names_the_full_key_path_and_file(tmp_path, raw):
    message = error_of(
        tmp_path, raw, lambda d: d["models"]["smollm2"]["sampling"].update(temprature=0.7)
    )
    path = str(tmp_path / "params.yaml")
    # exactly the key the user wrote, without pydantic's union tag ("...smollm2.embedded...")
    assert f"{path}: models.smollm2.sampling.temprature: unknown key" in message
    assert "embedded" not in message


def test_wrong_type_names_the_key(tmp_path, raw):
    message = error_of(tmp_path, raw, lambda d: d["models"]["smollm2"].update(batch_size="x"))
    assert "models.smollm2.batch_size:" in message
    assert "integer" in message
    assert "params.yaml" in message


def test_missing_required_field_of_a_backend(tmp_path, raw):
    message = error_of(tmp_path, raw, lambda d: d["models"]["smollm2"].pop("gguf_file"))
    assert "models.smollm2.gguf_file: Field required" in message


def test_unknown_backend_lists_the_known_ones(tmp_path, raw):
    message = error_of(tmp_path, raw, lambda d: d["models"]["smollm2"].update(backend="tpu"))
    assert "models.smollm2:" in message
    assert "'tpu'" in message
    for known in ("hf", "embedded", "openai", "simulated"):
        assert f"'{known}'" in message


def test_missing_params_file(tmp_path):
    missing = tmp_path / "nowhere" / "params.yaml"
    with pytest.raises(ConfigError, match="not found") as info:
        load_params(missing)
    assert str(missing) in str(info.value)
    assert "genfair compose" in str(info.value)


def test_invalid_yaml(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: [1, 2\nmodels: {", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_params(path)


def test_methodology_key_typo_names_the_key(tmp_path, raw):
    message = error_of(
        tmp_path, raw, lambda d: d["methodologies"]["fact_or_fair"].update(samples_per_promt=3)
    )
    assert "methodologies.fact_or_fair.samples_per_promt: unknown key" in message
    assert str(tmp_path / "params.yaml") in message


def test_methodology_bad_context_value(tmp_path, raw):
    message = error_of(
        tmp_path,
        raw,
        lambda d: d["methodologies"]["fact_or_fair"].update(contexts=["baseline", "vibes"]),
    )
    assert "methodologies.fact_or_fair.contexts.1:" in message


def test_unknown_methodology_is_a_config_error(tmp_path, raw):
    message = error_of(tmp_path, raw, lambda d: d["methodologies"].update(nope={}))
    assert "methodologies.nope" in message
    assert "fact_or_fair" in message  # the known ones


def test_several_problems_are_all_reported(tmp_path, raw):
    def mutate(d):
        d["models"]["smollm2"]["sampling"]["temprature"] = 0.1
        d["models"]["simulated_t2i"]["size"] = 8
        d.pop("seed")

    message = error_of(tmp_path, raw, mutate)
    assert "models.smollm2.sampling.temprature" in message
    assert "models.simulated_t2i.size" in message
    assert ": seed: Field required" in message


def test_curation_and_instrument_blocks_are_validated_by_key(tmp_path, raw):
    message = error_of(tmp_path, raw, lambda d: d["curation"]["news"].update(max_artikles=3))
    assert "curation.news.max_artikles: unknown key" in message
    message = error_of(
        tmp_path, raw, lambda d: d["instruments"]["face_demographics"].update(skin_groups="x")
    )
    assert "instruments.face_demographics.skin_groups" in message
    message = error_of(tmp_path, raw, lambda d: d["curation"].update(scrape={}))
    assert "curation.scrape: unknown curation step; known: news" in message


def test_a_missing_curation_block_names_the_fix(tmp_path, raw):
    from genfair.study_params import curation_config

    data = copy.deepcopy(raw)
    del data["curation"]["news"]
    params = load_params(write(tmp_path, data))
    with pytest.raises(
        ConfigError, match=r"curation\.news: not configured \(add `curation@curation\.news: <file>`"
    ):
        curation_config(params, "news")


def test_a_methodology_config_is_validated_once_per_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """load_params validates every methodology block; the steps reuse that (a copy with
    another block validates the new one)."""
    import genfair.study_params as config
    from genfair.study.context import configured, step_context
    from genfair.study.layout import Layout
    from genfair.study.steps import run_params

    params = config.load_params(ROOT / "params.yaml")
    validated: list[object] = []
    adapter = config.TypeAdapter

    def counting(kind: object) -> object:
        validated.append(kind)
        return adapter(kind)

    monkeypatch.setattr(config, "TypeAdapter", counting)
    configured(params, "news_bias")
    step_context(params, "smollm2", "news_bias", Layout())
    run_params(params, "smollm2", "news_bias")
    assert validated == []
    changed = params.model_copy(
        update={
            "methodologies": {"news_bias": {**params.methodologies["news_bias"], "max_tokens": 7}}
        }
    )
    assert configured(changed, "news_bias")[1].max_tokens == 7 and len(validated) == 1
