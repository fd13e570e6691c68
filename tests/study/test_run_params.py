"""A run's label and metrics steps read the params its generate step ran with (recorded beside
the responses), so they list no params in dvc.yaml and never mix two configurations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from genfair.cli import compose
from genfair.methodologies import register
from genfair.study.layout import Layout
from genfair.study.steps import generate, make_probes, recorded_params, run_params
from genfair.study_params import (
    ConfigError,
    StudyParams,
    load_params,
    methodology_config,
    params_from,
)
from tests.study.toy_methodology import Quiz
from tests.support.conf import with_runs

ROOT = Path(__file__).resolve().parents[2]


def _study(tmp_path: Path, questions: int) -> Path:
    """A params.yaml with the toy quiz on the simulated LLM (and smollm2, which it never reads)."""
    out = compose(
        ["scale=smoke", "~model@models.simulated_t2i", "~model@models.simulated_vlm"],
        tmp_path / "p.yaml",
    )
    raw = load_params(out).model_dump(mode="json", exclude_unset=True)
    raw["methodologies"] = {"toy_quiz": {"questions": questions}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(with_runs(raw)))
    return path


def _generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, questions: int
) -> tuple[Path, StudyParams, Layout]:
    """The toy quiz's probes and responses on the simulated LLM: its params file, params, layout."""
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    register(Quiz)
    path = _study(tmp_path, questions=questions)
    params, layout = load_params(path), Layout(tmp_path)
    make_probes(params, "toy_quiz", layout)
    generate(params, "simulated_llm", "toy_quiz", layout)
    return path, params, layout


def test_generate_records_exactly_the_blocks_the_run_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, params, layout = _generated(tmp_path, monkeypatch, questions=12)

    written = json.loads(layout.run_params("simulated_llm", "toy_quiz").read_text())
    assert written == run_params(params, "simulated_llm", "toy_quiz")
    # what generate@ lists in dvc.yaml: seed, generation, instruments, its model, its methodology
    assert set(written) <= {"seed", "generation", "instruments", "models", "methodologies"}
    assert list(written["models"]) == ["simulated_llm"] and list(written["methodologies"]) == [
        "toy_quiz"
    ]

    # params.yaml changes after generate ran: label and metrics read the methodology's fields
    # from it (each stage depends on the digest of the fields its step reads), and the seed and
    # models generate ran with from its record
    edited = yaml.safe_load(path.read_text())
    edited["methodologies"]["toy_quiz"]["questions"] = 99
    edited["cache"] = {"dir": "elsewhere"}
    edited["seed"] = params.seed + 1
    edited["generation"] = {**edited.get("generation", {}), "instrument_workers": 2}
    path.write_text(yaml.safe_dump(edited))
    stale = "digests.methodologies.toy_quiz do not follow.*edited by hand"
    with pytest.raises(ConfigError, match=stale):
        recorded_params("simulated_llm", "toy_quiz", layout, str(path))
    path.write_text(yaml.safe_dump(with_runs(edited)))
    recorded = recorded_params("simulated_llm", "toy_quiz", layout, str(path))
    assert isinstance(recorded, StudyParams)
    assert recorded.methodologies == {"toy_quiz": {"questions": 99}}
    assert (
        recorded.models["simulated_llm"] == params.models["simulated_llm"]
        and recorded.seed == params.seed
    )
    assert recorded.cache.dir == "elsewhere"  # settings no result depends on come from params.yaml
    assert recorded.generation.instrument_workers == 2  # so does where readings run


def test_a_run_that_reads_other_models_records_them(tmp_path: Path) -> None:
    params = load_params(ROOT / "params.yaml")
    written = run_params(params, "simulated_t2i", "open_bias")
    assert set(written["models"]) == {"simulated_t2i", "smollm2", "simulated_vlm"}
    assert StudyParams.model_validate({**written, "scale": "default"}).models == {
        name: params.models[name] for name in written["models"]
    }  # the recorded configs validate back


