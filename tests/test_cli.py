"""The genfair command: help, listing, composing, validation errors and a quick trial."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from genfair.cli import main
from genfair.study.layout import Layout


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


def test_try_runs_one_model_outside_dvc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    assert (
        main(["try", "simulated_llm", "fact_or_fair", "--limit", "40", "--out", str(tmp_path)]) == 0
    )
    captured = capsys.readouterr()
    # the scores table once, with its labels (pandas 3 stores them as `str`, not object)
    assert (captured.out + captured.err).count("s_fact") == 1
    table = captured.out.splitlines()
    assert table[0].split()[:2] == ["context", "attribute"] and "objective" in captured.out
    responses = pd.read_parquet(Layout(tmp_path).responses("simulated_llm", "fact_or_fair"))
    assert len(responses) == 40


def test_try_unknown_model_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["try", "nope", "fact_or_fair"]) == 2
    assert "no model 'nope'" in capsys.readouterr().err


def test_fill_names_an_unknown_model_and_a_missing_scheduler(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from genfair.cli import compose

    assert main(["fill", "--models", "nope"]) == 2
    assert "genfair: error: no model 'nope' in the study; known: smollm2" in capsys.readouterr().err
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    params = compose(["scale=smoke", "generation.executor=dask"], tmp_path / "params.yaml")
    assert main(["fill", "--params", str(params), "--models", "simulated_llm"]) == 2
    assert (
        "generation.executor: dask, but no scheduler: set DASK_SCHEDULER_ADDRESS"
        in capsys.readouterr().err
    )


# --- genfair exp: `dvc exp run` with its overrides validated first (issue 21.6) ------------


def test_exp_overrides_are_read_in_every_spelling() -> None:
    from genfair.cli import exp_overrides

    args = [
        "-S",
        "scale=paper",
        "--set-param",
        "seed=1",
        "--set-param=+model@models.x=simulated_llm",
        "-Sa=b",
        "--temp",
        "-n",
        "name",
    ]
    assert exp_overrides(args) == ["scale=paper", "seed=1", "+model@models.x=simulated_llm", "a=b"]


def test_exp_refuses_a_bad_override_before_dvc_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    before = Path("params.yaml").read_bytes()
    assert main(["exp", "-S", "models.smollm2.batch_size=-3", "--temp"]) == 2
    assert "models.smollm2.batch_size" in capsys.readouterr().err
    assert calls == [] and Path("params.yaml").read_bytes() == before


@pytest.mark.parametrize("returncode", [0, 1])
def test_exp_hands_every_argument_to_dvc_and_names_the_restore_command(
    returncode: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    calls = []

    def run(command: list[str], check: bool) -> subprocess.CompletedProcess:
        calls.append(command)
        return subprocess.CompletedProcess(command, returncode)

    monkeypatch.setattr(subprocess, "run", run)
    assert main(["exp", "-S", "scale=smoke", "--temp", "-n", "try1"]) == returncode
    assert calls == [["dvc", "exp", "run", "-S", "scale=smoke", "--temp", "-n", "try1"]]
    restore = "to put the workspace back as it was: git checkout params.yaml && dvc checkout"
    assert (restore in capsys.readouterr().err) == bool(returncode)
