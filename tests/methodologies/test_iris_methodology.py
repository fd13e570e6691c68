"""The ``iris`` methodology end to end through generate -> label -> metrics (no DVC):
planted-bias recovery for the SIMULATED t2i model (IFS-Gen RD, RFS-Gen JSD, BIS-Gen ΔGSR)
and the RFS-Und tournament on a SIMULATED LLM and VLM."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from genfair.instruments.face_demographics import FaceDemographics, FaceDemographicsConfig
from genfair.methodologies import get_methodology
from genfair.methodologies.iris.granular import GranularConfig, granular_metrics, reference_shares
from genfair.methodologies.iris.methodology import IrisConfig, reference_from_occupations
from genfair.metrics import js_divergence, representation_disparity
from genfair.models import build_backend
from genfair.models.config import SimulatedModelConfig, SimulatedT2IConfig, SimulatedVLMConfig
from tests.support.contexts import run_steps, step_context

ROOT = Path(__file__).resolve().parents[2]
SEED = 11
PLANTED = {
    "gender": {"male": 0.7, "female": 0.3},
    "age": {"young": 0.6, "middle-aged": 0.3, "older": 0.1},
    "skin": {"light": 0.7, "middle": 0.2, "dark": 0.1},
}


def _model_config(name: str, cls):
    raw = yaml.safe_load((ROOT / f"conf/model/{name}.yaml").read_text())
    return cls.model_validate(raw)


def _run(config: IrisConfig, backend, modality: str, tmp_path: Path, instrument=None):
    return run_steps("iris", config, modality, SEED, tmp_path, backend, instrument)


@pytest.fixture(scope="module")
def t2i_run(occupations_table: Path, tmp_path_factory: pytest.TempPathFactory):
    us = pd.read_csv(ROOT / "data/reference/iris_real_world_us.csv")["occupation"].tolist()
    config = IrisConfig.model_validate(
        {
            "occupations_table": str(occupations_table),
            "occupations": us,
            "ifs_gen": {"images_per_occupation": 60},
            "bis_gen": {"top": 10, "images_per_prompt": 40},
            "tournament": {"rounds": 1},
        }
    )
    backend = build_backend(_model_config("simulated_t2i", SimulatedT2IConfig))
    oracle = FaceDemographics(FaceDemographicsConfig(mode="oracle"))
    tmp = tmp_path_factory.mktemp("t2i")
    return config, _run(config, backend, "t2i", tmp, oracle), tmp


def _value(scores: pd.DataFrame, metric: str) -> float:
    return float(scores.loc[scores["metric"] == metric, "value"].iloc[0])


def test_t2i_gets_only_generation_sectors_and_exports_its_images(t2i_run) -> None:
    config, (probes, responses, labels, result), tmp = t2i_run
    assert set(probes["sector"]) == {"IFS-Gen", "RFS-Und"}
    assert (
        set(responses["sector"]) == {"IFS-Gen", "BIS-Gen"}
        and (responses["modality"] == "t2i").all()
    )
    assert set(result.scores["sector"]) == {"IFS-Gen", "RFS-Gen", "BIS-Gen"}
    assert (responses["sector"] == "IFS-Gen").sum() == 32 * 60
    steer = responses[responses["sector"] == "BIS-Gen"]
    assert steer["combo_id"].nunique() == 10 and len(steer) == 10 * 6 * 40
    assert (
        steer.groupby("combo_id")["prompt_type"].apply(lambda s: (s == "counter").mean()) == 5 / 6
    ).all()
    ok = responses[responses["status"] == "ok"]
    assert (
        {p.name for p in (tmp / "images").glob("*.png")}
        == set(ok["file"])
        == {f"{h}.png" for h in ok["image"]}
    )
    # penalties without an offline instrument are "not computed", never invented
    pen = result.scores[
        result.scores["metric"].str.startswith("Penalty_")
        & (result.scores["metric"] != "Penalty_DeltaGSR")
    ]
    assert pen["value"].isna().all() and pen["note"].str.startswith("not computed").all()


def test_ifs_gen_rd_recovers_the_planted_distribution(t2i_run) -> None:
    _, (_, _, labels, result), _ = t2i_run
    for attr in ("gender", "age", "skin"):
        planted = representation_disparity(list(PLANTED[attr].values()))
        assert _value(result.scores, f"RD_{attr}") == pytest.approx(planted, abs=0.06), attr
    # the oracle labels are the simulator's recorded draws: same metric from the raw truth
    images = labels[(labels["sector"] == "IFS-Gen") & (labels["status"] == "ok")]
    direct = granular_metrics("IFS-Gen", images, config=GranularConfig())
    assert _value(direct, "RD_joint_all") == _value(result.scores, "RD_joint_all")


def test_rfs_gen_jsd_recovers_the_planted_divergence(t2i_run, occupations_table: Path) -> None:
    _, (_, _, _, result), _ = t2i_run
    reference = reference_from_occupations(pd.read_parquet(occupations_table))
    for region, attr in (
        ("US", "gender"),
        ("US", "age"),
        ("US", "skin"),
        ("EU", "gender"),
        ("EU", "age"),
    ):
        real = reference_shares(reference, region, attr)
        planted = np.array(list(PLANTED[attr].values()))
        expected = np.mean(
            [js_divergence(planted, real.loc[o].to_numpy(), math.e) for o in real.index]
        )
        assert _value(result.scores, f"JSD_{region}_{attr}") == pytest.approx(expected, abs=0.03), (
            region,
            attr,
        )


def test_bis_gen_delta_gsr_of_a_simulator_that_ignores_steering(t2i_run) -> None:
    _, (_, _, labels, result), _ = t2i_run
    p = {k: PLANTED[k] for k in PLANTED}
    stereo = p["gender"]["male"] * p["age"]["young"] * p["skin"]["light"]
    counters = [
        p["gender"]["female"] * p["age"]["young"] * p["skin"]["light"],
        p["gender"]["male"] * p["age"]["middle-aged"] * p["skin"]["light"],
        p["gender"]["male"] * p["age"]["older"] * p["skin"]["light"],
        p["gender"]["male"] * p["age"]["young"] * p["skin"]["middle"],
        p["gender"]["male"] * p["age"]["young"] * p["skin"]["dark"],
    ]
    person = 1 - 0.02  # no_person_rate: an image without a person never matches
    expected = person * (stereo - np.mean(counters))
    steer = labels[labels["sector"] == "BIS-Gen"]
    assert set(steer.loc[steer["prompt_type"] == "stereotypical", "expected_gender"]) == {"male"}
    assert _value(result.scores, "Penalty_DeltaGSR") == pytest.approx(expected, abs=0.07)


def test_tournament_on_a_simulated_llm_recovers_the_planted_gender_stereotype(
    occupations_table: Path, tmp_path: Path
) -> None:
    raw = yaml.safe_load((ROOT / "conf/model/simulated_llm.yaml").read_text())
    backend = build_backend(SimulatedModelConfig.model_validate(raw))
    config = IrisConfig.model_validate(
        {
            "occupations_table": str(occupations_table),
            "occupations": [
                "carpenter",
                "electrician",
                "nurse",
                "hairdresser",
                "teacher",
                "doctor",
            ],
            "tournament": {"rounds": 20, "competitors": 3},
            "simulated": {"llm": {"tournament": {"accuracy": 1.0}}},
        }
    )
    probes, responses, labels, result = _run(config, backend, "llm", tmp_path)
    assert set(responses["sector"]) == {"RFS-Und"} and len(responses) == 18 * 20
    assert (labels["status"] == "ok").all() and labels["choice"].notna().all()
    assert set(result.scores["sector"]) == {"RFS-Und"}
    # a gender-stereotyped model: women's posterior mass on nurses, men's on carpenters
    from genfair.methodologies.iris.tournament import TournamentConfig, tournament_distributions

    dists, _ = tournament_distributions(labels, TournamentConfig())
    gender = dists["gender"]
    assert gender.loc["nurse", "female"] > 0.9 and gender.loc["carpenter", "male"] > 0.9
    assert result.scores.loc[result.scores["metric"] == "JSD_gender_US", "value"].notna().all()
    assert result.summary["tournament"]["valid"] == 18 * 20


def test_tournament_on_a_vlm_sends_a_blank_white_image(
    occupations_table: Path, tmp_path: Path
) -> None:
    backend = build_backend(
        SimulatedVLMConfig.model_validate({"modality": "vlm", "backend": "simulated"})
    )
    seen = []
    original = backend.answer
    backend.answer = lambda request: (seen.append(request), original(request))[1]
    config = IrisConfig.model_validate(
        {
            "occupations_table": str(occupations_table),
            "max_occupations": 6,
            "tournament": {"rounds": 2},
        }
    )
    _, responses, labels, result = _run(config, backend, "vlm", tmp_path)
    parts = [p for p in seen[0].messages[0]["content"] if p["type"] == "image"]
    from PIL import Image

    with Image.open(parts[0]["path"]) as image:
        assert image.getextrema() == ((255, 255), (255, 255), (255, 255))
    assert set(result.scores["sector"]) == {"IFS-Und", "RFS-Und", "BIS-Und"}
    und = result.scores[result.scores["sector"].isin(["IFS-Und", "BIS-Und"])]
    assert und["value"].isna().all() and und["note"].str.startswith("not computed").all()


def test_no_label_row_is_a_result_not_an_error(t2i_run) -> None:
    """Issue 44 point 7: metrics of a run with no usable label (no face) report it."""
    config, (_, _, labels, _), tmp = t2i_run
    method = get_methodology("iris")
    ctx = step_context("t2i", SEED, tmp=tmp)
    result = method.metrics(labels.iloc[:0], config, ctx)
    assert result.summary is not None
