"""The genfair command: help, listing, composing, validation errors and a quick trial."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from genfair.cli import main


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for command in ("models", "methodologies", "config", "compose", "try"):
        assert command in out


def test_models_marks_simulators(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("simulated_llm") and "[SIMULATED]" in line for line in lines)
    assert any(line.startswith("smollm2") and "[SIMULATED]" not in line for line in lines)


def test_config_applies_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "-o", "scale=smoke", "-o", "+model@models.extra=simulated_llm"]) == 0
    out = capsys.readouterr().out
    assert "scale: smoke" in out and "  extra:\n" in out


def test_invalid_override_names_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "-o", "models.smollm2.batch_size=-3"]) == 2
    assert "models.smollm2.batch_size" in capsys.readouterr().err


def test_try_runs_one_model_outside_dvc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["try", "simulated_llm", "fact_or_fair", "--limit", "40", "--out", str(tmp_path)]) == 0
    assert "s_fact" in capsys.readouterr().out
    responses = pd.read_parquet(tmp_path / "data/responses/simulated_llm/fact_or_fair/responses.parquet")
    assert len(responses) == 40


def test_try_unknown_model_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["try", "nope", "fact_or_fair"]) == 2
    assert "no model 'nope'" in capsys.readouterr().err



def test_fill_names_an_unknown_model_and_a_missing_scheduler(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from genfair.cli import compose

    assert main(["fill", "--models", "nope"]) == 2
    assert "genfair: error: no model 'nope' in the study; known: smollm2" in capsys.readouterr().err
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    params = compose(["scale=smoke", "generation.executor=dask"], tmp_path / "params.yaml")
    assert main(["fill", "--params", str(params), "--models", "simulated_llm"]) == 2
    assert "generation.executor: dask, but no scheduler: set DASK_SCHEDULER_ADDRESS" in capsys.readouterr().err
