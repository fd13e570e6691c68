"""The image store: generated images as content-addressed PNG files, named by a URL.

A t2i response is an image. Its bytes live in ``<store>/ab/abcdef....png`` (the SHA-256 of
the PNG bytes, fanned out by its first two hex digits); the cache row holds only the hash
and the metadata. The store is a local folder by default (``<cache dir>/images``, beside the
response cache) or any fsspec URL for a team (``cache.images`` / ``GENFAIR_IMAGES_URL``, e.g.
``s3://bucket/images`` on S3-compatible storage): then a local folder (``mirror``) keeps the
copies this machine wrote or read, so a VLM on machine B reads, through the shared cache,
the image a text-to-image model drew on machine A. A local file is written to a temporary
name in its final folder and renamed over the target (``os.replace``), so a reader never
sees a half-written image and a run killed mid-write leaves at most an orphan temporary
file; a remote object is written whole (one PUT) after the local copy. Writing the same
bytes twice is a no-op.

VLM inputs are named the same way inside chat messages: an image content part
``{"type": "image", "sha256": ..., "path": ...}`` (:func:`image_part`). The cache key keeps
the hash and drops the path (:meth:`genfair.models.base.Request.key_payload`), so moving a
data folder does not invalidate cached answers while a changed image does.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.io import plain_file_mode

_HEX = frozenset("0123456789abcdef")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def encode_png(image: Any) -> bytes:
    """PNG bytes of a PIL image, without metadata chunks: the same pixels (and Pillow
    version) give the same bytes, so the same image always gets the same hash."""
    if image.mode not in ("RGB", "RGBA", "L"):
        image = image.convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False, compress_level=6)
    return buffer.getvalue()


def check_png(data: bytes, source: str) -> tuple[int, int]:
    """Width and height of PNG ``data``; a clear error when it is not a readable PNG."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            if image.format != "PNG":
                raise ValueError(f"{source}: expected a PNG image, got {image.format}")
            return image.size
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"{source}: not a readable image ({exc})") from exc


def _check_hash(sha256: str) -> str:
    if len(sha256) != 64 or not set(sha256) <= _HEX:
        raise ValueError(f"{sha256!r} is not a SHA-256 hex digest (64 lower-case hex digits)")
    return sha256


class ImageStore:
    """PNG files named by the SHA-256 of their bytes under ``root`` (a folder or an fsspec
    URL; a URL needs ``mirror``, the local folder of this machine's copies)."""

    def __init__(self, root: str | os.PathLike[str], mirror: str | os.PathLike[str] | None = None):
        text = os.fspath(root)
        if text.startswith("file://"):
            text = text.removeprefix("file://")
        self.url = text
        self.fs: Any = None
        if "://" in text:
            import fsspec

            if mirror is None:
                raise ValueError(f"image store {text}: a remote store needs a local mirror folder")
            self.fs, self._remote = fsspec.core.url_to_fs(text)
            self.root = Path(mirror)
        else:
            self.root = Path(text)

    @classmethod
    def beside(cls, cache: Any) -> ImageStore:
        """The store of a :class:`~genfair.models.cache.ResponseCache` (its ``images``), or
        ``images/`` in the folder of its SQLite file."""
        return getattr(cache, "images", None) or cls(Path(cache.path).parent / "images")

    def _local(self, sha256: str) -> Path:
        _check_hash(sha256)
        return self.root / sha256[:2] / f"{sha256}.png"

    def _remote_path(self, sha256: str) -> str:
        return f"{self._remote.rstrip('/')}/{sha256[:2]}/{sha256}.png"

    def path(self, sha256: str) -> Path:
        """The image's local file; from a remote store it is fetched first (when there)."""
        local = self._local(sha256)
        if self.fs is not None and not local.is_file():
            try:
                data = self.fs.cat_file(self._remote_path(sha256))
            except FileNotFoundError:
                return local
            if sha256_bytes(data) != sha256:
                raise ValueError(
                    f"image store {self.url}: {sha256[:12]}... holds other bytes "
                    f"(sha256 {sha256_bytes(data)[:12]}...): delete that object"
                )
            _write_atomic(local, data)
        return local

    def __contains__(self, sha256: object) -> bool:
        if not isinstance(sha256, str):
            return False
        if self.fs is not None:  # the shared store, not this machine's copies, is what others read
            return bool(self.fs.exists(self._remote_path(sha256)))
        return self._local(sha256).is_file()

    def size(self, sha256: str) -> int | None:
        """The image's bytes as stored (this machine's copy, else the remote object's;
        nothing is fetched), or None when the store does not hold it."""
        local = self._local(sha256)
        if local.is_file():
            return local.stat().st_size
        if self.fs is not None:
            try:
                return int(self.fs.size(self._remote_path(sha256)))
            except FileNotFoundError:
                return None
        return None

    def put(self, png: bytes) -> str:
        """Store ``png`` (atomically, once) and return its hash."""
        sha256 = sha256_bytes(png)
        target = self._local(sha256)
        if not target.is_file():
            _write_atomic(target, png)
        if self.fs is not None and not self.fs.exists(self._remote_path(sha256)):
            self.fs.pipe_file(self._remote_path(sha256), png)
        return sha256

    def read(self, sha256: str) -> bytes:
        path = self.path(sha256)
        if not path.is_file():
            raise FileNotFoundError(
                f"image {sha256} is not in the image store {self.url}: the store was moved or "
                "pruned after the response cache recorded it. Restore the folder, or delete the "
                "cache file (and the stage outputs) so that the images are generated again."
            )
        return path.read_bytes()

    def open(self, sha256: str) -> Any:
        """The image as a PIL image (loaded, file closed)."""
        from PIL import Image

        with Image.open(io.BytesIO(self.read(sha256))) as image:
            image.load()
            return image


