"""A failed `dvc exp run -S` loses nothing the user had (issue 16, weak spots; issue 21.6): the
bad value stops the stage before any work, with its key named and the exact command that
puts the workspace back; `genfair exp -S` refuses it before DVC changes anything; and the
git-tracked data/curated/news_report.json (a `cache: false` output DVC could not restore)
is still there (`persist: true`). One real `dvc exp run` in a temporary repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DVC = Path(sys.executable).with_name("dvc")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.skipif(not DVC.exists() or not shutil.which("git"), reason="needs dvc and git")
def test_a_failed_exp_run_keeps_the_tracked_report(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("conf", "stages", "src"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=ignore)
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", "data/curated/news_report.json"):
        if (ROOT / name).exists():  # dvc.lock: only once a study has been run
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    report = (repo / "data/curated/news_report.json").read_bytes()
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    subprocess.run([str(DVC), "init", "-q"], cwd=repo, check=True, capture_output=True)
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "study")
    # the dependency a fingerprint stage would write (its content does not matter here)
    (repo / "data/curated/inputs").mkdir()
    (repo / "data/curated/inputs/news.json").write_text("{}\n")
    env = {
        **os.environ,
        "PATH": f"{DVC.parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(repo / "src"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "DVC_NO_ANALYTICS": "1",
    }
    run = subprocess.run(
        [str(DVC), "exp", "run", "-S", "+curation.news.max_body_chars=-1", "-s", "collect_news"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = run.stdout + run.stderr
    assert "params.yaml: curation.news.max_body_chars: Input should be greater than 0" in out, out
    assert "put the workspace back with `git checkout params.yaml && dvc checkout`" in out
    assert "failed to reproduce 'collect_news'" in out
    # nothing lost: before `persist: true`, DVC deleted the report before running the stage
    assert (repo / "data/curated/news_report.json").read_bytes() == report
    # and the documented way back works
    _git(repo, "checkout", "params.yaml")
    assert "max_body_chars" not in (repo / "params.yaml").read_text()
    # the wrapper refuses the same value before DVC writes anything (issue 21.6)
    params = (repo / "params.yaml").read_bytes()
    wrapped = subprocess.run(
        [
            sys.executable,
            "-m",
            "genfair.cli",
            "exp",
            "-S",
            "+curation.news.max_body_chars=-1",
            "-s",
            "collect_news",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert wrapped.returncode == 2, wrapped.stderr
    assert wrapped.stderr.startswith("genfair: error: invalid configuration:")
    assert "curation.news.max_body_chars: Input should be greater than 0" in wrapped.stderr
    assert (repo / "params.yaml").read_bytes() == params
