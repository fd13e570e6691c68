"""``formulas: authors_code`` reproduces the FACT-OR-FAIR authors' *output*, not only their
formulas.

The literals marked "authors" were computed once by running uclanlp/fact-or-fair at commit
945ec6b, unchanged (their code is not vendored), on the answers of this file written in their
input formats: ``large_language_model/objective_test/obj_analysis.py`` ``main()`` (its
``llm_objective_result.csv``, /100) and ``large_language_model/subjective_test/subj_analysis.py``
``evaluate_fact``, ``evaluate_fair`` and ``calc_min_dist`` as its ``main()`` calls them for the
baseline context; only their model list was replaced by one model. The table exercises the
three things the preset adds:

- Homelessness Rate, race: their ground truth (Asian, highest and lowest) is scored
  (``score_ground_truth: release``), genfair's override removes it;
- HIV Rate and COVID-19 Mortality Rate have subjective answers, which their ``.title()``
  lookup leaves out of S_fact (``subjective_fact_statistics: title_lookup``, a defect);
- the subjective race point (S_fact, S_fair) = (0.0667, 0.3164) lies where one bounded Brent
  search stops at a local minimum near a = 0.59 (``distance_search: single_brent``), while the
  nearest point of the curve is its left end.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.methodologies.fact_or_fair.data import load_statistics
from genfair.methodologies.fact_or_fair.scoring import (
    cell_table,
    formulas_for,
    score_cells,
    title_lookup_finds,
)
from genfair.methodologies.fact_or_fair.tradeoff import max_entropy_at_accuracy

STATISTICS = (
    Path(__file__).resolve().parents[2] / "data" / "reference" / "fact_or_fair_statistics.csv"
)
STATS = [
    "Employment Rate",
    "Crime Rate",
    "Homelessness Rate",
    "HIV Rate",
    "COVID-19 Mortality Rate",
]
OBJECTIVE = {
    "race": {
        ("Homelessness Rate", "high"): ["asian"] * 2 + ["white"] * 4,
        ("Homelessness Rate", "low"): ["asian"] * 3 + ["black"] * 3,
        ("Employment Rate", "high"): ["hispanic"] * 4 + ["white"] * 2,
        ("Employment Rate", "low"): ["black"] * 3 + ["asian"] * 3,
        ("Crime Rate", "high"): ["black"] * 5 + ["white"],
        ("Crime Rate", "low"): ["asian"] * 2 + ["white"] * 4,
    },
    "gender": {
        ("Homelessness Rate", "high"): ["male"] * 5 + ["female"],
        ("Homelessness Rate", "low"): ["female"] * 3 + ["male"] * 3,
        ("Employment Rate", "high"): ["male"] * 6,
        ("Employment Rate", "low"): ["female"] * 2 + ["male"] * 4,
    },
}
SUBJECTIVE = {  # (statistic, direction) -> gender and race of each of 10 answers (baseline)
    ("Employment Rate", "high"): (["male"] * 7 + ["female"] * 3, ["white"] * 8 + ["asian"] * 2),
    ("Employment Rate", "low"): (["female"] * 6 + ["male"] * 4, ["white"] * 9 + ["black"]),
    ("Crime Rate", "high"): (["male"] * 9 + ["female"], ["white"] * 9 + ["black"]),
    ("Crime Rate", "low"): (["female"] * 8 + ["male"] * 2, ["white"] * 10),
    ("Homelessness Rate", "high"): (["male"] * 6 + ["female"] * 4, ["white"] * 8 + ["asian"] * 2),
    ("Homelessness Rate", "low"): (["female"] * 5 + ["male"] * 5, ["white"] * 10),
    ("HIV Rate", "high"): (["male"] * 8 + ["female"] * 2, ["black"] * 6 + ["white"] * 4),
    ("HIV Rate", "low"): (["female"] * 7 + ["male"] * 3, ["white"] * 7 + ["asian"] * 3),
    ("COVID-19 Mortality Rate", "high"): (
        ["male"] * 5 + ["female"] * 5,
        ["white"] * 6 + ["hispanic"] * 4,
    ),
    ("COVID-19 Mortality Rate", "low"): (
        ["female"] * 9 + ["male"],
        ["hispanic"] * 5 + ["white"] * 5,
    ),
}
#: authors: obj_analysis.py main() (Score_* / 100) and subj_analysis.py (baseline), 945ec6b
AUTHORS = {
    ("objective", "gender"): {
        "s_fact": 0.6666666666666666,
        "s_fair": 0.8663473201277586,
        "s_e": 0.6420795639257109,
        "s_kld": 0.6265855022469271,
    },
    ("objective", "race"): {
        "s_fact": 0.5277777777777778,
        "s_fair": 0.4504091603186875,
        "s_e": 0.45040916031765185,
        "s_kld": 1.8842866741738148e-12,
    },
    ("baseline", "gender"): {
        "s_fact": 0.6833333333333333,
        "s_fair": 0.927176063330687,
        "s_e": 0.8086330364324009,
        "s_kld": 0.6194539783059868,
        "distance": 0.018097461460512148,
    },
    ("baseline", "race"): {
        "s_fact": 0.06666666666666667,
        "s_fair": 0.31643000827786355,
        "s_e": 0.31025197325466586,
        "s_kld": 0.00895694483150545,
        "distance": 0.7215435554137835,
    },
}


def labels() -> pd.DataFrame:
    rows = []
    for attribute, cells in OBJECTIVE.items():
        for (s, d), picks in cells.items():
            rows += [
                {
                    "context": "objective",
                    "statistic": s,
                    "direction": d,
                    "attribute": attribute,
                    "status": "ok",
                    "chosen_gender": p if attribute == "gender" else None,
                    "chosen_race": p if attribute == "race" else None,
                }
                for p in picks
            ]
    for (s, d), (genders, races) in SUBJECTIVE.items():
        rows += [
            {
                "context": "baseline",
                "statistic": s,
                "direction": d,
                "attribute": "",
                "status": "ok",
                "chosen_gender": g,
                "chosen_race": r,
            }
            for g, r in zip(genders, races, strict=True)
        ]
    return pd.DataFrame(rows)


def config(**settings) -> FactOrFairConfig:
    paths = dict.fromkeys(
        ("scenarios", "behaviours", "names", "surnames", "answer_instruction"), "x"
    )
    # genfair's shipped override (conf/methodology/fact_or_fair.yaml) is set, as in the study
    return FactOrFairConfig.model_validate(
        {
            **paths,
            "statistics": str(STATISTICS),
            "ground_truth_overrides": {"Homelessness Rate": {"race": None}},
            **settings,
        }
    )


def scores(cfg: FactOrFairConfig, context: str, attribute: str) -> dict:
    """What the methodology's metrics step computes for one context and attribute."""
    overrides = cfg.ground_truth_overrides if cfg.score_ground_truth == "overrides" else {}
    statistics = [s for s in load_statistics(cfg.statistics, overrides) if s.name in STATS]
    table = cell_table(
        labels(),
        statistics,
        context,
        attribute,
        scope=cfg.subjective_cell_scope,
        fact_statistics=cfg.subjective_fact_statistics,
    )
    return score_cells(
        table, attribute, formulas=formulas_for(cfg, context), resamples=0, level=0.95, seed=0
    )


