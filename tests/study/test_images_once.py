"""Each image is held once on disk (issue 43.5): the image store's file, its export under
``data/responses/.../images/`` and DVC's cache object are one inode, with the project's own
``.dvc/config`` (``cache.type: hardlink,copy``; docs/scale-out.md, "Disk"). A repository of
one stage that exports images as ``generate`` does, and ``dvc repro`` on it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from genfair.models.images import export_images
from tests.support.disk import disk_bytes, exported_repo, photo_store


def test_an_export_is_a_hard_link_of_the_store_file(tmp_path: Path) -> None:
    store, hashes = photo_store(tmp_path / "store", 3, 32)
    export_images(pd.DataFrame({"image": hashes}), store, tmp_path / "out")
    for sha256 in hashes:
        exported, stored = tmp_path / "out" / f"{sha256}.png", store.path(sha256)
        assert os.path.samefile(exported, stored) and exported.stat().st_nlink == 2
    once, each = disk_bytes(tmp_path / "store", tmp_path / "out")
    assert each == 2 * once


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_store_output_and_dvc_cache_share_one_inode(tmp_path: Path) -> None:
    store, hashes = photo_store(tmp_path / "store", 6, 32)  # beside the repo, as .genfair/
    work = tmp_path / "repo"
    exported_repo(work, store, hashes, cache_type=None)  # the project's .dvc/config
    for sha256 in hashes:
        exported = work / "data/images" / f"{sha256}.png"
        assert os.path.samefile(exported, store.path(sha256))
        assert exported.stat().st_nlink == 3  # the store, the output and DVC's cache object
    images = sum(store.path(sha256).stat().st_size for sha256 in hashes)
    once, each = disk_bytes(tmp_path / "store", work / "data", work / ".dvc/cache")
    # every image under three names, its bytes once (besides: DVC's listing of the folder)
    assert images <= once < images + 4096 and each >= 3 * images
