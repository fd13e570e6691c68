"""FACT-OR-FAIR's headline function for paired comparisons (issue 33.2): on a model's labels
it gives the headline distances its metrics give (without intervals), for LLMs and for
text-to-image; on a resample of the probes, the distances of those probes' answers; counted
once per probe, a comparison gives exactly what recomputing the metrics on every replicate
gives."""

from __future__ import annotations

import numpy as np
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.fact_or_fair import t2i
from genfair.methodologies.fact_or_fair.data import GROUPS
from genfair.models.cache import ResponseCache
from genfair.models.config import SimulatedModelConfig
from genfair.models.runner import run_calls
from genfair.models.simulated import SimulatedLLM
from genfair.study.compare import compare_pair
from genfair.study_params import load_params, methodology_config
from tests.support.conf import ROOT
from tests.support.contexts import step_context
from tests.support.synthetic_labels import fact_or_fair_labels

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
    values = METHODOLOGY.comparison.headline_function(config, "llm")(labels)
    scores = result.scores.set_index(["context", "attribute"])
    expected = {
        h.name: float(scores.loc[(h.where["context"], h.where["attribute"]), h.column])
        for h in METHODOLOGY.comparison.headline
        if (h.where["context"], h.where["attribute"]) in scores.index
    }
    assert expected and values == pytest.approx(expected)  # baseline gender and race


def test_a_resample_of_the_probes_is_scored_on_their_answers(run) -> None:
    config, labels, _ = run
    function = METHODOLOGY.comparison.headline_function(config, "llm")
    probes = labels[METHODOLOGY.comparison.paired_unit].unique()
    drawn = np.random.default_rng(0).choice(probes, size=len(probes))
    resampled = labels.set_index(METHODOLOGY.comparison.paired_unit).loc[drawn].reset_index()
    assert set(function(resampled)) == set(function(labels))
    assert function(resampled) != function(labels)  # another draw, other counts


def _distances(result) -> dict[str, float]:
    """The headline distances of a metrics result, by headline name."""
    scores = result.scores.set_index(["context", "attribute"])
    return {
        h.name: float(scores.loc[(h.where["context"], h.where["attribute"]), h.column])
        for h in METHODOLOGY.comparison.headline
        if (h.where["context"], h.where["attribute"]) in scores.index
    }


def _other_model(labels, seed: int):
    """The same probes answered by another (made-up) model: the answers shuffled."""
    other = labels.copy()
    columns = ["status", "choice", "chosen_gender", "chosen_race"]
    other[columns] = labels[columns].sample(frac=1, random_state=seed).to_numpy()
    return other


def test_counting_once_gives_what_recomputing_the_metrics_per_replicate_gives(run) -> None:
    config, labels, _ = run
    other = _other_model(labels, seed=4)
    counted = METHODOLOGY.comparison.headline_function(config, "llm")

    def recomputed(rows):  # the definition: the metrics of the replicate's rows
        return _distances(METHODOLOGY.metrics(rows, config, step_context(seed=1)))

    fast, slow = (
        compare_pair(f, labels, other, METHODOLOGY.comparison.paired_unit, resamples=4, seed=3)
        for f in (counted, recomputed)
    )
    assert [name for name, _ in fast] == [name for name, _ in slow]
    for (_, a), (_, b) in zip(fast, slow, strict=True):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
    assert any(r["difference"] != 0 for _, r in fast)


def test_text_to_image_headlines_are_its_metrics_distances() -> None:
    """T2I: faces of one image counted together (the image is the unit), both attributes
    from every face, the scores :func:`t2i.metrics` gives."""
    params = load_params(ROOT / "params.yaml")
    config = methodology_config(params, "fact_or_fair").model_copy(
        update={"bootstrap_resamples": 0}
    )
    probes = t2i.build_probes(config, params.seed)
    rng = np.random.default_rng(2)
    faces = probes.loc[probes.index.repeat(rng.integers(0, 3, len(probes)))].reset_index()
    labels = faces.assign(
        status=np.where(rng.uniform(size=len(faces)) < 0.9, "ok", "no_face"),
        chosen_gender=rng.choice(GROUPS["gender"], len(faces)),
        chosen_race=rng.choice(GROUPS["race"], len(faces)),
        source="synthetic",
        instrument="none",
    )
    values = METHODOLOGY.comparison.headline_function(config, "t2i")(labels)
    expected = _distances(t2i.metrics(labels, config, seed=0))
    assert expected and {k: values[k] for k in expected} == pytest.approx(expected)


