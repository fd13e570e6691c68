"""A git + DVC copy of the project in a temporary folder, for the end-to-end tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPY = [".dvc/config", ".dvc/.gitignore", "dvc.yaml", "always/dvc.yaml", "conf", "stages", "data/reference", "src"]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
#: the smoke study without the embedded LLM (every methodology and modality, in less time):
#: OpenBias, whose proposer it is, takes the authors' published proposals instead
LIGHT_SMOKE = ("scale=smoke", "~model@models.smollm2", "methodologies.open_bias.captions=published",
               f"methodologies.open_bias.published_proposals={ROOT / 'tests/support/open_bias_published_flickr.json'}")


def run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run a command; its output, or a failed assertion with the output's tail."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{output[-4000:]}"
    return output


def study_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a study in ``work``: this venv's tools, offline, its own caches,
    the default MLflow store unless ``extra`` names one."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_SITE_CACHE_DIR": str(work / ".site-cache"),
        "GENFAIR_CACHE_DIR": str(work / ".genfair-cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    return {**env, **extra}


def copy_study(work: Path, env: dict[str, str], *overrides: str) -> None:
    """The project's pipeline, config and code in ``work``, composed with ``overrides``
    (e.g. ``scale=smoke``) and committed to a new git repository."""
    for item in COPY:
        source, target = ROOT / item, work / item
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
    run(["genfair", "compose", *[arg for override in overrides for arg in ("-o", override)]], work, env)
    for args in (["git", "init", "-q"], ["git", "add", "-A"], [*GIT, "commit", "-qm", "study"]):
        run(args, work, env)
