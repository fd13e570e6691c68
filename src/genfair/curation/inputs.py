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

``dvc status`` runs no stage, so it cannot see what this fingerprint sees. For it, composing
``conf/`` writes :func:`external_inputs` into ``params.yaml`` (the ``genfair_inputs`` resolver):
each input that lies outside the repository and outside installed packages, by name
(``<section>-<field>``). ``dvc.yaml``'s ``external_input@<name>`` stages list each as a DVC
dependency, so DVC itself hashes it and ``dvc status`` names the one that changed. DVC trusts
a file's (inode, mtime, size) between hashes, so only an edit in place that puts the mtime
back escapes ``dvc status``; ``dvc repro`` still sees it here (files up to 16 MiB).
An input inside the repository is machine-independent and already one of ``dvc.yaml``'s
dependencies or a stage's output; one inside an installed package is pinned by its version
(``constraints.txt``): neither becomes an absolute path in ``params.yaml`` or ``dvc.lock``.

Imported where used: genfair.curation.config and genfair.frame (pydantic), which the quick
path of the always-running ``curation_inputs`` stage and the Hydra resolver never load.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genfair.errors import ConfigError
from genfair.io import file_sha256, write_text
from genfair.names import name_problem

if TYPE_CHECKING:  # not imported at run time: the always-running stage's fast path has no pydantic
    from pydantic import BaseModel

__all__ = ["FINGERPRINT_VERSION", "HashCache", "check_external_inputs", "check_input_kinds",
           "check_named_paths",
           "curation_inputs", "input_problem",
           "external_inputs", "inputs_fingerprint", "named_inputs", "outside", "write_fingerprint",
           "write_inputs_fingerprint", "write_paths_fingerprint"]  # fmt: skip

#: bump when the fingerprint's layout changes
FINGERPRINT_VERSION = 1


def curation_inputs(section: str, config: BaseModel) -> list[Path]:
    """Every file or folder the curation config of ``section`` reads, as configured
    (:func:`named_inputs`' paths)."""
    return list(named_inputs(section, config).values())


def named_inputs(section: str, config: BaseModel) -> dict[str, Path]:
    """The files and folders the curation config of ``section`` reads, as configured, by a
    name made of the config key (a :mod:`genfair.names` name).

    ``news``: the file sources' paths (``sources-<i>``, 0-based; web sources are fetched, the
    embedded corpus ships in a pinned package); ``facet``: the annotations file and the
    images folder (``annotations``, ``images``); ``occupations``: the three reference tables."""
    from genfair.curation.config import (
        FacetConfig,
        FileSource,
        NewsCollectionConfig,
        OccupationsConfig,
    )

    if section == "news" and isinstance(config, NewsCollectionConfig):
        return {
            f"sources-{i}": s.path
            for i, s in enumerate(config.sources)
            if isinstance(s, FileSource)
        }
    if section == "facet" and isinstance(config, FacetConfig):
        return {"annotations": config.annotations_path(), "images": config.images_path()}
    if section == "occupations" and isinstance(config, OccupationsConfig):
        return {
            key: Path(getattr(config, key))
            for key in ("occupations", "us_statistics", "eu_statistics")
        }
    raise ValueError(
        f"curation section {section!r} with a {type(config).__name__}: use news "
        "(NewsCollectionConfig), facet (FacetConfig) or occupations (OccupationsConfig)"
    )


#: the config key of each named input (:func:`named_inputs`), for errors
_KEYS = {"annotations": "annotations_file", "images": "images_dir"}


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is, when it is neither a regular file nor a folder."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def input_problem(path: Path, base: Path = Path(".")) -> str | None:
    """Why ``path`` (a curation input; links followed) cannot be an input, or None: reading a
    FIFO or a device, or hashing one inside a folder, never ends (``dvc status`` hung on
    one). A missing path is the curation stage's to report."""
    full = path if path.is_absolute() else base / path
    try:
        kind = _kind(full.stat().st_mode)
    except (OSError, ValueError):
        return None
    if kind:
        return f"{path} is {kind}"
    if full.is_dir():
        for folder, dirs, files in os.walk(full, followlinks=True):
            for name in (*dirs, *files):
                try:
                    kind = _kind(os.stat(os.path.join(folder, name)).st_mode)
                except OSError:
                    continue  # a dangling link: read as missing
                if kind:
                    return f"{Path(folder, name)} (in the folder {path}) is {kind}"
    return None


def check_named_paths(tree: Any, source: str, prefix: str = "") -> None:
    """:class:`ConfigError` naming the key of the first string in ``tree`` (a params block)
    that names an existing FIFO, device or socket: any path a config names (a methodology's
    tables, a model folder...) is read, and reading one of those never ends."""
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            check_named_paths(value, source, f"{prefix}{key}.")
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            check_named_paths(value, source, f"{prefix}{index}.")
    elif isinstance(tree, str) and 0 < len(tree) < 4096 and "\n" not in tree:
        try:
            kind = _kind(os.stat(tree).st_mode)
        except (OSError, ValueError):  # not a path (most strings), or unreadable
            return
        if kind:
            raise ConfigError(
                f"{source}: {prefix.rstrip('.')}: {tree} is {kind}, not a regular file or "
                "folder: give a file or folder (genfair never waits on a pipe or a device)"
            )


