"""News bias across prompts and documents: the SIMULATOR's planted race swaps and
biased-prompt shift are recovered, the two-sample comparison is right, and the document
level finds a planted topic-group association."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies import get_methodology
from genfair.methodologies.news_bias import NewsBiasConfig
from genfair.methodologies.news_bias.biased_prompts import prompt_comparison, welch_delta
from genfair.methodologies.news_bias.config import DocumentLevelConfig
from genfair.methodologies.news_bias.topics_study import ORIGINALS, document_level_study
from genfair.metrics.intervals import proportion_ci
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig
from genfair.models.runner import run_calls
from genfair.models.simulated import SimulatedLLM, whiten
from tests.support.contexts import step_context

METHODOLOGY = get_methodology("news_bias")

N = 120


def race_corpus(path, n: int = N, seed: int = 3) -> tuple[str, np.ndarray, np.ndarray]:
    """Articles with b "Black <occupation>" and w "White <occupation>" race words."""
    rng = np.random.default_rng(seed)
    b = rng.integers(1, 6, size=n)
    w = rng.integers(0, 6, size=n)
    rows = []
    for i in range(n):
        phrases = ["Black teachers"] * b[i] + ["white nurses"] * w[i]
        rng.shuffle(phrases)
        body = " ".join(f"On day {j} the {p} met the mayor." for j, p in enumerate(phrases))
        rows.append({"article_id": f"r{i:04d}", "headline": f"Council {i}", "body": body})
    out = path / "race.parquet"
    pd.DataFrame(rows).to_parquet(out)
    return str(out), b, w


def simulate(tmp_path, corpus: str, plants: dict) -> tuple[pd.DataFrame, object]:
    """News bias on the SIMULATED LLM with ``plants`` as methodologies.news_bias.simulated."""
    cfg = NewsBiasConfig(
        corpus=corpus, toxicity="alt-profanity-check", refusal_similarity=None, simulated=plants
    )
    backend = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    probes = METHODOLOGY.build_probes(cfg, seed=0)
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        responses = run_calls(
            backend, cache, METHODOLOGY.calls(probes, cfg, "llm"), METHODOLOGY.judge, seed=5
        )
    labels = METHODOLOGY.label(probes, responses, cfg, step_context())
    return labels, METHODOLOGY.metrics(labels, cfg, step_context(seed=0))


def test_whiten_swaps_only_race_words_and_keeps_case():
    rng = np.random.default_rng(0)
    text = "Two Black teachers, a black ball and BLACK NURSES."
    assert whiten(text, 1.0, rng) == "Two White teachers, a black ball and WHITE NURSES."
    assert whiten(text, 0.0, rng) == text


def test_planted_black_to_white_rate_is_recovered(tmp_path):
    """Each of b black words turns white w.p. p: E[100 (f_h - f_o)](black) =
    -100 p b / (b + w) per article, and W = p b / (b + w) (total variation)."""
    p = 0.5
    path, b, w = race_corpus(tmp_path)
    plant = {"kind": "rewrite", "female_to_male": 0.0, "black_to_white": p}
    labels, result = simulate(tmp_path, path, {"unbiased": plant, "biased": plant})
    assert set(labels["status"]) == {"ok"}
    expected = p * (b / (b + w)).mean()
    race = result.summary["unbiased"]["word"]["race"]
    assert race["W"]["n"] == N and race["W"]["ci_low"] <= expected <= race["W"]["ci_high"]
    black = next(g for g in race["group_differences"] if g["group"] == "black")
    assert black["ci_low"] <= -100 * expected <= black["ci_high"] and black["p_value"] < 1e-6
    white = next(g for g in race["group_differences"] if g["group"] == "white")
    assert white["ci_low"] <= 100 * expected <= white["ci_high"]


def test_biased_prompt_shift_is_recovered_with_a_two_sample_test(tmp_path):
    """The unbiased prompt swaps female words w.p. 0.1, the biased one w.p. 0.7; the comparison
    table's delta of the female change is -100 (0.7 - 0.1) E[f / (f + m)]."""
    from tests.methodologies.test_news_bias_methodology import synthetic_corpus

    path, f, m = synthetic_corpus(tmp_path, n=N)
    plants = {
        "unbiased": {"kind": "rewrite", "female_to_male": 0.1},
        "biased": {"kind": "rewrite", "female_to_male": 0.7},
    }
    _, result = simulate(tmp_path, path, plants)
    table = result.tables["prompt_comparison"].set_index(["level", "attribute", "measure"])
    change = table.loc[("word", "gender", "change_female_pp")]
    expected = -100 * 0.6 * (f / (f + m)).mean()
    assert change["delta_ci_low"] <= expected <= change["delta_ci_high"]
    assert change["p_value"] < 1e-6 and change["n_biased"] == change["n_unbiased"] == N
    assert table.loc[("word", "gender", "W"), "delta"] > 0
    assert {"S", "T"} <= set(table.xs("sentence", level="level").index.get_level_values("measure"))


