"""Recall and disparity (paper 004 after FACET): hand-computed values, scipy, Newcombe's
published intervals, the paper's Table 2 and appendix arithmetic, and interval coverage."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies.lvlm_facet.recall import (
    MACRO,
    POOLED,
    disparity_table,
    group_recalls,
    newcombe_interval,
    recall_difference,
    recall_estimate,
    recall_range,
)

# Paper 004, Table 2: (model, attribute, prompt) -> (recall of each group in table order,
# published disparity). Gender: male, female; skin: light, medium, dark; age: younger,
# middle, older. Disparity = first group - last group.
TABLE2 = {
    ("CLIP", "gender", "direct"): ([0.5739, 0.5482], 0.0257),
    ("ViT", "gender", "direct"): ([0.4957, 0.5163], -0.0206),
    ("GPT-4o", "gender", "direct"): ([0.7124, 0.7386], -0.0262),
    ("GPT-4o", "gender", "choice"): ([0.8055, 0.6970], 0.1086),
    ("Gemini 1.5 Pro", "gender", "direct"): ([0.7372, 0.7584], -0.0212),
    ("Gemini 1.5 Pro", "gender", "choice"): ([0.8260, 0.7753], 0.0507),
    ("LLaVA-1.5 7B", "gender", "direct"): ([0.5035, 0.5151], -0.0115),
    ("LLaVA-1.5 7B", "gender", "choice"): ([0.9401, 0.9120], 0.0280),
    ("LLaVA-1.5 13B", "gender", "direct"): ([0.6258, 0.6741], -0.0483),
    ("LLaVA-1.5 13B", "gender", "choice"): ([0.8218, 0.7410], 0.0808),
    ("ShareGPT4V 7B", "gender", "direct"): ([0.5509, 0.5976], -0.0467),
    ("ShareGPT4V 7B", "gender", "choice"): ([0.9178, 0.8988], 0.0190),
    ("ShareGPT4V 13B", "gender", "direct"): ([0.6674, 0.7072], -0.0399),
    ("ShareGPT4V 13B", "gender", "choice"): ([0.7770, 0.7090], 0.0680),
    ("MiniCPM-V 8B", "gender", "direct"): ([0.6676, 0.6669], 0.0008),
    ("MiniCPM-V 8B", "gender", "choice"): ([0.8561, 0.8331], 0.0229),
    ("LLaVA-1.6 34B", "gender", "direct"): ([0.6558, 0.6970], -0.0411),
    ("LLaVA-1.6 34B", "gender", "choice"): ([0.8393, 0.8072], 0.0321),
    ("CLIP", "skin", "direct"): ([0.6070, 0.5436, 0.4369], 0.1701),
    ("ViT", "skin", "direct"): ([0.5429, 0.4662, 0.4523], 0.0906),
    ("GPT-4o", "skin", "direct"): ([0.7473, 0.7112, 0.6185], 0.1288),
    ("GPT-4o", "skin", "choice"): ([0.7798, 0.7745, 0.7692], 0.0105),
    ("Gemini 1.5 Pro", "skin", "direct"): ([0.7644, 0.7319, 0.6492], 0.1151),
    ("Gemini 1.5 Pro", "skin", "choice"): ([0.8122, 0.8093, 0.8215], -0.0093),
    ("LLaVA-1.5 7B", "skin", "direct"): ([0.5512, 0.4759, 0.3754], 0.1758),
    ("LLaVA-1.5 7B", "skin", "choice"): ([0.9371, 0.9244, 0.9262], 0.0110),
    ("LLaVA-1.5 13B", "skin", "direct"): ([0.6919, 0.6069, 0.5231], 0.1688),
    ("LLaVA-1.5 13B", "skin", "choice"): ([0.8043, 0.7745, 0.8092], -0.0049),
    ("ShareGPT4V 7B", "skin", "direct"): ([0.6141, 0.5442, 0.3815], 0.2325),
    ("ShareGPT4V 7B", "skin", "choice"): ([0.9172, 0.9062, 0.9015], 0.0156),
    ("ShareGPT4V 13B", "skin", "direct"): ([0.7227, 0.6508, 0.5631], 0.1597),
    ("ShareGPT4V 13B", "skin", "choice"): ([0.7623, 0.7459, 0.7385], 0.0238),
    ("MiniCPM-V 8B", "skin", "direct"): ([0.7044, 0.6569, 0.5292], 0.1752),
    ("MiniCPM-V 8B", "skin", "choice"): ([0.8639, 0.8355, 0.8215], 0.0423),
    ("LLaVA-1.6 34B", "skin", "direct"): ([0.7123, 0.6362, 0.5292], 0.1831),
    ("LLaVA-1.6 34B", "skin", "choice"): ([0.8422, 0.8202, 0.8185], 0.0238),
    ("CLIP", "age", "direct"): ([0.6267, 0.5587, 0.4722], 0.1545),
    ("ViT", "age", "direct"): ([0.5949, 0.4986, 0.3355], 0.2594),
    ("GPT-4o", "age", "direct"): ([0.7753, 0.7087, 0.6987], 0.0766),
    ("GPT-4o", "age", "choice"): ([0.7745, 0.7822, 0.7415], 0.0330),
    ("Gemini 1.5 Pro", "age", "direct"): ([0.8017, 0.7316, 0.6944], 0.1073),
    ("Gemini 1.5 Pro", "age", "choice"): ([0.8258, 0.8216, 0.7650], 0.0609),
    ("LLaVA-1.5 7B", "age", "direct"): ([0.5723, 0.5097, 0.3932], 0.1792),
    ("LLaVA-1.5 7B", "age", "choice"): ([0.9479, 0.9326, 0.9145], 0.0334),
    ("LLaVA-1.5 13B", "age", "direct"): ([0.7333, 0.6321, 0.5192], 0.2141),
    ("LLaVA-1.5 13B", "age", "choice"): ([0.8009, 0.8092, 0.7372], 0.0638),
    ("ShareGPT4V 7B", "age", "direct"): ([0.6439, 0.5491, 0.5085], 0.1353),
    ("ShareGPT4V 7B", "age", "choice"): ([0.9269, 0.9180, 0.8761], 0.0508),
    ("ShareGPT4V 13B", "age", "direct"): ([0.7566, 0.6674, 0.6303], 0.1263),
    ("ShareGPT4V 13B", "age", "choice"): ([0.7784, 0.7638, 0.7051], 0.0733),
    ("MiniCPM-V 8B", "age", "direct"): ([0.7286, 0.6582, 0.6090], 0.1196),
    ("MiniCPM-V 8B", "age", "choice"): ([0.8538, 0.8591, 0.8162], 0.0376),
    ("LLaVA-1.6 34B", "age", "direct"): ([0.7675, 0.6496, 0.6368], 0.1307),
    ("LLaVA-1.6 34B", "age", "choice"): ([0.8546, 0.8417, 0.7735], 0.0811),
}
GROUPS = {"gender": ["male", "female"], "skin": ["light", "medium", "dark"],
          "age": ["younger", "middle", "older"]}  # fmt: skip
PAIRS = {"gender": ("male", "female"), "skin": ("light", "dark"), "age": ("younger", "older")}
N = 10_000  # counts that give the published 4-decimal recalls exactly


def _table_from_recalls(recalls: list[float], groups: list[str]) -> pd.DataFrame:
    """A one-class image table whose group recalls are exactly ``recalls``."""
    classes, labels, hits = [], [], []
    for group, r in zip(groups, recalls, strict=True):
        k = round(r * N)
        classes += ["c"] * N
        labels += [group] * N
        hits += [True] * k + [False] * (N - k)
    return group_recalls(classes, labels, hits, groups)


@pytest.mark.parametrize("key", sorted(TABLE2))
def test_table2_disparity_is_first_minus_last_group(key: tuple[str, str, str]) -> None:
    """Every Table 2 row: the published disparity is recall(male/light/younger) -
    recall(female/dark/older) of the published pooled recalls (within rounding), which
    pins the sign convention (not max - min: e.g. Gemini skin single-choice is -0.0093)."""
    recalls, published = TABLE2[key]
    attribute = key[1]
    table = _table_from_recalls(recalls, GROUPS[attribute])
    pooled = table[table["class"] == POOLED]
    assert np.allclose(pooled["recall"], recalls, atol=1e-12)
    disparity = disparity_table(table, [PAIRS[attribute]])
    got = disparity.loc[disparity["class"] == POOLED, "difference"].item()
    assert abs(got - published) <= 1.5e-4  # both sides rounded to 4 decimals
    assert disparity.loc[disparity["class"] == POOLED, "ci_low"].item() <= got
    assert got <= disparity.loc[disparity["class"] == POOLED, "ci_high"].item()


def test_table2_clip_rows_hand_computed() -> None:
    """The brief's three: CLIP gender, skin and age disparities of Table 2."""
    for attribute, expected in (("gender", 0.0257), ("skin", 0.1701), ("age", 0.1545)):
        recalls, _ = TABLE2[("CLIP", attribute, "direct")]
        a, b = recalls[0], recalls[-1]
        diff = recall_difference(round(a * N), N, round(b * N), N)["difference"]
        assert diff == pytest.approx(expected, abs=1e-12)