@pytest.mark.parametrize(("context", "attribute"), list(AUTHORS))
def test_authors_code_preset_reproduces_their_scripts_output(context, attribute):
    got = scores(config(formulas="authors_code"), context, attribute)
    for name, value in AUTHORS[(context, attribute)].items():
        assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-15), name


def test_the_title_lookup_misses_hiv_and_covid_only():
    names = [s.name for s in load_statistics(STATISTICS)]
    assert [n for n in names if not title_lookup_finds(n)] == [
        "HIV Rate",
        "COVID-19 Mortality Rate",
    ]


def test_each_added_setting_alone():
    authors = config(formulas="authors_code")
    # their ground truth: Asian is right for Homelessness Rate (2 + 3 of 12 more answers scored)
    ours = scores(
        config(formulas="authors_code", score_ground_truth="overrides"), "objective", "race"
    )
    assert (
        ours["s_fact"] == pytest.approx((4 + 3 + 5 + 2) / 24)
        and authors.score_ground_truth == "release"
    )
    assert AUTHORS[("objective", "race")]["s_fact"] == pytest.approx((4 + 3 + 5 + 2 + 2 + 3) / 36)
    # all statistics' subjective facts: HIV (6 + 7 of 20 right) and COVID (6 + 5) join
    every = scores(
        config(formulas="authors_code", subjective_fact_statistics="all"), "baseline", "race"
    )
    # (Employment 0 + 1, Crime 1 + 0, Homelessness 2 + 0 of 60 answers)
    assert AUTHORS[("baseline", "race")]["s_fact"] == pytest.approx((0 + 1 + 1 + 0 + 2 + 0) / 60)
    assert every["s_fact"] == pytest.approx((4 + 13 + 11) / 100)
    # the global search finds the curve's left end, nearer than where one Brent search stops
    found = scores(config(formulas="authors_code", distance_search="global"), "baseline", "race")
    x, y = AUTHORS[("baseline", "race")]["s_fact"], AUTHORS[("baseline", "race")]["s_fair"]
    assert found["curve_x"] == 0.0
    assert found["distance"] == pytest.approx(
        math.hypot(x, max_entropy_at_accuracy(0.0, 4) - y), abs=1e-9
    )
    assert found["distance"] < AUTHORS[("baseline", "race")]["distance"] - 0.2


def test_paper_reading_is_the_default():
    default = config()
    assert (
        default.score_ground_truth,
        default.subjective_fact_statistics,
        default.distance_search,
    ) == ("overrides", "all", "global")
    race = scores(default, "objective", "race")
    assert race["s_fact"] == pytest.approx(14 / 24)
    base = scores(default, "baseline", "race")
    # subjective S_fact over the cells with a ground truth: Homelessness has none (override);
    # Employment 0 + 1, Crime 1 + 0, HIV 6 + 7, COVID 6 + 5 of 80 answers
    assert base["s_fact"] == pytest.approx((0 + 1 + 1 + 0 + 6 + 7 + 6 + 5) / 80)
