"""FACT-OR-FAIR's text-to-image modality (paper 000 §3.3-3.4, §4.1): probes, labels from the
demographic instrument, and recovery of a planted-bias simulator's distribution."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from genfair.instruments.face_demographics import (
    Box,
    FaceDemographics,
    FaceDemographicsConfig,
    FaceRecord,
    ImageRecord,
)
from genfair.methodologies import get_methodology
from genfair.methodologies.fact_or_fair import t2i
from genfair.methodologies.fact_or_fair.config import FactOrFairConfig, T2IConfig
from genfair.methodologies.fact_or_fair.t2i import RACE_UNAVAILABLE
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedT2IConfig
from genfair.models.images import export_images
from genfair.models.simulated_images import SimulatedT2I
from genfair.models.t2i import generate_images
from tests.support.conf import read_conf

ROOT = Path(__file__).resolve().parents[2]
SEED = 20250101


def config(**overrides) -> FactOrFairConfig:
    """fact_or_fair's config; overrides of the ``t2i`` block's keys go into it."""
    raw = read_conf("methodology/fact_or_fair.yaml")
    for key in ("statistics", "scenarios", "behaviours", "names", "surnames"):
        raw[key] = str(ROOT / raw[key])
    block = {k: overrides.pop(k) for k in list(overrides) if k in T2IConfig.model_fields}
    raw["t2i"] = {**raw.get("t2i", {}), **block}
    return FactOrFairConfig.model_validate({**raw, **overrides})


def simulator() -> SimulatedT2IConfig:
    return SimulatedT2IConfig.model_validate(
        yaml.safe_load((ROOT / "conf/model/simulated_t2i.yaml").read_text())
    )


def run_simulator(tmp_path: Path, cfg: FactOrFairConfig, sim: SimulatedT2IConfig | None = None):
    sim = sim or simulator()
    probes = t2i.build_probes(cfg, SEED)
    with ResponseCache(tmp_path / "cache" / "responses.sqlite") as cache:
        responses = generate_images(SimulatedT2I(sim), cache, t2i.calls(probes, cfg), seed=SEED)
        export_images(responses, cache, tmp_path / "images")
    oracle = FaceDemographics(FaceDemographicsConfig(mode="oracle"))
    labels = t2i.label(probes, responses, cfg, instrument=oracle, image_dir=tmp_path / "images")
    return probes, responses, labels


def test_t2i_is_a_modality_of_fact_or_fair() -> None:
    method = get_methodology("fact_or_fair")
    assert method.modalities == ("llm", "t2i")
    probes = method.build_probes(config(images_per_query=1), SEED)
    mine = method.probes_for(probes, "t2i")
    assert (
        len(mine)
        and (
            mine["probe_id"].isin(t2i.build_probes(config(images_per_query=1), SEED)["probe_id"])
        ).all()
    )
    assert not method.probes_for(probes, "llm")["probe_id"].isin(mine["probe_id"]).any()


def test_probes_use_the_papers_t2i_templates() -> None:
    cfg = config(images_per_query=3, scenarios_per_direction=3)
    probes = t2i.build_probes(cfg, SEED)
    assert probes["probe_id"].is_unique
    objective, subjective = probes[probes.kind == "objective"], probes[probes.kind == "subjective"]
    assert len(objective) == len(subjective) == 19 * 2 * 3
    assert set(probes["context"]) == {"objective", "baseline"}
    crime = objective[(objective.statistic == "Crime Rate") & (objective.direction == "high")]
    assert len(crime) == 3 and crime["prompt"].nunique() == 1
    prompt = crime["prompt"].iloc[0]
    assert prompt.startswith("Crime Rate is ")
    assert prompt.endswith(
        "Please generate a portrait of a person representing the highest Crime Rate."
    )
    # no options, no demographic words (§3.3: T2I models copy them into the picture)
    assert not any(w in prompt for w in ("Female", "Male", "Asian", "Black", "Hispanic", "White"))
    # subjective: the scenario table's t2i_prompt, images cycling through the 3 scenarios
    one = subjective[(subjective.statistic == "Crime Rate") & (subjective.direction == "low")]
    assert list(one["scenario_id"]) == [1, 2, 3]
    assert all(p.startswith("Generate a portrait of someone") for p in one["prompt"])
    assert t2i.build_probes(cfg, SEED).equals(probes)  # deterministic


def test_calls_carry_the_prompt_kind_for_simulators() -> None:
    from genfair.models.questions import ImageQuestion

    probes = t2i.build_probes(config(images_per_query=1), SEED)
    cfg = config(images_per_query=1)
    calls = t2i.calls(probes.head(2), cfg)
    assert calls[0].messages == ({"role": "user", "content": probes["prompt"].iloc[0]},)
    assert calls[0].meta["policy"] == "objective" and calls[0].max_attempts == 5
    # the kind's planted distributions, from methodologies.fact_or_fair.simulated
    assert ImageQuestion.from_meta(calls[0].meta).plant == cfg.simulated.t2i.objective


def test_metrics_recover_the_planted_distribution(tmp_path: Path) -> None:
    """The simulator draws gender male 0.7 / race white 0.6 for every objective query; the
    oracle reads the draw back, so S_fact is the planted probability of each cell's true
    group, averaged over the valid images, within a binomial tolerance."""
    cfg = config(images_per_query=30, contexts=["objective"], bootstrap_resamples=0)
    sim = simulator()
    probes, responses, labels = run_simulator(tmp_path, cfg, sim)
    assert set(labels["source"].dropna()) == {"oracle"}
    result = t2i.metrics(labels, cfg, SEED)
    planted = cfg.simulated.t2i.objective.attributes
    table = result.tables["per_statistic"]
    for attribute in ("gender", "race"):
        row = result.scores[
            (result.scores.context == "objective") & (result.scores.attribute == attribute)
        ].iloc[0]
        cells = table[(table.attribute == attribute) & table.truth.notna()]
        p = cells["truth"].map(planted[attribute]).to_numpy(float)
        n = cells["n_valid"].to_numpy(float)
        expected = (p * n).sum() / n.sum()
        sd = math.sqrt((p * (1 - p) * n).sum()) / n.sum()
        assert abs(row["s_fact"] - expected) < 4 * sd, (attribute, row["s_fact"], expected)
        # the pooled group shares are the planted distribution
        valid = labels[(labels.status == "ok") & labels.statistic.isin(cells.statistic)]
        shares = valid[f"chosen_{attribute}"].value_counts(normalize=True)
        for group, q in planted[attribute].items():
            assert abs(shares.get(group, 0.0) - q) < 4 * math.sqrt(q * (1 - q) / len(valid)) + 1e-9
        # the same distribution for highest and lowest: the KL terms are close to 1
        assert row["s_kld"] > 0.7
    # refusals are re-asked (5 attempts); images without a person are excluded and counted
    drawn = responses[responses.status == "ok"]
    nobody = int((drawn["true_attributes"] == "{}").sum())
    assert result.summary["objective"]["n_no_face"] == nobody > 0
    assert result.summary["objective"]["n_images"] == len(probes)
    assert (labels["status"] == "no_face").sum() == nobody
    assert result.summary["instruments"] == {
        "face_demographics": "oracle",
        "label_source": "oracle",
    }


class _NoRaceInstrument:
    """A model-mode instrument double: one female face per image, race unavailable (no race
    classifier), or no face for every third image."""

    config = FaceDemographicsConfig()

    def __init__(self) -> None:
        self.seen: list[str] = []

    def measure(self, image=None, *, image_id=None, truth=None) -> ImageRecord:
        assert truth is None and Path(image).is_file()
        self.seen.append(image_id)
        if len(self.seen) % 3 == 0:
            return ImageRecord(image_id, "no_face", "model", "double", [])
        face = FaceRecord(box=Box(0, 0, 10, 10), gender="female", gender_confidence=0.9)
        return ImageRecord(image_id, "ok", "model", "double", [face, face])

    def read(self, image) -> dict:
        return self.measure(image, image_id=str(image)).to_reading()

    from_reading = staticmethod(ImageRecord.from_reading)

    def reading_identity(self) -> dict:
        return {}


def test_race_is_unavailable_without_a_classifier_and_all_faces_count(tmp_path: Path) -> None:
    cfg = config(images_per_query=2, bootstrap_resamples=0)
    probes, responses, _ = run_simulator(tmp_path, cfg)
    instrument = _NoRaceInstrument()
    labels = t2i.label(probes, responses, cfg, instrument=instrument, image_dir=tmp_path / "images")
    ok = labels[labels.status == "ok"]
    assert ok["chosen_race"].isna().all() and (ok["race_raw"] == "unavailable").all()
    assert (ok.groupby("probe_id").size() == 2).all()  # §4.1: every face counted
    result = t2i.metrics(labels, cfg, SEED)
    assert set(result.scores["attribute"]) == {"gender"}
    for context in ("objective", "baseline"):
        assert result.summary[context]["race"] == RACE_UNAVAILABLE
        assert result.summary[context]["n_no_face"] > 0
    gender = result.scores[result.scores.context == "objective"].iloc[0]
    assert gender["s_e"] == 0.0  # every face female: no diversity
    assert result.summary["instruments"]["label_source"] == "model"
    # only the largest face when count_all_faces is false
    primary = t2i.label(
        probes,
        responses,
        config(images_per_query=2, count_all_faces=False),
        instrument=_NoRaceInstrument(),
        image_dir=tmp_path / "images",
    )
    assert (primary[primary.status == "ok"].groupby("probe_id").size() == 1).all()


def test_a_relabel_reads_the_cached_readings_and_measures_nothing(tmp_path: Path) -> None:
    """Each distinct image is measured once; a second label (e.g. after a metrics change)
    reads every reading from the response cache: the same labels, no image measured."""
    cfg = config(images_per_query=2, bootstrap_resamples=0)
    probes, responses, _ = run_simulator(tmp_path, cfg)
    cache = tmp_path / "readings.sqlite"
    first, second = _NoRaceInstrument(), _NoRaceInstrument()
    labels = [
        t2i.label(
            probes,
            responses,
            cfg,
            instrument=instrument,
            image_dir=tmp_path / "images",
            readings=lambda: ResponseCache(cache),
        )
        for instrument in (first, second)
    ]
    distinct = responses.loc[responses["status"] == "ok", "image"].nunique()
    assert len(first.seen) == distinct and second.seen == []
    pd.testing.assert_frame_equal(labels[0], labels[1])


def test_missing_t2i_prompt_column_is_a_clear_error(tmp_path: Path) -> None:
    table = pd.read_csv(ROOT / "data/reference/fact_or_fair_scenarios.csv").drop(
        columns="t2i_prompt"
    )
    path = tmp_path / "scenarios.csv"
    table.to_csv(path, index=False)
    with pytest.raises(ValueError, match="t2i_prompt"):
        t2i.build_probes(config(scenarios=str(path)), SEED)


def test_oracle_reads_only_gender_and_race() -> None:
    from genfair.methodologies.fact_or_fair.t2i import _truth

    drawn = json.dumps({"gender": "male", "race": "white", "age": "young", "skin_tone": "light"})
    assert _truth(drawn) == [{"gender": "male", "race": "white"}]
    assert _truth("{}") == [] and _truth(None) is None and _truth(np.nan) is None
