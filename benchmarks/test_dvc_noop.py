"""Time of a no-op `dvc repro` on the study's pipeline (simulated model, smoke scale)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = [".dvc/config", ".dvc/.gitignore", "dvc.yaml", "always/dvc.yaml", "conf", "stages", "data/reference", "src"]


def test_noop_dvc_repro(benchmark, tmp_path: Path) -> None:
    for item in COPY:
        source, target = ROOT / item, tmp_path / item
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1", "DVC_SITE_CACHE_DIR": str(tmp_path / ".site"),
           "GENFAIR_CACHE_DIR": str(tmp_path / ".cache"), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}

    def run(*args: str) -> str:
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
        return done.stdout

    # without SmolLM2 (minutes of generation): OpenBias starts from published proposals (a fixture)
    published = ROOT / "tests/support/open_bias_published_flickr.json"
    run("genfair", "compose", "-o", "scale=smoke", "-o", "~model@models.smollm2",
        "-o", "methodologies.open_bias.captions=published", "-o", f"methodologies.open_bias.published_proposals={published}")
    run("git", "init", "-q")
    run("dvc", "repro")
    output = benchmark.pedantic(lambda: run("dvc", "repro"), rounds=5, iterations=1)
    # only the stages that always run (curation input fingerprints, the MLflow store) run again
    assert set(re.findall(r"Running stage '([^']+)'", output)) == {
        "always/dvc.yaml:curation_inputs", "always/dvc.yaml:mlflow_sync"}, output
    benchmark.extra_info["seconds"] = round(benchmark.stats.stats.mean, 3)
    print(f"\nno-op dvc repro: {benchmark.stats.stats.mean:.2f} s (mean of 5)")
