"""FACT-OR-FAIR prime following (paper 000 §4.4, RQ3): hand-computed rates and tests, the
per-primed-group scores, and a planted prime-following simulator recovered end to end."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies import get_methodology
from genfair.methodologies.fact_or_fair.config import LLMPlants, SimulatedPlants
from genfair.methodologies.fact_or_fair.prime_following import (
    following_rate,
    prime_following,
    primed_scores,
)
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig, SimulatedPolicy
from genfair.models.runner import run_calls
from genfair.models.simulated import SimulatedLLM
from genfair.study_params import load_params, methodology_config
from tests.support.contexts import step_context

METHODOLOGY = get_methodology("fact_or_fair")
ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "data" / "reference"


def test_following_rate_hand_computed():
    # 7 of 10 at chance 1/2: P(X >= 7) = (120 + 45 + 10 + 1) / 1024 = 176/1024; two-sided = 0.34375
    out = following_rate(7, 10, 0.5)
    assert out["rate"] == 0.7
    assert out["excess"] == pytest.approx(0.2)
    assert out["p_value"] == pytest.approx(352 / 1024)
    assert out["ci_low"] < 0.7 < out["ci_high"]
    # 4 of 4 at chance 1/4: P(X = 4) = 1/256, and nothing on the other side is as unlikely
    assert following_rate(4, 4, 0.25)["p_value"] == pytest.approx(1 / 256)
    assert math.isnan(following_rate(0, 0, 0.25)["rate"])
    with pytest.raises(ValueError, match="0 <= followed <= n"):
        following_rate(5, 4, 0.5)


def _row(
    context,
    direction,
    primed_race,
    chosen_race,
    primed_gender="female",
    chosen_gender="male",
    status="ok",
):
    return {
        "context": context,
        "direction": direction,
        "status": status,
        "statistic": "S",
        "context_race": primed_race,
        "chosen_race": chosen_race,
        "context_gender": primed_gender,
        "chosen_gender": chosen_gender,
    }


LABELS = pd.DataFrame(
    [
        # attribution, race: high 2 of 3 followed, low 1 of 2 followed (+1 refused, ignored)
        _row("attribution", "high", "asian", "asian"),
        _row("attribution", "high", "black", "black"),
        _row("attribution", "high", "white", "asian"),
        _row("attribution", "low", "hispanic", "hispanic"),
        _row("attribution", "low", "asian", "white"),
        _row("attribution", "low", "asian", None, status="refused"),
        # in-group: gender followed 2 of 2
        _row("ingroup", "high", "white", "black", "male", "male"),
        _row("ingroup", "low", "black", "asian", "female", "female"),
        # baseline carries no prime and is not counted
        _row("baseline", "high", None, "asian", None, "male"),
    ]
)


def test_prime_following_per_context_attribute_and_direction():
    table = prime_following(LABELS).set_index(["context", "attribute", "direction"])
    race = table.loc[("attribution", "race", "all")]
    assert (race["n"], race["n_followed"], race["chance"]) == (5, 3, 0.25)
    assert race["p_value"] == pytest.approx(stats.binomtest(3, 5, 0.25).pvalue)
    assert table.loc[("attribution", "race", "high"), "rate"] == pytest.approx(2 / 3)
    assert table.loc[("attribution", "race", "low"), "rate"] == pytest.approx(1 / 2)
    # attribution gender: primed female, chosen male every time
    assert table.loc[("attribution", "gender", "all"), "rate"] == 0.0
    assert table.loc[("ingroup", "gender", "all"), "rate"] == 1.0
    assert table.loc[("ingroup", "race", "all"), "n_followed"] == 0
    assert "baseline" not in set(table.index.get_level_values("context"))


def test_primed_scores_split_by_primed_group():
    seen = []

    def score(subset, context, attribute):
        seen.append((context, attribute, len(subset)))
        return {"n": len(subset)}

    table = primed_scores(LABELS, score)
    asian = table[
        (table.context == "attribution") & (table.attribute == "race") & (table.primed == "asian")
    ]
    assert asian["n"].tolist() == [3]  # refused rows are passed on; scores skip them
    assert set(table[table.attribute == "gender"]["primed"]) == {"female", "male"}
    assert ("baseline", "race", 1) not in seen


# --- planted: a simulator that picks its primed race with probability Q -------------------------

Q = 0.4


def _run(tmp_path_factory, prime_following: float, contexts: list[str]):
    params = load_params(ROOT / "params.yaml")
    base = methodology_config(params, "fact_or_fair")
    paths = {
        k: str(REF / Path(getattr(base, k)).name)
        for k in ("statistics", "scenarios", "behaviours", "names", "surnames")
    }
    config = base.model_copy(
        update={
            **paths,
            "objective_rounds": 1,
            "scenarios_per_direction": 1,
            "samples_per_prompt": 16,
            "contexts": contexts,
            "bootstrap_resamples": 0,
            "simulated": SimulatedPlants(
                llm=LLMPlants(
                    objective=SimulatedPolicy(accuracy=0.8),
                    subjective=SimulatedPolicy(
                        accuracy=0.6, refusal_rate=0.02, prime_following=prime_following
                    ),
                )
            ),
        }
    )
    simulator = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    probes = METHODOLOGY.probes_for(METHODOLOGY.build_probes(config, params.seed), "llm")
    calls = METHODOLOGY.calls(probes, config, "llm")
    with ResponseCache(tmp_path_factory.mktemp("cache") / "responses.sqlite") as cache:
        responses = run_calls(simulator, cache, calls, METHODOLOGY.judge, seed=params.seed)
    labels = METHODOLOGY.label(probes, responses, config, step_context())
    return METHODOLOGY.metrics(labels, config, step_context(seed=params.seed))


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return _run(tmp_path_factory, Q, ["attribution", "ingroup"])


def test_a_model_that_always_follows_its_prime_looks_perfectly_fair_pooled(tmp_path_factory):
    """The issue's case: always the primed race. Pooled over the even rotation, every race is
    chosen equally often (S_E near 1); the prime-following rate is 1 and each primed group's
    S_E is 0."""
    result = _run(tmp_path_factory, 1.0, ["ingroup"])
    pooled = result.scores.set_index(["context", "attribute"]).loc[("ingroup", "race")]
    assert pooled["s_e"] > 0.9
    rate = result.tables["prime_following"].set_index(["context", "attribute", "direction"])
    assert rate.loc[("ingroup", "race", "all"), "rate"] == 1.0
    assert rate.loc[("ingroup", "race", "all"), "p_value"] < 1e-100
    primed = result.tables["primed_scores"]
    assert (primed[primed.attribute == "race"]["s_e"] == 0.0).all()


@pytest.mark.parametrize("context", ["attribution", "ingroup"])
def test_planted_prime_following_is_recovered(planted, context):
    rates = planted.tables["prime_following"].set_index(["context", "attribute", "direction"])
    race = rates.loc[(context, "race", "all")]
    # picks the primed race w.p. Q, else the accuracy rule, which over an even rotation of
    # the prime picks it w.p. 1/4: Q + (1 - Q) / 4 = 0.55
    expected = Q + (1 - Q) / 4
    n = int(race["n"])
    assert n > 550
    assert abs(race["rate"] - expected) <= 3 * math.sqrt(expected * (1 - expected) / n)
    assert race["ci_low"] <= race["rate"] <= race["ci_high"]
    assert race["p_value"] < 1e-6
    # the race prime says nothing about gender: 1/2, not rejected at 1e-3
    gender = rates.loc[(context, "gender", "all")]
    assert abs(gender["rate"] - 0.5) <= 3 * math.sqrt(0.25 / gender["n"])
    assert gender["p_value"] > 1e-3
    assert planted.summary["prime_following"][context]["race"]["rate"] == pytest.approx(
        race["rate"], abs=1e-6
    )


def test_planted_primed_scores_show_what_the_pooled_scores_hide(planted):
    scores = planted.scores.set_index(["context", "attribute"])
    primed = planted.tables["primed_scores"]
    part = primed[(primed.context == "ingroup") & (primed.attribute == "race")].set_index("primed")
    assert set(part.index) == {"asian", "black", "hispanic", "white"}
    # every valid answer of the pooled row is in exactly one primed group's row
    assert part["n_valid"].sum() == scores.loc[("ingroup", "race"), "n_valid"]
    # per primed race, the answers lean to that race, so S_E is lower than the pooled S_E
    assert (part["s_e"] < scores.loc[("ingroup", "race"), "s_e"]).all()
    assert list(planted.scores.columns).count("primed") == 0  # the main table keeps its rows
