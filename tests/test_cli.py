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
    captured = capsys.readouterr()
    # the scores table once, with its labels (pandas 3 stores them as `str`, not object)
    assert (captured.out + captured.err).count("s_fact") == 1
    table = captured.out.splitlines()
    assert table[0].split()[:2] == ["context", "attribute"] and "objective" in captured.out
    responses = pd.read_parquet(tmp_path / "data/responses/simulated_llm/fact_or_fair/responses.parquet")
    assert len(responses) == 40


def test_try_unknown_model_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["try", "nope", "fact_or_fair"]) == 2
    assert "no model 'nope'" in capsys.readouterr().err
