"""A temporary copy of the project to run the DVC pipeline in (the end-to-end tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.conf import ROOT

#: what a study needs: the pipeline, its configuration, the stage scripts, the shipped facts, the code
COPY = [".dvc/config", ".dvc/.gitignore", "dvc.yaml", "always/dvc.yaml", "conf", "stages", "data/reference", "src"]


def run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run a command in the copy; its output (stdout + stderr), failing the test with its tail."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{output[-4000:]}"
    return output


def study_copy(work: Path) -> dict[str, str]:
    """Copy the project into ``work``; the environment its commands run in (the venv's
    tools first, DVC's site cache, the response cache and MLflow's store inside ``work``)."""
    for item in COPY:
        source, target = ROOT / item, work / item
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
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
    return env


def always_changed(work: Path) -> set[str]:
    """The stages that run on every repro (always/dvc.yaml), by the names DVC prints."""
    import yaml

    stages = yaml.safe_load((work / "always/dvc.yaml").read_text())["stages"]
    assert all(stage.get("always_changed") for stage in stages.values())
    return {f"always/dvc.yaml:{name}" for name in stages}


def status_stages(work: Path, env: dict[str, str]) -> set[str]:
    """The stages `dvc status` lists as changed, but those that always run."""
    output = run(["dvc", "status"], work, env)
    return {line.rstrip(":") for line in output.splitlines()
            if line and not line[0].isspace() and line.endswith(":")} - always_changed(work)
