"""``code@<methodology>``: the fingerprint of a methodology's code that ``score``, ``track`` and
``report`` depend on (the DVC wiring: tests/e2e, editing one methodology's code)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from genfair.errors import ConfigError
from genfair.frame import StudyFrame
from genfair.study.code import write_code_fingerprint
from genfair.study.layout import Layout


def _frame(code: dict[str, str | None]) -> StudyFrame:
    return StudyFrame(
        seed=1,
        scale="smoke",
        models={"m": {}},
        methodologies={name: {} for name in code},
        methodology_code=code,
    )


def _package(where: Path) -> Path:
    (where / "sub").mkdir(parents=True)
    (where / "__init__.py").write_text("X = 1\n")
    (where / "sub/steps.py").write_text("def f():\n    return 2\n")
    return where


def test_the_fingerprint_follows_the_code_not_where_it_is_installed(tmp_path: Path) -> None:
    one, other = _package(tmp_path / "site_a/quiz"), tmp_path / "site_b/quiz"
    shutil.copytree(one, other)
    (other / "__pycache__").mkdir()
    (other / "__pycache__/steps.cpython-311.pyc").write_bytes(b"\0bytecode")  # written by an import

    def fingerprint(code: Path, root: Path) -> str:
        return write_code_fingerprint(_frame({"quiz": str(code)}), "quiz", Layout(root)).read_text()

    first = fingerprint(one, tmp_path / "study_a")
    assert first == fingerprint(other, tmp_path / "study_b")  # no path, no byte-code
    (entry,) = json.loads(first)["code"]
    assert {k: v for k, v in entry.items() if k != "sha256"} == {
        "kind": "dir",
        "files": 2,
        "bytes": 28,
    }
    (one / "sub/steps.py").write_text("def f():\n    return 2\n# a comment\n")
    assert fingerprint(one, tmp_path / "study_a") != first  # a comment is a change, as for DVC


def test_a_methodology_registered_in_code_and_a_stale_params_file(tmp_path: Path) -> None:
    out = write_code_fingerprint(_frame({"notebook": None}), "notebook", Layout(tmp_path))
    assert json.loads(out.read_text()) == {"code": [], "methodology": "notebook"}
    with pytest.raises(ConfigError, match=r"methodology_code has no entry 'quiz': recompose"):
        write_code_fingerprint(_frame({"notebook": None}), "quiz", Layout(tmp_path))
