"""Curation inputs outside the repository (issue 21, point 5), on a copy of the project: the
FACET release lives outside the repository, ``genfair compose`` makes each of its paths an
``external_input@facet-<name>`` stage's DVC dependency, so ``dvc status`` (which runs no stage)
names the input that changed and ``dvc repro`` reruns it and ``curate_facet``.

DVC trusts a file's (inode, mtime, size) between hashes: an edit in place that puts the mtime
back escapes ``dvc status`` (asserted below, as docs/security.md says), and ``dvc repro`` still
sees it through ``curation_inputs`` (content hashed at every run)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.project import commit, copy_project, run, study_env

pytestmark = [pytest.mark.e2e, pytest.mark.builds("external")]


def _edit_in_place(path: Path, keep_mtime: bool) -> None:
    """One byte of ``path`` changed in place (same inode and size; a new content each call);
    the mtime put back exactly when ``keep_mtime``."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2 + keep_mtime] ^= 0x01
    with path.open("r+b") as handle:
        handle.write(data)
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert (after.st_mtime_ns == before.st_mtime_ns) == keep_mtime


def _ran(output: str) -> set[str]:
    return {
        line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage '")
    }


def test_dvc_status_names_a_changed_input_outside_the_repository(tmp_path: Path) -> None:
    work, release = tmp_path / "repo", tmp_path / "shared" / "facet"
    env = study_env(work)
    copy_project(work)
    # a FACET-format release outside the repository: the fixture, built once and moved out
    run(["genfair", "compose"], work, env)
    commit(work, env)
    run(["dvc", "repro", "facet_fixture"], work, env)
    # copyfile, not copy2: the outputs are DVC's read-only hard links (cache.type), the
    # release a user's own writable files
    shutil.copytree(work / "data/curated/facet_fixture", release, copy_function=shutil.copyfile)
    run(["genfair", "compose", "-o", f"curation.facet.release_dir={release}"], work, env)
    params = yaml.safe_load((work / "params.yaml").read_text())
    assert params["external_inputs"] == {
        "facet-annotations": {"section": "facet", "path": str(release / "annotations.csv")},
        "facet-images": {"section": "facet", "path": str(release / "images")},
    }
    commit(work, env)

    first = run(["dvc", "repro", "curate_facet"], work, env)
    assert {
        "external_input@facet-annotations",
        "external_input@facet-images",
        "curate_facet",
    } <= _ran(first)
    status = run(["dvc", "status", "--with-deps", "curate_facet"], work, env)
    assert "external_input@" not in status and "curate_facet" not in status, status

    image = sorted((release / "images").iterdir())[0]
    # an ordinary edit of the same size: DVC sees the new mtime, rehashes, names the stage
    _edit_in_place(image, keep_mtime=False)
    status = run(["dvc", "status", "--with-deps", "curate_facet"], work, env)
    assert "external_input@facet-images:" in status and str(release / "images") in status, status
    assert "external_input@facet-annotations" not in status, status
    again = run(["dvc", "repro", "curate_facet"], work, env)
    assert {"external_input@facet-images", "curate_facet"} <= _ran(again), again
    assert "external_input@facet-annotations" not in _ran(again)
    assert "external_input@" not in run(["dvc", "status", "--with-deps", "curate_facet"], work, env)

    # an edit in place that puts size and mtime back: DVC's (inode, mtime, size) check misses
    # it, so `dvc status` cannot name it (docs/security.md); `dvc repro` reruns the curation
    _edit_in_place(image, keep_mtime=True)
    assert "external_input@" not in run(["dvc", "status", "--with-deps", "curate_facet"], work, env)
    last = run(["dvc", "repro", "curate_facet"], work, env)
    assert "curate_facet" in _ran(last), last
