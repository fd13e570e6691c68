"""IRIS's paired model comparisons at paper scale (issue 33.2): the time of one pair.

SYNTHETIC labels (:mod:`tests.support.iris_labels`), compared on their sector scores at fixed
S and K by :func:`genfair.study.compare.compare_pair` with 1,000 replicates:

- *text-to-image, counted* (what ``score`` runs for t2i models,
  :func:`genfair.methodologies.iris.compare.generation_counts`): the paper's 52 occupations x
  160 IFS-Gen images and 10 steered occupations x 2 prompts x 300 BIS-Gen images (the
  paper's 6,000) per model. Goal: under 60 s for the pair.
- *tournament*: 2,000 rounds x 18 profiles of 5 competitors (the paper's 36,000) per model,
  counted (:func:`genfair.methodologies.iris.compare.understanding_counted`, the tournament's
  own Bayes step per replicate from summed counts; goal: under 120 s of CPU for the pair), and
  recomputed (IRIS's own scoring of every replicate's rows,
  :func:`genfair.methodologies.iris.compare.iris_headlines`, the path of a ``workforce``
  prior) timed on a few replicates and extrapolated to 1,000.

Measured figures: docs/methodology.md, "Paired model comparisons".
Quick mode (``make test``): 12 occupations x 20 images, 50 replicates; 100 rounds.
Full mode: ``pytest benchmarks/test_iris_compare.py --benchmark-only -s``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from genfair.curation.occupations import OccupationsConfig, map_occupations
from genfair.methodologies import get_methodology
from genfair.methodologies.base import StudyResult
from genfair.methodologies.comparison import HeadlineCounts
from genfair.methodologies.iris.config import IrisConfig
from genfair.methodologies.iris.scoring import DEFAULT_SECTORS
from genfair.study.compare import compare_pair
from tests.support.conf import ROOT
from tests.support.iris_labels import t2i_labels, tournament_labels

IRIS = get_methodology("iris")
STUDY = StudyResult(
    tables={
        "scores": pd.DataFrame(
            [{"sector": s, "S": p["S"], "K": p["K"]} for s, p in DEFAULT_SECTORS.items()]
        )
    },
    summary={},
)


def _config(tmp_path: Path) -> tuple[IrisConfig, list[str]]:
    reference = ROOT / "data" / "reference"
    table = map_occupations(
        OccupationsConfig(
            occupations=reference / "facet_occupations.csv",
            us_statistics=reference / "iris_real_world_us.csv",
            eu_statistics=reference / "iris_real_world_eu.csv",
        )
    )
    path = tmp_path / "occupations.parquet"
    table.to_parquet(path)
    return IrisConfig(occupations_table=str(path)), list(table["occupation"])


def test_a_pair_of_text_to_image_models_compared_at_paper_scale(benchmark, mode, tmp_path) -> None:
    config, occupations = _config(tmp_path)
    n_occ, images, resamples = mode.size((52, 160, 1_000), (12, 20, 50))
    occupations = occupations[:n_occ]
    headlines = IRIS.comparison.paired_headline_function(config, "t2i", STUDY)
    assert isinstance(headlines, HeadlineCounts)
    rng = np.random.default_rng(0)
    a, b = (
        t2i_labels(rng, occupations, tilt, images=images, steered=10, per_prompt=300)
        for tilt in (0.0, 0.1)
    )

    def compare() -> list:
        return compare_pair(
            headlines, a, b, IRIS.comparison.paired_units, resamples=resamples, seed=0
        )

    cpu = time.process_time()
    result, seconds = mode.measure(benchmark, compare)
    cpu = time.process_time() - cpu
    assert {n.split(" ")[0] for n, _ in result} == {
        "IFS-Gen.score",
        "RFS-Gen.score",
        "BIS-Gen.score",
    }
    print(
        f"\nt2i: {len(a):,} rows per model, {resamples:,} replicates: counted {seconds:.1f} s "
        f"({cpu:.1f} s CPU; load average {os.getloadavg()[0]:.1f})"
    )
    mode.goal(
        seconds < 60,
        f"a t2i pair at {len(a):,} rows and {resamples:,} replicates in {seconds:.1f} s "
        "(goal < 60 s)",
        "quick mode runs small sizes",
    )


def test_a_pair_of_tournaments_at_paper_scale(benchmark, mode, tmp_path) -> None:
    """Counted (1,000 replicates) and recomputed (a few replicates, extrapolated)."""
    from genfair.methodologies.iris.compare import calibration, iris_headlines
    from genfair.methodologies.iris.occupations import reference_from_occupations

    config, occupations = _config(tmp_path)
    rounds, resamples = mode.size((2_000, 1_000), (100, 50))
    rng = np.random.default_rng(0)
    a, b = (tournament_labels(rng, occupations, "llm", rounds=rounds, competitors=5) for _ in "ab")
    counted = IRIS.comparison.paired_headline_function(config, "llm", STUDY)
    assert isinstance(counted, HeadlineCounts)
    cpu = time.process_time()
    result, seconds = mode.measure(
        benchmark,
        lambda: compare_pair(
            counted, a, b, IRIS.comparison.paired_units, resamples=resamples, seed=0
        ),
    )
    cpu = time.process_time() - cpu
    assert [n for n, _ in result] == ["RFS-Und.score (partial)"]  # no SDS without IFS-Und
    assert np.isfinite(result[0][1]["ci_low"])

    reference = reference_from_occupations(pd.read_parquet(config.occupations_table))
    recomputed = iris_headlines(config, calibration(STUDY), reference)
    few = 2
    began = time.perf_counter()
    compare_pair(recomputed, a, b, IRIS.comparison.paired_units, resamples=few, seed=0)
    per_replicate = (time.perf_counter() - began) / (few + 1)  # and the observed difference
    print(
        f"\ntournament: {len(a):,} rounds per model, {resamples:,} replicates: counted "
        f"{seconds:.1f} s ({cpu:.1f} s CPU); recomputed about {per_replicate:.2f} s a "
        f"replicate (both models), {per_replicate * 1000 / 60:.0f} min per 1,000 "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    mode.goal(
        cpu < 120,
        f"a pair at {len(a):,} rounds and {resamples:,} replicates in {cpu:.1f} s of CPU "
        "(goal < 120 s; CPU, as the 2 shared cores' load doubles the wall time)",
        "quick mode runs small sizes",
    )
