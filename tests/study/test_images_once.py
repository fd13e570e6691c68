"""Each image is held once on disk (issue 43.5): the image store's file, its export under
``data/responses/.../images/`` and DVC's cache object are one inode, with the project's own
``.dvc/config`` (``cache.type: hardlink,copy``; docs/scale-out.md, "Disk"). A repository of
one stage that exports images as ``generate`` does, and ``dvc repro`` on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from genfair.models.images import ImageStore, encode_png, export_images
from tests.support.project import GIT, ROOT, study_env

EXPORT = """
import sys
import pandas as pd
from genfair.models.images import ImageStore, export_images

hashes = open("hashes.txt").read().split()
export_images(pd.DataFrame({"image": hashes}), ImageStore(sys.argv[1]), "data/images")
"""


def _store(root: Path, n: int) -> tuple[ImageStore, list[str]]:
    store = ImageStore(root)
    rng = np.random.default_rng(0)
    noise = [rng.integers(0, 256, (32, 32, 3), dtype=np.uint8) for _ in range(n)]
    return store, [store.put(encode_png(Image.fromarray(a))) for a in noise]


def _disk_bytes(*folders: Path) -> tuple[int, int]:
    """Bytes of the files under ``folders``: each inode once, and each name (``du -l``)."""
    inodes: dict[int, int] = {}
    names = 0
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                info = path.stat()
                inodes[info.st_ino] = info.st_size
                names += info.st_size
    return sum(inodes.values()), names


def test_an_export_is_a_hard_link_of_the_store_file(tmp_path: Path) -> None:
    store, hashes = _store(tmp_path / "store", 3)
    export_images(pd.DataFrame({"image": hashes}), store, tmp_path / "out")
    for sha256 in hashes:
        exported, stored = tmp_path / "out" / f"{sha256}.png", store.path(sha256)
        assert os.path.samefile(exported, stored) and exported.stat().st_nlink == 2
    once, each = _disk_bytes(tmp_path / "store", tmp_path / "out")
    assert each == 2 * once


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_store_output_and_dvc_cache_share_one_inode(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    (work / ".dvc").mkdir(parents=True)
    shutil.copy2(ROOT / ".dvc/config", work / ".dvc/config")  # the project's cache.type
    env = study_env(work)

    def run(*args: str) -> None:
        subprocess.run(args, cwd=work, env=env, check=True, capture_output=True)

    store, hashes = _store(tmp_path / "store", 5)  # beside the repository, as .genfair/cache
    (work / "hashes.txt").write_text("\n".join(hashes))
    (work / "export.py").write_text(EXPORT)
    (work / ".dvc/config").write_text(
        (work / ".dvc/config").read_text().replace("enabled = true", "enabled = false")
    )
    run(*GIT, "init", "-q")
    cmd = f"{sys.executable} export.py {tmp_path / 'store'}"
    run("dvc", "stage", "add", "-q", "-n", "export", "-d", "export.py", "-o", "data/images", cmd)
    run("dvc", "repro", "-q")
    cache = work / ".dvc/cache"
    for sha256 in hashes:
        exported = work / "data/images" / f"{sha256}.png"
        assert os.path.samefile(exported, store.path(sha256))
        assert exported.stat().st_nlink == 3  # the store, the output and DVC's cache object
    images = sum(store.path(sha256).stat().st_size for sha256 in hashes)
    once, each = _disk_bytes(tmp_path / "store", work / "data", cache)
    # every image under three names, its bytes once (besides: DVC's listing of the folder)
    assert images <= once < images + 4096 and each >= 3 * images
