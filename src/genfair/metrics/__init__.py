"""The pure fairness math that two or more methodologies share. A paper's own math lives in
its package: :mod:`~genfair.methodologies.fact_or_fair.tradeoff`,
:mod:`~genfair.methodologies.iris.core_metrics`, :mod:`~genfair.methodologies.lvlm_facet.recall`,
:mod:`~genfair.methodologies.open_bias.severity`.

Pure functions: array-likes in, Python floats out, no state and no I/O. Probability
vectors are validated (1-D, finite, non-negative, same length where two, sum to 1 within
1e-6) and anything else raises ``ValueError``. Natural logs everywhere; :func:`js_divergence`
takes its base (default 2).

Distributions (:mod:`genfair.metrics.distributions`)
    - :func:`normalize_counts` -- counts to a probability vector.
    - :func:`normalized_entropy` -- ``H(p) / log k``; FACT-OR-FAIR Def. 2, OpenBias Eq. 6.
    - :func:`kl_divergence` -- ``KL(p || q)`` in nats, ``inf`` off the support of ``q``;
      FACT-OR-FAIR Def. 4.
    - :func:`js_divergence` -- squared Jensen-Shannon distance in a given base; IRIS M4/M5.
    - :func:`representation_disparity` -- ``sum_{i<j} |p_i - p_j| / (k - 1)``; IRIS M1.
    - :func:`group_wasserstein` -- earth mover's distance under the 0/1 metric (total
      variation); news-bias Eq. 3.
    - :func:`bias_severity` -- ``1 - H(p) / log k``; OpenBias Eq. 6.

Papers: FACT-OR-FAIR (Huang et al.), news bias (Fang et al.), IRIS (Zhao et al.),
OpenBias (D'Incà et al.), LVLM on FACET (Wu et al.); see each function's docstring for the section.
"""

from genfair.metrics.distributions import (
    bias_severity,
    group_wasserstein,
    js_divergence,
    kl_divergence,
    normalize_counts,
    normalized_entropy,
    representation_disparity,
)

__all__ = [
    "bias_severity",
    "group_wasserstein",
    "js_divergence",
    "kl_divergence",
    "normalize_counts",
    "normalized_entropy",
    "representation_disparity",
]
