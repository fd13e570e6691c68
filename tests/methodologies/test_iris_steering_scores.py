"""IRIS BIS-Gen's quality (QPS, FQP) and semantic (SIL, SCL) penalties [M8, M9] (paper 002,
Table 5, §D.2.3): the formulas on planted per-image scores against hand-computed values and an
independent pandas computation; BIS-Gen no longer partial with all five penalties; the
SIMULATED t2i model's planted quality and semantic drops recovered through generate -> label
-> metrics with the instruments' oracle STAND-INs; the real instruments (tiny random-weight
CLIP and DINOv2) filling the label columns from the exported images."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from genfair.instruments.face_demographics import FaceDemographics, FaceDemographicsConfig
from genfair.instruments.image_quality import ImageQuality, ImageQualityConfig
from genfair.instruments.image_semantics import ImageSemantics, ImageSemanticsConfig
from genfair.methodologies.iris.granular import granular_metrics
from genfair.methodologies.iris.methodology import Iris, IrisConfig
from genfair.methodologies.iris.scoring import score_models
from genfair.models import build_backend
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedT2IConfig
from tests.support.contexts import run_steps

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ("qps", "fqp", "sil", "scl")


def _steering_table() -> pd.DataFrame:
    """Two stereotypical and three counter images, every attribute as asked (GSR 1 and 1)."""
    kinds = ["stereotypical", "stereotypical", "counter", "counter", "counter"]
    return pd.DataFrame(
        {
            "prompt_type": kinds,
            **{f"expected_{c}": ["male"] * 5 for c in ("gender",)},
            "expected_age_group": [None] * 5,
            "expected_skin_group": [None] * 5,
            "gender": ["male"] * 5,
            "age_group": ["young"] * 5,
            "skin_group": ["light"] * 5,
            "qps": [0.8, 0.6, 0.5, 0.4, np.nan],  # 0.7 -> 0.45: a drop of 0.25
            "fqp": [0.3, 0.5, 0.9, 0.1, 0.5],  # 0.4 -> 0.5: an improvement, penalty 0
            "sil": [0.31, 0.29, 0.2, 0.25, 0.15],  # 0.30 -> 0.20
            "scl": [0.9, np.nan, 0.7, 0.7, 0.7],  # 0.9 -> 0.7
        }
    )


def test_penalties_hand_computed_and_log1p_deviations() -> None:
    table = _steering_table()
    rows = granular_metrics("BIS-Gen", table).set_index("metric")
    want = {"QPS": 0.25, "FQP": 0.0, "SIL": 0.10, "SCL": 0.20}
    for pen, value in want.items():
        assert rows.at[f"Penalty_{pen}", "value"] == pytest.approx(value, abs=1e-12)
        assert rows.at[f"Penalty_{pen}", "deviation"] == pytest.approx(math.log(1 + value))
        assert not rows.at[f"Penalty_{pen}", "bounded"]
    assert rows.at["Penalty_QPS", "n"] == 4 and rows.at["Penalty_SCL", "n"] == 4
    # an independent computation: pandas group means, the drop clipped at 0
    means = table.groupby("prompt_type")[list(COLUMNS)].mean()
    drop = (means.loc["stereotypical"] - means.loc["counter"]).clip(lower=0)
    for pen, col in zip(("QPS", "FQP", "SIL", "SCL"), COLUMNS, strict=True):
        assert rows.at[f"Penalty_{pen}", "value"] == pytest.approx(drop[col], abs=1e-12)


def test_bis_gen_is_partial_until_all_five_penalties_are_present() -> None:
    table = _steering_table()
    full = granular_metrics("BIS-Gen", table).assign(model="m")
    out = score_models(full).set_index("sector")
    assert not out.at["BIS-Gen", "partial"] and out.at["BIS-Gen", "n_metrics"] == 5
    u = np.log1p([0.25, 0.0, 0.10, 0.20])  # and ΔGSR = 0
    assert out.at["BIS-Gen", "magnitude"] == pytest.approx(float(np.linalg.norm(u)))
    assert out.at["BIS-Gen", "score"] == pytest.approx(85 * math.exp(-np.linalg.norm(u)))
    rows = granular_metrics("BIS-Gen", table.drop(columns=["sil", "fqp"])).set_index("metric")
    assert "not computed: no SIL instrument output" in rows.at["Penalty_SIL", "note"]
    part = score_models(rows.reset_index().assign(model="m")).set_index("sector")
    assert part.at["BIS-Gen", "partial"] and part.at["BIS-Gen", "n_missing"] == 2


def _config(occupations_table: Path, per_prompt: int = 2, **t2i) -> IrisConfig:
    return IrisConfig.model_validate(
        {
            "occupations_table": str(occupations_table),
            "max_occupations": 5,
            "ifs_gen": {"images_per_occupation": 4},
            "bis_gen": {"top": 2, "images_per_prompt": per_prompt},
            "tournament": {"rounds": 1},
            "simulated": {"t2i": t2i},
        }
    )


def _backend():
    raw = yaml.safe_load((ROOT / "conf/model/simulated_t2i.yaml").read_text())
    return build_backend(SimulatedT2IConfig.model_validate(raw))


ATTRS = {
    "gender": {"male": 0.7, "female": 0.3},
    "age": {"young": 0.6, "middle-aged": 0.3, "older": 0.1},
    "skin_tone": {"light": 0.7, "middle": 0.2, "dark": 0.1},
}
STEREO = {"quality": 0.70, "face_quality": 0.60, "prompt_similarity": 0.30,
          "reference_similarity": 0.80}  # fmt: skip
COUNTER = {"quality": 0.55, "face_quality": 0.60, "prompt_similarity": 0.24,
           "reference_similarity": 0.65}  # fmt: skip
SD = 0.02


def test_simulator_planted_quality_and_semantic_drops_are_recovered(
    occupations_table: Path, tmp_path: Path
) -> None:
    plant = {"attributes": ATTRS, "refusal_rate": 0.05}
    config = _config(
        occupations_table,
        12,
        bis_gen={**plant, "scores": {"mean": STEREO, "sd": SD}},
        bis_gen_counter={**plant, "scores": {"mean": COUNTER, "sd": SD}},
    )
    instruments = {  # SIMULATED images: every instrument in its oracle STAND-IN mode
        "face_demographics": FaceDemographics(FaceDemographicsConfig(mode="oracle")),
        "image_quality": ImageQuality(ImageQualityConfig(mode="oracle")),
        "image_semantics": ImageSemantics(ImageSemanticsConfig(mode="oracle")),
    }
    _, _, labels, result = run_steps("iris", config, "t2i", 7, tmp_path, _backend(), instruments)
    steer = labels[(labels["sector"] == "BIS-Gen") & (labels["status"] == "ok")]
    assert steer[["qps", "sil", "scl"]].notna().all().all()
    assert steer["fqp"].notna().sum() == (steer["face_status"] == "ok").sum()
    assert labels.loc[labels["sector"] == "IFS-Gen", "qps"].isna().all()
    rows = result.scores.set_index("metric")
    n_counter = int((steer["prompt_type"] == "counter").sum())
    n_stereo = len(steer) - n_counter
    se = SD * math.sqrt(1 / n_counter + 1 / n_stereo)  # the planted sd's standard error
    for pen, key in (("QPS", "quality"), ("SIL", "prompt_similarity"),
                     ("SCL", "reference_similarity")):  # fmt: skip
        planted = STEREO[key] - COUNTER[key]
        assert rows.at[f"Penalty_{pen}", "value"] == pytest.approx(planted, abs=4 * se)
    assert rows.at["Penalty_FQP", "value"] < 4 * se  # no planted face-quality drop
    assert result.summary["instruments"]["image_quality"].startswith("oracle (SIMULATED")
    assert rows["value"][rows["sector"] == "BIS-Gen"].notna().all()


def test_without_planted_scores_the_labels_and_metrics_are_unchanged(
    occupations_table: Path, tmp_path: Path
) -> None:
    config = _config(occupations_table)
    face = FaceDemographics(FaceDemographicsConfig(mode="oracle"))
    oracles = {
        "face_demographics": face,
        "image_quality": ImageQuality(ImageQualityConfig(mode="oracle")),
        "image_semantics": ImageSemantics(ImageSemanticsConfig(mode="oracle")),
    }
    _, _, with_oracles, a = run_steps("iris", config, "t2i", 7, tmp_path / "a", _backend(), oracles)
    _, _, without, b = run_steps("iris", config, "t2i", 7, tmp_path / "b", _backend(), face)
    pd.testing.assert_frame_equal(with_oracles, without)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert "instruments" not in a.summary
    notes = b.scores.set_index("metric")["note"]
    assert all("not computed" in notes[f"Penalty_{p}"] for p in ("QPS", "FQP", "SIL", "SCL"))


def test_real_instruments_score_the_exported_images(
    occupations_table: Path, tmp_path: Path
) -> None:
    pytest.importorskip("transformers")
    from tests.support.tiny_vision import tiny_clip, tiny_dino

    config = _config(occupations_table)
    face = FaceDemographics(FaceDemographicsConfig(mode="oracle"))
    probes, responses, _, _ = run_steps("iris", config, "t2i", 7, tmp_path, _backend(), face)
    clip, dino = tiny_clip(tmp_path / "clip"), tiny_dino(tmp_path / "dino")
    quality = ImageQuality(ImageQualityConfig(checkpoint=str(clip), face=False))
    semantics = ImageSemantics(ImageSemanticsConfig(clip=str(clip), dino=str(dino)))

    calls: list[str] = []

    def counting(name: str, run):
        def counted(*args, **kwargs):
            calls.append(name)
            return run(*args, **kwargs)

        return counted

    for instrument, method in ((quality, "score"), (semantics, "prompt_similarity"),
                               (semantics, "embed")):  # fmt: skip
        setattr(instrument, method, counting(method, getattr(instrument, method)))
    cache = tmp_path / "cache" / "responses.sqlite"

    def label(readings=lambda: ResponseCache(cache)):
        return Iris().label_responses(probes, responses, config, instrument=face,
                                      image_dir=tmp_path / "images", quality=quality,
                                      semantics=semantics, readings=readings)  # fmt: skip

    labels = label()
    assert {"score", "prompt_similarity", "embed"} <= set(calls)
    calls.clear()
    pd.testing.assert_frame_equal(label(), labels)  # every score read from the cache
    assert calls == []
    with ResponseCache(cache) as store:
        counts = store.reading_counts()
    assert counts["image_quality"] > 0 and counts["image_semantics"] > 0
    steer = labels[(labels["sector"] == "BIS-Gen") & (labels["status"] == "ok")]
    assert "fqp" not in labels.columns  # face: false
    assert steer[["qps", "sil", "scl"]].notna().all().all()
    assert ((steer["qps"] > 0) & (steer["qps"] < 1)).all()
    assert (steer[["sil", "scl"]].abs() <= 1 + 1e-6).all().all()
    pd.testing.assert_frame_equal(label(None), labels)  # deterministic: measured again
    assert calls
    rows = Iris().metrics(labels, config).scores.set_index("metric")
    assert rows.loc[["Penalty_QPS", "Penalty_SIL", "Penalty_SCL"], "value"].notna().all()


def test_the_report_says_which_penalties_are_missing() -> None:
    from genfair.methodologies.iris.report import _missing_penalties

    table = _steering_table()
    full = granular_metrics("BIS-Gen", table).assign(model="a")
    part = granular_metrics("BIS-Gen", table.drop(columns=["sil", "scl"])).assign(model="b")
    note = _missing_penalties(pd.concat([full, part]))
    assert "b: Penalty_SIL, Penalty_SCL" in note and "a:" not in note
    assert "instruments.image_semantics.dino" in note
    assert _missing_penalties(full) == ""


def test_planted_scores_change_neither_the_pixels_nor_the_keys_of_other_plants() -> None:
    from genfair.models.base import Request
    from genfair.models.config import SimulatedT2IPolicy
    from genfair.models.questions import ImageQuestion

    backend = _backend()
    plain = SimulatedT2IPolicy(attributes=ATTRS)
    scored = SimulatedT2IPolicy(attributes=ATTRS, scores={"mean": STEREO, "sd": SD})
    # a plant without scores keys its calls as before planted scores existed
    assert backend.plant_key(plain) == {
        k: v for k, v in plain.model_dump().items() if k != "scores"
    }
    assert "scores" in backend.plant_key(scored)

    def draw(plant):
        meta = ImageQuestion(policy="p", plant=plant).meta()
        return backend.respond(
            Request(messages=({"role": "user", "content": "x"},), seed=3, meta=meta)
        )

    a, b = draw(plain), draw(scored)
    assert a.png == b.png
    assert {k: b.true_attributes[k] for k in a.true_attributes} == a.true_attributes
    assert float(b.true_attributes["quality"]) == pytest.approx(0.70, abs=5 * SD)
