"""FACT-OR-FAIR's accuracy-diversity trade-off and fairness score (paper 000).

For a k-choice query answered correctly with probability ``a``, the entropy of the
response distribution is at most ``f(a)`` (Conclusion 1, Appendix B); a model is plotted
at ``(S_fact, S_E)`` and scored by its Euclidean distance to that curve (Definition 3,
Appendix C.2). :func:`s_fair` combines the entropy and KL scores (Definition 5).
Natural logs throughout; ``f`` is normalised by ``log k`` so the base cancels.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "max_entropy_at_accuracy",
    "max_entropy_curve",
    "s_fair",
    "tradeoff_distance",
    "tradeoff_distance_single_brent",
    "tradeoff_distances",
]

#: Bounds of the ``minimize_scalar(method="bounded")`` refinement, as in paper 000,
#: Appendix C.2, Algorithm 2. The exact endpoints 0 and 1 are checked separately.
X_BOUNDS = (1e-8, 1.0 - 1e-8)

# Coarse grid that seeds the refinement: Chebyshev-like spacing, dense near 0 and 1 where
# the curve is steep (|f'(a)| -> inf): spacing ~9.4e-6 at the ends, ~3.1e-3 in the middle.
_GRID = 0.5 - 0.5 * np.cos(np.linspace(0.0, math.pi, 513))


def _unit_score(value: float, name: str) -> float:
    """A real number in [0, 1], or ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in [0, 1]; got {value!r}")
    v = float(value)
    if not 0.0 <= v <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1]; got {value!r}")
    return v


