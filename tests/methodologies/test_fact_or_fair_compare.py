"""FACT-OR-FAIR's headline function for paired comparisons (issue 33.2): on a model's labels
it gives the headline distances its metrics give (without intervals); on a resample of the
probes, the distances of those probes' answers."""

from __future__ import annotations

import numpy as np
import pytest

from genfair.config import load_params, methodology_config
from genfair.methodologies import get_methodology
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig
from genfair.models.runner import run_calls
from genfair.models.simulated import SimulatedLLM
from tests.support.conf import ROOT
from tests.support.contexts import step_context

METHODOLOGY = get_methodology("fact_or_fair")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    params = load_params(ROOT / "params.yaml")
    config = methodology_config(params, "fact_or_fair").model_copy(
        update={
            "objective_rounds": 1,
            "scenarios_per_direction": 1,
            "contexts": ["baseline"],
            "bootstrap_resamples": 0,
        }
    )
    probes = METHODOLOGY.probes_for(METHODOLOGY.build_probes(config, params.seed), "llm")
    simulator = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    with ResponseCache(tmp_path_factory.mktemp("cache") / "responses.sqlite") as cache:
        responses = run_calls(
            simulator, cache, METHODOLOGY.calls(probes, config, "llm"), METHODOLOGY.judge, seed=1
        )
    labels = METHODOLOGY.label(probes, responses, config, step_context())
    return config, labels, METHODOLOGY.metrics(labels, config, step_context(seed=1))


def test_the_headline_function_gives_the_metrics_distances(run) -> None:
    config, labels, result = run
    values = METHODOLOGY.headline_function(config, "llm")(labels)
    scores = result.scores.set_index(["context", "attribute"])
    expected = {
        h.name: float(scores.loc[(h.where["context"], h.where["attribute"]), h.column])
        for h in METHODOLOGY.headline
        if (h.where["context"], h.where["attribute"]) in scores.index
    }
    assert expected and values == pytest.approx(expected)  # baseline gender and race
    assert METHODOLOGY.headline_function(config, "t2i") is None  # not compared yet


def test_a_resample_of_the_probes_is_scored_on_their_answers(run) -> None:
    config, labels, _ = run
    function = METHODOLOGY.headline_function(config, "llm")
    probes = labels[METHODOLOGY.paired_unit].unique()
    drawn = np.random.default_rng(0).choice(probes, size=len(probes))
    resampled = labels.set_index(METHODOLOGY.paired_unit).loc[drawn].reset_index()
    assert set(function(resampled)) == set(function(labels))
    assert function(resampled) != function(labels)  # another draw, other counts
