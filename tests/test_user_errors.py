"""Every user error is one line naming the file, key or row and the fix; a traceback only with
GENFAIR_LOG_LEVEL=DEBUG (issue 16, weak spots). Temporary folders are removed, a key pasted
into ``api_key_env`` is left nowhere, and outputs are readable by others (umask)."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from genfair import cli
from genfair.cli import main
from genfair.errors import CacheError
from genfair.io import write_json, write_parquet
from genfair.models.cache import ResponseCache
from genfair.models.config import HFModelConfig
from genfair.models.hf import HFChatBackend, ModelNotFound
from genfair.study.layout import Layout

ROOT = Path(__file__).resolve().parent.parent
FAKE_KEY = "sk-rel16FAKEKEYdoNotUse0123456789"


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR of the test's own, to see what is left behind in it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_unexpected_errors_are_one_line_and_the_traceback_needs_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(args: object) -> None:
        raise RuntimeError("something odd")

    monkeypatch.setattr(cli, "cmd_methodologies", boom)
    monkeypatch.delenv("GENFAIR_LOG_LEVEL", raising=False)
    assert main(["methodologies"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "genfair: unexpected RuntimeError: something odd "
        "(GENFAIR_LOG_LEVEL=DEBUG shows the traceback)"
    ]
    monkeypatch.setenv("GENFAIR_LOG_LEVEL", "DEBUG")
    assert main(["methodologies"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_a_missing_local_model_folder_names_the_key_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-model"
    config = HFModelConfig(backend="hf", model_id=str(missing))
    with pytest.raises(
        ModelNotFound, match=rf"{missing} not found: give the folder of a saved model"
    ):
        HFChatBackend.from_config(config)  # before: transformers' "Repo id must be in the form..."
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    override = f"+models.local={{backend:hf,model_id:'{missing}'}}"
    assert (
        main(
            ["try", "local", "fact_or_fair", "--limit", "2", "--out", str(tmp_path), "-o", override]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        f"genfair: error: params.yaml: models.local.model_id: {missing} not found"
    )
    assert not any("Traceback" in line for line in err)


def test_a_missing_local_model_folder_in_a_stage_names_the_key(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "stages"))
    import _common

    def step(params: object, model: str, methodology: str) -> None:
        HFChatBackend.from_config(HFModelConfig(backend="hf", model_id="./models/absent"))

    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_:
        _common.run("generate", step, model="mine", methodology="fact_or_fair")
    assert exit_.value.code == 1
    err = capfd.readouterr().err
    assert "params.yaml: models.mine.model_id: ./models/absent not found" in err
    # params.yaml is composed: the line names where the key is set (mine is in no study file)
    assert "(params.yaml is composed: set it in the model file conf/study.yaml names, then" in err
    assert "Traceback" not in err


def test_a_hub_id_is_not_taken_for_a_path() -> None:
    from genfair.models.hf import looks_like_path

    assert not looks_like_path("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert looks_like_path("/models/x") and looks_like_path("./x") and looks_like_path("~/m")
    assert looks_like_path("models/org/name")


def test_a_corrupt_response_cache_names_the_file_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cache" / "responses.sqlite"
    path.parent.mkdir()
    path.write_bytes(b"this is not a SQLite database, it was overwritten\n" * 200)
    with pytest.raises(
        CacheError, match=rf"response cache {path}: unusable .*mv {path} {path}.broken"
    ):
        ResponseCache(path)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(path.parent))
    assert (
        main(["try", "simulated_llm", "fact_or_fair", "--limit", "3", "--out", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        f"genfair: error: response cache {path}: unusable (file is not a database)"
    )
    # the fix it names works
    path.rename(path.with_suffix(".sqlite.broken"))
    assert (
        main(["try", "simulated_llm", "fact_or_fair", "--limit", "3", "--out", str(tmp_path)]) == 0
    )
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 3


def test_from_a_subdirectory_genfair_finds_the_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT / "docs")  # before: a Hydra traceback (no conf/ here)
    assert main(["config", "-o", "scale=smoke"]) == 0
    out = capsys.readouterr()
    assert "scale: smoke" in out.out and f"running from the repository root {ROOT}" in out.err


def test_outside_a_study_genfair_says_where_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["models"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"genfair: error: {tmp_path.resolve()} is not inside a genfair study (no conf/config.yaml "
        "and dvc.yaml here or above): run genfair from the repository root"
    ]


def test_a_bad_hydra_override_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "-o", "scale=huge"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Could not find 'scale/huge'" in err[0] and "smoke" in err[0]


@pytest.mark.parametrize("value", ["-1", "0", "two"])
def test_limit_must_be_a_positive_count(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["try", "simulated_llm", "fact_or_fair", "--limit", value])
    assert exit_.value.code == 2
    assert "argument --limit" in capsys.readouterr().err


def test_config_and_compose_leave_no_temporary_folder(
    private_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "-o", "scale=smoke"]) == 0
    assert main(["config", "-o", "models.smollm2.batch_size=-3"]) == 2  # a failure cleans up too
    assert main(["config", "-o", "scale=huge"]) == 2
    assert list(private_tmp.iterdir()) == []
    assert (
        "composed config (conf/ + overrides): models.smollm2.batch_size" in capsys.readouterr().err
    )


def test_a_key_pasted_into_api_key_env_is_left_nowhere(
    private_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    override = f"+models.leak={{backend:openai,model_id:m,api_key_env:{FAKE_KEY}}}"
    assert main(["config", "-o", override]) == 2
    out = capsys.readouterr()
    assert "models.leak.api_key_env" in out.err and "value not shown" in out.err
    assert FAKE_KEY not in out.out + out.err
    assert list(private_tmp.iterdir()) == []  # the composed file that held it is gone


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_outputs_get_the_umask_permissions_of_a_plain_file(
    tmp_path: Path, umask: int, mode: int
) -> None:
    import pandas as pd

    old = os.umask(umask)
    try:
        paths = [
            write_json({"a": 1}, tmp_path / "x.json"),
            write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "x.parquet"),
        ]
    finally:
        os.umask(old)
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == mode, path  # before: 0600 whatever the umask


def test_stage_interrupt_is_a_clean_stop(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "stages"))
    import _common

    def step(params: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_:
        _common.run("probes", step)
    assert exit_.value.code == 130
    assert (
        "interrupted: everything answered so far is in the response cache; rerun to resume"
        in capfd.readouterr().err
    )
    assert sys.modules["_common"] is _common


def test_stage_sigterm_is_a_clean_stop_whose_finally_runs(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    monkeypatch.syspath_prepend(str(ROOT / "stages"))
    import _common

    ran: list[str] = []

    def step(params: object) -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # a scheduler's timeout: raises here
            ran.append("not reached")
        finally:
            ran.append("finally")

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_:
        _common.run("probes", step)
    assert exit_.value.code == 128 + signal.SIGTERM and ran == ["finally"]
    assert "terminated (SIGTERM): everything answered so far" in capfd.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before  # the stage's handler is put back


def test_a_truncated_parquet_under_data_names_the_file_and_the_fix(tmp_path: Path) -> None:
    import pandas as pd

    from genfair.io import read_parquet

    path = write_parquet(pd.DataFrame({"a": range(1000)}), Layout(tmp_path).labels("m", "x"))
    path.write_bytes(path.read_bytes()[:-100])  # cut short (a full disk, a killed copy)
    with pytest.raises(
        ValueError,
        match=rf"{path}: not a readable parquet file \(ArrowInvalid: .*\); it was cut "
        r"short or damaged: delete it and rerun `dvc repro`",
    ):
        read_parquet(path)
    path.write_text("not parquet at all")
    with pytest.raises(ValueError, match="not a readable parquet file"):
        read_parquet(path)


def test_a_missing_or_broken_json_input_names_the_file_and_the_hint(tmp_path: Path) -> None:
    from genfair.io import read_json

    class InputError(ValueError):
        pass

    path = tmp_path / "answers.json"
    with pytest.raises(InputError, match=rf"^{path}: not found; a JSON object of answers$"):
        read_json(path, InputError, "a JSON object of answers")
    path.write_text('{"a": 1,')
    with pytest.raises(ValueError, match=rf"^{path}: not valid JSON \(Expecting .*\)$"):
        read_json(path)
    path.write_text('{"a": [1, "é"]}', encoding="utf-8")
    assert read_json(path) == {"a": [1, "é"]}


def test_a_deleted_output_names_the_stage_to_rerun(tmp_path: Path) -> None:
    from genfair.io import read_parquet

    with pytest.raises(
        FileNotFoundError,
        match=r"x.parquet not found: run the stage that makes it first \(`dvc repro`\)",
    ):
        read_parquet(tmp_path / "x.parquet")


def test_a_stage_reading_a_damaged_input_fails_in_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "stages"))
    import _common

    from genfair.io import read_parquet

    bad = tmp_path / "responses.parquet"
    bad.write_bytes(b"PAR1\x00\x00")
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as exit_:
        _common.run("label", lambda params: read_parquet(bad))
    assert exit_.value.code == 1
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}: not a readable parquet file" in err[0]


#: `dvc exp run -S` composes with the same function (dvc.utils.hydra.compose_and_dump) as
#: `genfair config -o`: each bad value is named by its key, with what is wrong
SET_FAULTS = {
    "negative-count": (
        "methodologies.news_bias.articles=-5",
        "methodologies.news_bias.articles: Input should be greater than or equal to 1",
    ),
    "misspelled-methodology": (
        "+methodologies.fact_or_fiar.samples=1",
        "methodologies.fact_or_fiar: unknown methodology 'fact_or_fiar'; known: fact_or_fair",
    ),
    "wrong-type": (
        "models.smollm2.sampling.temperature=hot",
        "models.smollm2.sampling.temperature: Input should be a valid number",
    ),
    "unknown-backend": ("models.smollm2.backend=tpu", "models.smollm2: Input tag 'tpu'"),
    "unknown-key": (
        "+models.smollm2.sampling.temprature=0.5",
        "models.smollm2.sampling.temprature: unknown key (check its spelling)",
    ),
    "unknown-key-without-plus": (
        "models.smollm2.sampling.temprature=0.5",
        "Could not override 'models.smollm2.sampling.temprature'",
    ),
}


@pytest.mark.parametrize("override, message", SET_FAULTS.values(), ids=SET_FAULTS.keys())
def test_a_bad_set_value_is_named_by_its_key(
    override: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "-o", override]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_stage_on_an_edited_params_yaml_names_the_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    monkeypatch.syspath_prepend(str(ROOT / "stages"))
    import _common

    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    raw["models"]["smollm2"]["batch_size"] = -2
    raw["methodologies"]["news_bias"]["artikles"] = 5
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ran = []
    with pytest.raises(SystemExit) as exit_:
        _common.run(
            "probes", lambda params, methodology: ran.append(methodology), methodology="news_bias"
        )
    assert exit_.value.code == 1 and ran == []  # fails before any work
    err = capfd.readouterr().err
    assert "params.yaml: models.smollm2.batch_size: Input should be greater than 0" in err
    assert "Traceback" not in err


def test_methodologies_are_listed_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["methodologies"]) == 0
    assert "fact_or_fair" in capsys.readouterr().out
