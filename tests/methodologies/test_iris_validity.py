"""Fig. 4(c) sector-score correlation and Fig. 4(d) Welch test by architecture (issue 12.7):
hand values, independent formulas, SIMULATED planted values, Table 3's published p."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies.iris.scoring import SECTORS
from genfair.methodologies.iris.validity import (
    CORRELATION_COLUMNS,
    WELCH_COLUMNS,
    architecture_welch,
    correlation_matrix,
    sector_correlation,
)

DATA = Path(__file__).parent / "data"
#: Table 4's groups of the seven UMLLMs (the authors' validation/bias_check.py uses the same)
HYBRID = ["Bagel", "BLIP3-o", "UniWorld-V1", "VILA-U", "Show-o"]
PURE_AR = ["Janus-Pro", "Harmon"]


def _long(wide: pd.DataFrame, partial: pd.DataFrame | None = None) -> pd.DataFrame:
    out = (
        wide.rename_axis("model")
        .reset_index()
        .melt(id_vars="model", var_name="sector", value_name="score")
    )
    out = out.dropna(subset=["score"])
    flags = partial.stack() if partial is not None else None
    out["partial"] = [
        bool(flags.get((m, s), False)) if flags is not None else False
        for m, s in zip(out["model"], out["sector"], strict=True)
    ]
    return out.reset_index(drop=True)


# ---------------------------------------------------------------------------- Fig. 4(c)


def test_correlation_hand_values_and_pairwise_complete():
    wide = pd.DataFrame(
        {
            "IFS-Gen": [1.0, 2.0, 3.0, 4.0],
            "RFS-Gen": [2.0, 4.0, 6.0, 8.1],
            "BIS-Gen": [4.0, 3.0, 2.0, np.nan],
        },
        index=list("abcd"),
    )
    table = sector_correlation(_long(wide))
    assert list(table.columns) == CORRELATION_COLUMNS
    m = correlation_matrix(table)
    assert list(m.index) == ["IFS-Gen", "RFS-Gen", "BIS-Gen"]
    assert m.at["IFS-Gen", "IFS-Gen"] == pytest.approx(1.0)
    assert m.at["IFS-Gen", "RFS-Gen"] == pytest.approx(
        np.corrcoef([1, 2, 3, 4], [2, 4, 6, 8.1])[0, 1]
    )
    assert m.at["IFS-Gen", "BIS-Gen"] == pytest.approx(-1.0)  # over a, b, c only
    row = table[(table["sector_a"] == "IFS-Gen") & (table["sector_b"] == "BIS-Gen")].iloc[0]
    assert row["n_models"] == 3
    spearman = correlation_matrix(sector_correlation(_long(wide), method="spearman"))
    assert spearman.at["IFS-Gen", "RFS-Gen"] == pytest.approx(1.0)


def test_correlation_na_with_too_few_models_or_a_constant_score_and_counts_partial():
    wide = pd.DataFrame(
        {"IFS-Gen": [1.0, 2.0, 3.0], "RFS-Gen": [5.0, 5.0, 5.0], "IFS-Und": [1.0, 2.0, np.nan]},
        index=list("abc"),
    )
    partial = pd.DataFrame({"IFS-Gen": [True, False, False]}, index=list("abc"))
    table = sector_correlation(_long(wide, partial)).set_index(["sector_a", "sector_b"])
    assert math.isnan(table.at[("IFS-Gen", "IFS-Und"), "r"])
    assert table.at[("IFS-Gen", "IFS-Und"), "note"].startswith("n/a: 2 model(s)")
    assert (
        table.at[("IFS-Gen", "RFS-Gen"), "note"] == "n/a: a score is constant across these models"
    )
    assert table.at[("IFS-Gen", "IFS-Gen"), "n_partial"] == 1
    assert "1 model(s) with a partial score" in table.at[("IFS-Gen", "IFS-Gen"), "note"]
    with pytest.raises(ValueError, match="method"):
        sector_correlation(_long(wide), method="kendall")
    with pytest.raises(ValueError, match="min_models"):
        sector_correlation(_long(wide), min_models=2)


def test_correlation_recovers_a_planted_structure_on_simulated_models():
    """SIMULATED: 400 models whose six sector scores are drawn from a Gaussian with planted
    correlations (IFS-Gen ~ IFS-Und 0.7, RFS-Gen ~ BIS-Und -0.4, else 0): every recovered r
    lies within 4 standard errors (1 - rho^2) / sqrt(n) of its plant."""
    planted = np.eye(6)
    i = {s: k for k, s in enumerate(SECTORS)}
    for a, b, rho in (("IFS-Gen", "IFS-Und", 0.7), ("RFS-Gen", "BIS-Und", -0.4)):
        planted[i[a], i[b]] = planted[i[b], i[a]] = rho
    rng = np.random.default_rng(2026)
    n = 400
    draws = rng.multivariate_normal(np.full(6, 60.0), planted * 100.0, size=n)
    wide = pd.DataFrame(draws, columns=list(SECTORS), index=[f"sim{k}" for k in range(n)])
    m = correlation_matrix(sector_correlation(_long(wide)))
    for a in SECTORS:
        for b in SECTORS:
            rho = planted[i[a], i[b]]
            assert abs(m.at[a, b] - rho) <= 4 * (1 - rho**2) / math.sqrt(n) + 1e-12, (a, b)


# ---------------------------------------------------------------------------- Fig. 4(d)


def _welch_by_hand(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    t = (x.mean() - y.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
    return t, df, 2 * stats.t.sf(abs(t), df)


def test_welch_matches_the_hand_formula():
    scores = pd.DataFrame(
        {
            "model": list("abcde"),
            "sector": "IRIS",
            "score": [60.0, 70.0, 65.0, 40.0, 52.0],
            "partial": [False, False, True, False, False],
        }
    )
    arch = {"a": "hybrid", "b": "hybrid", "c": "hybrid", "d": "ar", "e": "ar"}
    out = architecture_welch(scores, arch)
    assert list(out.columns) == WELCH_COLUMNS and len(out) == 1
    row = out.iloc[0]
    assert (row["group_a"], row["group_b"], row["n_a"], row["n_b"]) == ("ar", "hybrid", 2, 3)
    t, df, p = _welch_by_hand(np.array([40.0, 52.0]), np.array([60.0, 70.0, 65.0]))
    assert (
        row["t"] == pytest.approx(t)
        and row["df"] == pytest.approx(df)
        and row["p_value"] == pytest.approx(p)
    )
    assert row["difference"] == pytest.approx(46 - 65) and row["status"] == "ok"
    assert row["n_partial"] == 1 and "1 partial score(s)" in row["reason"]


def test_welch_na_reasons():
    scores = pd.DataFrame(
        {"model": list("abcd"), "sector": "IRIS", "score": [60.0, 70.0, 65.0, 40.0]}
    )
    out = architecture_welch(scores, {"a": "hybrid", "b": "hybrid", "c": "ar", "d": None})
    row = out.iloc[0]
    assert (
        row["status"] == "n/a"
        and "ar has 1 model(s)" in row["reason"]
        and "need 2 per group" in row["reason"]
    )
    assert "1 model(s) without an architecture left out" in row["reason"] and math.isnan(
        row["p_value"]
    )
    none = architecture_welch(scores, {}).iloc[0]
    assert none["status"] == "n/a" and "fewer than two architecture groups" in none["reason"]
    with pytest.raises(ValueError, match="without IRIS scores"):
        architecture_welch(scores, {"zz": "ar"})


def test_welch_reproduces_figure_4d_p_from_table3():
    """§4.1: hybrid vs pure-autoregressive UMLLMs, overall IRIS score, p = 0.76 (Table 3's
    rounded scores give 0.753)."""
    t3 = pd.read_csv(DATA / "iris_table3.csv")
    t3 = t3[t3["model"].isin(HYBRID + PURE_AR)]
    scores = t3.melt(
        id_vars="model", value_vars=[*SECTORS, "IRIS"], var_name="sector", value_name="score"
    )
    arch = {m: "autoregressive+diffusion" for m in HYBRID} | {m: "autoregressive" for m in PURE_AR}
    out = architecture_welch(scores, arch).set_index("score")
    assert out.at["IRIS", "p_value"] == pytest.approx(0.76, abs=0.01)
    assert set(out.index) == {*SECTORS, "IRIS"} and (out["status"] == "ok").all()


def test_welch_recovers_a_planted_gap_and_holds_its_size_on_simulated_scores():
    """SIMULATED: groups of 5 and 3 models with unequal spreads (sd 8 and 3). A planted gap
    of 20 points is recovered (the mean difference's 99% Welch interval holds it) and
    detected; with no gap, the test rejects at 5% in 2.5-7.5% of 1000 studies."""
    rng = np.random.default_rng(7)
    arch = {f"h{k}": "hybrid" for k in range(5)} | {f"a{k}": "ar" for k in range(3)}

    def study(gap: float) -> pd.Series:
        score = np.r_[rng.normal(60 + gap, 8, 5), rng.normal(60, 3, 3)]
        frame = pd.DataFrame({"model": list(arch), "sector": "IRIS", "score": score})
        return architecture_welch(frame, arch).iloc[0]

    row = study(20.0)
    se = abs(row["difference"] / row["t"])
    half = stats.t.ppf(0.995, row["df"]) * se
    assert abs(-row["difference"] - 20.0) <= half  # group_a is "ar" (sorted)
    assert row["p_value"] < 0.05
    rejections = np.mean([study(0.0)["p_value"] < 0.05 for _ in range(1000)])
    assert 0.025 <= rejections <= 0.075
