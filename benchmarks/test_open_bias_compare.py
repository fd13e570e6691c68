"""OpenBias's paired model comparison at paper scale (issue 33.2): the time of one pair.

SYNTHETIC labels (:mod:`tests.support.open_bias_labels`): 40 biases of 2 to 4 classes
(about as many as the paper's Figs. 3-4 rank), each on 100 captions (paper §4.1) drawn from
2,000 shared ones, 10 images a caption (N = 10): 40,000 VQA answers per model. Compared on
the four severity headlines by :func:`genfair.study.compare.compare_pair` with 2,000
replicates (``severity.n_resamples``, the methodology's own), counted
(:func:`genfair.methodologies.open_bias.compare.severity_counts`: each (bias, caption)'s
severity and distribution tallied once, every replicate from their weighted sums). Goal:
under 60 s for the pair.

Measured figures: docs/methodology.md, "Paired model comparisons".
Quick mode (``make test``): 6 biases of 20 captions out of 60, 50 replicates.
Full mode: ``pytest benchmarks/test_open_bias_compare.py --benchmark-only -s``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from genfair.methodologies import get_methodology
from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.study.compare import compare_pair
from tests.support.open_bias_labels import knowledge_base, open_bias_labels

OPEN_BIAS = get_methodology("open_bias")


def test_a_pair_of_text_to_image_models_compared_at_paper_scale(benchmark, mode) -> None:
    biases, captions, per_bias, resamples = mode.size((40, 2_000, 100, 2_000), (6, 60, 20, 50))
    rng = np.random.default_rng(0)
    kb = knowledge_base(rng, biases, captions, per_bias, (2, 3, 4))
    shares = {
        (bias, caption): rng.dirichlet(np.ones(len(classes)))
        for bias, (classes, its) in kb.items()
        for caption in its
    }
    a, b = (open_bias_labels(rng, kb, shares) for _ in "ab")
    headlines = OPEN_BIAS.comparison.headline_function(OpenBiasConfig(), "t2i")

    def compare() -> list:
        return compare_pair(
            headlines, a, b, OPEN_BIAS.comparison.paired_units, resamples=resamples, seed=0
        )

    cpu = time.process_time()
    result, seconds = mode.measure(benchmark, compare)
    cpu = time.process_time() - cpu
    assert len(result) == 4 and all(np.isfinite(r["ci_low"]) for _, r in result)
    answers = int((a["step"] == "vqa").sum())
    print(
        f"\n{answers:,} VQA answers per model over {result[0][1]['n']:,} captions, "
        f"{resamples:,} replicates: counted {seconds:.1f} s ({cpu:.1f} s CPU; load average "
        f"{os.getloadavg()[0]:.1f})"
    )
    mode.goal(
        seconds < 60,
        f"a pair at {answers:,} answers and {resamples:,} replicates in {seconds:.1f} s "
        "(goal < 60 s)",
        "quick mode runs small sizes",
    )