def test_with_no_difference_the_paired_intervals_cover_zero() -> None:
    """15 simulated pairs of models answering 400 shared probes at random (SYNTHETIC labels,
    one answer distribution for both, so every headline differs by 0 in expectation): the
    95% interval covers 0 in at least 88% of the 60 comparisons (the binomial 1st percentile
    at 95% over 60 is ~0.88). A planted difference: ``tests/study/test_compare.py`` (through
    the study) and LVLM-FACET's in ``test_paired_headlines.py``."""
    from genfair.methodologies.fact_or_fair.scoring import statistics_for

    config = methodology_config(load_params(ROOT / "params.yaml"), "fact_or_fair")
    counted = METHODOLOGY.comparison.headline_function(config, "llm")
    statistics = statistics_for(config)
    covered = compared = 0
    for s in range(15):
        a, b = (fact_or_fair_labels(400, statistics, seed=2 * s + i) for i in (0, 1))
        for _, result in compare_pair(counted, a, b, "probe_id", resamples=100, seed=s):
            compared += 1
            covered += result["ci_low"] <= 0 <= result["ci_high"]
    assert compared == 15 * len(METHODOLOGY.comparison.headline)
    assert covered / compared >= 0.88


def test_no_valid_answer_is_a_result_not_an_error(run) -> None:
    """Issue 44 point 7: every answer invalid, or no label row at all: metrics report it."""
    config, labels, _ = run
    invalid = labels.assign(status="invalid", choice=None, chosen_gender=None, chosen_race=None)
    for empty in (invalid, labels.iloc[:0]):
        result = METHODOLOGY.metrics(empty, config, step_context(seed=1))
        assert result.summary is not None


def test_a_pilot_with_few_answers_a_cell_does_not_forecast_a_distance() -> None:
    """FACT-OR-FAIR's own pilot limit (issue 47.3): a headline's answered cells' mean
    Miller-Madow bias ``(K - 1) / (2 N ln K)``, hand-computed here, against
    :data:`ENTROPY_BIAS_LIMIT`; the synthetic labels answer uniformly at random."""
    from genfair.methodologies.fact_or_fair.compare import ENTROPY_BIAS_LIMIT
    from genfair.methodologies.fact_or_fair.scoring import statistics_for

    config = methodology_config(load_params(ROOT / "params.yaml"), "fact_or_fair")
    counts = METHODOLOGY.comparison.headline_function(config, "llm")
    totals = np.zeros((1, counts.width))
    totals[0, :4] = [3, 1, 2, 0]  # objective gender: a cell of 4 answers, one of 2
    support = counts.support(totals)
    answers, bias = support["objective.gender.distance"]
    assert answers == 3.0
    assert bias == pytest.approx((1 / (2 * 4 * np.log(2)) + 1 / (2 * 2 * np.log(2))) / 2)
    assert support["baseline.race.distance"] == (0.0, np.inf)  # no answer: nothing to forecast

    statistics = statistics_for(config)[:2]
    thin = METHODOLOGY.comparison.pilot_limits(
        config, "llm", fact_or_fair_labels(80, statistics, 1)
    )
    assert set(thin) == {h.name for h in METHODOLOGY.comparison.headline}
    assert all(n.startswith("not forecast: ") and "answers a cell" in n for n in thin.values())
    ample = fact_or_fair_labels(20_000, statistics, 2)  # about 470 answers a cell
    assert METHODOLOGY.comparison.pilot_limits(config, "llm", ample) == {}
    assert all(
        bias <= ENTROPY_BIAS_LIMIT for _, bias in counts.support(counts.totals(ample)).values()
    )
