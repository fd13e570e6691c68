"""Precision forecasts (issue 47): a pilot's units resampled to the planned size give each
headline's expected 95% half-width (checked against the binomial formula, an independent
computation), a biased headline is "not forecast", a model without labels has "no pilot",
and ``genfair plan --precision`` / ``--target`` print them (the toy quiz, no model called)."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from genfair.cli import compose, main
from genfair.errors import ConfigError
from genfair.io import round_float, write_json, write_parquet
from genfair.methodologies import register
from genfair.methodologies.base import StepContext
from genfair.models.runner import Call
from genfair.study import precision, targets
from genfair.study.layout import Layout
from genfair.study.plan import PlanRow
from genfair.study_params import StudyParams, load_params
from tests.study.toy_methodology import Quiz
from tests.study.toy_methodology.config import QuizConfig
from tests.support.conf import ROOT, copy_conf, with_runs

N = 400


def accuracy(labels: pd.DataFrame) -> dict[str, float]:
    return {"accuracy": float(labels["correct"].mean())}


def quiz(correct: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {"probe_id": [f"q{i}" for i in range(len(correct))], "status": "ok", "correct": correct}
    )


def test_a_tenth_forecasts_the_binomial_half_width_at_the_full_size() -> None:
    rng = np.random.default_rng(3)
    pilot = quiz(rng.uniform(size=N // 10) < 0.7)
    units, found = precision.forecast_model(accuracy, pilot, "probe_id", N, seed=1)
    p = pilot["correct"].mean()
    formula = 1.96 * math.sqrt(p * (1 - p) / N)  # the normal interval of a proportion at N
    assert units == N // 10 and found["accuracy"]["note"] == ""
    assert found["accuracy"]["half_width"] == pytest.approx(formula, rel=0.15)
    own = 1.96 * math.sqrt(p * (1 - p) / units)
    assert found["accuracy"]["pilot_half_width"] == pytest.approx(own, rel=0.15)


def test_a_maximum_is_not_forecast() -> None:
    rng = np.random.default_rng(4)
    frame = quiz(rng.uniform(size=200) < 0.5).assign(group=rng.integers(0, 8, 200))

    def largest(labels: pd.DataFrame) -> dict[str, float]:  # every group has the same rate
        return {"max": float(labels.groupby("group")["correct"].mean().max())}

    _, found = precision.forecast_model(largest, frame, "probe_id", 2000, seed=1)
    assert found["max"]["half_width"] is None
    assert found["max"]["note"].startswith("not forecast: biased at the pilot's size")


def test_a_bias_is_held_against_the_spread_and_the_value() -> None:
    """A bias past :data:`BIAS_LIMIT` SDs is forecast where both it and the SD are within
    :data:`BIAS_SHARE` of the value (a level known and moved within a tenth moves a smooth
    spread little), not where either is not."""
    rng = np.random.default_rng(5)
    spread = rng.normal(0.0, 1.0, 400)

    def note(observed: float, shift: float) -> str:
        pilot = observed + shift + spread
        halved = [observed + shift + rng.normal(0.0, 1.0, 400) for _ in range(6)]
        return precision.unforecastable(observed, pilot, [observed] * 6, halved)

    assert note(10.0, 0.5) == ""  # 0.5 SD, 5% of the value; the SD 10% of it
    assert note(2.0, 0.5).startswith("not forecast: biased at the pilot's size")  # 25% of it
    assert note(5.0, 0.4).startswith("not forecast: biased at the pilot's size")  # SD: 20%
    assert note(2.0, 0.1) == ""  # 0.1 SD


def test_a_methodologys_own_limit_comes_first() -> None:
    """:meth:`Comparison.pilot_limits`' reasons replace the generic checks' verdict."""
    pilot = quiz(np.random.default_rng(6).uniform(size=200) < 0.7)
    reason = "not forecast: its cells are too thin (the methodology's own limit)"
    _, found = precision.forecast_model(
        accuracy, pilot, "probe_id", 2000, seed=1, limits={"accuracy": reason}
    )
    assert found["accuracy"]["half_width"] is None and found["accuracy"]["note"] == reason
    _, found = precision.forecast_model(accuracy, pilot, "probe_id", 2000, seed=1)
    assert found["accuracy"]["half_width"] is not None


def test_a_point_mass_is_not_forecast() -> None:
    """One correct answer in 40: a resample of them has none with probability
    (39/40)^40 = 0.36, a point mass no normal spread has; its share is the atom."""
    assert precision.atom(np.array([1.0, 1.0, 2.0, np.nan])) == pytest.approx(2 / 3)
    assert precision.atom(np.array([0.1 + 0.2, 0.3, 0.5])) == pytest.approx(2 / 3)
    assert precision.atom(np.array([1.0, np.nan])) == 1.0  # fewer than two: no spread
    pilot = quiz(np.arange(40) == 0)
    _, found = precision.forecast_model(accuracy, pilot, "probe_id", 400, resamples=400, seed=1)
    assert found["accuracy"]["half_width"] is None
    note = found["accuracy"]["note"]
    assert note.startswith("not forecast: ") and "of the pilot's replicates on one value" in note
    assert 0.30 <= float(note.split("%")[0].rsplit(" ", 1)[1]) / 100 <= 0.42, note


def test_the_detectable_difference_uses_holms_first_level() -> None:
    z = 1.959963984540054 + 0.8416212335729143  # z_{0.975} + z_{0.8}
    assert precision.detectable(0.01, 1) == pytest.approx(z * 0.01)
    assert precision.detectable(0.01, 10) > precision.detectable(0.01, 1)


def test_size_knob_is_the_proportional_one_and_its_value_solves_the_line() -> None:
    knobs = targets.knob_candidates(
        [
            {"rounds": 1, "samples": 1, "resamples": 50, "t2i": {"images": 2}},
            {"rounds": 3, "samples": 100, "resamples": 1000, "t2i": {"images": 20}},
        ]
    )
    assert knobs == [("rounds",), ("samples",), ("resamples",), ("t2i", "images")]
    current = {"rounds": 3, "samples": 2, "resamples": 500, "t2i": {"images": 4}}

    def calls_at(knob: tuple[str, ...], value: int) -> int:  # 100 fixed + 50 per sample
        return 100 + 50 * value if knob == ("samples",) else 200

    assert targets.size_knob(calls_at, current, knobs, 200, 4.0) == ("samples", 14, 800)


def test_a_headlines_knob_sizes_its_own_units() -> None:
    """IRIS's VLM: BIS-Und's sets come from the data, so no knob of its size files grows
    them (the tournament's rounds, which move the run's calls most, are RFS-Und's); RFS-Gen
    reads IFS-Gen's images. A headline a methodology names no knobs for: every knob."""
    from genfair.methodologies import get_methodology as get

    iris = type(get("iris"))
    knobs = targets.knob_candidates(targets.sizes_of("iris"))
    assert ("tournament", "rounds") in knobs
    assert targets.headline_knobs(iris.size_knobs, "BIS-Und.score (partial)", knobs) == []
    assert targets.headline_knobs(iris.size_knobs, "RFS-Und.score", knobs) == [
        ("tournament", "rounds")
    ]
    assert targets.headline_knobs(iris.size_knobs, "RFS-Gen.score", knobs) == [
        ("ifs_gen", "images_per_occupation")
    ]
    assert targets.headline_knobs({}, "objective.gender.distance", knobs) == knobs


def test_every_declared_size_knob_is_a_setting_of_its_methodology() -> None:
    from genfair.methodologies import get_methodology as get
    from genfair.methodologies.registry import builtin

    for name in builtin():
        method = get(name)
        for sector, knobs in method.size_knobs.items():
            for knob in knobs:
                config: Any = method.Config
                for key in knob.split("."):
                    assert key in config.model_fields, f"{name}: {sector}: {knob}"
                    config = config.model_fields[key].annotation
            assert sector in {h.name.split(".", 1)[0] for h in method.comparison.headline}, (
                name,
                sector,
            )


def test_a_targets_cost_is_a_bound_with_its_expected_cost_beside_it() -> None:
    """The plan's cost per call to send (re-asks at their maximum) and its expected cost per
    call, times the calls beyond the cached ones."""
    from genfair.study.plan import PlanRow

    row = PlanRow("m", "x", False, calls=120, cached=20, to_send=100, reasks_max=60)
    row.cost, row.cost_expected = 2.0, 1.0
    assert targets.target_cost(row, 220) == (4.0, 2.0)  # 200 calls to send
    found = targets.Target("x", "m", "h", 0.1, calls=220, cost=4.0, cost_expected=2.0)
    assert "≤4.0000 exp. 2.0000" in targets.target_table([found])
    row.cost_expected = None  # no re-ask rate observed: the bound alone
    assert targets.target_cost(row, 220) == (4.0, None)
    found.cost_expected = None
    assert "≤4.0000" in targets.target_table([found])
    row.cost = None  # no price
    assert targets.target_cost(row, 220) == (None, None)
    simulated = PlanRow("s", "x", True, calls=10, cached=10)
    assert targets.target_cost(simulated, 40) == (0.0, 0.0)


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory) -> StudyParams:
    register(Quiz)
    overrides = [
        "scale=smoke",
        *[f"~model@models.{m}" for m in ("smollm2", "simulated_t2i", "simulated_vlm")],
    ]
    path = tmp_path_factory.mktemp("precision") / "params.yaml"
    raw = load_params(compose(overrides, path)).model_dump(mode="json")
    raw["methodologies"] = {"toy_quiz": {"questions": N}}
    raw["models"]["simulated_llm_2"] = {**raw["models"]["simulated_llm"], "model_id": "sim-2"}
    raw["models"]["real_a"] = {
        "backend": "openai",
        "model_id": "real_a",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": None,
    }
    return StudyParams.model_validate(with_runs(raw))


