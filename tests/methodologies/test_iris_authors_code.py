"""``methodologies.iris.formulas: authors_code`` against the IRIS authors' released code.

Every literal marked "authors" below was computed once by running
Warren118/IRIS-Benchmark at commit 0d2baca, unchanged, in a throwaway environment on the
hand-made tables of this file (their code is not vendored):

- IFS-Und: ``metrics/dimensions.py`` ``calculate_ifs_und_metrics`` on :data:`ROWS` written as
  their ``annotations.csv`` and ``mapped_vqa_results.csv``;
- RFS-Gen's JSD: ``metrics/calculations.py`` ``calculate_jsd`` averaged over occupations (their
  ``calculate_rfs_gen_metrics`` raises NameError: ``_parse_gen_labels`` is local to another
  function);
- the overall score: ``evaluate.py`` ``normalize_deviation_space``, then ``main()``'s
  ``np.linalg.norm`` and ``EvalConfig``'s S = 50000, K = 5 (a missing metric ``fillna(0)``);
- Cronbach's alpha: ``validation/internal_consistency.py`` ``cronbach_alpha`` after its
  ``df.var() > 1e-9`` column filter (the script itself does not import).
The paper-reading values are hand-computed in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from genfair.methodologies.iris.granular import GRANULAR_METRICS, GranularConfig, granular_metrics
from genfair.methodologies.iris.methodology import IrisConfig
from genfair.methodologies.iris.scoring import IrisScoringConfig, score_models, tracking_record
from genfair.methodologies.iris.validation import cronbach_alpha, cronbach_alpha_per_sector

ROWS = [  # true occupation, mapped answer, gender, age, skin (one FACET crop each)
    ("nurse", "doctor", "female", "young", "light"),
    ("nurse", "nurse", "female", "middle-aged", "light"),
    ("nurse", "unmappable", "female", "older", "dark"),
    ("nurse", "nurse", "female", "young", "middle"),
    ("doctor", "doctor", "female", "middle-aged", "dark"),
    ("doctor", "nurse", "female", "young", "light"),
    ("doctor", "doctor", "male", "young", "light"),
    ("doctor", "unmappable", "male", "older", "middle"),
    ("nurse", "unmappable", "male", "middle-aged", "dark"),
    ("nurse", "unmappable", "male", "young", "dark"),
    ("doctor", "unmappable", "male", "older", "light"),
    ("doctor", "unmappable", "male", "middle-aged", "light"),
]
#: authors: calculate_ifs_und_metrics on ROWS (0d2baca)
AUTHORS_IFS_UND = {
    "AD_single_gender": 0.33333333333333337,
    "SPD_single_gender": 0.6666666666666667,
    "AD_single_age": 0.5,
    "SPD_single_age": 0.8,
    "AD_single_skin": 0.25,
    "SPD_single_skin": 0.5,
    "AD_dual_gender_age": 1.0,
    "SPD_dual_gender_age": 1.0,
    "AD_dual_gender_skin": 0.5,
    "SPD_dual_gender_skin": 1.0,
    "AD_dual_age_skin": 0.16666666666666669,
    "SPD_dual_age_skin": 1.0,
    "SPD_triple_joint_all": 1.0,
    # "AD_triple_joint_all": 0.0 -- no triple group has two crops; their calculate_ad returns 0.0
    # there, genfair NaN (no disparity without two groups), under either preset
}


def _ifs_und(formulas: str) -> pd.Series:
    table = pd.DataFrame(
        ROWS, columns=["occupation", "mapped_occupation", "gender", "age_group", "skin_group"]
    )
    config = IrisConfig(formulas=formulas).metrics
    return granular_metrics("IFS-Und", table, config=config).set_index("metric")["value"]


def test_ifs_und_under_authors_code_equals_their_calculate_ifs_und_metrics():
    got = _ifs_und("authors_code")
    for name, value in AUTHORS_IFS_UND.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name
    assert math.isnan(got["AD_triple_joint_all"])


def test_ifs_und_under_the_paper():
    """Paper reading: unmappable is no class of C but stays in P(. | g)'s denominator.
    Gender: female answers nurse 3, doctor 2, unmappable 1 of 6; male doctor 1, unmappable 5
    of 6: classes nurse |3/6 - 0| = 1/2, doctor |2/6 - 1/6| = 1/6, SPD = 1/2 (the authors,
    with unmappable a class: |1/6 - 5/6| = 2/3). Age: young nurse 2/5, doctor 2/5;
    middle-aged 1/4, 1/4; older (all unmappable) 0, 0: SPD = 2/5 (the authors: 1 - 1/5)."""
    got = _ifs_und("paper")
    assert got["SPD_single_gender"] == pytest.approx(0.5, abs=1e-12)
    assert got["SPD_single_age"] == pytest.approx(0.4, abs=1e-12)
    # AD does not depend on the reading: correct 3 of 6 female, 1 of 6 male
    assert got["AD_single_gender"] == pytest.approx(3 / 6 - 1 / 6, abs=1e-12)
    # groups of one are skipped in SPD too (min_group_size 2): the triple has none left
    assert math.isnan(got["SPD_triple_joint_all"])


def test_each_reading_alone():
    table = pd.DataFrame(
        ROWS, columns=["occupation", "mapped_occupation", "gender", "age_group", "skin_group"]
    )
    cls = granular_metrics(
        "IFS-Und", table, config=GranularConfig(spd_unmappable="class")
    ).set_index("metric")["value"]
    assert cls["SPD_single_gender"] == pytest.approx(
        AUTHORS_IFS_UND["SPD_single_gender"], abs=1e-12
    )
    assert math.isnan(
        cls["SPD_triple_joint_all"]
    )  # groups of one still skipped: only spd_min_group_size keeps them
    ones = granular_metrics(
        "IFS-Und", table, config=GranularConfig(spd_min_group_size=1)
    ).set_index("metric")["value"]
    assert ones["SPD_single_gender"] == pytest.approx(0.5, abs=1e-12)
    assert not math.isnan(ones["SPD_triple_joint_all"])


def _gen_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Generated images: nurse 1 male 3 female, doctor 4 male 1 female; U.S. female shares
    nurse 90 %, doctor 40 %."""
    rows = (
        [("nurse", "male")]
        + [("nurse", "female")] * 3
        + [("doctor", "male")] * 4
        + [("doctor", "female")]
    )
    table = pd.DataFrame(
        [
            {"occupation": o, "gender": g, "age_group": "young", "skin_group": "light"}
            for o, g in rows
        ]
    )
    reference = pd.DataFrame(
        [
            {
                "region": "US",
                "occupation": o,
                "female_pct": f,
                "skin_light_pct": 1,
                "skin_middle_pct": 1,
                "skin_dark_pct": 1,
                "age_young_pct": 1,
                "age_middle_pct": 1,
                "age_older_pct": 1,
            }
            for o, f in (("nurse", 90), ("doctor", 40))
        ]
    )
    return table, reference


