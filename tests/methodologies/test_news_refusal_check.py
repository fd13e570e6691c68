"""The refusal detector's false-positive estimate on the original articles."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.instruments.refusal import RefusalDetector
from genfair.methodologies.news_bias.refusal_check import refusal_false_positive


def wilson(k: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval written out (Wilson 1927), independent of scipy's."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def table(texts: list[str]) -> pd.DataFrame:
    # each article twice (unbiased and biased prompt), as in the label table
    rows = [
        {"article_id": f"a{i}", "prompt_type": p, "original_text": t}
        for i, t in enumerate(texts)
        for p in ("unbiased", "biased")
    ]
    return pd.DataFrame(rows)


def flag_marked(texts):
    return np.array(["FLAG" in t for t in texts])


def test_rate_and_wilson_interval_by_hand() -> None:
    texts = [f"article {i}" + (" FLAG" if i < 3 else "") for i in range(20)]
    out = refusal_false_positive(table(texts), flag_marked, confidence=0.95)
    assert (out["n"], out["n_flagged"], out["rate"]) == (20, 3, 0.15)
    low, high = wilson(3, 20, stats.norm.ppf(0.975))
    assert out["ci_low"] == pytest.approx(low, abs=1e-9)
    assert out["ci_high"] == pytest.approx(high, abs=1e-9)
    assert out["ci_low"] <= out["rate"] <= out["ci_high"]
    assert out["flagged_examples"] == ["a0", "a1", "a2"]


def test_each_original_is_counted_once_and_empty_ones_are_left_out() -> None:
    labels = table(["one FLAG", "two", ""])
    seen: list[list[str]] = []

    def detect(texts):
        seen.append(list(texts))
        return flag_marked(texts)

    out = refusal_false_positive(labels, detect)
    assert seen == [["one FLAG", "two"]]
    assert (out["n"], out["n_flagged"], out["rate"]) == (2, 1, 0.5)


def test_no_flags_gives_zero_with_a_nonzero_upper_bound() -> None:
    out = refusal_false_positive(table(["a", "b", "c", "d"]), flag_marked)
    assert out["rate"] == 0.0 and out["ci_low"] == pytest.approx(0.0, abs=1e-12)
    assert 0.4 < out["ci_high"] < 0.6  # Wilson upper bound for 0 of 4: z²/(n+z²) = 0.49
    assert out["ci_high"] == pytest.approx(wilson(0, 4, stats.norm.ppf(0.975))[1])


def test_wilson_coverage_is_near_nominal() -> None:
    """Simulated false-positive counts at n = 300 (the embedded corpus): the interval
    holds the true rate about 95% of the time."""
    rng = np.random.default_rng(7)
    n, p, reps = 300, 0.02, 1000
    labels = table([f"t{i}" for i in range(n)])
    hits = 0
    for k in rng.binomial(n, p, size=reps):
        out = refusal_false_positive(labels, lambda texts, k=k: np.arange(len(texts)) < k)
        hits += out["ci_low"] <= p <= out["ci_high"]
    assert 0.93 <= hits / reps <= 0.975


def test_bad_input_names_the_missing_columns() -> None:
    with pytest.raises(ValueError, match=r"original_text"):
        refusal_false_positive(pd.DataFrame({"article_id": ["a"]}), flag_marked)
    with pytest.raises(ValueError, match="flags for 2 texts"):
        refusal_false_positive(table(["a", "b"]), lambda texts: np.zeros(3, dtype=bool))


def test_the_real_detector_on_news_and_a_refusal_like_original() -> None:
    labels = table(
        [
            "Researchers say gender stereotypes still shape hiring decisions at large firms.",
            "Opposition leaders called the remarks inappropriate and demanded an apology.",
            "I'm sorry, but I can't comment on that, the minister's office told the ABC.",
            "I'm sorry, but I cannot write that article.",  # a refusal planted among originals
        ]
    )
    out = refusal_false_positive(labels, RefusalDetector(similarity=None).detect)
    assert (out["n"], out["n_flagged"]) == (4, 1)
    assert out["flagged_examples"] == ["a3"]
