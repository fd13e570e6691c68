"""The pure fairness math shared by all methodologies.

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

Trade-off (:mod:`genfair.metrics.tradeoff`)
    - :func:`max_entropy_at_accuracy` -- FACT-OR-FAIR Conclusion 1 / Appendix B Eq. 11.
    - :func:`max_entropy_curve` -- the same bound at many accuracies at once (the figure's curve).
    - :func:`tradeoff_distance` -- closest point on that curve and the distance;
      FACT-OR-FAIR Def. 3 / Appendix C.2; :func:`tradeoff_distances` -- the distance of many
      points at once (resampled scores).
    - :func:`s_fair` -- ``S_E + S_KLD - S_E S_KLD``; FACT-OR-FAIR Def. 5.

IRIS tables (:mod:`genfair.metrics.iris`)
    - :func:`accuracy_disparity` (AD, M2), :func:`statistical_parity_difference` (SPD, M3),
      :func:`stereotype_drift` (SDS, M6), :func:`delta_gsr` (M7),
      :func:`degradation_penalty` (M8/M9), :func:`answer_consistency_difference`
      (AC-diff, M10), :func:`dhr_inconsistency` (M11), :func:`bayes_invert` (tournament);
      IRIS paper 002, Appendix A.2.1, Table 5.

Recall (:mod:`genfair.metrics.recall`)
    - :func:`recall_estimate` (Wilson), :func:`recall_difference` /
      :func:`newcombe_interval` (Newcombe hybrid score), :func:`group_recalls` (per class,
      pooled, macro), :func:`disparity_table`, :func:`recall_range`; FACET recall and
      disparity as paper 004 §2.2 and Table 2 use them.

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
from genfair.metrics.iris import (
    accuracy_disparity,
    answer_consistency_difference,
    bayes_invert,
    degradation_penalty,
    delta_gsr,
    dhr_inconsistency,
    statistical_parity_difference,
    stereotype_drift,
)
from genfair.metrics.recall import (
    disparity_table,
    group_recalls,
    newcombe_interval,
    recall_difference,
    recall_estimate,
    recall_range,
)
from genfair.metrics.tradeoff import (
    max_entropy_at_accuracy,
    max_entropy_curve,
    s_fair,
    tradeoff_distance,
    tradeoff_distances,
)

__all__ = [
    "accuracy_disparity",
    "answer_consistency_difference",
    "bayes_invert",
    "bias_severity",
    "degradation_penalty",
    "delta_gsr",
    "dhr_inconsistency",
    "disparity_table",
    "group_recalls",
    "group_wasserstein",
    "js_divergence",
    "kl_divergence",
    "max_entropy_at_accuracy",
    "max_entropy_curve",
    "newcombe_interval",
    "normalize_counts",
    "normalized_entropy",
    "recall_difference",
    "recall_estimate",
    "recall_range",
    "representation_disparity",
    "s_fair",
    "statistical_parity_difference",
    "stereotype_drift",
    "tradeoff_distance",
    "tradeoff_distances",
]
