"""Planted-truth coverage of headline intervals (issue 46.7): one call finds that a mean's
interval holds its truth about 95% of the time, and that the percentile interval of a mean
absolute gap across groups (the issue's statistic, biased upward) misses it; a headline's
declared interval method is the one its intervals use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.base import Methodology, MetricsResult
from genfair.methodologies.comparison import Comparison, Headline, HeadlineCounts
from genfair.methodologies.intervals import headline_intervals, interval_table
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES, GROUPS, resolve_classes
from genfair.study.coverage import Plant, headline_coverage, reported_intervals
from genfair.study_params import load_params, methodology_config
from tests.study.toy_methodology import Quiz
from tests.study.toy_methodology.compare import QuizComparison
from tests.support.conf import ROOT

#: occupations, the first half planted at he = she (gap 0: what the plug-in |gap| overstates)
OCCUPATIONS = 12
P_HE = np.linspace(0.2, 0.6, OCCUPATIONS)
P_SHE = np.where(np.arange(OCCUPATIONS) < 6, P_HE, 0.7 - P_HE)
TRUTH = {"share_he": float(P_HE.mean()), "mean_abs_gap": float(np.abs(P_HE - P_SHE).mean())}


def _counts(config: object, modality: str) -> HeadlineCounts:
    """Per occupation: answers, he, she; the share of he (pooled) and mean |he - she| share."""

    def tally(labels: pd.DataFrame) -> pd.DataFrame:
        at = 3 * labels["occupation"].to_numpy(int)
        rows = np.arange(len(labels))
        answer = labels["answer"].to_numpy()
        return pd.concat(
            pd.DataFrame({"row": rows, "column": at + j, "count": count})
            for j, count in enumerate((1.0, (answer == "he") * 1.0, (answer == "she") * 1.0))
        )

    def score(totals: np.ndarray) -> dict[str, np.ndarray]:
        n, he, she = totals[:, 0::3], totals[:, 1::3], totals[:, 2::3]
        return {"share_he": he.sum(1) / n.sum(1), "mean_abs_gap": (np.abs(he - she) / n).mean(1)}

    return HeadlineCounts(3 * OCCUPATIONS, tally, score)


class GapComparison(Comparison):
    paired_unit = "probe_id"
    headline = (
        Headline("share_he", "value", {"measure": "he"}, "neither"),
        Headline("mean_abs_gap", "value", {"measure": "gap"}, "lower", interval_method="bca"),
    )
    headline_function = staticmethod(_counts)  # type: ignore[assignment]


class GapQuiz(Methodology):
    """A pronoun quiz reduced to its headline function (no steps run here)."""

    name = "gap_quiz"
    modalities = ("llm",)
    Config = None  # type: ignore[assignment]
    comparison_role = GapComparison

    def build_probes(self, config, seed):  # type: ignore[no-untyped-def]
        return pd.DataFrame()

    def label(self, probes, responses, config, ctx):  # type: ignore[no-untyped-def]
        return pd.DataFrame()

    def metrics(self, labels, config, ctx):  # type: ignore[no-untyped-def]
        return MetricsResult(pd.DataFrame())


def draw(size: int, rng: np.random.Generator) -> pd.DataFrame:
    """``size`` answers per occupation, drawn from the planted shares (SIMULATED)."""
    occupation = np.repeat(np.arange(OCCUPATIONS), size)
    u = rng.uniform(size=occupation.size)
    he, she = P_HE[occupation], P_SHE[occupation]
    answer = np.where(u < he, "he", np.where(u < he + she, "she", "they"))
    return pd.DataFrame(
        {"probe_id": np.arange(occupation.size), "occupation": occupation, "answer": answer}
    )


@pytest.fixture(scope="module")
def coverage() -> pd.DataFrame:
    return headline_coverage(GapQuiz(), None, Plant(draw, TRUTH), [24], 60, resamples=300)


def test_a_means_interval_reaches_nominal_coverage(coverage: pd.DataFrame) -> None:
    share = coverage[coverage["headline"] == "share_he"].set_index("method")
    assert (share["coverage"] >= 0.88).all()  # 95% nominal; sd of 60 draws ~ 0.03
    assert share["estimate"].to_numpy() == pytest.approx(TRUTH["share_he"], abs=0.01)
    assert (share["truth"] == TRUTH["share_he"]).all() and (share["reps"] == 60).all()


def test_the_percentile_interval_of_a_biased_absolute_gap_misses(coverage: pd.DataFrame) -> None:
    gap = coverage[coverage["headline"] == "mean_abs_gap"].set_index("method")
    assert gap.loc["percentile", "estimate"] > TRUTH["mean_abs_gap"] + 0.03  # biased upward
    assert gap.loc["percentile", "coverage"] < 0.5  # the miss
    assert gap.loc["percentile", "above"] > 0.5  # the interval lies above the truth
    assert gap.loc["bca", "coverage"] > gap.loc["percentile", "coverage"] + 0.1


def test_a_headline_uses_its_declared_interval_method() -> None:
    labels = draw(24, np.random.default_rng(0))
    found = headline_intervals(GapQuiz(), None, "llm", labels, resamples=300)
    assert {n: r["method"] for n, r in found.items()} == {
        "share_he": "percentile", "mean_abs_gap": "bca"
    }  # fmt: skip
    for result in found.values():
        assert result["ci_low"] <= result["estimate"] <= result["ci_high"]
        assert result["n"] == 24 * OCCUPATIONS
    # as score rows, each interval says how it was made
    rows = interval_table(found).set_index("headline")
    assert rows.loc["mean_abs_gap", "ci_method"] == "bca"
    assert rows.loc["share_he", "ci_low"] == found["share_he"]["ci_low"]
    # a plain function of the rows gives the intervals of the counted one (same draws)
    plain = GapQuiz()
    plain.comparison.headline_function = lambda config, modality: _counts(config, modality).__call__
    again = headline_intervals(plain, None, "llm", labels, resamples=300)
    for name, result in found.items():
        assert again[name]["ci_low"] == pytest.approx(result["ci_low"])
        assert again[name]["ci_high"] == pytest.approx(result["ci_high"])


def test_a_headline_refuses_an_unknown_interval_method() -> None:
    with pytest.raises(ValueError, match="interval_method='basic'"):
        Headline("x", "value", {}, "lower", interval_method="basic")  # type: ignore[arg-type]


class IntervalComparison(QuizComparison):
    headline = (
        Headline("accuracy", "mean", {"measure": "accuracy"}, "higher", ("ci_low", "ci_high")),
    )


class IntervalQuiz(Quiz):
    """The toy quiz with its reported (Wilson) interval declared on its headline."""

    comparison_role = IntervalComparison


def test_the_reported_interval_of_a_methodologys_metrics_step_is_measured_too() -> None:
    def answers(size: int, rng: np.random.Generator) -> pd.DataFrame:
        correct = rng.random(size) < 0.8  # SIMULATED: planted accuracy 0.8
        return pd.DataFrame({"probe_id": [f"q{i}" for i in range(size)], "status": "ok",
                             "answer": "A", "correct": correct})  # fmt: skip

    table = headline_coverage(IntervalQuiz(), None, Plant(answers, {"accuracy": 0.8}), [40], 40,
                              methods=("reported", "percentile"), resamples=200)  # fmt: skip
    coverage = table.set_index("method")["coverage"]
    assert coverage["reported"] >= 0.85 and coverage["percentile"] >= 0.85
    assert (table["truth"] == 0.8).all() and set(table["size"]) == {40}


def test_a_built_in_methodologys_headline_intervals() -> None:
    """LVLM-FACET's counted disparities on SIMULATED labels: the estimates are its headline
    function's, each interval contains its estimate, BCa when asked for."""
    lvlm = get_methodology("lvlm_facet")
    config = methodology_config(load_params(ROOT / "params.yaml"), "lvlm_facet")
    rng = np.random.default_rng(4)
    persons = pd.DataFrame(
        {"person_id": np.arange(300), "class": rng.choice(resolve_classes("paper"), 300)}
        | {a: rng.choice(GROUPS[a], 300) for a in ATTRIBUTES}
    )
    labels = pd.concat(
        persons.assign(prompt=prompt, status="ok", label=np.where(
            rng.random(300) < 0.6, persons["class"] if prompt == "direct" else "yes", "no"))
        for prompt in ("direct", "is_there", "person_is")
    )  # fmt: skip
    methods = {h.name: "bca" for h in lvlm.comparison.headline}
    found = headline_intervals(lvlm, config, "vlm", labels, methods=methods, resamples=200)
    assert found.keys() == lvlm.comparison.headline_function(config, "vlm")(labels).keys()
    for name, result in found.items():
        assert result["estimate"] == pytest.approx(
            lvlm.comparison.headline_function(config, "vlm")(labels)[name]
        )
        assert result["ci_low"] <= result["estimate"] <= result["ci_high"]
        assert result["method"] == "bca" and result["n"] == 300


class ReportingGapComparison(GapComparison):
    headline = tuple(
        Headline(h.name, "estimate", {"headline": h.name}, h.better, ("ci_low", "ci_high"),
                 interval_method=h.interval_method)
        for h in GapComparison.headline
    )  # fmt: skip


class ReportingGapQuiz(GapQuiz):
    """The gap quiz whose metrics step reports genfair's intervals (docs/architecture.md's
    recipe): its reported intervals are its declared ones."""

    comparison_role = ReportingGapComparison

    def metrics(self, labels, config, ctx):  # type: ignore[no-untyped-def]
        found = headline_intervals(self, config, ctx.modality, labels, seed=ctx.seed)
        return MetricsResult(interval_table(found))


def test_a_metrics_step_reports_the_declared_intervals() -> None:
    labels = draw(24, np.random.default_rng(2))
    reported = reported_intervals(ReportingGapQuiz(), None, "llm", labels, seed=3)
    declared = headline_intervals(ReportingGapQuiz(), None, "llm", labels, seed=3)
    for name, result in declared.items():
        assert reported[name]["ci_low"] == pytest.approx(result["ci_low"])
        assert reported[name]["ci_high"] == pytest.approx(result["ci_high"])
