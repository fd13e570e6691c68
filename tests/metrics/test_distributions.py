"""Tests for genfair.metrics.distributions: hand values, scipy cross-checks, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy, wasserstein_distance

import genfair.metrics as gm
from genfair.metrics import (
    bias_severity,
    group_wasserstein,
    js_divergence,
    kl_divergence,
    normalize_counts,
    normalized_entropy,
    representation_disparity,
)

LN2, LN3 = math.log(2), math.log(3)
SEEDS = range(40)


def random_distribution(rng: np.random.Generator, k: int) -> np.ndarray:
    """Dirichlet draw; with probability 1/3 some entries are zeroed (sparse support)."""
    p = rng.dirichlet(rng.choice([0.2, 1.0, 5.0]) * np.ones(k))
    if k > 2 and rng.random() < 1 / 3:
        p[rng.choice(k, size=rng.integers(1, k - 1), replace=False)] = 0.0
        p /= p.sum()
    return p


def random_pair(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 9))
    return random_distribution(rng, k), random_distribution(rng, k)


# --------------------------------------------------------------------------- public API


def test_public_api_is_exported_and_documented() -> None:
    assert sorted(gm.__all__) == sorted(
        [
            "bias_severity",
            "group_wasserstein",
            "js_divergence",
            "kl_divergence",
            "normalize_counts",
            "normalized_entropy",
            "representation_disparity",
        ]
    )
    for name in gm.__all__:
        fn = getattr(gm, name)
        assert fn.__doc__ and "paper" in fn.__doc__.lower(), name
        assert name in gm.__doc__, name


# --------------------------------------------------------------------------- normalize_counts


def test_normalize_counts_hand() -> None:
    # [2, 6, 0, 2] / 10
    np.testing.assert_allclose(normalize_counts([2, 6, 0, 2]), [0.2, 0.6, 0.0, 0.2])
    np.testing.assert_allclose(normalize_counts([0, 3]), [0.0, 1.0])
    assert normalize_counts([1.5, 0.5]).dtype == np.float64


@pytest.mark.parametrize(
    ("counts", "match"),
    [
        ([0, 0, 0], "all zero"),
        ([1, -1, 2], r"non-negative.*-1\.0"),
        ([1, float("nan")], r"finite.*nan"),
        ([1, float("inf")], "finite"),
        ([], "empty"),
        ([[1, 2], [3, 4]], "1-D"),
        (["a", "b"], "numbers"),
    ],
)
def test_normalize_counts_rejects(counts: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        normalize_counts(counts)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("p", "match"),
    [
        ([0.5, 0.6], r"sum to 1.*1\.1"),
        ([0.2, 0.2], r"sum to 1.*0\.4"),
        ([1.1, -0.1], r"non-negative.*-0\.1.*indices \[1\]"),
        ([0.5, float("nan"), 0.5], r"finite.*nan.*indices \[1\]"),
        ([float("inf"), 0.0], "finite"),
        ([], "empty"),
        ([[0.5, 0.5]], r"1-D.*\(1, 2\)"),
        (0.5, "1-D"),
    ],
)
@pytest.mark.parametrize("fn", [normalized_entropy, representation_disparity, bias_severity])
def test_single_distribution_validation(fn, p: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fn(p)


@pytest.mark.parametrize("fn", [kl_divergence, js_divergence, group_wasserstein])
def test_pair_validation(fn) -> None:
    with pytest.raises(ValueError, match=r"same length; got 3 and 2"):
        fn([0.2, 0.3, 0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"^q must sum to 1"):
        fn([0.5, 0.5], [0.5, 0.4])
    with pytest.raises(ValueError, match=r"^p must be non-negative"):
        fn([1.5, -0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"^q must be finite"):
        fn([0.5, 0.5], [float("nan"), 1.0])


def test_sum_tolerance_is_1e_6() -> None:
    # within 1e-6: accepted (and rescaled); beyond: rejected
    assert normalized_entropy([0.5, 0.5 + 5e-7]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="sum to 1"):
        normalized_entropy([0.5, 0.5 + 2e-6])
    # an accepted vector is rescaled to sum to 1 before use (as scipy does)
    slightly_off = np.array([0.5, 0.25, 0.25]) * (1 + 9e-7)
    assert bias_severity(slightly_off) == pytest.approx(1 - 1.5 * LN2 / LN3, rel=1e-12)


@pytest.mark.parametrize("fn", [normalized_entropy, representation_disparity, bias_severity])
def test_single_class_is_rejected(fn) -> None:
    # normalisers log 1 and k - 1 are both 0: the score is undefined for k = 1
    with pytest.raises(ValueError, match="at least 2 classes"):
        fn([1.0])


# --------------------------------------------------------------------------- entropy


def test_normalized_entropy_hand() -> None:
    # H([.5,.25,.25]) = .5 ln2 + 2 * .25 ln4 = 1.5 ln2; / ln3 = 0.94639...
    assert normalized_entropy([0.5, 0.25, 0.25]) == pytest.approx(1.5 * LN2 / LN3, rel=1e-12)
    assert normalized_entropy([0.5, 0.25, 0.25]) == pytest.approx(0.9463946303571863, rel=1e-12)
    # binary entropy of 0.1 in bits: -(.9 log2 .9 + .1 log2 .1) = 0.4689955935892812
    assert normalized_entropy([0.9, 0.1]) == pytest.approx(0.4689955935892812, rel=1e-12)
    # zeros count as classes: [.5, .5, 0, 0] -> ln2 / ln4 = 1/2
    assert normalized_entropy([0.5, 0.5, 0.0, 0.0]) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 4, 7, 10, 100])
def test_normalized_entropy_extremes(k: int) -> None:
    uniform = normalized_entropy(np.full(k, 1 / k))
    assert uniform == pytest.approx(1.0, abs=1e-12) and uniform <= 1.0  # clipped, never > 1
    one_hot = np.zeros(k)
    one_hot[k // 2] = 1.0
    assert normalized_entropy(one_hot) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_normalized_entropy_matches_scipy(seed: int) -> None:
    p, _ = random_pair(seed)
    # scipy's entropy with base k is H / log k
    assert normalized_entropy(p) == pytest.approx(entropy(p, base=len(p)), rel=1e-9, abs=1e-12)
    assert 0.0 <= normalized_entropy(p) <= 1.0


# --------------------------------------------------------------------------- severity


def test_bias_severity_hand_and_extremes() -> None:
    assert bias_severity([0.25] * 4) == pytest.approx(0.0, abs=1e-12)  # uniform: unbiased
    assert bias_severity([0.1] * 10) >= 0.0  # never negative through round-off
    assert bias_severity([0.0, 1.0, 0.0]) == 1.0  # one-hot: fully biased
    # 1 - 1.5 ln2 / ln3 = 0.05360536964281...
    assert bias_severity([0.5, 0.25, 0.25]) == pytest.approx(1 - 1.5 * LN2 / LN3, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_bias_severity_matches_scipy(seed: int) -> None:
    p, _ = random_pair(seed)
    assert bias_severity(p) == pytest.approx(1 - entropy(p) / math.log(len(p)), abs=1e-12)


# --------------------------------------------------------------------------- KL


def test_kl_hand() -> None:
    # KL([.5,.5] || [.25,.75]) = .5 ln(.5/.25) + .5 ln(.5/.75) = .5 ln(4/3) = 0.143841...
    assert kl_divergence([0.5, 0.5], [0.25, 0.75]) == pytest.approx(0.5 * math.log(4 / 3))
    # KL([1,0] || [.5,.5]) = 1 * ln 2 (the 0 term vanishes)
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(LN2)
    assert kl_divergence([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]) == 0.0


def test_kl_is_infinite_off_support_and_not_symmetric() -> None:
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(LN2)


@pytest.mark.parametrize("seed", SEEDS)
def test_kl_matches_scipy(seed: int) -> None:
    p, q = random_pair(seed)
    expected = entropy(p, q)  # natural log, inf off the support of q
    got = kl_divergence(p, q)
    if math.isinf(expected):
        assert got == math.inf
    else:
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert got >= 0.0


# --------------------------------------------------------------------------- JSD


def test_js_hand() -> None:
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)  # disjoint supports
    assert js_divergence([0.3, 0.7], [0.3, 0.7]) == 0.0
    # p=[1,0], q=[.5,.5], m=[.75,.25], L = log2 3:
    # KL2(p||m) = log2(4/3) = 2 - L;  KL2(q||m) = .5 log2(2/3) + .5 log2 2 = (2 - L)/2
    # JSD = .5(2 - L) + .25(2 - L) = .75(2 - L) = 1.5 - .75 L = 0.311278...
    assert js_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(1.5 - 0.75 * math.log2(3))


@pytest.mark.parametrize("seed", SEEDS)
def test_js_matches_scipy(seed: int) -> None:
    p, q = random_pair(seed)
    expected = jensenshannon(p, q, base=2) ** 2
    assert js_divergence(p, q) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert js_divergence(q, p) == pytest.approx(js_divergence(p, q), abs=1e-15)
    assert 0.0 <= js_divergence(p, q) <= 1.0
    # natural log (IRIS's jsd_base e, scipy's default): the same divergence times ln 2
    assert js_divergence(p, q, math.e) == pytest.approx(
        jensenshannon(p, q) ** 2, rel=1e-9, abs=1e-12
    )
    assert js_divergence(p, q, math.e) == pytest.approx(
        js_divergence(p, q) * math.log(2), rel=1e-12
    )


def test_js_base_bounds_and_bad_base() -> None:
    assert js_divergence([1.0, 0.0], [0.0, 1.0], math.e) == pytest.approx(
        math.log(2)
    )  # disjoint supports
    for bad in (1.0, 0.0, -2.0, math.nan):
        with pytest.raises(ValueError, match="base must be"):
            js_divergence([0.5, 0.5], [0.5, 0.5], bad)


# --------------------------------------------------------------------------- RD


def test_rd_hand() -> None:
    # [.5,.3,.2]: |.5-.3| + |.5-.2| + |.3-.2| = .2 + .3 + .1 = .6; / (3-1) = .3
    assert representation_disparity([0.5, 0.3, 0.2]) == pytest.approx(0.3)
    # [.7,.1,.1,.1]: three pairs |.7-.1| = .6 -> 1.8, others 0; / 3 = .6
    assert representation_disparity([0.7, 0.1, 0.1, 0.1]) == pytest.approx(0.6)
    # two groups: |.6-.4| / 1 = .2
    assert representation_disparity([0.6, 0.4]) == pytest.approx(0.2)


@pytest.mark.parametrize("k", [2, 3, 5, 12])
def test_rd_extremes(k: int) -> None:
    assert representation_disparity(np.full(k, 1 / k)) == pytest.approx(0.0, abs=1e-15)
    one_hot = np.zeros(k)
    one_hot[-1] = 1.0
    assert representation_disparity(one_hot) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_rd_matches_pairwise_definition(seed: int) -> None:
    p, _ = random_pair(seed)
    k = len(p)
    brute = sum(abs(a - b) for a, b in itertools.combinations(p, 2)) / (k - 1)
    assert representation_disparity(p) == pytest.approx(brute, rel=1e-12, abs=1e-15)
    assert 0.0 <= representation_disparity(p) <= 1.0
    # order of the groups does not matter
    perm = np.random.default_rng(seed).permutation(k)
    assert representation_disparity(p[perm]) == pytest.approx(representation_disparity(p))


# --------------------------------------------------------------------------- Wasserstein


def transport_lp(p: np.ndarray, q: np.ndarray) -> float:
    """Paper 001 Eq. 3 solved as a linear program: min sum l_ij d_ij, d_ij = [i != j],
    subject to sum_i l_ij = p_j, sum_j l_ij = q_i, l >= 0 (l flattened row-major)."""
    k = len(p)
    cost = (1.0 - np.eye(k)).ravel()
    a_eq, b_eq = [], []
    for j in range(k):  # column sums: sum_i l_ij = p_j
        row = np.zeros((k, k))
        row[:, j] = 1.0
        a_eq.append(row.ravel())
        b_eq.append(p[j])
    for i in range(k):  # row sums: sum_j l_ij = q_i
        row = np.zeros((k, k))
        row[i, :] = 1.0
        a_eq.append(row.ravel())
        b_eq.append(q[i])
    res = linprog(cost, A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def test_wasserstein_hand() -> None:
    # M=2: |.7 - .4| = .3 (paper 001's closed form)
    assert group_wasserstein([0.7, 0.3], [0.4, 0.6]) == pytest.approx(0.3)
    # M=3: .5 (|.3| + 0 + |.3|) = .3 = max_i |p_i - q_i| (paper 001's closed form)
    assert group_wasserstein([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]) == pytest.approx(0.3)
    # M=4: .5 * 4 * .3 = .6 (move .3 from group 1 to 2 and .3 from 3 to 4) -- not the
    # max |p_i - q_i| = .3, which is only valid for M <= 3
    assert group_wasserstein([0.4, 0.1, 0.4, 0.1], [0.1, 0.4, 0.1, 0.4]) == pytest.approx(0.6)
    assert group_wasserstein([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]) == pytest.approx(1.0)
    assert group_wasserstein([0.2, 0.8], [0.2, 0.8]) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_wasserstein_two_groups_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, q = random_distribution(rng, 2), random_distribution(rng, 2)
    # groups placed at 0 and 1 on the real line: |x - y| is then the 0/1 metric
    expected = wasserstein_distance([0.0, 1.0], [0.0, 1.0], u_weights=p, v_weights=q)
    assert group_wasserstein(p, q) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("seed", range(15))
def test_wasserstein_matches_transport_lp(k: int, seed: int) -> None:
    rng = np.random.default_rng(1000 * k + seed)
    p, q = random_distribution(rng, k), random_distribution(rng, k)
    assert group_wasserstein(p, q) == pytest.approx(transport_lp(p, q), abs=1e-9)
    assert group_wasserstein(q, p) == pytest.approx(group_wasserstein(p, q), abs=1e-15)
    if k == 3:  # paper 001's closed form for M = 3
        assert group_wasserstein(p, q) == pytest.approx(np.abs(p - q).max(), abs=1e-12)
