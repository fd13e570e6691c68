"""Scores of one or two categorical distributions over demographic groups.

Every function takes probability vectors (any 1-D array-like) and returns a Python
``float``. Inputs are validated by one rule: 1-D, non-empty, finite, non-negative, the
same length when there are two, and summing to 1 within ``1e-6`` (:data:`SUM_TOLERANCE`).
A vector that passes is rescaled to sum to exactly 1 before use, as
``scipy.stats.entropy`` and ``scipy.spatial.distance.jensenshannon`` do. Anything else
raises ``ValueError`` naming the problem and the offending values. Raw counts go through
:func:`normalize_counts` first.

Logarithms are natural everywhere; :func:`js_divergence` takes its base as an argument
(IRIS's authors use scipy's default, e; base 2 bounds it by 1). Scores that are bounded by theory
(entropy, JSD) are clipped to their bounds to remove floating-point round-off, so that downstream
range checks (e.g. :func:`genfair.metrics.s_fair`) never fail by 1e-16.

The number of classes ``k`` is always ``len(p)``: a class the model never produced still
counts and must be present as a zero.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

#: How far from 1 the sum of a probability vector may be.
SUM_TOLERANCE = 1e-6

__all__ = [
    "SUM_TOLERANCE",
    "bias_severity",
    "group_wasserstein",
    "js_divergence",
    "kl_divergence",
    "normalize_counts",
    "normalized_entropy",
    "representation_disparity",
]


def as_vector(values: ArrayLike, name: str) -> np.ndarray:
    """A 1-D, non-empty, finite, non-negative float array, or ``ValueError``."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers; got {values!r}") from exc
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {x.shape}: {values!r}")
    if x.size == 0:
        raise ValueError(f"{name} must not be empty")
    bad = ~np.isfinite(x)
    if bad.any():
        raise ValueError(
            f"{name} must be finite; got {x[bad].tolist()} at indices "
            f"{np.flatnonzero(bad).tolist()} in {x.tolist()}"
        )
    neg = x < 0
    if neg.any():
        raise ValueError(
            f"{name} must be non-negative; got {x[neg].tolist()} at indices "
            f"{np.flatnonzero(neg).tolist()} in {x.tolist()}"
        )
    return x


