"""Images on disk (issue 43.5): a store of real-photo PNGs, a one-stage DVC repository that
exports them as ``generate`` does, and the bytes a set of folders takes with each inode
counted once or each name counted (``du`` and ``du -l``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from genfair.models.images import ImageStore
from tests.support.project import GIT, ROOT, study_env

#: ``skimage.data``'s photographs (genfair.study.sizing.PNG_BYTES_PER_PIXEL's sample)
PHOTOS = ("astronaut", "coffee", "rocket", "chelsea", "hubble_deep_field", "immunohistochemistry")

EXPORT = """
import sys
import pandas as pd
from genfair.models.images import ImageStore, export_images

hashes = open("hashes.txt").read().split()
export_images(pd.DataFrame({"image": hashes}), ImageStore(sys.argv[1]), "data/images")
"""


def photo_store(root: Path, n: int, side: int) -> tuple[ImageStore, list[str]]:
    """``n`` distinct PNGs of real photographs at ``side`` px in an image store at ``root``:
    the photos in turn, each turn shifted 7 px further (and mirrored every other turn)."""
    import numpy as np
    import skimage.data
    from PIL import Image

    from genfair.models.images import encode_png

    bases = [
        np.asarray(
            Image.fromarray(getattr(skimage.data, name)())
            .convert("RGB")
            .resize((side, side), Image.Resampling.LANCZOS)
        )
        for name in PHOTOS
    ]
    store, hashes = ImageStore(root), []
    for i in range(n):
        turn = i // len(bases)
        pixels = np.roll(bases[i % len(bases)], turn * 7, axis=1)
        pixels = pixels[:, ::-1] if turn % 2 else pixels
        hashes.append(store.put(encode_png(Image.fromarray(np.ascontiguousarray(pixels)))))
    return store, hashes


def exported_repo(work: Path, store: ImageStore, hashes: list[str], cache_type: str | None) -> None:
    """A git + DVC repository in ``work`` whose one stage exports ``hashes`` from ``store``
    into ``data/images`` (genfair's ``export_images``), reproduced. ``cache_type``: DVC's
    ``cache.type`` (None: the project's ``.dvc/config``; ``""``: DVC's default)."""
    (work / ".dvc").mkdir(parents=True)
    config = (ROOT / ".dvc/config").read_text().replace("enabled = true", "enabled = false")
    (work / ".dvc/config").write_text(config)
    env = study_env(work)

    def run(*args: str) -> None:
        subprocess.run(args, cwd=work, env=env, check=True, capture_output=True)

    if cache_type is not None:
        run("dvc", "config", "--unset", "cache.type")
        if cache_type:
            run("dvc", "config", "cache.type", cache_type)
    (work / "hashes.txt").write_text("\n".join(hashes))
    (work / "export.py").write_text(EXPORT)
    run(*GIT, "init", "-q")
    cmd = f"{sys.executable} export.py {store.root}"
    run("dvc", "stage", "add", "-q", "-n", "export", "-d", "export.py", "-o", "data/images", cmd)
    run("dvc", "repro", "-q")


def disk_bytes(*folders: Path) -> tuple[int, int]:
    """Bytes of the files under ``folders``: each inode once (``du``), each name (``du -l``)."""
    inodes: dict[int, int] = {}
    names = 0
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                info = path.stat()
                inodes[info.st_ino] = info.st_size
                names += info.st_size
    return sum(inodes.values()), names


def reflinks_work(folder: Path) -> bool:
    """Whether ``folder``'s file system clones files (``cp --reflink=always``)."""
    source, clone = folder / ".reflink-probe", folder / ".reflink-probe-clone"
    source.write_bytes(b"probe")
    try:
        done = subprocess.run(
            [shutil.which("cp") or "cp", "--reflink=always", str(source), str(clone)],
            capture_output=True,
        )
        return done.returncode == 0
    finally:
        source.unlink(missing_ok=True)
        clone.unlink(missing_ok=True)
