"""Tests for genfair.methodologies.iris.scoring: hand values, published Tables 3 and 23-28,
errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import ValidationError

from genfair.methodologies.iris.scoring import (
    DEFAULT_SECTORS,
    RFS_UND_GENFAIR_S,
    SECTORS,
    TABLE9,
    IrisScoringConfig,
    calibrate_scale,
    dimension_score,
    magnitude,
    mbti_code,
    model_summary,
    normalize_frame,
    normalize_metric,
    score_models,
    tracking_record,
)

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parents[2]
#: the paper's foundational cohort (§A.3.2): the seven UMLLMs
UMLLMS = ["Bagel", "BLIP3-o", "Harmon", "Janus-Pro", "Show-o", "UniWorld-V1", "VILA-U"]
#: the published magnitudes are rounded to 4 decimals, the scores to 2
MAG_HALF_ULP, SCORE_HALF_ULP = 0.5e-4, 0.5e-2


@pytest.fixture(scope="module")
def published() -> pd.DataFrame:
    return pd.read_csv(DATA / "iris_published_scores.csv")


@pytest.fixture(scope="module")
def table3() -> pd.DataFrame:
    return pd.read_csv(DATA / "iris_table3.csv", keep_default_na=True)


# ---------------------------------------------------------------------------- normalize_metric


@pytest.mark.parametrize(
    ("value", "bounded", "top", "expected"),
    [
        (0.3, True, 1.0, 0.3),
        (0.5, True, 2.0, 0.25),
        (0.0, True, 1.0, 0.0),
        (1.0, True, 1.0, 1.0),
        (math.e - 1, False, None, 1.0),
        (0.0, False, None, 0.0),
        (3.0, False, 99.0, math.log(4.0)),  # max_value ignored for unbounded metrics
    ],
)
def test_normalize_metric_hand_values(value, bounded, top, expected):
    assert normalize_metric(value, bounded, top) == pytest.approx(expected, abs=1e-15)


def test_normalize_metric_divisor():
    # AC-diff on the 1-10 scale: checked against 9, divided by 1 (Table 28 uses raw values)
    assert normalize_metric(1.5, True, 9.0, divisor=1.0) == 1.5
    assert normalize_metric(1.5, True, 9.0, divisor=3.0) == 0.5
    with pytest.raises(ValueError, match="exceeds max_value 9"):
        normalize_metric(9.5, True, 9.0, divisor=1.0)
    with pytest.raises(ValueError, match="divisor must be > 0"):
        normalize_metric(1.5, True, 9.0, divisor=0.0)
    frame = normalize_frame(
        pd.DataFrame(
            {
                "model": ["a", "a", "a"],
                "sector": ["BIS-Und", "BIS-Und", "BIS-Gen"],
                "metric": ["ac", "dhr", "p"],
                "value": [1.5, 0.3, 0.5],
                "bounded": [True, True, False],
                "max_value": [9.0, 1.0, None],
                "norm_divisor": [1.0, float("nan"), None],
            }
        )
    )
    assert frame["u"].tolist() == pytest.approx([1.5, 0.3, math.log(1.5)])


@pytest.mark.parametrize(
    ("value", "bounded", "top", "match"),
    [
        (float("nan"), True, 1.0, "finite"),
        (-0.1, True, 1.0, "non-negative"),
        (-0.1, False, None, "non-negative"),
        (1.2, True, 1.0, "exceeds max_value"),
        (0.2, True, None, "max_value is required"),
        (0.2, True, 0.0, "max_value must be > 0"),
        ("x", False, None, "must be a number"),
    ],
)
def test_normalize_metric_rejects_bad_input(value, bounded, top, match):
    with pytest.raises(ValueError, match=match):
        normalize_metric(value, bounded, top)


# ---------------------------------------------------------------------------- magnitude


def test_magnitude_hand_values():
    assert magnitude([3, 4]) == 5.0
    assert magnitude([0.0]) == 0.0
    assert magnitude([1, 2, 2]) == 3.0
    assert magnitude([3, 4], weights=[1, 0.5]) == pytest.approx(math.sqrt(13))


@pytest.mark.parametrize("seed", range(5))
def test_magnitude_matches_hypot(seed):
    u = np.random.default_rng(seed).uniform(0, 2, size=60)
    assert magnitude(u) == pytest.approx(math.hypot(*u), rel=1e-12)


@pytest.mark.parametrize(
    ("values", "kwargs", "match"),
    [
        ([], {}, "must not be empty"),
        ([0.1, float("nan")], {}, "finite"),
        ([0.1, -0.2], {}, "non-negative"),
        ([[0.1, 0.2]], {}, "1-D"),
        ([0.1, 0.2], {"weights": [1.0]}, "one entry per value"),
        ([0.1, 0.2], {"weights": [1.0, -1.0]}, "non-negative"),
    ],
)
def test_magnitude_rejects_bad_input(values, kwargs, match):
    with pytest.raises(ValueError, match=match):
        magnitude(values, **kwargs)


# ---------------------------------------------------------------------------- dimension_score


def test_dimension_score_hand_values():
    assert dimension_score(0.5, 100, 2) == pytest.approx(100 / math.e)
    assert dimension_score(0.0, 85, 1) == 85.0
    # Table 23, Bagel: 58000 · exp(-3 · 2.1848)
    assert dimension_score(2.1848, 58000, 3) == pytest.approx(82.58, abs=0.01)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((-0.1, 10, 1), "magnitude must be >= 0"),
        ((float("nan"), 10, 1), "magnitude must be finite"),
        ((0.1, 0, 1), "S .* must be > 0"),
        ((0.1, 10, 0), "K .* must be > 0"),
        ((0.1, 10, float("inf")), "K must be finite"),
    ],
)
def test_dimension_score_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        dimension_score(*args)


# ---------------------------------------------------------------------------- calibrate_scale


def test_calibrate_scale_hand_value():
    # median of exp(-[0, 1, 2]) is e^-1, so S = 60 e
    assert calibrate_scale([0, 1, 2], 1.0) == pytest.approx(60 * math.e)
    assert calibrate_scale([0.5], 2.0, target=50) == pytest.approx(50 * math.e)


@pytest.mark.parametrize("n", [1, 2, 7, 10])
def test_calibrate_scale_round_trip(n):
    rng = np.random.default_rng(n)
    m, K = rng.uniform(0, 3, size=n), rng.uniform(0.5, 5)
    S = calibrate_scale(m, K, target=60)
    assert np.median([dimension_score(x, S, K) for x in m]) == pytest.approx(60, rel=1e-12)


def test_calibrate_scale_recovers_table9_within_rounding(published):
    """§A.2.4: S puts the median UMLLM at about 60. Calibrating on Tables 23-28's UMLLM
    magnitudes with Table 9's K gives S within 4% of Table 9's (IFS-Und: 173.8 vs 180)."""
    for sector in SECTORS:
        m = published[(published["sector"] == sector) & published["model"].isin(UMLLMS)][
            "magnitude"
        ]
        assert len(m) == 7
        S = calibrate_scale(m.to_numpy(), TABLE9[sector]["K"])
        assert S == pytest.approx(TABLE9[sector]["S"], rel=0.04), sector
    ifs_gen = published[(published["sector"] == "IFS-Gen") & published["model"].isin(UMLLMS)][
        "magnitude"
    ]
    assert round(calibrate_scale(ifs_gen.to_numpy(), 3), -3) == 58000


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([], 1.0), "must not be empty"),
        (([0.1, float("nan")], 1.0), "finite"),
        (([0.1], 0.0), "K .* must be > 0"),
        (([0.1], 1.0, 0.0), "target must be > 0"),
    ],
)
def test_calibrate_scale_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        calibrate_scale(*args)


# ---------------------------------------------------------------------------- mbti_code


@pytest.mark.parametrize(
    ("scores", "tau", "code"),
    [
        ((82.58, 69.13, 60.91), 60, "UAF"),  # Bagel, generation
        ((60.0, 60.0, 60.0), 60, "UAF"),  # exactly tau: the positive trait
        ((59.999, 60.0, 60.0), 60, "HAF"),
        ((60.0 * (1 - 1e-12), 60.0, 60.0), 60, "UAF"),  # round-off of a calibrated median model
        ((60.0, 59.999, 60.0), 60, "UDF"),
        ((60.0, 60.0, 59.999), 60, "UAR"),
        ((0.0, 0.0, 0.0), 60, "HDR"),
        ((59.87, 40.68, 64.97), 60, "HDF"),  # VILA-U, generation (Table 3 prints UDF)
        ((55.0, 55.0, 55.0), 50, "UAF"),
        ((273.17, 80.46, 50.42), 60, "UAR"),
    ],
)
def test_mbti_code_rule(scores, tau, code):
    assert mbti_code(*scores, tau=tau) == code


def test_mbti_code_rejects_bad_input():
    with pytest.raises(ValueError, match="RFS score must be finite"):
        mbti_code(70, float("nan"), 70)
    with pytest.raises(ValueError, match="BIS score must be >= 0"):
        mbti_code(70, 70, -1)
    with pytest.raises(ValueError, match="tau must be finite"):
        mbti_code(70, 70, 70, tau=float("inf"))


# ---------------------------------------------------------------------------- published tables


def test_reproduces_tables_23_to_28_scores_from_magnitudes(published):
    """Every score column of Tables 23-28 from its published magnitude with Table 9's S, K.
    Tolerance: half a unit of the score's last digit plus the magnitude's rounding
    propagated through the score (|dS/dM| = K · S)."""
    assert sorted(published["table"].unique()) == [23, 24, 25, 26, 27, 28]
    assert len(published) == 57
    for row in published.itertuples(index=False):
        S, K = TABLE9[row.sector]["S"], TABLE9[row.sector]["K"]
        score = dimension_score(row.magnitude, S, K)
        tolerance = SCORE_HALF_ULP + K * score * MAG_HALF_ULP + 1e-9
        assert abs(score - row.score) <= tolerance, (row.table, row.model, score, row.score)


def test_magnitudes_of_tables_23_24_28_from_their_components():
    """Magnitude = L2 norm of the published component columns (RD values in Table 23, the
    five JSDs in Table 24, the six AC-Diff/DHR level norms in Table 28). Tolerance: the
    components' and the magnitude's rounding, propagated to first order."""
    components = pd.read_csv(DATA / "iris_published_components.csv")
    published = pd.read_csv(DATA / "iris_published_scores.csv").set_index(["table", "model"])
    assert set(components["table"]) == {23, 24, 28}
    for (table, model), part in components.groupby(["table", "model"]):
        v = part["value"].to_numpy()
        m = magnitude(v)
        tolerance = MAG_HALF_ULP * (1 + v.sum() / m) + 1e-12
        assert abs(m - published.loc[(table, model), "magnitude"]) <= tolerance, (table, model)


def test_table3_scores_equal_appendix_tables(published, table3):
    t3 = table3.melt(
        id_vars="model", value_vars=list(SECTORS), var_name="sector", value_name="t3"
    ).dropna()
    appendix = published.replace({"model": {"FLUX-1.dev": "FLUX.1-dev"}})
    both = appendix.merge(t3, on=["model", "sector"], how="outer", validate="one_to_one")
    assert len(both) == 57 and both[["score", "t3"]].notna().all().all()
    assert (both["score"] == both["t3"]).all()


def test_table3_codes_against_the_rule(table3):
    """§A.3's rule reproduces 6 of Table 3's 7 generation codes (VILA-U: IFS-Gen 59.87 < 60
    yet printed U) and only 1 of its 7 understanding codes (VILA-U): see docs/methodology.md."""
    umllm = table3[table3["model"].isin(UMLLMS)]
    rule = {
        task: {
            r.model: mbti_code(
                getattr(r, f"IFS_{task}"), getattr(r, f"RFS_{task}"), getattr(r, f"BIS_{task}")
            )
            for r in umllm.rename(columns=lambda c: c.replace("-", "_")).itertuples(index=False)
        }
        for task in ("Gen", "Und")
    }
    gen_wrong = sorted(
        m
        for m, code in zip(umllm["model"], umllm["gen_code"], strict=True)
        if rule["Gen"][m] != code
    )
    und_wrong = sorted(
        m
        for m, code in zip(umllm["model"], umllm["und_code"], strict=True)
        if rule["Und"][m] != code
    )
    assert gen_wrong == ["VILA-U"]
    assert und_wrong == sorted(set(UMLLMS) - {"VILA-U"})
    assert rule["Und"] == {
        "Bagel": "UAR",
        "BLIP3-o": "UAF",
        "Harmon": "UDR",
        "Janus-Pro": "HDF",
        "Show-o": "UDF",
        "UniWorld-V1": "HAR",
        "VILA-U": "HAF",
    }


# ---------------------------------------------------------------------------- score_models


def _granular(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["model", "sector", "metric", "value", "bounded", "max_value"]
    )


def _six_sectors(model: str, level: float, extra: list[tuple] | None = None) -> list[tuple]:
    """One bounded metric per sector with value ``level`` (u = level)."""
    return [(model, s, f"m_{s}", level, True, 1.0) for s in SECTORS] + (extra or [])


def test_score_models_hand_computed():
    granular = _granular(
        [
            ("a", "IFS-Gen", "RD_gender", 0.3, True, 1.0),
            ("a", "IFS-Gen", "RD_age", 0.4, True, 1.0),
            ("a", "BIS-Gen", "Penalty_QPS", math.e - 1, False, None),
            ("a", "BIS-Gen", "Penalty_FQP", float("nan"), False, None),
            ("a", "RFS-Gen", "JSD", 0.5, True, 2.0),
        ]
    )
    out = score_models(granular).set_index("sector")
    assert list(out.index) == ["IFS-Gen", "RFS-Gen", "BIS-Gen"]  # no Und sectors, no IRIS row
    assert out.at["IFS-Gen", "magnitude"] == pytest.approx(0.5)
    assert out.at["IFS-Gen", "score"] == pytest.approx(58000 * math.exp(-1.5))
    assert out.at["RFS-Gen", "magnitude"] == pytest.approx(0.25)
    assert out.at["BIS-Gen", "magnitude"] == pytest.approx(1.0)
    assert out.at["BIS-Gen", "score"] == pytest.approx(85 / math.e)
    assert out.at["BIS-Gen", "n_metrics"] == 1 and out.at["BIS-Gen", "n_missing"] == 1
    assert (out["S"] == [58000, 132, 85]).all() and (out["K"] == [3, 3, 1]).all()
    # 58000 e^-1.5 = 12941 (U), 132 e^-0.75 = 62.35 (A), 85/e = 31.27 (R)
    # BIS-Gen lacks FQP: a partial sector, so the code carries the mark
    assert list(out["partial"]) == [False, False, True]
    assert set(out["gen_code"]) == {"UAR (partial)"} and out["und_code"].isna().all()
    assert out["gen_code_partial"].all() and not out["und_code_partial"].any()
    assert set(out["mode"]) == {"table9"}


def test_score_models_overall_is_norm_of_all_metrics():
    rows = _six_sectors(
        "a",
        0.2,
        [
            ("a", "IFS-Gen", "second", 0.1, True, 1.0),
            ("a", "BIS-Und", "gap", float("nan"), True, 1.0),
        ],
    )
    rows += _six_sectors("b", 0.3) + _six_sectors("c", 0.4)
    out = score_models(_granular(rows), IrisScoringConfig(total_decay=2.0))
    a = out[out["model"] == "a"].set_index("sector")
    sector_norm = math.sqrt((a.loc[list(SECTORS), "magnitude"] ** 2).sum())
    assert a.at["IRIS", "magnitude"] == pytest.approx(sector_norm)
    assert a.at["IRIS", "magnitude"] == pytest.approx(math.sqrt(6 * 0.04 + 0.01))
    assert a.at["IRIS", "n_metrics"] == 7 and a.at["IRIS", "n_missing"] == 1
    # a's BIS-Und lost a metric: that sector, a's overall score and its Und code are partial
    assert a.at["BIS-Und", "partial"] and a.at["IRIS", "partial"] and not a.at["IFS-Und", "partial"]
    assert a.at["IRIS", "und_code"].endswith(" (partial)") and not a.at[
        "IRIS", "gen_code"
    ].endswith(" (partial)")
    # S_tot calibrated: the median model (b, D = 0.3 sqrt 6) scores exactly target
    iris = out[out["sector"] == "IRIS"].set_index("model")
    assert iris.at["b", "score"] == pytest.approx(60)
    assert iris.at["b", "S"] == pytest.approx(60 * math.exp(2 * 0.3 * math.sqrt(6)))
    assert (iris["K"] == 2.0).all()
    assert iris.at["a", "score"] > 60 > iris.at["c", "score"]


def test_score_models_calibrate_mode_and_cohort():
    rows = (
        _six_sectors("a", 0.1)
        + _six_sectors("b", 0.2)
        + _six_sectors("c", 0.3)
        + _six_sectors("ctrl", 0.0)
    )
    rows = [
        r for r in rows if not (r[0] == "ctrl" and r[1].endswith("Und"))
    ]  # a generation-only control
    config = IrisScoringConfig(mode="calibrate", cohort=["a", "b", "c"], total_scale=100.0)
    out = score_models(_granular(rows), config)
    sectors = out[out["sector"] != "IRIS"]
    for sector, part in sectors.groupby("sector"):
        cohort = part[part["model"] != "ctrl"]
        assert cohort["score"].median() == pytest.approx(60), sector  # b is the median
        assert part["S"].nunique() == 1
    ctrl = out[out["model"] == "ctrl"]
    assert set(ctrl["sector"]) == {"IFS-Gen", "RFS-Gen", "BIS-Gen"}  # no IRIS score
    assert ctrl["und_code"].isna().all() and set(ctrl["gen_code"]) == {"UAF"}
    iris = out[out["sector"] == "IRIS"].set_index("model")
    assert (iris["S"] == 100.0).all()
    assert iris.at["a", "score"] == pytest.approx(100 * math.exp(-1.0 * 0.1 * math.sqrt(6)))
    # each code: b sits exactly on tau = 60 in every sector
    assert set(out.loc[out["model"] == "b", "gen_code"]) == {"UAF"}
    assert set(out.loc[out["model"] == "c", "und_code"]) == {"HDR"}


def test_score_models_reproduces_tables_23_24_from_components():
    """End to end through score_models: the RD (Table 23) and JSD (Table 24) components as
    bounded metrics with maximum 1 give the published scores."""
    components = pd.read_csv(DATA / "iris_published_components.csv")
    components = components[components["table"].isin([23, 24])]
    granular = components.rename(columns={"column": "metric"}).assign(bounded=True, max_value=1.0)
    out = score_models(granular).set_index(["model", "sector"])
    published = pd.read_csv(DATA / "iris_published_scores.csv").set_index(["model", "sector"])
    for key, row in out.iterrows():
        K = TABLE9[key[1]]["K"]
        # components rounded to 4 decimals: magnitude error <= 1e-4 (see the component test)
        tolerance = SCORE_HALF_ULP + K * row["score"] * 1.1e-4
        assert abs(row["score"] - published.loc[key, "score"]) <= tolerance, key
    assert len(out) == 20


def test_model_summary_and_tracking_record():
    rows = _six_sectors("a", 0.1) + _six_sectors("b", 0.2) + _six_sectors("c", 0.3)
    config = IrisScoringConfig()
    scores = score_models(_granular(rows), config)
    wide = model_summary(scores)
    assert list(wide["model"]) == ["a", "b", "c"]
    assert {f"score_{s}" for s in (*SECTORS, "IRIS")} <= set(wide.columns)
    record = tracking_record(scores, config)
    assert set(record) == {"a", "b", "c"}
    a = record["a"]
    assert a["params"]["iris.mode"] == "table9" and a["params"]["iris.S.IFS-Gen"] == 58000
    assert a["metrics"]["iris.score.IFS-Und"] == pytest.approx(180 * math.exp(-0.5))
    assert a["metrics"]["iris.magnitude.IRIS"] == pytest.approx(0.1 * math.sqrt(6))
    assert a["params"]["iris.gen_code"] == wide.loc[0, "gen_code"]


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda g: g.drop(columns="bounded"), "lack column"),
        (lambda g: g.iloc[0:0], "empty"),
        (lambda g: g.assign(sector="IFS-gen"), "unknown sector"),
        (lambda g: pd.concat([g, g.iloc[:1]]), "duplicate"),
        (lambda g: g.assign(bounded=1), "booleans"),
        (lambda g: g.assign(value=-0.5), "a / IFS-Gen / m_IFS-Gen: value must be >= 0"),
        (lambda g: g.assign(value=2.0), "exceeds max_value"),
    ],
)
def test_score_models_rejects_bad_frames(mutate, match):
    granular = _granular(_six_sectors("a", 0.2))
    with pytest.raises(ValueError, match=match):
        score_models(mutate(granular))


def test_score_models_rejects_unknown_cohort_model():
    with pytest.raises(ValueError, match=r"cohort model\(s\) \['zz'\]"):
        score_models(
            _granular(_six_sectors("a", 0.2)), IrisScoringConfig(mode="calibrate", cohort=["zz"])
        )


def test_normalize_frame_keeps_nan_as_missing():
    frame = normalize_frame(
        _granular(
            [
                ("a", "BIS-Gen", "p", float("nan"), False, None),
                ("a", "BIS-Gen", "q", 0.0, False, None),
            ]
        )
    )
    assert math.isnan(frame["u"].iloc[0]) and frame["u"].iloc[1] == 0.0


# ---------------------------------------------------------------------------- config


def test_config_defaults_are_table9_with_rfs_und_recalibrated():
    config = IrisScoringConfig()
    assert config.mode == "table9" and config.tau == 60 and config.target == 60
    used = {s: {"K": p.K, "S": p.S} for s, p in config.sectors.items()}
    assert used == DEFAULT_SECTORS
    assert {s: v for s, v in used.items() if s != "RFS-Und"} == {
        s: v for s, v in TABLE9.items() if s != "RFS-Und"
    }
    assert used["RFS-Und"] == {"K": 5.0, "S": RFS_UND_GENFAIR_S} and TABLE9["RFS-Und"]["S"] == 2750
    assert config.total_scale is None and config.total_decay == 1.0


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"mode": "median"}, "mode"),
        ({"taus": 50}, "taus"),
        ({"sectors": {s: {"K": 1, "S": 1} for s in SECTORS[:5]}}, "missing: \\['BIS-Und'\\]"),
        (
            {"sectors": {**{s: {"K": 1, "S": 1} for s in SECTORS}, "CFS-Gen": {"K": 1, "S": 1}}},
            "unknown: \\['CFS-Gen'\\]",
        ),
        ({"sectors": {s: {"K": 0, "S": 1} for s in SECTORS}}, "greater than 0"),
        ({"cohort": []}, "at least one model"),
        ({"total_scale": -1}, "greater than 0"),
    ],
)
def test_config_rejects_bad_values(data, match):
    with pytest.raises(ValidationError, match=match):
        IrisScoringConfig.model_validate(data)


def test_the_studys_scoring_block_is_valid_and_matches_defaults():
    data = yaml.safe_load((ROOT / "conf" / "methodology" / "iris.yaml").read_text(encoding="utf-8"))
    assert IrisScoringConfig.model_validate(data["scoring"]) == IrisScoringConfig()
