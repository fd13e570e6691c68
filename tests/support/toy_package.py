"""The toy quiz (tests/study/toy_methodology/) as a package of its own, installed outside the
shared venv: what a user's methodology from its own distribution is (docs/architecture.md,
"Adding a methodology")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.conf import ROOT

__all__ = ["PYPROJECT", "install_toy_quiz"]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "genfair-toy-quiz"
version = "0.1.0"
dependencies = ["genfair"]

[project.entry-points."genfair.methodologies"]
toy_quiz = "genfair_toy_quiz:Quiz"
"""


def install_toy_quiz(package: Path, site: Path, env: dict[str, str]) -> None:
    """Write the package in ``package``, install it into ``site`` (an install target; the
    shared venv stays as it is) and put ``site`` on ``env``'s ``PYTHONPATH``."""
    package.mkdir(parents=True, exist_ok=True)
    (package / "pyproject.toml").write_text(PYPROJECT)
    shutil.copytree(  # __init__.py, config.py, methodology.py: the layout of every methodology
        ROOT / "tests/study/toy_methodology",
        package / "genfair_toy_quiz",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(package)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', '')}".rstrip(":")