def _write_atomic(target: Path, data: bytes) -> None:
    """``data`` into ``target`` through a temporary name in its folder, then a rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem[:12]}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, plain_file_mode())  # readable by others sharing the project, as any file
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def image_part(path: str | os.PathLike[str]) -> dict[str, str]:
    """A chat-message content part naming an image file for a VLM: its hash (the cache key)
    and its path (where backends read it)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"VLM input image {path} does not exist")
    return {"type": "image", "sha256": sha256_file(path), "path": str(path)}


def vlm_message(text: str, images: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    """A user message with images first, then the text (the order VLM chat templates use)."""
    content: list[dict[str, str]] = [image_part(p) for p in images]
    content.append({"type": "text", "text": text})
    return {"role": "user", "content": content}


def image_parts(message: dict[str, Any]) -> list[dict[str, str]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") == "image"]


def read_image_part(part: dict[str, str]) -> bytes:
    """The bytes of an image part, checked against its recorded hash."""
    path = part.get("path")
    if not path:
        raise ValueError(
            f"image part {part.get('sha256')} has no 'path'; build it with image_part()"
        )
    data = Path(path).read_bytes()
    if part.get("sha256") and sha256_bytes(data) != part["sha256"]:
        raise ValueError(
            f"{path} changed since its probe was built (sha256 {sha256_bytes(data)[:12]}..., "
            f"expected {part['sha256'][:12]}...): rebuild the probes"
        )
    return data


def export_images(
    responses: pd.DataFrame, cache: Any, out_dir: str | os.PathLike[str]
) -> pd.DataFrame:
    """Put the images that ``responses`` uses into ``out_dir/<sha256>.png`` and return the
    index: the rows with an image, plus ``file`` (the name inside ``out_dir``).

    ``cache`` is the :class:`~genfair.models.cache.ResponseCache` the images were generated
    through (or its :class:`ImageStore`). Files are hard-linked when the store and
    ``out_dir`` share a file system, else copied (via a temporary name, then renamed), so a
    DVC output folder holds real files that survive pruning the cache. Files of
    ``out_dir`` that no row uses are removed: the folder is exactly the index.
    """
    if "image" not in responses.columns:
        raise KeyError("responses has no 'image' column: pass the table generate_images() returned")
    store = cache if isinstance(cache, ImageStore) else ImageStore.beside(cache)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = responses[responses["image"].notna()].copy()
    wanted = set(index["image"])
    for sha256 in sorted(wanted):
        source = store.path(sha256)
        target = out / f"{sha256}.png"
        if target.is_file():
            continue
        if not source.is_file():
            store.read(sha256)  # raises the explanatory error
        fd, tmp = tempfile.mkstemp(prefix=f".{sha256[:12]}.", suffix=".tmp", dir=out)
        os.close(fd)
        os.unlink(tmp)
        try:
            try:
                os.link(source, tmp)
            except OSError:  # another file system, or links not allowed
                shutil.copyfile(source, tmp)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    for stale in out.glob("*.png"):
        if stale.stem not in wanted:
            stale.unlink()
    index["file"] = index["image"] + ".png"
    return index.reset_index(drop=True)
