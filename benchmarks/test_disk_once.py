"""The disk a study's images take, before and after each image is stored once (issue 43.5;
docs/benchmarks.md, "Disk: each image once").

Full mode (`make benchmark`): 1,000 distinct 1024x1024 PNGs of real photographs (skimage's
six, shifted and mirrored: :func:`tests.support.disk.photo_store`) in an image store; a
one-stage DVC repository exports them as ``generate`` does (hard links from the store) and
``dvc repro`` commits them, once with DVC's default ``cache.type`` (``reflink,copy``) and once
with the project's (``hardlink,copy``). Measured: the bytes of the store, the output and
DVC's cache with each inode counted once (``du``) and each name counted (``du -l``), and the
repro's wall time. Asserted: with the project's setting the three hold the images' bytes
once; on a file system without reflinks (this machine's ext4) the default holds them three
times. Quick mode: 12 images at 256 px, the same assertions.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.conftest import Mode
from tests.support.disk import disk_bytes, exported_repo, photo_store, reflinks_work

MB = 1e6


def test_each_image_is_stored_once(benchmark: Any, mode: Mode, tmp_path: Path) -> None:
    n, side = mode.size((1000, 1024), (12, 256))
    store, hashes = photo_store(tmp_path / "store", n, side)
    images, _ = disk_bytes(tmp_path / "store")
    clones = reflinks_work(tmp_path)
    held: dict[str, tuple[int, int, float]] = {}
    for label, cache_type in (("default", ""), ("project", None)):
        work = tmp_path / label
        began = time.perf_counter()
        if cache_type is None:  # the one timed by pytest-benchmark: the project's setting
            benchmark.pedantic(
                exported_repo, args=(work, store, hashes, None), rounds=1, iterations=1
            )
        else:
            exported_repo(work, store, hashes, cache_type)
        seconds = time.perf_counter() - began
        once, each = disk_bytes(tmp_path / "store", work / "data", work / ".dvc/cache")
        held[label] = (once, each, seconds)
        print(
            f"\n{n} images of {side} px ({images / n / MB:.2f} MB each), the {label} cache.type: "
            f"{once / MB:,.0f} MB on disk (du), {each / MB:,.0f} MB by name (du -l), "
            f"dvc repro {seconds:.1f} s; reflinks: {clones}"
        )
    once, each, _ = held["project"]
    assert images <= once < images + 1 * MB and each >= 3 * images
    if not clones:  # DVC copies into its cache and re-links the output to the copy
        assert held["default"][0] >= 3 * images