def _num_classes(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 2:
        raise ValueError(f"k must be an integer >= 2 (number of answer options); got {k!r}")
    return int(k)


def _f(a: np.ndarray | float, k: int) -> np.ndarray:
    """Vectorised max_entropy_at_accuracy without validation (a in [0, 1])."""
    a = np.asarray(a, dtype=float)
    b = 1.0 - a
    with np.errstate(divide="ignore", invalid="ignore"):
        t_a = np.where(a > 0, a * np.log(a), 0.0)
        t_b = np.where(b > 0, b * np.log(b / (k - 1)), 0.0)
    # an entropy ratio, so in [0, 1]; clip round-off (f(1/k, k) can be 1 + 2e-16)
    return np.clip(-(t_a + t_b) / math.log(k), 0.0, 1.0)


def max_entropy_at_accuracy(a: float, k: int) -> float:
    """Largest normalised entropy S_E attainable at accuracy S_fact = ``a`` with ``k`` options.

    ``f(a) = -[a log a + (1 - a) log((1 - a) / (k - 1))] / log k`` (paper 000, §3.5,
    Conclusion 1; derivation Appendix B, Eq. 11, normalised by ``log k`` as in
    Algorithm 1 of Appendix C.1): the correct option gets ``a`` and the ``k - 1`` others
    share ``1 - a`` equally. ``f(1/k) = 1``, ``f(1) = 0``, ``f(0) = log(k-1) / log k``.

    Defined on the closed interval ``[0, 1]`` with ``0 log 0 = 0``. Unlike the paper's
    Algorithm 1, which returns infinity for ``a`` outside ``(0, 1)``, ``a`` outside
    ``[0, 1]`` (or NaN) raises ``ValueError``, as does ``k < 2``.
    """
    return float(_f(_unit_score(a, "a"), _num_classes(k)))


def max_entropy_curve(a: ArrayLike, k: int) -> np.ndarray:
    """:func:`max_entropy_at_accuracy` (paper 000, §3.5, Conclusion 1) at every accuracy of
    ``a`` at once (the curve a figure draws): ``ValueError`` unless every value is in
    ``[0, 1]`` and ``k >= 2``."""
    values = np.asarray(a, dtype=float)
    if not ((values >= 0.0) & (values <= 1.0)).all():  # also rejects NaN
        raise ValueError("accuracies must be in [0, 1]")
    return _f(values, _num_classes(k))


def tradeoff_distance(s_fact: float, s_e: float, k: int) -> tuple[float, float, float]:
    """Closest point on the trade-off curve to ``(s_fact, s_e)``, and the distance to it.

    Returns ``(x, y, d)`` with ``y = max_entropy_at_accuracy(x, k)`` and
    ``d = sqrt((x - s_fact)^2 + (y - s_e)^2)`` minimal over the curve on ``[0, 1]``
    (paper 000, §3.5, Definition 3 "Distance"; Appendix C.2, Algorithm 2).

    Algorithm 2 runs a single ``minimize_scalar(method="bounded")`` on
    ``(1e-8, 1 - 1e-8)``. That is not reliable: the squared distance to a concave curve
    can have two local minima (e.g. a point below the curve near the left end for
    ``k >= 3``, where the curve starts at height ``log(k-1)/log k``), and a bounded Brent
    search can return the wrong one (too far by up to 0.41 in our checks). Here the squared distance
    is first evaluated on a fixed grid of 513 points on ``[0, 1]`` (dense near both ends),
    every grid-local minimum is refined with ``minimize_scalar(method="bounded")`` on its
    two neighbouring cells intersected with :data:`X_BOUNDS` ``= (1e-8, 1 - 1e-8)`` (the
    paper's bounds), and the best of the refined points and all grid points, including the
    exact endpoints 0 and 1, is returned. So a point on the curve, endpoints included,
    gets distance 0 up to the refinement's tolerance: Brent's bounded search stops at
    about ``1.5e-8 * x`` in ``x`` (``sqrt(eps)`` relative), so distances are accurate to
    ~1e-8, far below the sampling error of any S_fact or S_E.

    Points above the curve are possible: the curve bounds one query's entropy given its
    accuracy, while S_fact and S_E are averages over cells (possibly with different ``k``,
    different weights or different query sets) and are noisy estimates. Their distance is
    still the shortest Euclidean distance to the curve; it is not signed.

    ``s_fact`` and ``s_e`` must be in ``[0, 1]`` and ``k >= 2``, else ``ValueError``.
    """
    from scipy.optimize import minimize_scalar

    x0, y0, k = _unit_score(s_fact, "s_fact"), _unit_score(s_e, "s_e"), _num_classes(k)

    def dist2(x: float) -> float:
        return (x - x0) ** 2 + (float(_f(x, k)) - y0) ** 2

    grid_d2 = (_GRID - x0) ** 2 + (_f(_GRID, k) - y0) ** 2
    best_x = float(_GRID[int(np.argmin(grid_d2))])
    best_d2 = float(grid_d2.min())
    padded = np.concatenate(([math.inf], grid_d2, [math.inf]))
    local_minima = np.flatnonzero((grid_d2 <= padded[:-2]) & (grid_d2 <= padded[2:]))
    for i in local_minima:
        lo = max(float(_GRID[max(i - 1, 0)]), X_BOUNDS[0])
        hi = min(float(_GRID[min(i + 1, _GRID.size - 1)]), X_BOUNDS[1])
        res = minimize_scalar(dist2, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        if res.fun < best_d2:
            best_x, best_d2 = float(res.x), float(res.fun)
    return best_x, float(_f(best_x, k)), math.sqrt(best_d2)


def tradeoff_distance_single_brent(s_fact: float, s_e: float, k: int) -> tuple[float, float, float]:
    """:func:`tradeoff_distance` as paper 000's Algorithm 2 (Appendix C.2) and the authors'
    ``calc_min_dist`` (uclanlp/fact-or-fair, subj_analysis.py) compute it: one
    ``minimize_scalar(method="bounded")`` on ``(1e-8, 1 - 1e-8)`` with scipy's default
    tolerance, the curve infinite outside ``(0, 1)``. It may stop at a local minimum (see
    :func:`tradeoff_distance`); offered to reproduce the published distances. Returns
    ``(x, y, d)`` at the point it stops.
    """
    from scipy.optimize import minimize_scalar

    x0, y0, k = _unit_score(s_fact, "s_fact"), _unit_score(s_e, "s_e"), _num_classes(k)

    def dist2(x: float) -> float:
        return (x - x0) ** 2 + (float(_f(x, k)) - y0) ** 2

    res = minimize_scalar(dist2, bounds=X_BOUNDS, method="bounded")
    x = float(res.x)
    return x, float(_f(x, k)), math.sqrt(dist2(x))


def s_fair(s_e: float, s_kld: float) -> float:
    """FACT-OR-FAIR fairness score ``S_fair = S_E + S_KLD - S_E * S_KLD``.

    Paper 000, §3.5, Definition 5. It is ``1 - (1 - S_E)(1 - S_KLD)``, which gives the
    four required properties: in [0, 1]; non-decreasing in both arguments; 1 when either
    is 1; equal to ``S_KLD`` when ``S_E = 0``. Both scores must be in ``[0, 1]``, else
    ``ValueError``.
    """
    e, kld = _unit_score(s_e, "s_e"), _unit_score(s_kld, "s_kld")
    return e + kld - e * kld


def tradeoff_distances(s_fact: ArrayLike, s_e: ArrayLike, k: int) -> np.ndarray:
    """:func:`tradeoff_distance`'s distance ``d`` for many points at once (vectorised; paper 000,
    §3.5, Definition 3 and Appendix C.2).

    For resampled scores (confidence intervals), where one scalar search per replicate is
    too slow. The same global search as :func:`tradeoff_distance` (the 513-point grid,
    then the best grid point's two neighbouring cells), refined by 60 golden-section steps
    instead of Brent's method: the bracket shrinks to ~1e-15, so the distance agrees with
    :func:`tradeoff_distance` within that function's own accuracy, ~1e-8 (a test). NaN in either
    coordinate gives NaN; other values outside ``[0, 1]`` raise ``ValueError``.
    """
    k = _num_classes(k)
    x0 = np.asarray(s_fact, dtype=float).ravel()
    y0 = np.asarray(s_e, dtype=float).ravel()
    if x0.shape != y0.shape:
        raise ValueError(f"s_fact and s_e must have the same length; got {x0.size} and {y0.size}")
    nan = np.isnan(x0) | np.isnan(y0)
    bad = ~nan & ((x0 < 0) | (x0 > 1) | (y0 < 0) | (y0 > 1))
    if bad.any():
        raise ValueError(
            f"s_fact and s_e must be in [0, 1]; got {list(zip(x0[bad], y0[bad], strict=True))[:5]}"
        )
    out = np.full(x0.shape, np.nan)
    x, y = x0[~nan][:, None], y0[~nan][:, None]
    if not x.size:
        return out
    grid_d2 = (_GRID[None, :] - x) ** 2 + (_f(_GRID, k)[None, :] - y) ** 2
    best = np.argmin(grid_d2, axis=1)
    best_d2 = grid_d2[np.arange(best.size), best]
    lo = _GRID[np.maximum(best - 1, 0)]
    hi = _GRID[np.minimum(best + 1, _GRID.size - 1)]
    x, y = x[:, 0], y[:, 0]

    def d2(t: np.ndarray) -> np.ndarray:
        return (t - x) ** 2 + (_f(t, k) - y) ** 2

    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo.copy(), hi.copy()
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = d2(c), d2(d)
    for _ in range(60):
        left = fc < fd  # the minimum lies in [a, d]
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        c_new = b - ratio * (b - a)
        d_new = a + ratio * (b - a)
        c, d = np.where(left, c_new, d), np.where(left, c, d_new)
        fc, fd = np.where(left, d2(c_new), fd), np.where(left, fc, d2(d_new))
    refined = d2((a + b) / 2.0)
    out[~nan] = np.sqrt(np.minimum(best_d2, refined))
    return out
