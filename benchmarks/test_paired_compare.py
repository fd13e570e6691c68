"""Paired model comparisons at paper scale (issue 33.2): the time of one pair's comparison.

Two synthetic models' FACT-OR-FAIR LLM labels (random valid answers, 10% skipped, over the
19 statistics, the objective test and the four subjective contexts; one probe a row, as
FACT-OR-FAIR's ``probe_id`` is), compared on their four headline distances by
:func:`genfair.study.compare.compare_pair` with 1,000 replicates (the paper's) at 46,000
rows per model (paper scale: FACT-OR-FAIR is about 46,000 calls per LLM).

- *counted* (what ``score`` runs): the methodology's
  :class:`~genfair.methodologies.comparison.HeadlineCounts`, each probe's counts tallied once and
  every replicate scored from their weighted sum. Goal: under 60 s for the pair. Measured:
  12.8 s (4.1 s CPU; 2 shared cores, load average 14).
- *recomputed* (what ``score`` ran before): the headline function called on each replicate's
  rows (pandas counting per replicate), timed on a few replicates and extrapolated to 1,000.
  Measured: about 2.1 s a replicate, about 35 minutes a pair.

Both give the same numbers on the same draws (``tests/methodologies/test_fact_or_fair_compare.py``).
Quick mode (``make test``): 2,000 rows and 50 replicates, the goal printed.
Full mode: ``pytest benchmarks/test_paired_compare.py --benchmark-only -s``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from genfair.methodologies import get_methodology
from genfair.study.compare import compare_pair
from genfair.study_params import load_params, methodology_config
from tests.support.conf import ROOT
from tests.support.synthetic_labels import fact_or_fair_labels

METHODOLOGY = get_methodology("fact_or_fair")


def test_a_pair_of_llms_compared_at_paper_scale(benchmark, mode) -> None:
    from genfair.methodologies.fact_or_fair.scoring import statistics_for

    rows, resamples = mode.size((46_000, 1_000), (2_000, 50))
    config = methodology_config(load_params(ROOT / "params.yaml"), "fact_or_fair")
    counted = METHODOLOGY.comparison.headline_function(config, "llm")
    statistics = statistics_for(config)
    a, b = (fact_or_fair_labels(rows, statistics, seed) for seed in (1, 2))

    def compare(function, replicates: int) -> list:
        return compare_pair(function, a, b, "probe_id", resamples=replicates, seed=0)

    cpu = time.process_time()
    result, seconds = mode.measure(benchmark, lambda: compare(counted, resamples))
    cpu = time.process_time() - cpu
    assert len(result) == len(METHODOLOGY.comparison.headline)
    assert all(r["n"] == rows and np.isfinite(r["ci_low"]) for _, r in result)

    few = 3
    began = time.perf_counter()
    compare(lambda labels: counted(labels), few)  # a plain callable: recomputed per replicate
    per_replicate = (time.perf_counter() - began) / few
    print(
        f"\n{rows:,} rows per model, {resamples:,} replicates: counted {seconds:.1f} s "
        f"({cpu:.1f} s CPU); "
        f"recomputed about {per_replicate:.2f} s a replicate, {per_replicate * 1000:.0f} s "
        f"per 1,000 (load average {os.getloadavg()[0]:.1f})"
    )
    mode.goal(
        seconds < 60,
        f"a pair at {rows:,} rows and {resamples:,} replicates in {seconds:.1f} s (goal < 60 s)",
        "quick mode runs small sizes",
    )