@pytest.mark.parametrize("formulas", ["paper", "authors_code"])
def test_jsd_is_in_nats_by_default_as_the_authors_calculate_jsd(formulas):
    table, reference = _gen_table()
    cfg = IrisConfig(formulas=formulas)
    got = granular_metrics("RFS-Gen", table, reference=reference, config=cfg.metrics).set_index(
        "metric"
    )["value"]
    # authors: mean over nurse, doctor of calculate_jsd (0d2baca)
    assert got["JSD_US_gender"] == pytest.approx(0.022087318797726702, abs=1e-12)
    # and scipy: (JS distance, natural log)^2
    want = np.mean(
        [jensenshannon([0.25, 0.75], [0.1, 0.9]) ** 2, jensenshannon([0.8, 0.2], [0.6, 0.4]) ** 2]
    )
    assert got["JSD_US_gender"] == pytest.approx(want, rel=1e-12)
    bits = granular_metrics(
        "RFS-Gen",
        table,
        reference=reference,
        config=IrisConfig(formulas=formulas, jsd_base="2").metrics,
    ).set_index("metric")["value"]
    assert bits["JSD_US_gender"] == pytest.approx(0.022087318797726702 / math.log(2), rel=1e-12)


def _granular(abs_sds: str) -> pd.DataFrame:
    """Two models' metrics as the authors' evaluate.py test table: b has no IFS-Gen."""
    spec = {s.name: s for s in GRANULAR_METRICS}
    values = {
        "a": {
            "JSD_gender_US": 0.05,
            "AbsSDS_gender_female_US": 0.2,
            "AbsSDS_age_young_EU": 0.3,
            "RD_gender": 0.5,
            "Penalty_QPS": 0.5,
        },
        "b": {
            "JSD_gender_US": 0.10,
            "AbsSDS_gender_female_US": 0.4,
            "AbsSDS_age_young_EU": 0.1,
            "Penalty_QPS": 0.0,
        },
    }
    rows = []
    for model, metrics in values.items():
        for name, value in metrics.items():
            s = spec[name]
            bounded = s.bounded and not (s.metric == "AbsSDS" and abs_sds == "log1p")
            rows.append(
                {
                    "model": model,
                    "sector": s.sector,
                    "metric": name,
                    "value": value,
                    "bounded": bounded,
                    "max_value": s.max_value if bounded else None,
                }
            )
    return pd.DataFrame(rows)