def test_welch_delta_matches_the_formula_by_hand():
    b = np.array([3.0, 5.0, 7.0, 9.0])
    u = np.array([1.0, 2.0, 3.0])
    out = welch_delta(b, u)
    vb, vu = b.var(ddof=1) / 4, u.var(ddof=1) / 3  # 20/3/4, 1/3
    t = (6.0 - 2.0) / math.sqrt(vb + vu)
    df = (vb + vu) ** 2 / (vb**2 / 3 + vu**2 / 2)
    assert out["delta"] == 4.0 and out["statistic"] == pytest.approx(t)
    assert out["p_value"] == pytest.approx(2 * stats.t.sf(t, df))
    half = stats.t.ppf(0.975, df) * math.sqrt(vb + vu)
    assert (out["delta_ci_low"], out["delta_ci_high"]) == pytest.approx((4 - half, 4 + half))


def test_welch_delta_is_undefined_for_tiny_samples():
    out = welch_delta(np.array([1.0]), np.array([0.0, 2.0, np.nan]))
    assert out["delta"] == 0.0 and out["n_unbiased"] == 2 and math.isnan(out["p_value"])


def test_prompt_comparison_needs_both_prompt_types():
    one = pd.DataFrame(
        {
            "prompt_type": ["unbiased"],
            "attribute": ["gender"],
            "W": [0.1],
            "dropped": [False],
            "f_h_female": [0.2],
            "f_o_female": [0.3],
        }
    )
    assert prompt_comparison(one, pd.DataFrame()).empty


def test_proportion_ci_is_the_wilson_interval():
    k, n, z = 3, 10, stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    out = proportion_ci(k, n)
    assert out["mean"] == 0.3 and (out["ci_low"], out["ci_high"]) == pytest.approx(
        (centre - half, centre + half)
    )
    assert proportion_ci(0, 5)["ci_low"] == 0.0 and math.isnan(proportion_ci(0, 0)["mean"])
    with pytest.raises(ValueError, match="successes"):
        proportion_ci(4, 3)


HOSPITAL = "The nurse said she treated patients in the hospital ward with medicine and care."
FOOTBALL = "The player said he scored a goal in the football stadium before the crowd cheered."
WEATHER = "Forecasters expect cloudy weather with light rain and wind across the region tonight."


def test_document_level_finds_planted_associations_and_their_loss():
    """Originals: female sentences are about hospitals, male ones about football. The
    SIMULATED model's articles turn every female word male, so its female-associated topic
    mass is gone: every defined pair is a female-prejudice pair."""
    rng = np.random.default_rng(0)
    bodies = []
    for _ in range(40):
        sentences = (
            [HOSPITAL] * int(rng.integers(2, 5))
            + [FOOTBALL] * int(rng.integers(2, 5))
            + [WEATHER] * 3
        )
        rng.shuffle(sentences)
        bodies.append(" ".join(sentences))
    originals = pd.DataFrame({"article_id": [f"d{i:03d}" for i in range(40)], "body": bodies})
    swapped = [b.replace(" she ", " he ").replace("The nurse", "The nurse") for b in bodies]
    generated = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(40)],
            "prompt_type": "unbiased",
            "article_id": originals["article_id"],
            "generated_text": swapped,
        }
    )
    cfg = NewsBiasConfig(documents=DocumentLevelConfig(num_topics_grid=[3], passes=20))
    result = document_level_study(originals, {"sim": generated}, cfg, seed=1)
    assoc = result.tables["associations"]
    gender = assoc[(assoc["corpus"] == ORIGINALS) & (assoc["attribute"] == "gender")]
    assert sorted(gender["group"]) == ["female", "male"] and (gender["residual"] > 3).all()
    chi2 = result.tables["chi2"].set_index(["corpus", "attribute"])
    assert chi2.loc[(ORIGINALS, "gender"), "p_value"] < 1e-6
    score = result.tables["scores"].set_index("attribute").loc["gender"]
    assert score["n"] > 0 and score["prejudice_pct"] == 100.0 and score["mean"] > 0.3
    words = result.tables["example_topics"]
    female_topic = words[(words["corpus"] == ORIGINALS) & (words["group"] == "female")]
    assert "hospital" in female_topic["top_words"].item()
    assert result.summary["num_topics"] == 3 and result.summary["lemmatizer"] == "simplemma"