def _pilot(layout: Layout, model: str, correct: np.ndarray, calls: int) -> None:
    write_parquet(quiz(correct), layout.labels(model, "toy_quiz"))
    write_json({"calls": calls}, layout.usage(model, "toy_quiz"))


def test_the_study_forecast_scales_by_calls_and_pairs_simulators(
    params: StudyParams, tmp_path: Path
) -> None:
    layout = Layout(tmp_path)
    rng = np.random.default_rng(5)
    _pilot(layout, "simulated_llm", rng.uniform(size=100) < 0.6, 100)
    _pilot(layout, "simulated_llm_2", rng.uniform(size=100) < 0.7, 100)
    sizes = {("simulated_llm", "toy_quiz"): N, ("simulated_llm_2", "toy_quiz"): N}
    result = precision.forecast(params, sizes, layout)
    rows = {h.model: h for h in result.half_widths}
    assert rows["real_a"].note == precision.NO_PILOT and rows["real_a"].half_width is None
    sim = rows["simulated_llm"]
    assert (sim.pilot_units, sim.units) == (100, N)
    assert sim.half_width == pytest.approx(sim.pilot_half_width / 2, rel=0.2)  # 4x the units
    (pair,) = result.detectable  # simulators with simulators; real_a has no pilot
    assert (pair.model_a, pair.model_b, pair.units) == ("simulated_llm", "simulated_llm_2", N)
    assert result.comparisons == 1
    assert pair.mdd == pytest.approx(precision.detectable(pair.sd, 1))
    json.dumps(result.to_json(), allow_nan=False)
    text = precision.table(result)
    assert "no pilot" in text and "MDD" in text


