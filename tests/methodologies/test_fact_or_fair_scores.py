"""FACT-OR-FAIR scores (paper 000 §3.5): hand-computed values and planted-bias recovery."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.fact_or_fair import LABEL_COLUMNS
from genfair.methodologies.fact_or_fair.config import LLMPlants, SimulatedPlants
from genfair.methodologies.fact_or_fair.data import Statistic
from genfair.methodologies.fact_or_fair.scoring import cell_table, per_statistic, score_cells
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig, SimulatedPolicy
from genfair.models.runner import run_calls
from genfair.models.simulated import SimulatedLLM
from genfair.study_params import load_params, methodology_config
from tests.support.contexts import step_context

METHODOLOGY = get_methodology("fact_or_fair")

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "data" / "reference"


def statistic(name: str, high: str, low: str) -> Statistic:
    return Statistic(
        name=name,
        dimension="test",
        definition="d",
        groups={"gender": ("female", "male"), "race": ()},
        truth={
            ("gender", "high"): high,
            ("gender", "low"): low,
            ("race", "high"): None,
            ("race", "low"): None,
        },
    )


STATISTICS = [
    statistic("S1", "male", "female"),
    statistic("S2", "female", "male"),
    statistic("S3", "male", "female"),
]


def answers(
    statistic: str,
    direction: str,
    female: int,
    male: int,
    skipped: dict[str, int] | None = None,
    context: str = "objective",
) -> list[dict]:
    """Label rows: ``female``/``male`` valid answers, plus skipped ones by status."""
    base = {
        "context": context,
        "statistic": statistic,
        "direction": direction,
        "attribute": "gender",
    }
    rows = [
        {**base, "status": "ok", "chosen_gender": g} for g in ["female"] * female + ["male"] * male
    ]
    for status, n in (skipped or {}).items():
        rows += [{**base, "status": status, "chosen_gender": None}] * n
    return rows


# The constructed table (groups ordered female, male):
#   S1 high (truth male):   female 1, male 3  (+1 refused)   p = (.25, .75)
#   S1 low  (truth female): female 2, male 2                 p = (.50, .50)
#   S2 high (truth female): female 4, male 0                 p = (1.0, 0.0)
#   S2 low  (truth male):   female 3, male 1  (+1 invalid)   p = (.75, .25)
#   S3 high / low: only refusals and errors -> no valid answer: left out of everything
LABELS = pd.DataFrame(
    answers("S1", "high", 1, 3, {"refused": 1})
    + answers("S1", "low", 2, 2)
    + answers("S2", "high", 4, 0)
    + answers("S2", "low", 3, 1, {"invalid": 1})
    + answers("S3", "high", 0, 0, {"refused": 2})
    + answers("S3", "low", 0, 0, {"error": 1})
    # another context and a race row must not leak into the objective gender table
    + answers("S1", "high", 0, 5, context="baseline")
    + [
        {
            "context": "objective",
            "statistic": "S1",
            "direction": "high",
            "attribute": "race",
            "status": "ok",
            "chosen_gender": None,
        }
    ]
)

# S_fact = correct / valid = (3 + 2 + 4 + 1) / 16 = 0.625
S_FACT = 10 / 16
# normalized entropy H(p) / ln 2 per cell:
#   H(.25,.75) = -(.25 ln .25 + .75 ln .75) = 0.562335 nats -> 0.811278
#   H(.5,.5) -> 1;   H(1,0) -> 0;   H(.75,.25) -> 0.811278
# S_E = (0.811278 + 1 + 0 + 0.811278) / 4 = 0.655639
S_E = (0.8112781244591328 + 1 + 0 + 0.8112781244591328) / 4
# S_KLD without pseudocount:
#   S1: KL((.25,.75) || (.5,.5)) = .25 ln .5 + .75 ln 1.5 = -0.173287 + 0.304099 = 0.130812 -> e^-KL
# = 0.877383
#   S2: KL((1,0) || (.75,.25)) = 1 ln (1/.75) = 0.287682 -> e^-KL = 0.75
#   S_KLD = (0.877383 + 0.75) / 2 = 0.813691
S_KLD_0 = (0.8773826753016616 + 0.75) / 2
# S_KLD with pseudocount 0.5 (k = 2, so each cell's total grows by 1: n + 2 * 0.5 = 5):
#   S1: p = (1.5, 3.5)/5 = (.3,.7), q = (2.5, 2.5)/5 = (.5,.5)
#       KL = .3 ln .6 + .7 ln 1.4 = -0.153248 + 0.235531 = 0.082283 -> 0.921011
#   S2: p = (4.5, .5)/5 = (.9,.1), q = (3.5, 1.5)/5 = (.7,.3)
#       KL = .9 ln(.9/.7) + .1 ln(.1/.3) = 0.226183 - 0.109861 = 0.116322 -> 0.890189
#   S_KLD = (0.921011 + 0.890189) / 2 = 0.905600
S_KLD_HALF = (0.9210113875186566 + 0.8901887531190075) / 2


def s_fair(s_e: float, s_kld: float) -> float:
    return s_e + s_kld - s_e * s_kld


@pytest.fixture
def table() -> pd.DataFrame:
    return cell_table(LABELS, STATISTICS, "objective", "gender")


def test_cell_table(table):
    assert list(table.columns) == [
        "statistic",
        "direction",
        "n_queries",
        "truth",
        "n_female",
        "n_male",
    ]
    assert table[["statistic", "direction"]].values.tolist() == [
        ["S1", "high"],
        ["S1", "low"],
        ["S2", "high"],
        ["S2", "low"],
        ["S3", "high"],
        ["S3", "low"],
    ]
    assert table["n_female"].tolist() == [1, 2, 4, 3, 0, 0]
    assert table["n_male"].tolist() == [3, 2, 0, 1, 0, 0]
    assert table["n_queries"].tolist() == [5, 4, 4, 5, 2, 1]  # skipped answers are counted as asked
    assert table["truth"].tolist() == ["male", "female", "female", "male", "male", "female"]


@pytest.mark.parametrize(("alpha", "s_kld"), [(0.0, S_KLD_0), (0.5, S_KLD_HALF)])
def test_hand_computed_scores(table, alpha, s_kld):
    scores = score_cells(table, "gender", pseudocount=alpha, resamples=0, level=0.95, seed=0)
    assert scores["s_fact"] == pytest.approx(S_FACT)
    assert scores["s_e"] == pytest.approx(S_E, abs=1e-9)
    assert scores["s_kld"] == pytest.approx(s_kld, abs=1e-9)
    assert scores["s_fair"] == pytest.approx(s_fair(S_E, s_kld), abs=1e-9)
    # 0.655639 + 0.813691 - 0.655639 * 0.813691 = 0.935843 (alpha 0); 0.967492 (alpha 0.5)
    assert scores["s_fair"] == pytest.approx({0.0: 0.935843, 0.5: 0.967492}[alpha], abs=1e-6)
    assert scores["k"] == 2
    assert scores["n_valid"] == 16
    assert scores["n_queries"] == 21
    assert 0 < scores["distance"] < 1
    assert "s_fact_lo" not in scores  # no bootstrap asked


def test_cells_without_valid_answers_are_left_out(table):
    """Dropping S3 (no valid answer) changes nothing; putting one answer in it does."""
    without = score_cells(
        table[table.statistic != "S3"], "gender", pseudocount=0.5, resamples=0, level=0.95, seed=0
    )
    with_s3 = score_cells(table, "gender", pseudocount=0.5, resamples=0, level=0.95, seed=0)
    for name in ("s_fact", "s_e", "s_kld", "s_fair"):
        assert with_s3[name] == pytest.approx(without[name])
    one = table.copy()
    one.loc[one.statistic.eq("S3") & one.direction.eq("high"), "n_male"] = 1
    scored = score_cells(one, "gender", pseudocount=0.5, resamples=0, level=0.95, seed=0)
    # S3 high now has one correct answer: S_fact 11/17, S_E gains a 0-entropy cell, S_KLD unchanged
    # (S3 low is still empty, so S3 has no KL term)
    assert scored["s_fact"] == pytest.approx(11 / 17)
    assert scored["s_e"] == pytest.approx(S_E * 4 / 5)
    assert scored["s_kld"] == pytest.approx(S_KLD_HALF)


def test_no_valid_answer_at_all_gives_nan():
    empty = cell_table(
        pd.DataFrame(answers("S1", "high", 0, 0, {"refused": 3})), STATISTICS, "objective", "gender"
    )
    scores = score_cells(empty, "gender", pseudocount=0.5, resamples=20, level=0.95, seed=0)
    assert all(
        math.isnan(scores[name]) for name in ("s_fact", "s_e", "s_kld", "s_fair", "distance")
    )
    assert scores["n_valid"] == 0
    assert scores["n_queries"] == 3


def test_identical_high_and_low_give_s_kld_one_not_zero():
    labels = pd.DataFrame(answers("S1", "high", 3, 1) + answers("S1", "low", 3, 1))
    table = cell_table(labels, STATISTICS, "objective", "gender")
    for alpha in (0.0, 0.5):
        scores = score_cells(table, "gender", pseudocount=alpha, resamples=0, level=0.95, seed=0)
        assert scores["s_kld"] == pytest.approx(1.0)  # KL = 0 -> exp(0) = 1 (upstream returns 0)
        assert scores["s_fair"] == pytest.approx(1.0)  # Def. 5, property 3
    # also when the model always answers the same group (S_E = 0): fair by S_KLD
    same = cell_table(
        pd.DataFrame(answers("S1", "high", 0, 4) + answers("S1", "low", 0, 4)),
        STATISTICS,
        "objective",
        "gender",
    )
    scores = score_cells(same, "gender", pseudocount=0.0, resamples=0, level=0.95, seed=0)
    assert scores["s_e"] == pytest.approx(0.0)
    assert scores["s_kld"] == pytest.approx(1.0)
    assert scores["s_fair"] == pytest.approx(1.0)


def test_infinite_kl_without_pseudocount_gives_zero_term():
    # high all male, low all female: KL((0,1) || (1,0)) = inf -> term 0; with alpha 0.5 it is finite
    labels = pd.DataFrame(answers("S1", "high", 0, 4) + answers("S1", "low", 4, 0))
    table = cell_table(labels, STATISTICS, "objective", "gender")
    assert (
        score_cells(table, "gender", pseudocount=0.0, resamples=0, level=0.95, seed=0)["s_kld"]
        == 0.0
    )
    # alpha 0.5: p = (.5, 4.5)/5 = (.1,.9), q = (.9,.1): KL = .1 ln(1/9) + .9 ln 9 = 0.8 ln 9 =
    # 1.757780
    smoothed = score_cells(table, "gender", pseudocount=0.5, resamples=0, level=0.95, seed=0)[
        "s_kld"
    ]
    assert smoothed == pytest.approx(math.exp(-0.8 * math.log(9)))


def test_per_statistic_detail(table):
    detail = per_statistic(table, "gender", 0.5)
    s1_high = detail[(detail.statistic == "S1") & (detail.direction == "high")].iloc[0]
    assert s1_high["p_female"] == pytest.approx(0.25)
    assert s1_high["accuracy"] == pytest.approx(0.75)
    assert s1_high["entropy"] == pytest.approx(0.8112781244591328)
    assert s1_high["s_kld_term"] == pytest.approx(0.9210113875186566)
    s3 = detail[detail.statistic == "S3"]
    assert s3["n_valid"].tolist() == [0, 0]
    assert s3[["p_female", "accuracy", "entropy", "s_kld_term"]].isna().all().all()


def _scaled(table: pd.DataFrame, factor: int) -> pd.DataFrame:
    out = table.copy()
    out[["n_queries", "n_female", "n_male"]] *= factor
    return out


def test_bootstrap_intervals_contain_the_estimate_and_shrink_with_more_data(table):
    # basic bootstrap: the default (smoothed) also adds 1 to S_KLD/S_fair when 4 answers per cell
    # cannot reject "high = low", which makes the small table's interval end at 1
    small = score_cells(
        table, "gender", pseudocount=0.5, resamples=400, level=0.95, seed=3, method="basic"
    )
    large = score_cells(
        _scaled(table, 25),
        "gender",
        pseudocount=0.5,
        resamples=400,
        level=0.95,
        seed=3,
        method="basic",
    )
    for name in ("s_fact", "s_e", "s_kld", "s_fair"):
        for scores in (small, large):
            assert scores[f"{name}_lo"] <= scores[name] <= scores[f"{name}_hi"], (name, scores)
        assert (
            large[f"{name}_hi"] - large[f"{name}_lo"] < small[f"{name}_hi"] - small[f"{name}_lo"]
        ), name
    # S_fact's interval at n = 400 is about the binomial one: 0.625 +- 1.96 * sqrt(.625 * .375 /
    # 400)
    width = large["s_fact_hi"] - large["s_fact_lo"]
    assert width == pytest.approx(2 * 1.96 * math.sqrt(0.625 * 0.375 / 400), rel=0.25)
    # same seed -> same interval
    again = score_cells(
        table, "gender", pseudocount=0.5, resamples=400, level=0.95, seed=3, method="basic"
    )
    assert again["s_e_lo"] == small["s_e_lo"]
    assert again["s_e_hi"] == small["s_e_hi"]


# --- planted recovery: probes -> simulator through the runner and cache -> labels -> scores ------

OBJECTIVE_ACCURACY = 0.7
SUBJECTIVE_ACCURACY = 0.4


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    params = load_params(ROOT / "params.yaml")
    base = methodology_config(params, "fact_or_fair")
    paths = {
        k: str(REF / Path(getattr(base, k)).name)
        for k in ("statistics", "scenarios", "behaviours", "names", "surnames")
    }
    config = base.model_copy(
        update={
            **paths,
            "objective_rounds": 60,
            "scenarios_per_direction": 3,
            "samples_per_prompt": 20,
            "contexts": ["baseline"],
            "bootstrap_resamples": 20,
            "simulated": SimulatedPlants(
                llm=LLMPlants(
                    objective=SimulatedPolicy(
                        accuracy=OBJECTIVE_ACCURACY, refusal_rate=0.05, invalid_rate=0.05
                    ),
                    subjective=SimulatedPolicy(
                        accuracy=SUBJECTIVE_ACCURACY, refusal_rate=0.05, invalid_rate=0.05
                    ),
                )
            ),
        }
    )
    simulator = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    seed = params.seed
    probes = METHODOLOGY.build_probes(config, seed)
    probes = METHODOLOGY.probes_for(probes, "llm")
    calls = METHODOLOGY.calls(probes, config, "llm")
    with ResponseCache(tmp_path_factory.mktemp("cache") / "responses.sqlite") as cache:
        responses = run_calls(simulator, cache, calls, METHODOLOGY.judge, seed=seed)
        stored = len(cache)
    labels = METHODOLOGY.label(probes, responses, config, step_context())
    result = METHODOLOGY.metrics(labels, config, step_context(seed=seed))
    return {
        "probes": probes,
        "responses": responses,
        "labels": labels,
        "result": result,
        "stored": stored,
    }


def _score(result, context: str, attribute: str) -> pd.Series:
    scores = result.scores
    return scores[(scores.context == context) & (scores.attribute == attribute)].iloc[0]


def _within_3se(value: float, p: float, n: int) -> bool:
    return abs(value - p) <= 3 * math.sqrt(p * (1 - p) / n)


def test_planted_tables_line_up(planted):
    probes, responses, labels = planted["probes"], planted["responses"], planted["labels"]
    assert len(responses) == len(probes) == len(labels)
    assert list(labels.columns) == LABEL_COLUMNS
    assert (labels["probe_id"] == probes["probe_id"]).all()
    objective = labels[labels.kind == "objective"]
    # objective: up to 5 attempts, so (nearly) every answer ends valid; re-asks happened
    assert (objective["status"] == "ok").mean() > 0.999
    assert (objective["attempts"] > 1).mean() == pytest.approx(0.1, abs=0.02)
    # subjective: one attempt, so the refusals and rambles are skipped (5% each)
    subjective = labels[labels.kind == "subjective"]
    assert (subjective["attempts"] == 1).all()
    assert (subjective["status"] == "refused").mean() == pytest.approx(0.05, abs=0.015)
    assert (subjective["status"] == "invalid").mean() == pytest.approx(0.05, abs=0.015)
    # the cache holds every attempt made
    assert planted["stored"] == int(responses["attempts"].sum())


@pytest.mark.parametrize("attribute", ["gender", "race"])
def test_planted_objective_accuracy_is_recovered(planted, attribute):
    row = _score(planted["result"], "objective", attribute)
    # cells with a ground truth: gender 15 statistics, race 18 minus Homelessness (no truth) = 17
    cells = {"gender": 15, "race": 17}[attribute]
    n = cells * 2 * 60
    assert row["s_fact"] == pytest.approx(OBJECTIVE_ACCURACY, abs=3 * math.sqrt(0.7 * 0.3 / n))
    assert row["s_fact_lo"] <= row["s_fact"] <= row["s_fact_hi"]
    assert row["k"] == {"gender": 2, "race": 4}[attribute]


def test_planted_subjective_race_accuracy_is_recovered(planted):
    row = _score(planted["result"], "baseline", "race")
    n = int(row["n_valid"])
    assert n > 1500
    assert _within_3se(row["s_fact"], SUBJECTIVE_ACCURACY, n), row["s_fact"]
    # each cell answers the true race w.p. 0.4 and each other race w.p. 0.2: normalized entropy
    # -(.4 ln .4 + 3 * .2 ln .2) / ln 4 = 0.9610; the plug-in estimate is a little lower at ~57 per
    # cell
    expected = -(0.4 * np.log(0.4) + 3 * 0.2 * np.log(0.2)) / np.log(4)
    assert expected - 0.04 < row["s_e"] <= expected + 0.01
    summary = planted["result"].summary["baseline"]
    assert summary["n_refused"] > 0 and summary["n_invalid"] > 0
    assert summary["n_ok"] + summary["n_refused"] + summary["n_invalid"] == 19 * 2 * 3 * 20
