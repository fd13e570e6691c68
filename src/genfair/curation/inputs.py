"""The files a curation config reads, and a fingerprint of their content, so that an edit to any
of them reruns the curation stage even when the file lies outside the repository.

DVC only reruns a stage for the dependencies ``dvc.yaml`` lists, and it cannot list what the
configuration names at run time: a news file source (``curation.news.sources[*].path``) or a
FACET release (``curation.facet.release_dir``, ``annotations_file``, ``images_dir``) given as
a path outside the repository, or anywhere not listed. So each curation section gets a small
stage that always runs (``always_changed: true``), writes :func:`inputs_fingerprint` of what
:func:`curation_inputs` lists to ``data/curated/inputs/<section>.json``, and the curation
stage depends on that file: DVC reruns curation exactly when the fingerprint changes.

The fingerprint holds each input *as configured* (a relative path stays relative), its kind,
file count, byte count and a sha256 over the files' relative paths and contents, so the
default study's fingerprint is the same on every machine and a fresh clone reruns nothing.
Files up to :data:`ALWAYS_HASH_BYTES` (16 MiB) are hashed at every run, so an edit in place
that keeps a file's size and mtime is seen; larger files' hashes are cached (size, mtime,
inode and ctime per file, in ``hash_cache``), so a release of big files is read once, not at
every ``dvc repro``. Inputs shipped inside
pinned packages (the ``embedded`` news corpus) are not listed: the package version pins them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genfair.io import file_sha256, write_text

if TYPE_CHECKING:  # not imported at run time: the always-running stage's fast path has no pydantic
    from pydantic import BaseModel

__all__ = ["FINGERPRINT_VERSION", "HashCache", "curation_inputs", "inputs_fingerprint",
           "outside", "write_fingerprint", "write_inputs_fingerprint"]  # fmt: skip

#: bump when the fingerprint's layout changes
FINGERPRINT_VERSION = 1


def curation_inputs(section: str, config: BaseModel) -> list[Path]:
    """Every file or folder the curation config of ``section`` reads, as configured.

    ``news``: the file sources' paths (web sources are fetched, the embedded corpus ships in
    a pinned package); ``facet``: the annotations file and the images folder;
    ``occupations``: the three reference tables."""
    from genfair.curation.config import FacetConfig, FileSource, NewsCollectionConfig, OccupationsConfig

    if section == "news" and isinstance(config, NewsCollectionConfig):
        return [s.path for s in config.sources if isinstance(s, FileSource)]
    if section == "facet" and isinstance(config, FacetConfig):
        return [config.annotations_path(), config.images_path()]
    if section == "occupations" and isinstance(config, OccupationsConfig):
        return [Path(config.occupations), Path(config.us_statistics), Path(config.eu_statistics)]
    raise ValueError(
        f"curation section {section!r} with a {type(config).__name__}: use news "
        "(NewsCollectionConfig), facet (FacetConfig) or occupations (OccupationsConfig)"
    )


def outside(paths: Iterable[Path], root: Path) -> list[Path]:
    """The paths that resolve outside ``root`` (relative ones are taken from ``root``)."""
    base = Path(root).resolve()
    return [p for p in paths if not (base / p).resolve().is_relative_to(base)]


#: files up to this size are hashed at every run, whatever their stat says (an edit in place
#: that keeps size and mtime is seen); larger ones are re-read when size, mtime, ctime or inode
#: changed (ctime cannot be set back by the user: resetting mtime with touch changes it)
ALWAYS_HASH_BYTES = 16 << 20


class HashCache:
    """sha256 of files: files up to :data:`ALWAYS_HASH_BYTES` are always read; larger ones are
    cached by (resolved path, size, mtime_ns, inode, ctime_ns) in a JSON file and read again
    when any of these changed. Entries of files not seen in a run are dropped."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        self.seen: dict[str, list[Any]] = {}
        if path is not None and path.is_file():
            try:
                self.entries = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.entries = {}  # a damaged cache only costs a rehash

    def sha256(self, file: Path) -> str:
        stat = file.stat()
        if stat.st_size <= ALWAYS_HASH_BYTES:
            return file_sha256(file)
        key = str(file.resolve())
        sig = [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns]
        entry = self.entries.get(key)
        if entry is None or entry[:4] != sig:
            entry = [*sig, file_sha256(file)]
        self.seen[key] = entry
        return entry[4]

    def save(self) -> None:
        if self.path is not None:
            data = json.dumps(self.seen, sort_keys=True)
            write_text(data, self.path)


def _describe(path: Path, base: Path, cache: HashCache) -> dict[str, Any]:
    full = path if path.is_absolute() else base / path
    entry: dict[str, Any] = {"path": str(path)}
    if full.is_file():
        files = [(".", full)]
        entry["kind"] = "file"
    elif full.is_dir():
        # every file below, in a stable order; hidden files and folders (.git, .DS_Store,
        # interrupted writes) are not inputs
        files = sorted(
            (str(f.relative_to(full)), f)
            for f in full.rglob("*")
            if f.is_file() and not any(p.startswith(".") for p in f.relative_to(full).parts)
        )
        entry["kind"] = "dir"
    else:
        return entry | {"kind": "missing", "files": 0, "bytes": 0, "sha256": None}
    digest = hashlib.sha256()
    total = 0
    for name, file in files:
        digest.update(f"{name}\0{cache.sha256(file)}\n".encode())
        total += file.stat().st_size
    return entry | {"files": len(files), "bytes": total, "sha256": digest.hexdigest()}


def inputs_fingerprint(
    paths: Iterable[Path], base: Path = Path("."), hash_cache: Path | None = None
) -> dict[str, Any]:
    """A JSON-able fingerprint of ``paths`` (files or folders; relative ones from ``base``).

    A missing input is recorded as ``missing`` (the curation stage itself reports it with its
    fix), so the fingerprint changes when it appears."""
    cache = HashCache(hash_cache)
    entries = [_describe(Path(p), Path(base), cache) for p in paths]
    cache.save()
    return {"version": FINGERPRINT_VERSION, "inputs": entries}


def write_inputs_fingerprint(
    section: str,
    config: BaseModel,
    out: Path,
    base: Path = Path("."),
    hash_cache: Path | None = None,
) -> Path:
    """Stage body: the fingerprint of ``section``'s inputs to ``out`` (:func:`write_fingerprint`)."""
    return write_fingerprint(section, curation_inputs(section, config), out, base, hash_cache)


def write_fingerprint(
    section: str, paths: list[Path], out: Path, base: Path = Path("."), hash_cache: Path | None = None
) -> Path:
    """The fingerprint of ``paths`` (``section``'s inputs) to ``out`` (JSON, stable bytes:
    rewritten only when it changes, so DVC sees no change when nothing changed)."""
    data = inputs_fingerprint(paths, base, hash_cache)
    data["section"] = section
    data["outside_repository"] = [str(p) for p in outside(paths, base)]
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    out = Path(out)
    if not (out.is_file() and out.read_text(encoding="utf-8") == text):
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(text, out)
    os.chmod(out, 0o644)
    return out
