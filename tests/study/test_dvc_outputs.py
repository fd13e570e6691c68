"""DVC refuses to save a cached output that git tracks (`output 'data/scores' is already
tracked by SCM`): no git-tracked file may lie at or under a cached output of the pipeline
(a stale `.gitignore` left inside a folder that became an output broke `make study` once)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    not shutil.which("git") or not (ROOT / ".git").exists(), reason="needs the git checkout"
)
def test_no_cached_output_holds_a_git_tracked_file() -> None:
    from dvc.repo import Repo

    tracked = set(
        subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    )
    with Repo(str(ROOT)) as repo:
        outs = [
            Path(os.path.relpath(out.fs_path, ROOT)).as_posix()
            for out in repo.index.outs
            if out.use_cache
        ]
    assert len(outs) > 20  # the pipeline was read (stages fan out over runs)
    clashes = {
        out: sorted(f for f in tracked if f == out or f.startswith(f"{out}/"))[:3] for out in outs
    }
    assert not {out: files for out, files in clashes.items() if files}, "git rm --cached these"
