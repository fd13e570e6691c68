"""The precision forecast of the default study (issue 47.5): ``genfair plan --precision``'s
forecast (:func:`genfair.study.precision.forecast`) for the default study's models and
methodologies, each run's pilot at its default size and forecast at 40 times it (about
FACT-OR-FAIR's paper ratio: 44,908 planned units over the default study's 1,110). Goal: under
60 s on 2 cores.

SYNTHETIC pilots (no model called), sized like the default study's runs: FACT-OR-FAIR 1,110
LLM probes (smollm2, simulated_llm), news bias 24 article pairs x 10 (the default's 24
articles' pairs, rounded up so the pair has units), IRIS's tournament at 10 rounds (LLMs and
the VLM) and 52 occupations x 20 images (t2i) at the study's S and K, LVLM-FACET 200 images,
OpenBias 8 captions x 4 images over 4 biases. FACT-OR-FAIR's text-to-image run has no
synthetic labels here: it says "no pilot", as a run without labels does.

Quick mode (``make test``): forecast at 4 times the pilots. Full mode:
``pytest benchmarks/test_precision_forecast.py --benchmark-only -s``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.test_iris_compare import _config
from genfair.io import write_json, write_parquet
from genfair.methodologies.fact_or_fair.scoring import statistics_for
from genfair.methodologies.iris.scoring import DEFAULT_SECTORS
from genfair.study import precision
from genfair.study.layout import Layout
from genfair.study_params import load_params, methodology_config
from tests.methodologies.test_precision_forecasts import facet_labels
from tests.support.conf import ROOT
from tests.support.iris_labels import t2i_labels, tournament_labels
from tests.support.open_bias_labels import knowledge_base, open_bias_labels
from tests.support.synthetic_labels import fact_or_fair_labels


def _news(rng: np.random.Generator, pairs: int) -> pd.DataFrame:
    men = "The man said his son and the chairman agreed with him."
    women = "The woman said her daughter and the mother agreed with her."
    return pd.DataFrame(
        {
            "pair_id": [f"a{i}" for i in range(pairs)],
            "prompt_type": "unbiased",
            "status": "ok",
            "generated_text": np.where(rng.uniform(size=pairs) < 0.65, men, women),
            "original_text": np.where(rng.uniform(size=pairs) < 0.5, men, women),
        }
    )


def _study(tmp_path: Path) -> tuple:
    """The default study's params (IRIS reading a mapped occupation table) and a layout
    holding every run's SYNTHETIC pilot and IRIS's study scores."""
    iris, occupations = _config(tmp_path)  # the mapped occupation table
    params = load_params(ROOT / "params.yaml")
    raw = params.model_dump(mode="json", exclude_unset=True)
    raw["methodologies"]["iris"]["occupations_table"] = iris.occupations_table
    params = type(params).model_validate(raw)
    layout = Layout(tmp_path)
    rng = np.random.default_rng(0)
    statistics = statistics_for(methodology_config(params, "fact_or_fair"))
    kb = knowledge_base(rng, 4, 8, 6, (2, 3))
    shares = {
        (b, c): rng.dirichlet(np.ones(len(classes)) * 2)
        for b, (classes, captions) in kb.items()
        for c in captions
    }
    pilots = {
        ("smollm2", "fact_or_fair"): fact_or_fair_labels(1110, statistics, 1),
        ("simulated_llm", "fact_or_fair"): fact_or_fair_labels(1110, statistics, 2),
        ("smollm2", "news_bias"): _news(rng, 240),
        ("simulated_llm", "news_bias"): _news(rng, 240),
        ("smollm2", "iris"): tournament_labels(rng, occupations, "llm", rounds=10),
        ("simulated_llm", "iris"): tournament_labels(rng, occupations, "llm", rounds=10),
        ("simulated_vlm", "iris"): tournament_labels(rng, occupations, "vlm", rounds=10),
        ("simulated_t2i", "iris"): t2i_labels(rng, occupations, 0.2, images=20),
        ("simulated_vlm", "lvlm_facet"): facet_labels(rng, 200, 0.55),
        ("simulated_t2i", "open_bias"): open_bias_labels(rng, kb, shares, images=4),
    }
    for (model, name), labels in pilots.items():
        write_parquet(labels, layout.labels(model, name))
        write_json({"calls": len(labels)}, layout.usage(model, name))
    scores = pd.DataFrame(
        [{"sector": s, "S": p["S"], "K": p["K"]} for s, p in DEFAULT_SECTORS.items()]
    )
    write_parquet(scores, layout.study("iris") / "scores.parquet")
    write_json({}, layout.study("iris") / "summary.json")
    return params, layout, {run: len(labels) for run, labels in pilots.items()}


def test_the_default_studys_forecast(benchmark, mode, tmp_path: Path) -> None:
    params, layout, calls = _study(tmp_path)
    times = mode.size(40, 4)
    planned = {run: n * times for run, n in calls.items()}
    cpu = time.process_time()
    result, seconds = mode.measure(benchmark, lambda: precision.forecast(params, planned, layout))
    cpu = time.process_time() - cpu
    runs = {(h.model, h.methodology) for h in result.half_widths}
    assert set(calls) < runs and ("simulated_t2i", "fact_or_fair") in runs
    pilots = [h for h in result.half_widths if h.note != precision.NO_PILOT]
    assert {(h.model, h.methodology) for h in pilots} == set(calls)
    forecast = [h for h in pilots if h.half_width is not None]
    assert forecast and all(h.units and h.units > h.pilot_units for h in forecast)
    assert result.comparisons == len(result.detectable)
    print(
        f"\n{len(pilots)} headlines of {len(calls)} runs at {times}x their pilots "
        f"({len(forecast)} forecast), {len(result.detectable)} comparisons: {seconds:.1f} s "
        f"({cpu:.1f} s CPU; load average {os.getloadavg()[0]:.1f})"
    )
    mode.goal(
        seconds < 60,
        f"the default study's forecast in {seconds:.1f} s (goal < 60 s)",
        "quick mode forecasts at 4 times the pilots",
    )