def test_units_made_bigger_not_more_are_not_forecast(params: StudyParams, tmp_path: Path) -> None:
    """A planned run whose units grow less than its calls (more answers each: IRIS's images
    per occupation) is not forecast, nor its comparisons: resampling a pilot's units cannot
    add answers to one. Its units' count is its planned n."""
    assert precision._capped(400, None) == (400, False)  # units unknown: the calls scale
    assert precision._capped(400, 380) == (400, False)  # within BIGGER: as many
    assert precision._capped(400, 52) == (52, True)
    layout = Layout(tmp_path)
    rng = np.random.default_rng(5)
    _pilot(layout, "simulated_llm", rng.uniform(size=100) < 0.6, 100)
    _pilot(layout, "simulated_llm_2", rng.uniform(size=100) < 0.7, 100)
    sizes = {("simulated_llm", "toy_quiz"): N, ("simulated_llm_2", "toy_quiz"): N}
    units = {("simulated_llm", "toy_quiz"): 100, ("simulated_llm_2", "toy_quiz"): N}
    result = precision.forecast(params, sizes, layout, units=units)
    rows = {h.model: h for h in result.half_widths}
    assert rows["simulated_llm"].units == 100 and rows["simulated_llm"].half_width is None
    assert rows["simulated_llm"].note == precision.BIGGER_NOTE
    assert rows["simulated_llm_2"].half_width is not None and rows["simulated_llm_2"].units == N
    (pair,) = result.detectable
    assert pair.mdd is None and pair.note == precision.BIGGER_NOTE