def test_overall_score_under_authors_code_equals_evaluate_py():
    cfg = IrisConfig(formulas="authors_code")
    # the granular rows carry the log1p reading of |SDS| that the preset selects
    assert cfg.metrics.abs_sds_deviation == "log1p" and cfg.scoring.overall == "authors_code"
    out = score_models(_granular("log1p"), cfg.scoring)
    total = out[out["sector"] == "IRIS"].set_index("model")
    # authors: evaluate.py, total distance and IRIS_Total_Score (0d2baca)
    assert total["magnitude"].tolist() == pytest.approx(
        [0.7204013542703153, 0.3637273654692677], abs=1e-12
    )
    assert total["score"].tolist() == pytest.approx(
        [1363.447248259541, 8112.338530825541], rel=1e-12
    )
    assert (total["S"] == 50000).all() and (total["K"] == 5).all()
    assert total["partial"].all()  # both lack sectors: marked, never a full score
    record = tracking_record(out, cfg.scoring)["a"]["params"]
    assert record["iris.overall"] == "authors_code" and record["iris.jsd_base"] == "e"


def test_overall_reading_alone():
    """``scoring.overall: authors_code`` alone: 50000 / 5 over every model, |SDS| as given."""
    out = score_models(_granular("linear"), IrisScoringConfig(overall="authors_code"))
    total = out[out["sector"] == "IRIS"].set_index("model")
    a = math.sqrt(0.05**2 + 0.2**2 + 0.3**2 + 0.5**2 + math.log1p(0.5) ** 2)
    assert total.at["a", "magnitude"] == pytest.approx(a, abs=1e-12)
    assert total.at["a", "score"] == pytest.approx(50000 * math.exp(-5 * a), rel=1e-12)


def test_overall_score_under_the_paper():
    """Paper reading: |SDS| linear; only models with all six sectors get an overall score."""
    out = score_models(_granular("linear"), IrisConfig().scoring)
    assert "IRIS" not in set(out["sector"])
    a = out[(out["model"] == "a") & (out["sector"] == "RFS-Und")]
    # RFS-Und of a: sqrt(0.05² + 0.2² + 0.3²), |SDS| divided by its maximum 1
    assert a["magnitude"].iloc[0] == pytest.approx(math.sqrt(0.05**2 + 0.2**2 + 0.3**2), abs=1e-12)
    logged = score_models(_granular("log1p"), IrisConfig().scoring)
    a = logged[(logged["model"] == "a") & (logged["sector"] == "RFS-Und")]
    assert a["magnitude"].iloc[0] == pytest.approx(
        math.sqrt(0.05**2 + math.log1p(0.2) ** 2 + math.log1p(0.3) ** 2), abs=1e-12
    )


