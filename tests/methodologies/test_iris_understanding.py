"""IRIS's understanding sectors through generate -> label -> metrics (no DVC) with the
SIMULATED planted-bias VLM of ``conf/model/simulated_vlm.yaml`` with the plants of
``conf/methodology/iris.yaml`` (``simulated.vlm``): IFS-Und's AD/SPD recover its
planted per-gender accuracy gap, BIS-Und's DHR/AC-diff its per-gender accuracy, RFS-Und's SDS
is computed from the IFS-Und errors, and the counterfactual FIXTURE is built from crops."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from genfair.methodologies.iris.methodology import IrisConfig
from genfair.methodologies.iris.understanding import (
    counterfactual_fixture,
    ifs_und_probes,
    objective_choice,
)
from genfair.models import build_backend
from genfair.models.config import SimulatedVLMConfig
from genfair.models.images import sha256_file
from tests.support.contexts import run_steps

ROOT = Path(__file__).resolve().parents[2]
SEED = 5
SIM = yaml.safe_load((ROOT / "conf/model/simulated_vlm.yaml").read_text())
PLANTS = yaml.safe_load((ROOT / "conf/methodology/iris.yaml").read_text())["simulated"]["vlm"]
IFS = PLANTS["ifs_und"]
BIS = PLANTS["bis_und"]
OCCUPATIONS = ["doctor", "nurse", "teacher", "carpenter"]
AGES = ["young", "middle", "older"]


def _png(path: Path, i: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4), (i % 256, i // 256 % 256, 7)).save(path)


def _persons(folder: Path, n: int) -> Path:
    """A persons.parquet in curate_facet's format: ``n`` crops, genders alternating, each
    occupation equally often in each gender (so only the plant separates the groups)."""
    rows = []
    for i in range(n):
        crop = f"crops/p{i:05d}.png"
        _png(folder / crop, i)
        rows.append(
            {
                "person_id": f"p{i:05d}",
                "crop_path": crop,
                "occupation": OCCUPATIONS[(i // 2) % len(OCCUPATIONS)],
                "gender": ("male", "female")[i % 2],
                "age_group": AGES[(i // 8) % 3],
                "monk_level": 1 + (i // 24) % 10,
                "fixture": False,
                "crop_sha256": sha256_file(folder / crop),
            }
        )
    rows.append(
        {
            "person_id": "p99999",
            "crop_path": "crops/p00000.png",
            "occupation": "doctor",
            "gender": "non_binary",
            "age_group": "unknown",
            "monk_level": None,
            "fixture": False,
            "crop_sha256": rows[0]["crop_sha256"],
        }
    )
    path = folder / "persons.parquet"
    pd.DataFrame(rows).to_parquet(path)
    return path


def _run(config: IrisConfig, tmp: Path):
    return run_steps(
        "iris", config, "vlm", SEED, tmp, build_backend(SimulatedVLMConfig.model_validate(SIM))
    )


def _value(scores: pd.DataFrame, metric: str) -> float:
    return float(scores.loc[scores["metric"] == metric, "value"].iloc[0])


@pytest.fixture(scope="module")
def ifs_run(occupations_table: Path, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("ifs")
    config = IrisConfig.model_validate(
        {
            "occupations_table": str(occupations_table),
            "max_occupations": 6,
            "tournament": {"rounds": 1},
            "ifs_und": {"persons": str(_persons(tmp / "facet", 1600))},
        }
    )
    return config, _run(config, tmp), tmp


def test_ifs_und_probes_map_facet_labels_to_iris_groups(ifs_run) -> None:
    config, (probes, responses, labels, result), tmp = ifs_run
    ifs = probes[probes["sector"] == "IFS-Und"]
    assert len(ifs) == 1601 and set(ifs["modality"]) == {"vlm"}
    assert set(ifs["age_group"].dropna()) == {"young", "middle-aged", "older"}
    assert set(ifs["skin_group"].dropna()) == {"light", "middle", "dark"}  # IRIS's 1-3 / 4-7 / 8-10
    odd = ifs[ifs["person_id"] == "p99999"].iloc[0]
    assert pd.isna(odd["gender"]) and pd.isna(odd["skin_group"])  # non-binary / no votes: left out
    assert (ifs["image_sha256"] == [sha256_file(p) for p in ifs["image"]]).all()
    assert set(responses["sector"]) == {"RFS-Und", "IFS-Und"}


def test_ifs_und_answer_mapper_labels(ifs_run) -> None:
    config, (probes, responses, labels, result), tmp = ifs_run
    ifs = labels[labels["sector"] == "IFS-Und"]
    ok = ifs[ifs["status"] == "ok"]
    assert len(ok) > 1500 and set(ok["tier"]) == {"exact"}  # the simulator answers occupation names
    refused = ifs[ifs["status"] == "refused"]
    assert len(refused) > 0 and (refused["mapped_occupation"] == "unmappable").all()
    assert (tmp / "cache" / "answer_mapper" / "embeddings.npz").is_file()


def test_ifs_und_ad_and_spd_recover_the_planted_gap(ifs_run) -> None:
    config, (probes, responses, labels, result), tmp = ifs_run
    scores = result.scores
    acc = {g: (1 - IFS["refusal_rate"]) * IFS["accuracy"][g] for g in ("male", "female")}
    n = 800  # crops per gender
    se = math.sqrt(sum(a * (1 - a) / n for a in acc.values()))
    assert abs(_value(scores, "AD_single_gender") - (acc["male"] - acc["female"])) < 4 * se
    assert _value(scores, "AD_single_age") < 4 * se  # nothing planted on age
    # SPD: P(answer = c | g) = (1 - r) (a_g s_c + (1 - a_g)(1 - s_c) / 51), s_c = 1/4 in both
    # genders
    rate = {
        g: (1 - IFS["refusal_rate"])
        * (IFS["accuracy"][g] * 0.25 + (1 - IFS["accuracy"][g]) * 0.75 / 51)
        for g in acc
    }
    se_rate = math.sqrt(sum(r * (1 - r) / n for r in rate.values()))
    assert abs(_value(scores, "SPD_single_gender") - (rate["male"] - rate["female"])) < 4 * se_rate
    # RFS-Und's SDS is computed from the IFS-Und errors; BIS-Und has no dataset here
    sds = scores[scores["metric"].str.startswith("AbsSDS")]
    assert sds["value"].notna().any() and not sds["note"].str.startswith("not computed").any()
    bis = scores[scores["sector"] == "BIS-Und"]
    assert bis["value"].isna().all() and bis["note"].str.startswith("not computed").all()
    assert (
        result.summary["IFS-Und"]["crops"] == 1601 and result.summary["IFS-Und"]["fixture"] is False
    )


def _expected_abs_diff(a: float, b: float, truth: int = 7) -> float:
    """E|X - Y|, X and Y ratings of two simulated answers (truth with prob a / b, else one
    of the 9 other ratings uniformly)."""

    def dist(acc: float) -> np.ndarray:
        p = np.full(10, (1 - acc) / 9)
        p[truth - 1] = acc
        return p

    r = np.arange(1, 11)
    return float((dist(a)[:, None] * dist(b)[None, :] * np.abs(r[:, None] - r[None, :])).sum())


def test_bis_und_recovers_the_planted_accuracy_gap(occupations_table: Path, tmp_path: Path) -> None:
    """A user-supplied counterfactual dataset (CSV, relative image paths): 150 pairs that
    differ only in gender and 150 pairs of two men that differ only in age."""
    rows, k = [], 0
    for i in range(300):
        by_gender = i < 150
        for variant in ("a", "b"):
            _png(tmp_path / "cf" / f"img{k}.png", k)
            rows.append(
                {
                    "instance_id": f"set{i}",
                    "variant": variant,
                    "image": f"img{k}.png",
                    "occupation": "nurse",
                    "gender": ("male" if variant == "a" else "female") if by_gender else "male",
                    "age_group": "middle"
                    if by_gender
                    else ("young" if variant == "a" else "older"),
                    "skin_group": "light",
                    "uniform_color": "blue",
                    "has_accessories": "no",
                    "expression": "smiling",
                    "has_insignia": "yes",
                    "has_facial_hair": "no",
                }
            )
            k += 1
    pd.DataFrame(rows).to_csv(tmp_path / "cf" / "dataset.csv", index=False)
    config = IrisConfig.model_validate(
        {
            "occupations_table": str(occupations_table),
            "max_occupations": 6,
            "tournament": {"rounds": 1},
            "bis_und": {"dataset": str(tmp_path / "cf" / "dataset.csv")},
        }
    )
    probes, responses, labels, result = _run(config, tmp_path)
    bis = labels[labels["sector"] == "BIS-Und"]
    assert len(bis) == 600 * 17
    scores = result.scores
    m, f = BIS["accuracy"]["male"], BIS["accuracy"]["female"]
    keys = 150 * 8  # instance x objective question
    disagree = {"gender": m * (1 - f) + f * (1 - m), "age": 2 * m * (1 - m)}
    for attr, p in disagree.items():
        assert abs(_value(scores, f"dhr_inconsistency_{attr}") - p) < 4 * math.sqrt(
            p * (1 - p) / keys
        )
    ac = {"gender": _expected_abs_diff(m, f), "age": _expected_abs_diff(m, m)}
    for attr, expected in ac.items():  # 150 x 9 subjective keys; |X - Y| has sd < 3
        assert abs(_value(scores, f"ac_diff_{attr}") - expected) < 4 * 3 / math.sqrt(150 * 9)
    assert _value(scores, "ac_diff_gender") > _value(scores, "ac_diff_age")
    assert _value(scores, "dhr_inconsistency_gender") > _value(scores, "dhr_inconsistency_age")
    assert math.isnan(_value(scores, "ac_diff_skin"))  # no set varies skin alone
    assert result.summary["BIS-Und"]["sets"] == 300
    # IFS-Und is not computed without a persons table, and SDS says so
    assert scores.loc[scores["sector"] == "IFS-Und", "note"].str.startswith("not computed").all()


def test_counterfactual_fixture_pairs_crops_whose_labels_differ(tmp_path: Path) -> None:
    crops = ifs_und_probes(_persons(tmp_path, 12), OCCUPATIONS)
    data = counterfactual_fixture(crops)
    assert data["fixture"].all() and len(data) % 2 == 0
    for _, pair in data.groupby("instance_id"):
        assert len(pair) == 2 and pair["occupation"].nunique() == 1
        assert (pair[["gender", "age_group", "skin_group"]].nunique() > 1).any()
    assert "p99999" not in " ".join(data["instance_id"])  # no gender label: not in a set
    assert len(counterfactual_fixture(crops, max_sets=3)["instance_id"].unique()) == 3


def test_objective_choice_needs_exactly_one_option() -> None:
    assert objective_choice("The person is female.", ["male", "female"]) == "female"
    assert objective_choice("male or female", ["male", "female"]) is None
    assert objective_choice("Middle", ["young", "middle", "older"]) == "middle"
    assert objective_choice(None, ["yes", "no"]) is None
