"""Tests for genfair.methodologies.iris.validation: Cronbach's alpha and ranking stability."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies.iris.scoring import SECTORS
from genfair.methodologies.iris.validation import (
    COLUMNS,
    cronbach_alpha,
    cronbach_alpha_covariance,
    cronbach_alpha_per_sector,
    ranking_stability,
    validation_table,
)

# ---------------------------------------------------------------------------- Cronbach's alpha


def test_cronbach_alpha_hand_value():
    # item variances 1 and 7/3, total variance 19/3: alpha = 2 (1 - (10/3)/(19/3)) = 18/19
    items = [[1, 2], [2, 3], [3, 5]]
    assert cronbach_alpha(items) == pytest.approx(18 / 19)
    assert cronbach_alpha_covariance(items) == pytest.approx(18 / 19)


def test_cronbach_alpha_extremes():
    x = np.array([[0.1], [0.4], [0.2], [0.9]])
    assert cronbach_alpha(np.hstack([x, x, x])) == pytest.approx(1.0)  # identical items
    # two perfectly anti-correlated items: total is constant -> undefined
    assert math.isnan(cronbach_alpha(np.hstack([x, 1 - x])))
    # uncorrelated by construction (orthogonal centred columns): alpha = 0
    assert cronbach_alpha([[1, 1], [1, -1], [-1, 1], [-1, -1]]) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_cronbach_alpha_forms_agree(seed):
    rng = np.random.default_rng(seed)
    n, k = rng.integers(3, 15), rng.integers(2, 12)
    latent = rng.normal(size=(n, 1))
    items = latent * rng.uniform(0, 2, size=k) + rng.normal(scale=rng.uniform(0.1, 2), size=(n, k))
    assert cronbach_alpha(items) == pytest.approx(
        cronbach_alpha_covariance(items), rel=1e-10, abs=1e-12
    )


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ([1, 2, 3], "2-D"),
        ([[1, 2]], ">= 2 models"),
        ([[1], [2]], ">= 2 items"),
        ([[1, 2], [float("nan"), 3]], "finite"),
    ],
)
def test_cronbach_alpha_rejects_bad_input(items, match):
    with pytest.raises(ValueError, match=match):
        cronbach_alpha(items)


def _granular(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["model", "sector", "metric", "value", "bounded", "max_value"]
    )


def test_alpha_per_sector_listwise_and_counts():
    items = {"m1": [0.1, 0.2, 0.3, 0.5], "m2": [0.2, 0.3, 0.5, 0.6], "m3": [0.1, 0.3, 0.4, 0.7]}
    models = ["a", "b", "c", "d"]
    rows = [
        (mod, "IFS-Und", met, vals[i], True, 1.0)
        for met, vals in items.items()
        for i, mod in enumerate(models)
    ]
    rows.append(("e", "IFS-Und", "m1", 0.9, True, 1.0))  # model e lacks m2, m3: dropped
    rows += [(mod, "IFS-Und", "never", float("nan"), True, 1.0) for mod in models]  # no item
    rows += [("a", "BIS-Gen", "p", 0.1, False, None)]  # one model, one item: NaN alpha
    table = cronbach_alpha_per_sector(_granular(rows)).set_index("sector")
    expected = cronbach_alpha(np.array(list(items.values())).T)
    assert table.at["IFS-Und", "alpha"] == pytest.approx(expected)
    assert table.at["IFS-Und", "alpha_covariance"] == pytest.approx(expected)
    assert table.at["IFS-Und", "n_models"] == 4 and table.at["IFS-Und", "n_items"] == 3
    assert math.isnan(table.at["BIS-Gen", "alpha"])
    assert list(table.index) == ["BIS-Gen", "IFS-Und"]  # Table 9 order, sectors present only


# ---------------------------------------------------------------------------- ranking stability


def _study(ifs_gen: dict[str, tuple[float, float]], rest: dict[str, float]) -> pd.DataFrame:
    """IFS-Gen with two metrics x, y per model; every other sector one metric ``rest``."""
    rows = []
    for model, (x, y) in ifs_gen.items():
        rows += [(model, "IFS-Gen", "x", x, True, 1.0), (model, "IFS-Gen", "y", y, True, 1.0)]
        rows += [(model, s, "z", rest[model], True, 1.0) for s in SECTORS if s != "IFS-Gen"]
    return _granular(rows)


# A: 0.25 + 0.09 = 0.34; B: 0.0961 + 0.2401 = 0.3362 (B better); C far worse.
# Weight of x -10%: A 0.2925 < B 0.3179, A and B swap: rho = 1 - 6·2/(3·8) = 0.5;
# weight of y +10%: A 0.3589 < B 0.3866, swap too; x +10% and y -10% keep B first.
IFS = {"A": (0.50, 0.30), "B": (0.31, 0.49), "C": (0.90, 0.90)}
REST = {"A": 0.1, "B": 0.2, "C": 0.3}


def test_metric_weight_swap_hand_computed():
    table = ranking_stability(_study(IFS, REST), leave_one_out=False)
    weights = table[table["analysis"] == "metric_weight"].set_index(["perturbed", "change"])
    assert weights.at[("IFS-Gen/x", "-10%"), "value"] == pytest.approx(0.5)
    assert weights.at[("IFS-Gen/x", "+10%"), "value"] == pytest.approx(1.0)
    assert weights.at[("IFS-Gen/y", "-10%"), "value"] == pytest.approx(1.0)
    assert weights.at[("IFS-Gen/y", "+10%"), "value"] == pytest.approx(0.5)
    assert (weights.loc["IFS-Gen/x", "target"] == "IFS-Gen").all()
    assert (weights["n_models"] == 3).all() and len(weights) == 2 * 7
    # one metric per other sector: the same weight for every model never reorders them
    others = weights.drop(index=["IFS-Gen/x", "IFS-Gen/y"], level=0)
    assert (others["value"] == 1.0).all()


def test_leave_one_out_hand_computed():
    # removing y: A 0.50, B 0.31 -> unchanged order (B, A, C); removing x: A 0.30 < B 0.49 -> swap
    table = ranking_stability(_study(IFS, {"A": 0.0, "B": 0.0, "C": 0.0}))
    loo = table[table["analysis"] == "leave_one_out"].set_index(["perturbed", "target"])
    assert loo.at[("IFS-Gen/x", "IFS-Gen"), "value"] == pytest.approx(0.5)
    assert loo.at[("IFS-Gen/y", "IFS-Gen"), "value"] == pytest.approx(1.0)
    # the other sectors are all 0: the overall ranking is the IFS-Gen one
    assert loo.at[("IFS-Gen/x", "IRIS"), "value"] == pytest.approx(0.5)
    # the sector's only metric removed: nothing left to rank in that sector
    assert math.isnan(loo.at[("RFS-Gen/z", "RFS-Gen"), "value"])
    assert loo.at[("RFS-Gen/z", "RFS-Gen"), "n_models"] == 0


def test_dimension_weight_hand_computed():
    """Overall D^2 = w_IFS^2 · I + w_RFS^2 · R + w_BIS^2 · B over the sectors' squared norms.
    A: IFS-Gen (0.5, 0.3), other sectors 0.1: I = 0.34 + 0.01 = 0.35, R = B = 0.02, D^2 = 0.39.
    B: IFS-Gen (0.3, 0.4), other sectors 0.17: I = 0.25 + 0.0289 = 0.2789, R = B = 0.0578,
    D^2 = 0.3945: A first, then B, then C (far worse).
    IFS +10%: A 1.21·0.35 + 0.04 = 0.4635 > B 1.21·0.2789 + 0.1156 = 0.4531: swap (rho 0.5).
    IFS -10%: A 0.3235 < B 0.3415: kept. RFS (or BIS) -10%: A 0.39 - 0.19·0.02 = 0.3862 >
    B 0.3945 - 0.19·0.0578 = 0.3835: swap; RFS (or BIS) +10%: A 0.3942 < B 0.4066: kept.
    """
    ifs = {"A": (0.5, 0.3), "B": (0.3, 0.4), "C": (0.9, 0.9)}
    table = ranking_stability(_study(ifs, {"A": 0.1, "B": 0.17, "C": 0.5}), leave_one_out=False)
    dims = table[table["analysis"] == "dimension_weight"].set_index(["perturbed", "change"])[
        "value"
    ]
    assert dims.to_dict() == pytest.approx(
        {
            ("IFS", "-10%"): 1.0,
            ("IFS", "+10%"): 0.5,
            ("RFS", "-10%"): 0.5,
            ("RFS", "+10%"): 1.0,
            ("BIS", "-10%"): 0.5,
            ("BIS", "+10%"): 1.0,
        }
    )
    assert (table.loc[table["analysis"] == "dimension_weight", "target"] == "IRIS").all()


def test_random_weights_reproducible_and_bounded():
    study = _study(IFS, REST)
    one = ranking_stability(study, n_random=6, seed=3, leave_one_out=False)
    two = ranking_stability(study, n_random=6, seed=3, leave_one_out=False)
    pd.testing.assert_frame_equal(one, two)
    rand = one[one["analysis"] == "random_weight"]
    assert len(rand) == 6 * 7  # six sectors + IRIS per draw
    assert rand["value"].between(-1, 1).all()
    assert set(rand["value"]) <= {1.0, 0.5}  # only A and B can swap
    assert (rand.loc[rand["target"] != "IFS-Gen", "value"] == 1.0).all()


def test_overall_ranking_only_over_complete_models():
    study = _study(IFS, {"A": 0.1, "B": 0.1, "C": 0.1})
    extra = _granular(
        [("D", "IFS-Gen", "x", 0.0, True, 1.0), ("D", "IFS-Gen", "y", 0.0, True, 1.0)]
    )
    table = ranking_stability(pd.concat([study, extra], ignore_index=True))
    assert (table.loc[table["target"] == "IRIS", "n_models"] == 3).all()
    assert (table.loc[table["target"] == "IFS-Gen", "n_models"].isin([4])).all()


def test_validation_table_is_tidy():
    table = validation_table(_study(IFS, {"A": 0.1, "B": 0.2, "C": 0.3}), n_random=2)
    assert list(table.columns) == COLUMNS
    alpha = table[table["analysis"] == "cronbach_alpha"]
    assert list(alpha["target"]) == list(SECTORS)
    # every sector but IFS-Gen has one item: alpha undefined; IFS-Gen: x and y over A, B, C
    assert alpha.set_index("target")["value"].drop("IFS-Gen").isna().all()
    xy = np.array([IFS[m] for m in "ABC"])
    assert alpha.set_index("target").at["IFS-Gen", "value"] == pytest.approx(cronbach_alpha(xy))
    assert set(table["analysis"]) == {
        "cronbach_alpha",
        "dimension_weight",
        "metric_weight",
        "leave_one_out",
        "random_weight",
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"perturbation": 0.0}, "perturbation"),
        ({"perturbation": 1.5}, "perturbation"),
        ({"n_random": -1}, "n_random"),
    ],
)
def test_ranking_stability_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ranking_stability(_study(IFS, {"A": 0.1, "B": 0.1, "C": 0.1}), **kwargs)
