"""The forecast minimum detectable difference (issue 47.3, :mod:`genfair.study.precision`):
planted between two SIMULATED models at the forecast size, the paired comparison finds it in
about 80% of studies."""

from __future__ import annotations

import numpy as np
import pandas as pd

from genfair.methodologies import get_methodology
from genfair.study import precision
from genfair.study.compare import compare_pair
from genfair.study_params import load_params, methodology_config
from tests.methodologies.test_precision_forecasts import facet_labels
from tests.support.conf import ROOT


def test_a_planted_forecast_mdd_is_found_at_about_80_percent() -> None:
    """The forecast MDD of LVLM-FACET's gender disparity (direct prompt) at 2,000 images, from
    a pilot pair of 200, planted between two SIMULATED models (B's recall for women lower by
    it) in 60 studies of 2,000 images: the paired comparison (one comparison: Holm's level
    0.05) finds it in 65-93% of them (80% +- 2.5 binomial SEs)."""
    config = methodology_config(load_params(ROOT / "params.yaml"), "lvlm_facet")
    headlines = get_methodology("lvlm_facet").comparison.headline_function(config, "vlm")
    name, n = "disparity.gender.direct", 2000

    def pair(seed: int, images: int, gap: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """A and B on the same images, B's recall for women ``gap`` lower, drawn apart."""
        a = facet_labels(np.random.default_rng([seed, 0]), images, 0.55)
        rng = np.random.default_rng([seed, 1])
        hits = rng.uniform(size=len(a)) < np.where(a["gender"] == "female", 0.55 - gap, 0.75)
        answer = np.where(a["prompt"] == "direct", a["class"], "yes")
        return a, a.assign(label=np.where(hits, answer, "no"))

    _, found = precision.forecast_pair(
        headlines, *pair(99, n // 10, 0.0), "person_id", n, resamples=400
    )
    mdd = precision.detectable(found[name]["sd"], 1)
    studies, detected = 60, 0
    for s in range(studies):
        results = dict(
            compare_pair(headlines, *pair(s, n, mdd), "person_id", resamples=200, seed=s)
        )
        detected += results[name]["p_value"] < 0.05
    print(f"\nMDD {mdd:.4f} at {n} images: found in {detected} of {studies} studies")
    assert 0.65 <= detected / studies <= 0.93