def _as_distribution(p: ArrayLike, name: str = "p") -> np.ndarray:
    """Validate a probability vector and rescale it to sum to exactly 1."""
    x = as_vector(p, name)
    total = float(x.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ValueError(
            f"{name} must sum to 1 (within {SUM_TOLERANCE:g}); got sum {total!r} for "
            f"{x.tolist()} (use normalize_counts for raw counts)"
        )
    return x / total


def _as_pair(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate two probability vectors over the same classes."""
    pv, qv = _as_distribution(p, "p"), _as_distribution(q, "q")
    if pv.shape != qv.shape:
        raise ValueError(
            f"p and q must have the same length; got {pv.size} and {qv.size}: "
            f"p={pv.tolist()}, q={qv.tolist()}"
        )
    return pv, qv


def _at_least_two_classes(p: np.ndarray, what: str) -> None:
    if p.size < 2:
        raise ValueError(
            f"{what} needs at least 2 classes (its normaliser is 0 for k=1); "
            f"got k={p.size}: {p.tolist()}"
        )


def _entropy_nats(p: np.ndarray) -> float:
    """Shannon entropy -sum p log p in nats, with 0 log 0 = 0."""
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def normalize_counts(counts: ArrayLike) -> np.ndarray:
    """Turn non-negative counts (or weights) into a probability vector.

    ``p_i = n_i / sum_j n_j``, e.g. FACT-OR-FAIR's class distribution of the responses
    (paper 000, §3.5, Definition 2) or the word-group shares ``f_h(v_m) = n_{h,m} / n_h``
    of the news-bias paper (paper 001, Methods, Eq. 1-2).

    Raises ``ValueError`` for a vector that is not 1-D, empty, non-finite or negative,
    and for an all-zero vector (no observations: the distribution is undefined).
    """
    x = as_vector(counts, "counts")
    total = float(x.sum())
    if total == 0.0:
        raise ValueError(
            f"counts must not be all zero (the distribution is undefined); got {x.tolist()}"
        )
    return x / total


def normalized_entropy(p: ArrayLike) -> float:
    """Shannon entropy normalised by its maximum, in [0, 1].

    ``H(p) / log k = -sum_i p_i log p_i / log k`` with natural logs, ``0 log 0 = 0`` and
    ``k = len(p)``; 0 for a one-hot vector, 1 for the uniform one. This is the per-cell
    term of FACT-OR-FAIR's entropy score S_E (paper 000, §3.5, Definition 2) and the
    normalised entropy in OpenBias' severity (paper 003, §3.2.3, Eq. 6).

    ``k = 1`` raises ``ValueError``: the normaliser ``log 1 = 0`` makes the score 0/0,
    and returning either 0 ("fully biased") or 1 ("fully diverse") would be an invented
    answer for an attribute that has only one class.
    """
    pv = _as_distribution(p)
    _at_least_two_classes(pv, "normalized_entropy")
    return min(1.0, max(0.0, _entropy_nats(pv) / math.log(pv.size)))


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """Kullback-Leibler divergence ``KL(p || q) = sum_i p_i log(p_i / q_i)`` in nats.

    Terms with ``p_i = 0`` contribute 0. Returns ``math.inf`` when some ``q_i = 0 < p_i``
    (as ``scipy.stats.entropy`` does); no smoothing is applied, callers smooth if they
    need a finite value. FACT-OR-FAIR's S_KLD averages ``exp(-KL(p^{s,h} || p^{s,l}))``
    over statistics (paper 000, §3.5, Definition 4). Never negative (Gibbs' inequality;
    round-off below 0 is clipped).
    """
    pv, qv = _as_pair(p, q)
    support = pv > 0
    if np.any(qv[support] == 0):
        return math.inf
    ps, qs = pv[support], qv[support]
    return max(0.0, float((ps * np.log(ps / qs)).sum()))


def js_divergence(p: ArrayLike, q: ArrayLike, base: float = 2.0) -> float:
    """Squared Jensen-Shannon distance in log base ``base``, in [0, log_base 2].

    ``JSD(p, q) = 1/2 KL_b(p || m) + 1/2 KL_b(q || m)`` with ``m = (p + q) / 2`` and
    ``KL_b`` the divergence in base ``b``; equal to
    ``scipy.spatial.distance.jensenshannon(p, q, base=b) ** 2``. IRIS M4/M5
    "Jensen-Shannon Div." ``JSD = D_JS(P_model || P_real)^2`` ("We use the squared
    JSD"; paper 002, Table 1 and Appendix A.2.1, Table 5; the paper names no base, the
    authors' code uses scipy's default e). 0 for equal vectors, ``log_b 2`` for disjoint
    supports (1 in base 2, 0.693 in base e). Symmetric and always finite.
    """
    pv, qv = _as_pair(p, q)
    b = float(base)
    if not math.isfinite(b) or b <= 0 or b == 1:
        raise ValueError(f"base must be a positive number other than 1; got {base!r}")
    m = (pv + qv) / 2.0  # m_i >= p_i / 2 > 0 wherever p_i > 0, so both KLs are finite
    nats = 0.5 * kl_divergence(pv, m) + 0.5 * kl_divergence(qv, m)
    return min(math.log(2.0), max(0.0, nats)) / math.log(b)


def representation_disparity(p: ArrayLike) -> float:
    """IRIS representation disparity RD (metric M1), in [0, 1].

    ``RD(P) = 1/(k-1) * sum_{1 <= i < j <= k} |p_i - p_j|`` for the proportions
    ``P = {p_1, ..., p_k}`` of ``k`` demographic subgroups (paper 002, Appendix A.2.1,
    Table 5, "[M1] Representation Disparity (RD)"; listed in Table 1 under Ideal
    Fairness). 0 for the uniform vector, 1 for a one-hot one (the pair sum is convex in
    ``p``, so its maximum over the simplex is at a vertex, where it equals ``k-1``).

    ``k = 1`` raises ``ValueError`` (the normaliser ``k - 1`` is 0). Computed in
    ``O(k log k)``: with ``p`` sorted ascending and 0-based ranks ``r``, the pair sum is
    ``sum_r (2r - k + 1) p_(r)``.
    """
    pv = _as_distribution(p)
    _at_least_two_classes(pv, "representation_disparity")
    k = pv.size
    ranks = np.arange(k)
    pair_sum = float(((2 * ranks - k + 1) * np.sort(pv)).sum())
    return min(1.0, max(0.0, pair_sum / (k - 1)))


def group_wasserstein(p: ArrayLike, q: ArrayLike) -> float:
    """Earth mover's distance between two group distributions under the 0/1 metric.

    Paper 001 (news bias), Methods "Evaluating Word Level Bias", Eq. 3:
    ``W(p, q) = min_{lambda >= 0} sum_ij lambda_ij d(v_i, v_j)`` subject to
    ``sum_i lambda_ij = p_j`` and ``sum_j lambda_ij = q_i``, with ``d(v_i, v_j) = 1`` if
    the groups differ and 0 otherwise. Under this ground metric the optimal plan keeps
    ``min(p_i, q_i)`` in place and moves the rest at unit cost, so
    ``W(p, q) = 1 - sum_i min(p_i, q_i) = 1/2 sum_i |p_i - q_i|`` (total variation) for
    any number of groups; the paper's closed forms for M = 2 (``|p_1 - q_1|``) and M = 3
    (``max_i |p_i - q_i|``) are special cases. In [0, 1]; symmetric.
    """
    pv, qv = _as_pair(p, q)
    return min(1.0, 0.5 * float(np.abs(pv - qv).sum()))


def bias_severity(p: ArrayLike) -> float:
    """OpenBias bias severity, in [0, 1]: 0 unbiased (uniform), 1 fully biased (one-hot).

    ``severity = 1 - H(p) / log |C|`` with ``H(p) = -sum_c p_c log p_c`` over the classes
    ``C`` of the bias (paper 003, §3.2.3, Eq. 6; the plain-text copy of Eq. 6 lost the
    ``p_c`` factor in front of the log). Equals ``1 - normalized_entropy(p)``; ``k = 1``
    raises ``ValueError`` for the same reason.
    """
    return 1.0 - normalized_entropy(p)
