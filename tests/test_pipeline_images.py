"""The image parts of the pipeline: instrument config validation and choice of mode."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genfair.config import ConfigError, StudyParams, instrument_config, load_params
from genfair.pipeline_images import face_instrument
from tests.support.conf import read_conf

ROOT = Path(__file__).resolve().parents[1]


def params(instrument: dict | None = None, **models) -> StudyParams:
    face = instrument if instrument is not None else yaml.safe_load(
        (ROOT / "conf/instrument/face_demographics.yaml").read_text())
    sim = yaml.safe_load((ROOT / "conf/model/simulated_t2i.yaml").read_text())
    return StudyParams.model_validate({
        "seed": 1, "scale": "smoke", "methodologies": {"fact_or_fair_t2i": read_conf("methodology/fact_or_fair_t2i.yaml")},
        "models": {"simulated_t2i": sim, **models}, "instruments": {"face_demographics": face},
    })


def test_simulators_get_the_oracle_and_real_models_the_configured_mode() -> None:
    study = params(openai_dalle3=yaml.safe_load((ROOT / "conf/model/openai_dalle3.yaml").read_text()))
    assert face_instrument(study, "simulated_t2i").config.mode == "oracle"
    assert face_instrument(study, "openai_dalle3").config.mode == "model"
    oracle = params({"mode": "oracle"}, openai_dalle3=study.models["openai_dalle3"].model_dump())
    with pytest.raises(ConfigError, match=r"instruments.face_demographics.mode: oracle .* 'openai_dalle3'"):
        face_instrument(oracle, "openai_dalle3")


def test_instrument_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"instruments.face_demographics.detectr: unknown key"):
        instrument_config(params({"detectr": {"name": "opencv_haar"}}), "face_demographics")
    with pytest.raises(ConfigError, match="unknown instrument"):
        instrument_config(params(), "nope")
    study = StudyParams.model_validate({**params().model_dump(mode="json"), "instruments": {}})
    with pytest.raises(ConfigError, match="instrument@instruments.face_demographics"):
        instrument_config(study, "face_demographics")
    raw = params({"race": {"name": "fairface"}}).model_dump(mode="json")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"instruments.face_demographics.race.weights"):
        load_params(tmp_path / "params.yaml")  # load_params validates every instrument block
