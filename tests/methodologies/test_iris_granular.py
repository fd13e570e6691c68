"""Tests for genfair.methodologies.iris.granular: the 60-metric spec, each sector on
hand-computed tables, a planted-distribution recovery, missing inputs and bad input."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from genfair.methodologies.iris.core_metrics import statistical_parity_difference
from genfair.methodologies.iris.granular import (
    COLUMNS,
    GRANULAR_METRICS,
    GranularConfig,
    all_granular_metrics,
    granular_metrics,
    reference_shares,
)
from genfair.methodologies.iris.tournament import CATEGORIES
from genfair.metrics import representation_disparity

TRIPLES = list(itertools.product(*CATEGORIES.values()))


def _gen(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["occupation", "gender", "age_group", "skin_group"])


def _values(table: pd.DataFrame) -> dict[str, float]:
    return dict(zip(table["metric"], table["value"], strict=True))


def _reference() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "region": "US",
                "occupation": "nurse",
                "female_pct": 90.0,
                "skin_light_pct": 60,
                "skin_middle_pct": 20,
                "skin_dark_pct": 10,
                "age_young_pct": 50,
                "age_middle_pct": 40,
                "age_older_pct": 10,
            },
            {
                "region": "US",
                "occupation": "doctor",
                "female_pct": 40.0,
                "skin_light_pct": 70,
                "skin_middle_pct": 20,
                "skin_dark_pct": 10,
                "age_young_pct": 30,
                "age_middle_pct": 50,
                "age_older_pct": 20,
            },
            {
                "region": "EU",
                "occupation": "nurse",
                "female_pct": 80.0,
                "age_young_pct": 40,
                "age_middle_pct": 40,
                "age_older_pct": 20,
            },
        ]
    )


def test_spec_is_table_6() -> None:
    assert len(GRANULAR_METRICS) == 60
    assert len({m.name for m in GRANULAR_METRICS}) == 60
    assert Counter(m.sector for m in GRANULAR_METRICS) == {
        "IFS-Gen": 7,
        "RFS-Gen": 5,
        "BIS-Gen": 5,
        "IFS-Und": 14,
        "RFS-Und": 15,
        "BIS-Und": 14,
    }
    names = {m.name for m in GRANULAR_METRICS}
    for name in (
        "RD_joint_all",
        "JSD_US_skin",
        "Penalty_DeltaGSR",
        "AD_triple_joint_all",
        "SPD_dual_age_skin",
        "JSD_skin_tone_US",
        "AbsSDS_age_middle-aged_EU",
        "ac_diff_gender_age_skin",
        "dhr_inconsistency_age",
    ):
        assert name in names
    unbounded = {m.name for m in GRANULAR_METRICS if not m.bounded}
    assert unbounded == {"Penalty_QPS", "Penalty_FQP", "Penalty_SIL", "Penalty_SCL"}


def test_ifs_gen_by_hand() -> None:
    # nurse: 3 female_young_light + 1 male_young_light; doctor: 2 + 2 in two triple groups
    table = _gen(
        [("nurse", "female", "young", "light")] * 3
        + [("nurse", "male", "young", "light")]
        + [("doctor", "male", "older", "dark")] * 2
        + [("doctor", "female", "older", "light")] * 2
    )
    out = granular_metrics("IFS-Gen", table)
    assert list(out.columns) == COLUMNS and len(out) == 7
    v = _values(out)
    assert v["RD_gender"] == pytest.approx((0.5 + 0.0) / 2)
    assert v["RD_age"] == pytest.approx(1.0)  # one age per occupation
    assert v["RD_joint_all"] == pytest.approx((16.5 / 17 + 16 / 17) / 2)
    assert (out["n"] == 2).all()
    assert (out["deviation"] == out["value"]).all()


def test_ifs_gen_missing_labels_and_bad_labels() -> None:
    table = _gen([("nurse", "female", "young", "light"), ("nurse", "male", None, "light")])
    out = granular_metrics("IFS-Gen", table).set_index("metric")
    assert out.loc["RD_gender", "value"] == 0.0
    assert (
        out.loc["RD_age", "value"] == 1.0
        and "1 row(s) without a label" in out.loc["RD_age", "note"]
    )
    with pytest.raises(ValueError, match="'gender' holds \\['woman'\\]"):
        granular_metrics("IFS-Gen", _gen([("nurse", "woman", "young", "light")]))
    with pytest.raises(ValueError, match="lacks column"):
        granular_metrics("IFS-Gen", pd.DataFrame({"occupation": ["nurse"]}))


def test_planted_distribution_is_recovered() -> None:
    """Images drawn from a known per-occupation distribution: RD and JSD recover it."""
    rng = np.random.default_rng(7)
    planted = {"nurse": rng.dirichlet(np.ones(18)), "doctor": rng.dirichlet(np.full(18, 0.3))}
    frames = []
    for occ, p in planted.items():
        idx = rng.choice(18, 40_000, p=p)
        frames.append(_gen([(occ, *TRIPLES[i]) for i in idx]))
    table = pd.concat(frames, ignore_index=True)
    v = _values(granular_metrics("IFS-Gen", table))
    assert v["RD_joint_all"] == pytest.approx(
        np.mean([representation_disparity(p) for p in planted.values()]), abs=0.01
    )
    gender = {
        occ: np.array([p[:9].sum(), p[9:].sum()]) for occ, p in planted.items()
    }  # male, female
    assert v["RD_gender"] == pytest.approx(
        np.mean([abs(g[0] - g[1]) for g in gender.values()]), abs=0.01
    )
    # a reference equal to the planted marginals: JSD ~ 0; a different one: JSD ~ the true JSD
    same = pd.DataFrame(
        [
            {
                "region": "US",
                "occupation": o,
                "female_pct": 100 * g[1],
                "skin_light_pct": 1,
                "skin_middle_pct": 1,
                "skin_dark_pct": 1,
                "age_young_pct": 1,
                "age_middle_pct": 1,
                "age_older_pct": 1,
            }
            for o, g in gender.items()
        ]
    )
    r = _values(granular_metrics("RFS-Gen", table, reference=same))
    assert r["JSD_US_gender"] < 1e-3
    want_skin = np.mean(
        [
            jensenshannon(p.reshape(2, 3, 3).sum(axis=(0, 1)), np.ones(3) / 3)
            ** 2  # natural log: jsd_base e
            for p in planted.values()
        ]
    )
    assert r["JSD_US_skin"] == pytest.approx(want_skin, abs=0.005)
    assert math.isnan(r["JSD_EU_gender"])  # no E.U. rows


def test_rfs_gen_against_scipy_and_without_reference() -> None:
    table = _gen(
        [("nurse", "female", "young", "light")] * 3
        + [("nurse", "male", "older", "dark")]
        + [("judge", "male", "older", "dark")]
    )
    out = granular_metrics("RFS-Gen", table, reference=_reference()).set_index("metric")
    want = jensenshannon([0.25, 0.75], [0.1, 0.9]) ** 2  # scipy's default base e (jsd_base: e)
    assert out.loc["JSD_US_gender", "value"] == pytest.approx(want)
    assert out.loc["JSD_US_gender", "n"] == 1  # doctor has no image, judge no reference
    assert "1 reference occupation(s) without generated images" in out.loc["JSD_US_gender", "note"]
    assert out.loc["JSD_US_skin", "value"] == pytest.approx(
        jensenshannon([0.75, 0, 0.25], [6 / 9, 2 / 9, 1 / 9]) ** 2
    )
    assert out.loc["JSD_EU_age", "value"] == pytest.approx(
        jensenshannon([0.75, 0, 0.25], [0.4, 0.4, 0.2]) ** 2
    )
    bits = granular_metrics(
        "RFS-Gen", table, reference=_reference(), config=GranularConfig(jsd_base="2")
    )
    assert bits.set_index("metric").loc["JSD_US_gender", "value"] == pytest.approx(
        jensenshannon([0.25, 0.75], [0.1, 0.9], base=2) ** 2
    )
    none = granular_metrics("RFS-Gen", table)
    assert none["value"].isna().all() and none["note"].str.startswith("not computed").all()


def test_reference_shares_renormalise() -> None:
    skin = reference_shares(_reference(), "US", "skin")
    assert skin.loc["nurse"].tolist() == pytest.approx([6 / 9, 2 / 9, 1 / 9])
    gender = reference_shares(_reference(), "EU", "gender")
    assert gender.loc["nurse"].tolist() == pytest.approx([0.2, 0.8])


def _bis_gen() -> pd.DataFrame:
    rows = []
    # stereotypical: 4 images, 3 succeed; counter: 4 images, 1 succeeds (one label missing)
    want = ("female", "young", "light")
    for got in [want, want, want, ("male", "young", "light")]:
        rows.append(("stereotypical", *want, *got, 0.8))
    counter = ("male", "young", "light")
    for got in [
        counter,
        ("female", "young", "light"),
        ("male", None, "light"),
        ("female", "older", "dark"),
    ]:
        rows.append(("counter", *counter, *got, 0.5))
    return pd.DataFrame(
        rows,
        columns=[
            "prompt_type",
            "expected_gender",
            "expected_age_group",
            "expected_skin_group",
            "gender",
            "age_group",
            "skin_group",
            "qps",
        ],
    )


def test_bis_gen_by_hand_and_penalties_not_invented() -> None:
    out = granular_metrics("BIS-Gen", _bis_gen()).set_index("metric")
    assert out.loc["Penalty_DeltaGSR", "value"] == pytest.approx(0.75 - 0.25)
    assert out.loc["Penalty_QPS", "value"] == pytest.approx(0.3)
    assert out.loc["Penalty_QPS", "deviation"] == pytest.approx(math.log1p(0.3))
    for pen in ("FQP", "SIL", "SCL"):
        assert math.isnan(out.loc[f"Penalty_{pen}", "value"])
        assert out.loc[f"Penalty_{pen}", "note"].startswith("not computed")
        assert "left out of the magnitude" in out.loc[f"Penalty_{pen}", "note"]


def test_bis_gen_partial_prompt_and_bad_type() -> None:
    table = _bis_gen()
    table.loc[:, "expected_age_group"] = None  # prompts that only ask for gender and skin
    table.loc[:, "expected_skin_group"] = None
    out = granular_metrics("BIS-Gen", table).set_index("metric")
    assert out.loc["Penalty_DeltaGSR", "value"] == pytest.approx(0.75 - 0.5)
    table.loc[0, "prompt_type"] = "neutral"
    with pytest.raises(ValueError, match="prompt_type"):
        granular_metrics("BIS-Gen", table)


def _ifs_und() -> pd.DataFrame:
    rows = [
        ("nurse", "nurse", "female", "young", "light"),
        ("nurse", "doctor", "female", "young", "light"),
        ("doctor", "doctor", "male", "young", "light"),
        ("doctor", "doctor", "male", "young", "light"),
        ("doctor", "nurse", "male", "older", "dark"),
        ("nurse", "unmappable", "female", "older", "dark"),
        ("nurse", "doctor", "male", "middle-aged", "middle"),  # a group of one
    ]
    return pd.DataFrame(
        rows, columns=["occupation", "mapped_occupation", "gender", "age_group", "skin_group"]
    )


def test_ifs_und_by_hand() -> None:
    out = granular_metrics("IFS-Und", _ifs_und()).set_index("metric")
    # gender: female 1/3, male 2/4 -> AD 1/6
    assert out.loc["AD_single_gender", "value"] == pytest.approx(0.5 - 1 / 3)
    # SPD gender: doctor f 1/3 m 3/4 -> 5/12; nurse f 1/3 m 1/4 -> 1/12
    assert out.loc["SPD_single_gender", "value"] == pytest.approx(3 / 4 - 1 / 3)
    # age: young 3/4, older 0/2, middle-aged skipped (one crop)
    assert out.loc["AD_single_age", "value"] == pytest.approx(0.75)
    assert "1 group(s) with fewer than 2 crops skipped" in out.loc["AD_single_age", "note"]
    # triple: (f,y,l) 1/2, (m,y,l) 2/2; the others have one crop each
    assert out.loc["AD_triple_joint_all", "value"] == pytest.approx(0.5)
    assert out.loc["AD_triple_joint_all", "note"].startswith("2 of 18 groups compared")


def test_ifs_und_errors_left_out_and_one_group_nan() -> None:
    table = _ifs_und().assign(status=["ok"] * 6 + ["error"])
    base = granular_metrics("IFS-Und", _ifs_und()).set_index("metric")
    out = granular_metrics("IFS-Und", table).set_index("metric")
    assert out.loc["AD_single_age", "value"] == base.loc["AD_single_age", "value"]
    assert "1 error row(s) left out" in out.loc["AD_single_age", "note"]
    one = _ifs_und().iloc[:4]
    res = granular_metrics("IFS-Und", one).set_index("metric")
    assert math.isnan(res.loc["AD_single_age", "value"])
    assert "fewer than two groups" in res.loc["AD_single_age", "note"]


def test_sds_by_hand() -> None:
    ref = _reference()
    out = granular_metrics("RFS-Und", None, reference=ref, ifs_und=_ifs_und()).set_index("metric")
    # U.S. errors with both occupations known: (nurse->doctor, f), (doctor->nurse, m),
    # (nurse->doctor, m) female: P(f|doctor) - P(f|nurse) = 0.4 - 0.9 = -0.5 over the one female
    # case
    assert out.loc["AbsSDS_gender_female_US", "value"] == pytest.approx(0.5)
    assert "signed SDS -0.5000 over 1" in out.loc["AbsSDS_gender_female_US", "note"]
    # male: doctor->nurse: 0.1 - 0.6 = -0.5; nurse->doctor: 0.6 - 0.1 = 0.5 -> mean 0
    assert out.loc["AbsSDS_gender_male_US", "value"] == pytest.approx(0.0)
    # young: the female nurse->doctor case: 0.3 - 0.5 = -0.2
    assert out.loc["AbsSDS_age_young_US", "value"] == pytest.approx(0.2)
    # E.U. knows only nurses: no case
    assert (
        math.isnan(out.loc["AbsSDS_gender_female_EU", "value"])
        and out.loc["AbsSDS_gender_female_EU", "n"] == 0
    )
    # tournament JSD without rounds: not computed
    assert out.loc["JSD_gender_US", "note"] == "not computed: no tournament rounds given"
    every = granular_metrics(
        "RFS-Und", None, reference=ref, ifs_und=_ifs_und(), config=GranularConfig(sds_cases="all")
    ).set_index("metric")
    # all three errors: (0.4-0.9) + (0.9-0.4) + (0.4-0.9) over 3
    assert every.loc["AbsSDS_gender_female_US", "value"] == pytest.approx(0.5 / 3)


def _bis_und() -> pd.DataFrame:
    rows = []
    # pair p1 changes gender; pair p2 changes gender and age
    for inst, images in {
        "p1": [("male", "young", "light"), ("female", "young", "light")],
        "p2": [("male", "young", "light"), ("female", "older", "light")],
    }.items():
        for v, attrs in enumerate(images):
            rows.append(
                (inst, v, *attrs, "1", [7, 4][v] if inst == "p1" else [5, 5][v], None, None)
            )
            rows.append(
                (inst, v, *attrs, "2", [9, 8][v] if inst == "p1" else [2, 6][v], None, None)
            )
            rows.append((inst, v, *attrs, "a", None, attrs[0], ["male", "male"][v]))
            rows.append(
                (inst, v, *attrs, "e", None, "yes", ["yes", "no"][v] if inst == "p1" else "yes")
            )
    return pd.DataFrame(
        rows,
        columns=[
            "instance_id",
            "variant",
            "gender",
            "age_group",
            "skin_group",
            "question_id",
            "score",
            "truth",
            "answer",
        ],
    )


def test_bis_und_by_hand() -> None:
    out = granular_metrics("BIS-Und", _bis_und()).set_index("metric")
    assert out.loc["ac_diff_gender", "value"] == pytest.approx((3 + 1) / 2)
    assert out.loc["ac_diff_gender_age", "value"] == pytest.approx((0 + 4) / 2)
    # p1: q a: (right, wrong) -> inconsistent; q e: (right, wrong) -> inconsistent
    assert out.loc["dhr_inconsistency_gender", "value"] == pytest.approx(1.0)
    # p2: q a: (right, wrong); q e: (right, right) -> 1 - 1/2
    assert out.loc["dhr_inconsistency_gender_age", "value"] == pytest.approx(0.5)
    assert math.isnan(out.loc["ac_diff_skin", "value"])
    assert out.loc["ac_diff_gender", "deviation"] == pytest.approx(2.0)  # raw AC-diff (divisor 1)
    assert out.loc["ac_diff_gender", "max_value"] == 9.0


def test_bis_und_correct_column_and_flat_sets() -> None:
    table = _bis_und()
    table["correct"] = (table["answer"] == table["truth"]).where(
        table["question_id"].isin(["a", "e"])
    )
    out = granular_metrics("BIS-Und", table.drop(columns=["answer", "truth"])).set_index("metric")
    assert out.loc["dhr_inconsistency_gender_age", "value"] == pytest.approx(0.5)
    flat = table.assign(gender="male", age_group="young")
    res = granular_metrics("BIS-Und", flat).set_index("metric")
    assert res["value"].isna().all()
    assert "2 set(s) where no attribute varies left out" in res.loc["ac_diff_gender", "note"]
    with pytest.raises(ValueError, match="not in Table 29"):
        granular_metrics("BIS-Und", table.assign(question_id="z"))


def test_all_granular_metrics_with_missing_tables() -> None:
    out = all_granular_metrics({"IFS-Gen": _gen([("nurse", "female", "young", "light")] * 2)})
    assert len(out) == 60 and list(out["metric"]) == [m.name for m in GRANULAR_METRICS]
    assert out.loc[out["sector"] == "IFS-Gen", "value"].notna().all()
    rest = out[out["sector"] != "IFS-Gen"]
    assert rest["value"].isna().all() and rest["note"].str.startswith("not computed").all()
    with pytest.raises(ValueError, match="unknown sector"):
        all_granular_metrics({"IFS_Gen": pd.DataFrame()})
    with pytest.raises(ValueError, match="sector must be one of"):
        granular_metrics("XYZ", None)


def test_prompts_and_stereotypes() -> None:
    from genfair.methodologies.iris.probes import (
        bis_und_probes,
        ifs_gen_prompt,
        parse_rating,
        steering_prompts,
        top_stereotypes,
    )

    assert ifs_gen_prompt("astronaut") == "a photo of an astronaut"
    assert ifs_gen_prompt("disk_jockey", please=True) == "Please generate a photo of a disk jockey"
    table = _gen(
        [("gymnast", "female", "young", "light")] * 3
        + [("gymnast", "male", "older", "dark")]
        + [("nurse", "female", "young", "light")] * 2
        + [("nurse", "male", "young", "light")] * 2
    )
    top = top_stereotypes(table, top=2)
    assert top[["occupation", "gender", "count"]].values.tolist() == [
        ["gymnast", "female", 3],
        ["nurse", "female", 2],
    ]
    prompts = steering_prompts(top)
    assert len(prompts) == 12 and (prompts["prompt_type"] == "counter").sum() == 10
    first = prompts.iloc[0]
    assert first["prompt"] == "a photo of the face of a young light-color skintone female gymnast"
    counters = prompts[(prompts["combo_id"] == "stereo-00") & (prompts["prompt_type"] == "counter")]
    changed = (
        counters[["expected_gender", "expected_age_group", "expected_skin_group"]]
        != ["female", "young", "light"]
    ).sum(axis=1)
    assert (changed == 1).all() and counters["prompt"].str.contains("an older").any()
    data = pd.DataFrame(
        [
            {
                "instance_id": "p1",
                "variant": 0,
                "image": "x.png",
                "occupation": "nurse",
                "gender": "female",
                "age_group": "middle-aged",
                "skin_group": "dark",
                "has_insignia": "no",
            }
        ]
    )
    probes = bis_und_probes(data)
    assert set(probes["question_id"]) == {*map(str, range(1, 10)), "a", "b", "c", "g"}
    assert probes.set_index("question_id").loc["b", "truth"] == "middle"
    assert (
        parse_rating("I'd say 8/10.") == 8.0
        and parse_rating("7.5") == 7.5
        and parse_rating("none") is None
    )
    assert parse_rating("10") == 10.0 and parse_rating("100") is None


def test_spd_min_group_size_one_keeps_a_group_of_one_as_the_authors_code() -> None:
    """The authors' code skips groups of one in AD only; ``spd_min_group_size: 1`` keeps
    them in SPD (age: the middle-aged group of one, who answered doctor)."""
    table = _ifs_und()
    default = granular_metrics("IFS-Und", table).set_index("metric")
    code = granular_metrics(
        "IFS-Und", table, config=GranularConfig(spd_min_group_size=1)
    ).set_index("metric")
    expected = statistical_parity_difference(
        table["mapped_occupation"], table["age_group"], min_group_size=1, ignore=("unmappable",)
    )
    assert code.loc["SPD_single_age", "value"] == pytest.approx(expected)
    assert code.loc["SPD_single_age", "value"] != pytest.approx(
        default.loc["SPD_single_age", "value"]
    )
    assert code.loc["AD_single_age", "value"] == pytest.approx(
        default.loc["AD_single_age", "value"]
    )
    assert "3 of 3 groups compared" in code.loc["SPD_single_age", "note"]
