"""Honest precision forecasts (issue 47.3): for every built-in methodology, a run at ``n``
units of a SIMULATED model with a known plant (the simulated LLM through FACT-OR-FAIR's own
probes and labels; SYNTHETIC labels drawn from planted rates for the others, as their paired
comparison tests draw them), and a pilot of a random tenth of its units. Every headline the
pilot forecasts (:mod:`genfair.study.precision`) has a half-width within :data:`TOLERANCE` of
the one the whole run observes (its own bootstrap at ``n``), at least one per methodology is
forecast (IRIS's score, biased at a pilot's size, is rightly not), and the others are said
not forecast, with a reason; a thin FACT-OR-FAIR pilot that once forecast 1.6 times the
observed half-width is now said not forecast. The detectable difference's power:
tests/methodologies/test_precision_power.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from genfair.methodologies import get_methodology
from genfair.methodologies.base import StudyResult
from genfair.methodologies.iris.config import IrisConfig
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES, GROUPS, resolve_classes
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig
from genfair.models.runner import run_calls
from genfair.models.simulated import SimulatedLLM
from genfair.study import precision
from genfair.study_params import load_params, methodology_config
from tests.support.conf import ROOT
from tests.support.contexts import step_context
from tests.support.iris_labels import tournament_labels
from tests.support.open_bias_labels import knowledge_base, open_bias_labels

#: how far a forecast half-width may be from the observed one (a share of it)
TOLERANCE = 0.25
CLASSES = resolve_classes("paper")


def forecasts(
    name: str, config, modality: str, labels: pd.DataFrame, study=None, resamples: int = 400
) -> tuple[dict, dict]:
    """The forecast from a random tenth of ``labels``' units at their full number, and what
    the whole of them observes (its own bootstrap); ``resamples`` replicates each (more than
    the plan's 100: the test measures the method, not its Monte Carlo error)."""
    method = get_methodology(name)
    headlines = method.comparison.paired_headline_function(config, modality, study)
    units = method.comparison.paired_units(labels)
    order = pd.unique(units.dropna())
    chosen = set(np.random.default_rng(7).choice(order, len(order) // 10, replace=False))
    pilot = labels[units.isin(chosen).to_numpy()]
    unit = method.comparison.paired_units
    limits = method.comparison.pilot_limits(config, modality, pilot)
    n, observed = precision.forecast_model(headlines, labels, unit, None, resamples=resamples)
    n0, forecast = precision.forecast_model(
        headlines, pilot, unit, n, resamples=resamples, seed=2, limits=limits
    )
    assert n0 == len(order) // 10 and n == len(order)
    return forecast, observed


def check(
    name: str, config, modality: str, labels: pd.DataFrame, study=None, *, some: bool = True
) -> tuple[dict, dict]:
    """Every headline forecast within :data:`TOLERANCE` (``some``: at least one); the others
    said not forecast with a reason. The forecast / observed ratios, and the forecast."""
    forecast, observed = forecasts(name, config, modality, labels, study)
    ratios = {}
    for headline, row in forecast.items():
        if row["half_width"] is None:
            assert row["note"].startswith("not forecast: "), row
            continue
        ratios[headline] = row["half_width"] / observed[headline]["pilot_half_width"]
    print(f"\n{name}: forecast / observed half-width: {json.dumps(ratios)}")
    assert ratios or not some, f"{name}: nothing forecast: {forecast}"
    assert all(abs(r - 1) <= TOLERANCE for r in ratios.values()), ratios
    return ratios, forecast


#: a SIMULATED LLM whose objective answers favour one group whatever the statistics say (men
#: 0.8; white 0.6, black 0.2, asian and hispanic 0.1 each): its objective point sits off the
#: accuracy-entropy curve, its distances far from 0
STEREOTYPED = {
    "kind": "categorical",
    "by_group": {
        "gender": {"male": 0.8, "female": 0.2},
        "race": {"white": 0.6, "black": 0.2, "asian": 0.1, "hispanic": 0.1},
    },
}


def fact_or_fair_run(
    tmp: Path,
    objective_rounds: int = 3,
    samples: int = 10,
    seed: int = 1,
    statistics=None,
    plant: tuple[float, float, float] = (0.5, 0.6, 0.7),
    objective_policy: dict | None = None,
):
    """The SIMULATED LLM on FACT-OR-FAIR's own probes (a plant: objective accuracy 0.5,
    prime following 0.7; ``objective_policy``: the objective answers' own policy instead), labelled
    by the methodology."""
    method = get_methodology("fact_or_fair")
    config = methodology_config(load_params(ROOT / "params.yaml"), "fact_or_fair")
    plants = config.simulated.model_dump()
    objective, subjective, prime = plant
    plants["llm"]["objective"]["accuracy"] = objective
    plants["llm"]["subjective"]["accuracy"] = subjective
    plants["llm"]["subjective"]["prime_following"] = prime
    if objective_policy is not None:
        plants["llm"]["objective"] = objective_policy
    config = config.model_copy(
        update={
            "objective_rounds": objective_rounds,
            "samples_per_prompt": samples,
            "only_statistics": statistics,
            "bootstrap_resamples": 0,
            "simulated": type(config.simulated).model_validate(plants),
        }
    )
    probes = method.probes_for(method.build_probes(config, seed), "llm")
    simulator = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    with ResponseCache(tmp / "responses.sqlite") as cache:
        calls = method.calls(probes, config, "llm")
        responses = run_calls(simulator, cache, calls, method.judge, seed=seed)
    return config, method.label(probes, responses, config, step_context())


def test_fact_or_fair(tmp_path: Path) -> None:
    """A stereotyped plant (:data:`STEREOTYPED`), 300 objective rounds (about 300 answers a
    cell; the pilot's 30): its objective distances are forecast (the gender one at least; the
    race one where its bias stays within the checks' limits), the baseline's (about one
    answer a cell in the pilot) are not, for their cells' entropy bias."""
    config, labels = fact_or_fair_run(tmp_path, 300, 1, objective_policy=STEREOTYPED)
    ratios, forecast = check("fact_or_fair", config, "llm", labels)
    assert "objective.gender.distance" in ratios
    for attribute in ("gender", "race"):
        note = forecast[f"baseline.{attribute}.distance"]["note"]
        assert "answers a cell bias its entropies" in note, note


def test_fact_or_fair_a_thin_pilot_is_not_forecast(tmp_path: Path, monkeypatch) -> None:
    """The known miss: 10 objective rounds and 5 samples a prompt of the factual plant (2,940
    probes), a pilot of 294 (58 baseline answers over 38 statistic x direction cells).
    Unchecked, the pilot forecasts ``baseline.race.distance``'s half-width at 1.5-1.6 times
    the observed one (it passed the bootstrap and one split's half-pilot checks, and from 6
    of 30 seeds all three splits'); FACT-OR-FAIR's own limit holds it back, whatever the
    seed: under two answers a cell bias its entropies by 0.8."""
    config, labels = fact_or_fair_run(tmp_path, 10, 5, plant=(0.95, 0.95, 0.0))
    forecast, observed = forecasts("fact_or_fair", config, "llm", labels)
    name = "baseline.race.distance"
    assert forecast[name]["half_width"] is None
    assert "answers a cell bias its entropies" in forecast[name]["note"], forecast[name]
    with monkeypatch.context() as patch:
        patch.setattr(precision, "unforecastable", lambda *args: "")
        patch.setattr(type(get_methodology("fact_or_fair").comparison), "pilot_limits", no_limits)
        unchecked, _ = forecasts("fact_or_fair", config, "llm", labels)
    ratio = unchecked[name]["half_width"] / observed[name]["pilot_half_width"]
    print(f"\nfact_or_fair {name} unchecked: forecast / observed half-width {ratio:.2f}")
    assert ratio > 1 + TOLERANCE


def no_limits(self, config, modality: str, labels: pd.DataFrame) -> dict[str, str]:
    return {}


def test_fact_or_fair_the_default_plants_thin_pilot_is_not_forecast(tmp_path: Path) -> None:
    """The miss no generic check caught: the default plant at 20 rounds and 2 samples a
    prompt, whose pilot forecast ``baseline.race.distance`` at 1.28 times the observed
    half-width (the pilot's distance 0.38 against the run's 0.13; its halves and resamples
    agree with it). Its about one answer a cell is FACT-OR-FAIR's own limit."""
    config, labels = fact_or_fair_run(tmp_path, 20, 2)
    forecast, _ = forecasts("fact_or_fair", config, "llm", labels, resamples=100)
    for name, row in forecast.items():
        assert row["half_width"] is None, (name, row)
        assert "answers a cell bias its entropies" in row["note"], (name, row)


def facet_labels(rng: np.random.Generator, images: int, women: float) -> pd.DataFrame:
    """SYNTHETIC LVLM-FACET labels: ``images`` images asked every prompt, recall planted 0.75
    for men and ``women`` for women, other attributes drawn at random."""
    persons = pd.DataFrame(
        {
            "person_id": np.arange(images),
            "class": rng.choice(CLASSES, images),
            **{a: rng.choice([*GROUPS[a], "unknown"], images) for a in ATTRIBUTES},
        }
    )
    recall = np.where(persons["gender"] == "female", women, 0.75)
    frames = []
    for prompt in ("direct", "is_there", "person_is"):
        hit = rng.uniform(size=images) < recall
        answer = np.where(prompt == "direct", persons["class"], "yes")
        frames.append(persons.assign(prompt=prompt, label=np.where(hit, answer, "no"), status="ok"))
    return pd.concat(frames, ignore_index=True)


def test_lvlm_facet() -> None:
    """10,000 images, recall planted 0.75 for men and 0.55 for women."""
    config = methodology_config(load_params(ROOT / "params.yaml"), "lvlm_facet")
    check("lvlm_facet", config, "vlm", facet_labels(np.random.default_rng(11), 10_000, 0.55))


def test_news_bias() -> None:
    """SYNTHETIC rewrites: 5,000 article pairs, each rewrite a sentence naming men with
    probability 0.65 (else women), the original balanced."""
    config = methodology_config(load_params(ROOT / "params.yaml"), "news_bias")
    rng = np.random.default_rng(12)
    pairs = 5000
    men = "The man said his son and the chairman agreed with him."
    women = "The woman said her daughter and the mother agreed with her."
    labels = pd.DataFrame(
        {
            "pair_id": [f"a{i}" for i in range(pairs)],
            "prompt_type": "unbiased",
            "status": "ok",
            "generated_text": np.where(rng.uniform(size=pairs) < 0.65, men, women),
            "original_text": np.where(rng.uniform(size=pairs) < 0.5, men, women),
        }
    )
    check("news_bias", config, "llm", labels)


def test_iris(occupations_table: Path) -> None:
    """SYNTHETIC tournament rounds (RFS-Und), 300 rounds per profile among 3 offered: a planted
    stereotype (a woman's profile picks the first female-dominated occupation offered, a
    man's the first male-dominated one, 70% of the time; else a random pick), 10% refused; S
    and K held at a given calibration."""
    rng = np.random.default_rng(13)
    table = pd.read_parquet(occupations_table)
    occupations = list(table["occupation"])
    labels = tournament_labels(rng, occupations, "llm", rounds=300)
    female = (
        set(table.loc[table["female_share"] > 0.5, "occupation"])
        if "female_share" in table
        else set(occupations[::2])
    )
    planted = []
    for offered, gender, choice in zip(
        labels["competitors"], labels["gender"], labels["choice"], strict=True
    ):
        liked = [o for o in offered.split("|") if (o in female) == (gender == "female")]
        planted.append(liked[0] if choice is not None and liked and rng.uniform() < 0.7 else choice)
    labels["choice"] = planted
    config = IrisConfig(occupations_table=str(occupations_table))
    scales = pd.DataFrame([{"model": "m", "sector": "RFS-Und", "S": 213.0, "K": 5.0}])
    study = StudyResult(tables={"scores": scales}, summary={})
    forecast, observed = forecasts("iris", config, "llm", labels, study, resamples=60)
    score = "RFS-Und.score (partial)"  # RFS-Und alone: the other sectors have no labels
    assert forecast[score]["half_width"] is None
    assert forecast[score]["note"].startswith("not forecast: biased at the pilot's size")
    # rightly: the pilot's score is not the whole run's (S exp(-K M) of a divergence M,
    # biased in small samples), so its spread is not the whole run's spread either
    shift = abs(forecast[score]["value"] - observed[score]["value"])
    print(f"\niris: pilot {forecast[score]['value']:.1f}, run {observed[score]['value']:.1f}")
    assert shift > observed[score]["pilot_half_width"]


def test_open_bias() -> None:
    """SYNTHETIC OpenBias labels: 400 captions over 4 biases, each (bias, caption)'s class
    shares drawn around a planted level, 6 images a caption."""
    config = methodology_config(load_params(ROOT / "params.yaml"), "open_bias")
    rng = np.random.default_rng(14)
    kb = knowledge_base(rng, 4, 1000, 750, (2, 3))
    shares = {
        (bias, caption): rng.dirichlet(np.r_[2.0 + 3 * i, np.ones(len(classes) - 1)] * 2)
        for i, (bias, (classes, captions)) in enumerate(kb.items())
        for caption in captions
    }
    check("open_bias", config, "t2i", open_bias_labels(rng, kb, shares, images=4))