def check_input_kinds(section: str, config: BaseModel, source: str) -> None:
    """:class:`ConfigError` naming the key of the first input of ``section`` that is not a
    regular file or a folder of them (:func:`input_problem`)."""
    for name, path in named_inputs(section, config).items():
        problem = input_problem(path)
        if problem:
            key = _KEYS.get(name, name)
            if name.startswith("sources-"):
                key = f"sources.{name.removeprefix('sources-')}.path"
            raise ConfigError(
                f"{source}: curation.{section}.{key}: {problem}, not a regular file or "
                "folder: give a file or folder (genfair reads inputs; it never waits on a pipe "
                "or a device)"
            )


def outside(paths: Iterable[Path], root: Path) -> list[Path]:
    """The paths that resolve outside ``root`` (relative ones are taken from ``root``)."""
    base = Path(root).resolve()
    return [p for p in paths if not (base / p).resolve().is_relative_to(base)]


def _installed(path: Path) -> bool:
    """Whether ``path`` (absolute) lies in this Python's installed packages or standard library."""
    roots = {sysconfig.get_path(key) for key in ("purelib", "platlib", "stdlib", "platstdlib")}
    return any(path.is_relative_to(Path(root).resolve()) for root in roots if root)


def external_inputs(
    curation: Mapping[str, Any], root: Path = Path(".")
) -> dict[str, dict[str, str]]:
    """``<section>-<name>`` -> ``{"section", "path"}`` for each curation input
    (:func:`named_inputs`) that resolves outside ``root`` and outside installed packages:
    ``dvc.yaml``'s ``external_input`` stages make each a DVC dependency. The path is as configured,
    normalised (a relative ``../shared/facet`` stays relative: the same on every machine with that
    layout).

    Nothing fails here (the resolver runs inside Hydra and DVC): a section that is not a
    name or does not validate has no entry; loading the params names its error."""
    from pydantic import ValidationError

    from genfair.frame import CURATION, section_class

    base = Path(root).resolve()
    found: dict[str, dict[str, str]] = {}
    for section, block in curation.items() if isinstance(curation, Mapping) else ():
        if section not in CURATION or name_problem(section) is not None:
            continue
        try:
            config = section_class(CURATION, section).model_validate(block)
        except ValidationError:
            continue
        for name, path in named_inputs(section, config).items():
            try:
                full = (base / path).resolve()
            except (OSError, ValueError):  # a NUL byte, a symlink loop: the curation stage names it
                continue
            if (
                not full.is_relative_to(base)
                and not _installed(full)
                and input_problem(full) is None  # a FIFO or device: never a DVC dependency
            ):
                found[f"{section}-{name}"] = {"section": section, "path": os.path.normpath(path)}
    return found


def check_external_inputs(
    written: Mapping[str, Any] | None, curation: Mapping[str, Any], source: str
) -> None:
    """Fail when ``params.yaml``'s ``external_inputs`` is not what its ``curation`` gives (edited
    by hand, or ``conf/`` edited without recomposing): ``dvc status`` would miss an input."""
    expected = external_inputs(curation)
    if (written or {}) != expected:
        missing = sorted(set(expected) - set(written or {}))
        raise ConfigError(
            f"{source}: external_inputs does not follow curation "
            f"(expected: {', '.join(sorted(expected)) or 'none'}; "
            f"missing or stale: {', '.join(missing) or 'the paths'}): "
            "recompose it with `genfair compose` (or `make compose`)"
        )


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
            write_text(
                json.dumps(self.seen, sort_keys=True), self.path, if_changed=True
            )  # runs on every repro


def _describe(path: Path, base: Path, cache: HashCache) -> dict[str, Any]:
    full = path if path.is_absolute() else base / path
    entry: dict[str, Any] = {"path": str(path)}
    if full.is_file():
        files = [(".", full)]
        entry["kind"] = "file"
    elif full.is_dir():
        # every file below, in a stable order; hidden files and folders (.git, .DS_Store,
        # interrupted writes) and byte-code caches (as .dvcignore) are not inputs
        files = sorted(
            (str(f.relative_to(full)), f)
            for f in full.rglob("*")
            if f.is_file()
            and f.suffix != ".pyc"
            and not any(p.startswith(".") or p == "__pycache__" for p in f.relative_to(full).parts)
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
    """Stage body: the fingerprint of ``section``'s inputs to ``out``
    (:func:`write_fingerprint`)."""
    return write_paths_fingerprint(section, curation_inputs(section, config), out, base, hash_cache)


def write_paths_fingerprint(
    section: str,
    paths: list[Path],
    out: Path,
    base: Path = Path("."),
    hash_cache: Path | None = None,
) -> Path:
    """The fingerprint of ``paths`` (``section``'s inputs) to ``out``
    (:func:`write_fingerprint`)."""
    data = inputs_fingerprint(paths, base, hash_cache)
    data["section"] = section
    data["outside_repository"] = [str(p) for p in outside(paths, base)]
    return write_fingerprint(data, out)


def write_fingerprint(data: dict[str, Any], out: Path) -> Path:
    """``data`` to ``out`` as JSON, stable bytes: rewritten only when it changes, so DVC sees
    no change when nothing changed."""
    out = write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", out, if_changed=True)
    os.chmod(out, 0o644)
    return out