def test_every_run_of_the_study_reads_back_the_params_it_recorded() -> None:
    """Through JSON and back (keys become strings, floats keep every digit): each run's
    generate fields, models and instruments validate to what params.yaml gives."""
    params = load_params(ROOT / "params.yaml")
    assert params.runs
    for run in params.runs.values():
        model, methodology = run["model"], run["methodology"]
        written = json.loads(json.dumps(run_params(params, model, methodology)))
        back = params_from({"scale": params.scale, **written}, "run_params.json")
        recorded, configured = (methodology_config(p, methodology) for p in (back, params))
        assert {f: getattr(recorded, f) for f in written["methodologies"][methodology]} == {
            f: getattr(configured, f) for f in written["methodologies"][methodology]
        }, run
        assert back.models == {m: params.models[m] for m in back.models} and model in back.models
        assert back.instruments == params.instruments and back.seed == params.seed


def test_label_before_generate_names_the_stage_that_writes_its_params(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"run_params.json: not found; generate@simulated_llm-toy_quiz writes it"
    ):
        recorded_params("simulated_llm", "toy_quiz", Layout(tmp_path), str(ROOT / "params.yaml"))


def test_where_calls_run_is_outside_the_records_and_hashes(tmp_path) -> None:
    """``generation.executor``/``scheduler``/``instrument_workers``, a model's
    ``worker_resources`` and a simulator's ``replica`` pacing change no output:
    run_params.json and the runs' model hashes ignore them, so switching reruns nothing."""
    from genfair.cli import compose
    from genfair.study.runs import model_hash
    from genfair.study.steps import run_params
    from genfair.study_params import StudyParams, load_params

    raw = load_params(compose(["scale=smoke"], tmp_path / "params.yaml")).model_dump(
        mode="json", exclude_unset=True
    )
    before = StudyParams.model_validate(raw)
    raw["generation"] = {
        **raw.get("generation", {}),
        "executor": "dask",
        "scheduler": "tcp://127.0.0.1:8786",
        "instrument_workers": 4,
    }
    raw["models"]["smollm2"]["worker_resources"] = {"GPU": 1}
    raw["models"]["simulated_llm"]["replica"] = {"service_time_s": 0.2, "batch_size": 8}
    after = StudyParams.model_validate(raw)
    for model in ("smollm2", "simulated_llm"):
        assert run_params(after, model, "fact_or_fair") == run_params(before, model, "fact_or_fair")
        assert model_hash(after.model(model)) == model_hash(before.model(model))


def test_a_rate_limit_is_outside_the_model_hash_and_the_cache_key() -> None:
    """How fast an HTTP model is asked changes no answer: neither its runs nor its cache entries
    move."""
    from genfair.models.base import Request
    from genfair.models.cache import ResponseCache
    from genfair.models.config import OpenAIModelConfig
    from genfair.models.openai import OpenAIChatBackend
    from genfair.study.runs import model_hash

    plain = OpenAIModelConfig(
        backend="openai", model_id="m", base_url="http://127.0.0.1:1/v1", api_key_env=None
    )
    limited = plain.model_copy(update={"rate_limit": "500/minute"})
    assert model_hash(limited) == model_hash(plain)
    request = Request(messages=({"role": "user", "content": "q"},), seed=1)
    keys = {
        ResponseCache.key(OpenAIChatBackend(c).request_fingerprint(request), request)
        for c in (plain, limited)
    }
    assert len(keys) == 1


def test_a_local_backends_runtime_is_recorded_and_not_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a local model ran here (engine, dtype: chosen from the CPU) goes into run_params.json;
    label and metrics read the params without it."""
    from genfair.models.base import LLMBackend

    runtime = {"engine": "transformers", "dtype": "float32", "batch_size": 16}
    monkeypatch.setattr(LLMBackend, "runtime", property(lambda self: runtime))
    path, params, layout = _generated(tmp_path, monkeypatch, questions=4)
    written = json.loads(layout.run_params("simulated_llm", "toy_quiz").read_text())
    assert written == {**run_params(params, "simulated_llm", "toy_quiz"), "runtime": runtime}
    assert recorded_params("simulated_llm", "toy_quiz", layout, str(path)).models == {
        "simulated_llm": params.models["simulated_llm"]
    }