def test_a_knob_that_makes_units_bigger_does_not_add_units(occupations_table: Path) -> None:
    """IRIS: its tournament's rounds add units (rounds) to an LLM's run; its images per
    occupation add answers to each of a text-to-image model's 52 occupations, not units."""
    raw = load_params(ROOT / "params.yaml").model_dump(mode="json", exclude_unset=True)
    raw["methodologies"]["iris"]["occupations_table"] = str(occupations_table)
    iris = raw["methodologies"]["iris"]
    iris["ifs_und"] = {**iris.get("ifs_und", {}), "persons": None}  # no FACET crops here
    iris["bis_und"] = {**iris.get("bis_und", {}), "dataset": None}
    study = StudyParams.model_validate(raw)
    images = ("ifs_gen", "images_per_occupation")
    assert precision.run_units(study, "iris", "simulated_t2i") == 52
    assert not targets.adds_units(study, "simulated_t2i", "iris", images)
    assert targets.adds_units(study, "smollm2", "iris", ("tournament", "rounds"))
    assert precision.run_units(study, "news_bias", "smollm2") is None  # a labels-only unit


def test_genfair_plan_precision_and_target(
    params: StudyParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(copy_conf(tmp_path))
    path = tmp_path / "planned.yaml"
    path.write_text(json.dumps(params.model_dump(mode="json", exclude_unset=True)))
    rng = np.random.default_rng(6)
    _pilot(Layout(), "simulated_llm", rng.uniform(size=100) < 0.6, 100)
    assert main(["plan", "--params", str(path), "--precision", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (sim,) = [h for h in out["half_widths"] if h["model"] == "simulated_llm"]
    assert sim["units"] == N and sim["half_width"] > 0  # the plan's 400 calls / the pilot's 100

    assert main(["plan", "--params", str(path), "--target", "accuracy=0.02", "--json"]) == 0
    (target,) = [t for t in json.loads(capsys.readouterr().out) if t["model"] == "simulated_llm"]
    p = 0.6
    assert target["units"] == pytest.approx((1.96 / 0.02) ** 2 * p * (1 - p), rel=0.35)
    assert target["knob"] is None  # the toy quiz has no size files

    # sizes files that set its number of questions: the knob, planned again at twice it
    monkeypatch.setattr(targets, "sizes_of", lambda name: [{"questions": 40}, {"questions": N}])
    assert main(["plan", "--params", str(path), "--target", "accuracy=0.02", "--json"]) == 0
    (target,) = [t for t in json.loads(capsys.readouterr().out) if t["model"] == "simulated_llm"]
    assert target["knob"] == "questions"  # one call a question: the value is the units
    assert target["value"] == target["calls"] == pytest.approx(target["units"], abs=1)
    assert target["cost"] == 0.0  # a simulator
    assert main(["plan", "--params", str(path), "--target", "accuracy=wide"]) != 0
    assert "write HEADLINE=HALFWIDTH" in capsys.readouterr().err


class AskedConfig(QuizConfig):
    #: how many times its own ``generate`` asks each question (a size knob that makes calls,
    #: not probes)
    asks: int = 1


class Asked(Quiz):
    """The toy quiz asking each question ``asks`` times in its own ``generate``: no
    ``calls()`` (the old paper ratio counted its probes)."""

    name = "toy_asked"
    Config = AskedConfig

    def calls(self, probes: pd.DataFrame, config: AskedConfig, modality: str) -> list[Call]:
        raise NotImplementedError("toy_asked makes its own calls")

    def generate(self, probes: pd.DataFrame, config: AskedConfig, ctx: StepContext) -> pd.DataFrame:
        once = Quiz.calls(self, probes, config, ctx.modality)
        asked = [
            replace(c, messages=({"role": "user", "content": f"{c.messages[0]['content']} ({k})"},))
            for c in once
            for k in range(config.asks)
        ]
        return ctx.run(asked, self.judge)


def _paper_study(
    params: StudyParams, cls: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> StudyParams:
    """A study of ``cls`` alone (40 questions asked once) whose paper sizes, in ``tmp_path``,
    ask 80 questions 5 times; registered here, not at import (other tests see the registry as
    it was)."""
    from genfair.study import runs

    register(cls)
    raw = params.model_dump(mode="json")
    raw["methodologies"] = {cls.name: {"questions": 40, "asks": 1}}
    (tmp_path / cls.name).mkdir()
    (tmp_path / cls.name / "paper.yaml").write_text("{questions: 80, asks: 5}")
    monkeypatch.setattr(runs, "SIZES", tmp_path)
    return StudyParams.model_validate(with_runs(raw))


def test_the_paper_ratio_is_the_plans_calls_at_the_paper_sizes(
    params: StudyParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A methodology with its own ``generate``: the plan's calls at its paper sizes (80
    questions asked 5 times) over the study's (40 asked once), not its probes' 2."""
    study = _paper_study(params, Asked, tmp_path, monkeypatch)
    assert precision.paper_ratio(study, "toy_asked", "simulated_llm") == 10.0
    assert precision.paper_ratio(study, "toy_asked", "real_a") == 10.0  # no call sent, none cached
    (tmp_path / "toy_asked" / "paper.yaml").unlink()
    assert precision.paper_ratio(study, "toy_asked", "simulated_llm") is None  # no paper sizes


def test_the_paper_ratio_of_a_methodology_with_calls_is_its_calls(tmp_path: Path) -> None:
    """FACT-OR-FAIR (the default ``generate``, on one of its statistics): its ``calls()``
    counted, the calls the plan walks (at the paper sizes, from an empty cache)."""
    from genfair.models.cache import ResponseCache
    from genfair.study.context import configured
    from genfair.study.plan import plan
    from genfair.study_params import methodology_config

    study = load_params(ROOT / "params.yaml")
    raw = study.model_dump(mode="json")
    raw["methodologies"]["fact_or_fair"]["only_statistics"] = ["Employment Rate"]
    study = StudyParams.model_validate(raw)
    counts = []
    for samples, images in ((2, 4), (100, 20)):
        raw["methodologies"]["fact_or_fair"]["samples_per_prompt"] = samples
        raw["methodologies"]["fact_or_fair"]["t2i"]["images_per_query"] = images
        sized = StudyParams.model_validate(raw)
        config = methodology_config(sized, "fact_or_fair")
        method = configured(study, "fact_or_fair")[0]
        probes = method.probes_for(method.build_probes(config, study.seed), "llm")
        counts.append(len(method.calls(probes, config, "llm")))
    ratio = precision.paper_ratio(study, "fact_or_fair", "simulated_llm")
    assert ratio == pytest.approx(counts[1] / counts[0]) and ratio > 10
    opened = lambda: ResponseCache(tmp_path / "responses.sqlite")  # noqa: E731
    (row,) = plan(sized, ["simulated_llm"], ["fact_or_fair"], open_cache=opened, tokens=False)
    assert row.calls - row.reasks_max == counts[1] and row.prompt_tokens == 0


def test_track_and_the_report_show_the_precision(
    params: StudyParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The study's MLflow run gets each headline's half-width (and the forecast), the report a
    Precision section."""
    from mlflow.tracking import MlflowClient

    from genfair.study.report import build_report
    from genfair.study.steps import compute_metrics
    from genfair.study.tracking import track_study

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    raw = params.model_dump(mode="json")
    raw["models"] = {"simulated_llm": raw["models"]["simulated_llm"]}
    params = StudyParams.model_validate(with_runs(raw))
    layout = Layout(tmp_path)
    _pilot(layout, "simulated_llm", np.random.default_rng(8).uniform(size=N) < 0.6, N)
    answers = pd.DataFrame({"probe_id": [f"q{i}" for i in range(N)], "status": "ok"})
    write_parquet(answers, layout.responses("simulated_llm", "toy_quiz"))
    compute_metrics(params, "simulated_llm", "toy_quiz", layout)
    precision.write_at_paper_size(params, layout)  # the precision stage, which both read
    runs = json.loads(track_study(params, layout).read_text())
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(params.tracking.experiment).experiment_id
    (run,) = client.search_runs(
        [experiment], filter_string=f"tags.`genfair.key` = '{runs['parent_run']}'"
    )
    key = "precision.toy_quiz.simulated_llm.accuracy"
    p = 0.6
    assert run.data.metrics[f"{key}.half_width"] == pytest.approx(
        1.96 * math.sqrt(p * (1 - p) / N), rel=0.2
    )
    assert f"{key}.half_width_forecast" in run.data.metrics  # no paper sizes: its own size
    # the metrics of the stage's file are the forecast's own (to the digits the file keeps)
    expected = precision.half_width_metrics(precision.at_paper_size(params, layout))
    logged = {k: v for k, v in run.data.metrics.items() if k.startswith("precision.")}
    assert logged == pytest.approx(expected, rel=1e-9) and expected
    html = build_report(params, layout).read_text(encoding="utf-8")
    section = html[html.index('id="precision"') :]
    assert "accuracy" in section and "simulated_llm" in section
    layout.precision.unlink()  # no precision stage output: no section (nothing recomputed)
    assert 'id="precision"' not in build_report(params, layout).read_text(encoding="utf-8")


def test_the_precision_stage_writes_the_forecast_the_report_and_track_read(
    params: StudyParams, tmp_path: Path
) -> None:
    """``data/precision.json`` holds :func:`at_paper_size`'s forecast, its floats at the digits
    every JSON output keeps (the same bytes on any CPU), and reads back as that forecast."""
    layout = Layout(tmp_path)
    rng = np.random.default_rng(9)
    _pilot(layout, "simulated_llm", rng.uniform(size=100) < 0.6, 100)
    _pilot(layout, "simulated_llm_2", rng.uniform(size=100) < 0.7, 100)
    path = precision.write_at_paper_size(params, layout)
    assert path == tmp_path / "data/precision.json"
    result = precision.at_paper_size(params, layout)
    back = precision.read_forecast(path)
    assert back is not None and back.detectable and back.comparisons == result.comparisons
    assert back.level == round_float(result.level)
    for read, made in zip(
        [*back.half_widths, *back.detectable],
        [*result.half_widths, *result.detectable],
        strict=True,
    ):
        assert type(read) is type(made)
        fields = asdict(made).items()
        assert asdict(read) == {k: round_float(v) if isinstance(v, float) else v for k, v in fields}
    rounded = {k: round_float(v) for k, v in precision.half_width_metrics(result).items()}
    assert precision.half_width_metrics(back) == rounded
    assert back.to_json() == json.loads(path.read_text())  # the whole file, nothing dropped
    assert precision.read_forecast(tmp_path / "missing.json") is None


class WarnedConfig(AskedConfig):
    #: at this many asks its generate refuses (a run that cannot be planned here)
    refuse_at: int = 0


class Warned(Asked):
    """The asking quiz logging a warning about the run from its ``generate``, as IRIS does
    from an empty cache ("no labelled IFS-Gen image, so no BIS-Gen steering prompt")."""

    name = "toy_warned"
    Config = WarnedConfig

    def generate(
        self, probes: pd.DataFrame, config: WarnedConfig, ctx: StepContext
    ) -> pd.DataFrame:
        logging.getLogger("genfair.methodologies.toy_warned").warning(
            "%s: no labelled image, so no steering prompt", ctx.desc
        )
        if config.asks == config.refuse_at:
            raise ConfigError(f"{config.asks} asks need a curation stage not run here")
        return super().generate(probes, config, ctx)


def test_the_paper_ratios_sizing_plan_logs_nothing_about_the_run(
    params: StudyParams,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The paper ratio plans the run against an empty scratch cache: a sizing exercise, so a
    warning its methodology logs about the run is not the user's and is not logged; a paper
    size that cannot be planned is said once, in the forecast's words, with the plan's
    reason."""
    study = _paper_study(params, Warned, tmp_path, monkeypatch)
    genfair = logging.getLogger("genfair")
    before = (genfair.level, genfair.propagate, list(genfair.handlers))
    with caplog.at_level(logging.INFO):
        assert precision.paper_ratio(study, "toy_warned", "simulated_llm") == 10.0
        assert not caplog.records, caplog.text
        refused = "{questions: 80, asks: 5, refuse_at: 5}"  # its generate raises at 5 asks
        (tmp_path / "toy_warned" / "paper.yaml").write_text(refused)
        assert precision.paper_ratio(study, "toy_warned", "simulated_llm") is None
    (record,) = caplog.records
    assert record.name == "genfair.study.precision" and record.levelno == logging.WARNING
    message = record.getMessage()
    assert "simulated_llm · toy_warned: its paper sizes cannot be planned here" in message
    assert "5 asks need a curation stage not run here" in message and "steering" not in message
    assert (genfair.level, genfair.propagate, list(genfair.handlers)) == before
    logging.getLogger("genfair.methodologies.toy_warned").warning("a run's own warning")
    assert "a run's own warning" in caplog.text  # logged again once the plan is done


def test_the_planned_size_counts_expected_reasks_not_their_maximum() -> None:
    rows = [
        PlanRow("a", "quiz", True, calls=130, reasks_max=30, reasks_expected=6, planned=True),
        PlanRow("b", "quiz", True, calls=130, reasks_max=30, planned=True),  # no rate observed
        PlanRow("c", "quiz", True, calls=0, planned=True),
        PlanRow("d", "quiz", True, calls=50, planned=False),
    ]
    assert precision.planned(rows) == {("a", "quiz"): 106, ("b", "quiz"): 100}


def test_the_precision_stage_depends_on_all_it_reads_and_feeds_track_and_the_report() -> None:
    """dvc.yaml's ``precision`` stage: the labels and run calls it resamples and scales by
    (``read_pilot``: labels and usage.json), IRIS's study scores (the headline function's),
    the paper sizes (``paper_ratio``'s ``runs.SIZES``) and every input the probes stage builds
    probes from (the ratio builds them again at the paper sizes), with the params the score
    stage reads; track and the report read its output instead of computing it."""
    from genfair.study import runs

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    stage = stages["precision"]
    deps = set(stage["deps"])
    layout = Layout(Path("."))
    assert {
        str(layout.data / "labels"),
        str(layout.data / "responses"),  # usage.json
        str(layout.data / "study"),
        str(runs.SIZES),
        "stages/precision.py",
        "src/genfair/study",
        "data/code",
    } <= deps
    assert {d for d in stages["probes"]["do"]["deps"] if d.startswith("data/")} <= deps
    assert set(stages["score"]["params"]) <= set(stage["params"])
    assert stage["outs"] == [{str(layout.precision): {"cache": False}}]
    for reader in ("track", "report"):
        assert str(layout.precision) in stages[reader]["deps"]
    assert list(stages).index("score") < list(stages).index("precision")
