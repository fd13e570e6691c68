"""Stamps: what a stage that runs on every ``dvc repro`` derived from ``params.yaml`` last time.

The stages of ``always/dvc.yaml`` run on every ``dvc repro``. Their own checks are cheap
(hash a few small files, query a SQLite store), but reading ``params.yaml`` into the
validated study frame imports pydantic and builds its models: on this project's 2-core
machine about 90% of each stage's time (issue 25: 1.6-2.2 s of a stage's 1.7-2.3 s under
load, against 0.09 s for a bare ``python``). So a stage that completed records here what it
derived from the params (paths, the store's URI), keyed by the bytes of ``params.yaml``, the
environment variables it reads, the working directory and genfair's own code (a new version
may derive other paths). The next run with the same key
does its cheap check with that record; any other key, or a missing or damaged stamp, takes
the full path. A stamp is local state (``.genfair/stamps/``, outside git and DVC): deleting it
costs one full run. It never holds the check's result, only its inputs, so the check itself
(the files hashed, the store queried) runs every time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from genfair.io import write_text

#: where stamps live, from the repository root (the stages' working directory)
STAMP_DIR = Path(".genfair") / "stamps"
#: bump when a stamp's layout changes
STAMP_VERSION = 1
#: the code that derives what a stamp records: genfair's package (about 1.6 MB, a few ms to hash)
CODE_ROOT = Path(__file__).resolve().parent


def stamp_key(
    files: Iterable[str | os.PathLike[str]], env: Iterable[str], code: Path = CODE_ROOT
) -> str:
    """A digest of the working directory, the bytes of ``files`` (a missing one as missing),
    the values of the environment variables ``env`` (unset differs from empty) and of the
    Python sources under ``code``."""
    digest = hashlib.sha256(f"v{STAMP_VERSION}\0{Path.cwd().resolve()}\0".encode())
    for source in sorted(code.rglob("*.py")):
        digest.update(f"code {source.relative_to(code)}\0".encode() + source.read_bytes() + b"\0")
    for file in files:
        try:
            content = hashlib.sha256(Path(file).read_bytes()).hexdigest()
        except OSError:
            content = "missing"
        digest.update(f"file {file}\0{content}\0".encode())
    for name in env:
        digest.update(f"env {name}\0{os.environ.get(name)!r}\0".encode())
    return digest.hexdigest()


def read_stamp(stage: str, key: str) -> dict[str, Any] | None:
    """What ``stage`` recorded under ``key``; ``None`` when it recorded another key, nothing,
    or something unreadable."""
    try:
        stamp = json.loads((STAMP_DIR / f"{stage}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(stamp, dict)
        or stamp.get("key") != key
        or not isinstance(stamp.get("state"), dict)
    ):
        return None
    return stamp["state"]


def write_stamp(stage: str, key: str, state: dict[str, Any]) -> None:
    """Record ``state`` (JSON-able) for ``stage`` under ``key``, atomically."""
    write_text(
        json.dumps({"key": key, "state": state}, sort_keys=True), STAMP_DIR / f"{stage}.json"
    )