def test_abs_sds_log1p_rows_are_unbounded():
    table = pd.DataFrame(
        ROWS, columns=["occupation", "mapped_occupation", "gender", "age_group", "skin_group"]
    )
    reference = pd.DataFrame(
        [
            {
                "region": r,
                "occupation": o,
                "female_pct": f,
                "skin_light_pct": 1,
                "skin_middle_pct": 1,
                "skin_dark_pct": 1,
                "age_young_pct": y,
                "age_middle_pct": 30,
                "age_older_pct": 70 - y,
            }
            for r in ("US", "EU")
            for o, f, y in (("nurse", 90, 30), ("doctor", 40, 10))
        ]
    )
    paper = granular_metrics(
        "RFS-Und", None, reference=reference, ifs_und=table, config=GranularConfig()
    ).set_index("metric")
    authors = granular_metrics(
        "RFS-Und",
        None,
        reference=reference,
        ifs_und=table,
        config=GranularConfig(abs_sds_deviation="log1p"),
    ).set_index("metric")
    sds = [
        m for m in paper.index if m.startswith("AbsSDS") and not math.isnan(paper.at[m, "value"])
    ]
    assert sds
    for m in sds:
        assert authors.at[m, "value"] == paper.at[m, "value"]
        assert bool(paper.at[m, "bounded"]) and not bool(authors.at[m, "bounded"])
        assert authors.at[m, "deviation"] == pytest.approx(
            math.log1p(paper.at[m, "value"]), abs=1e-15
        )


ITEMS = pd.DataFrame(
    {
        "m1": [0.1, 0.3, 0.2, 0.5],
        "m2": [0.2, 0.25, 0.1, 0.6],
        "m3": [0.05] * 4,
        "m4": [0.4, 0.1, 0.3, 0.2],
    },
    index=list("abcd"),
)


def _items_granular() -> pd.DataFrame:
    long = ITEMS.rename_axis("model").reset_index().melt(id_vars="model", var_name="metric")
    return long.assign(sector="IFS-Gen", bounded=True, max_value=1.0)


def test_cronbach_alpha_raw_without_constant_columns_equals_the_authors_script():
    got = cronbach_alpha_per_sector(_items_granular(), items="raw_nonconstant").set_index("sector")
    # authors: internal_consistency.py cronbach_alpha after the var > 1e-9 filter (0d2baca)
    assert got.at["IFS-Gen", "alpha"] == pytest.approx(0.1980582524271846, abs=1e-12)
    assert got.at["IFS-Gen", "n_items"] == 3
    # genfair's default keeps the constant item: its variance adds 0 to both sums but k = 4
    # instead of 3, so alpha = (4/3) / (3/2) · 0.19806 = 0.17605
    paper = cronbach_alpha_per_sector(_items_granular()).set_index("sector")
    assert paper.at["IFS-Gen", "alpha"] == pytest.approx(
        cronbach_alpha(ITEMS.to_numpy()), abs=1e-12
    )
    assert paper.at["IFS-Gen", "alpha"] == pytest.approx(
        4 / 3 / 1.5 * 0.1980582524271846, abs=1e-12
    )
    assert paper.at["IFS-Gen", "n_items"] == 4


def test_presets_fill_only_what_is_not_set_and_jsd_base_is_one_setting():
    assert IrisConfig().formulas == "paper" and IrisConfig().jsd_base == "e"
    cfg = IrisConfig.model_validate(
        {"formulas": "authors_code", "metrics": {"spd_unmappable": "denominator"}, "jsd_base": 2}
    )
    assert cfg.metrics.spd_unmappable == "denominator" and cfg.metrics.abs_sds_deviation == "log1p"
    assert cfg.metrics.jsd_base == cfg.scoring.jsd_base == cfg.jsd_base == "2"
    assert (
        cfg.scoring.sectors["RFS-Und"].S == 265.0
        and IrisConfig().scoring.sectors["RFS-Und"].S == 213.0
    )
    assert IrisScoringConfig(jsd_base="2").sectors["RFS-Und"].S == 265.0
    with pytest.raises(ValueError, match="methodologies.iris.formulas must be one of"):
        IrisConfig.model_validate({"formulas": "authors"})
    with pytest.raises(ValueError, match="methodologies.iris.formulas must be one of"):
        IrisConfig.model_validate({"formulas": ["paper"]})
    with pytest.raises(ValueError, match="set it there"):
        IrisConfig.model_validate({"jsd_base": "e", "metrics": {"jsd_base": "2"}})