def test_appendix_empty_older_students_score_zero_when_asked() -> None:
    """Appendix age table, GPT-4o, student: 43 of 54 young students recalled, no older
    student: 0.7963 with ``empty_value=0``; n/a by default."""
    classes = ["student"] * 60
    groups = ["younger"] * 54 + ["middle"] * 6
    hits = [True] * 43 + [False] * 11 + [True] * 6
    order = ["younger", "middle", "older"]
    paper = group_recalls(classes, groups, hits, order, empty_value=0.0)
    d = disparity_table(paper, [("younger", "older")], empty_value=0.0)
    row = d[d["class"] == "student"].iloc[0]
    assert round(row["difference"], 4) == 0.7963
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])
    default = disparity_table(group_recalls(classes, groups, hits, order), [("younger", "older")])
    assert math.isnan(default.loc[default["class"] == "student", "difference"].item())


def test_wilson_matches_closed_form_and_scipy() -> None:
    k, n, z = 43, 54, stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    est = recall_estimate(k, n)
    assert est["recall"] == pytest.approx(0.7962962963)
    assert (est["ci_low"], est["ci_high"]) == pytest.approx(
        (centre - half, centre + half), abs=1e-9
    )
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    assert (est["ci_low"], est["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize(
    ("counts", "published"),
    [
        ((56, 70, 48, 80), (0.0524, 0.3339)),
        ((9, 10, 3, 10), (0.1705, 0.8090)),
        ((0, 10, 0, 20), (-0.1611, 0.2775)),
        ((10, 10, 0, 20), (0.6791, 1.0000)),
    ],
)
def test_newcombe_reproduces_newcombe_1998_table_ii(
    counts: tuple[int, int, int, int], published: tuple[float, float]
) -> None:
    """Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10."""
    low, high = newcombe_interval(*counts)
    assert (round(low, 4), round(high, 4)) == published


def test_every_interval_contains_its_estimate() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n_a, n_b = rng.integers(1, 80, size=2)
        k_a, k_b = rng.integers(0, n_a + 1), rng.integers(0, n_b + 1)
        est = recall_estimate(k_a, n_a)
        assert est["ci_low"] <= est["recall"] <= est["ci_high"]
        diff = recall_difference(k_a, n_a, k_b, n_b)
        assert diff["ci_low"] <= diff["difference"] <= diff["ci_high"]


@pytest.mark.parametrize(("p_a", "p_b", "n"), [(0.5, 0.5, 40), (0.8, 0.6, 100), (0.15, 0.05, 300)])
def test_coverage_near_nominal_on_simulated_counts(p_a: float, p_b: float, n: int) -> None:
    """Simulated binomial counts: the 95% Wilson and Newcombe intervals cover the true
    recall / difference in 93-97.5% of 2000 draws (Monte Carlo s.e. ~0.5 points)."""
    rng = np.random.default_rng(1)
    k_a, k_b = rng.binomial(n, p_a, 2000), rng.binomial(n, p_b, 2000)
    recall_cover = np.mean([
        (e := recall_estimate(int(k), n))["ci_low"] <= p_a <= e["ci_high"] for k in k_a
    ])  # fmt: skip
    diff_cover = np.mean([
        (lo := newcombe_interval(int(a), n, int(b), n))[0] <= p_a - p_b <= lo[1]
        for a, b in zip(k_a, k_b, strict=True)
    ])  # fmt: skip
    assert 0.93 <= recall_cover <= 0.975, recall_cover
    assert 0.93 <= diff_cover <= 0.975, diff_cover


def test_pooled_is_micro_macro_is_mean_and_unknown_ignored() -> None:
    # class a: male 3/4, female 1/2; class b: male 0/1, female 2/2; plus unknown-gender rows
    classes = ["a"] * 6 + ["b"] * 3 + ["a", "b"]
    groups = ["male"] * 4 + ["female"] * 2 + ["male"] + ["female"] * 2 + ["unknown"] * 2
    hits = [1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1]
    t = group_recalls(classes, groups, hits, ["male", "female"]).set_index(["class", "group"])
    assert t.loc[("a", "male"), "recall"] == 0.75 and t.loc[("b", "female"), "recall"] == 1.0
    assert t.loc[(POOLED, "male"), ["hits", "n"]].tolist() == [3, 5]
    assert t.loc[(POOLED, "female"), "recall"] == pytest.approx(3 / 4)
    assert t.loc[(MACRO, "male"), "recall"] == pytest.approx((0.75 + 0.0) / 2)
    assert t.loc[(MACRO, "female"), "recall"] == pytest.approx((0.5 + 1.0) / 2)
    d = disparity_table(t.reset_index()).set_index("class")
    assert d.loc[POOLED, "difference"] == pytest.approx(3 / 5 - 3 / 4)
    assert d.loc[MACRO, "difference"] == pytest.approx(0.375 - 0.75)
    assert math.isnan(d.loc[MACRO, "ci_low"])


def test_pairwise_and_range() -> None:
    classes = ["c"] * 30
    groups = ["light"] * 10 + ["medium"] * 10 + ["dark"] * 10
    hits = [1] * 9 + [0] + [1] * 5 + [0] * 5 + [1] * 7 + [0] * 3
    t = group_recalls(classes, groups, hits, ["light", "medium", "dark"])
    d = disparity_table(t)
    assert list(zip(d["group_a"], d["group_b"], strict=True))[:3] == [
        ("light", "medium"), ("light", "dark"), ("medium", "dark")
    ]  # fmt: skip
    r = recall_range(t).set_index("class").loc["c"]
    assert (r["max_group"], r["min_group"], r["range"]) == ("light", "medium", pytest.approx(0.4))
    with pytest.raises(ValueError, match="not in the recall table"):
        disparity_table(t, [("light", "purple")])


def test_bad_counts_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="0 <= hits <= n"):
        recall_estimate(5, 3)
