"""Atomic, deterministic writes of stage outputs, and reads that say what is wrong."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genfair import limits

if TYPE_CHECKING:  # imported where used: the always-running stages start without pandas
    import pandas as pd


def plain_file_mode() -> int:
    """The mode of a plainly created file: 0666 less the umask (``mkstemp`` gives 0600)."""
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask (read without changing it where Linux allows)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it back at once
    os.umask(mask)
    return mask


def _atomic(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Write through a temporary file in the same folder, then rename over ``path``. The
    file gets the permissions of a plainly created one (0666 less the umask, e.g. 0644):
    ``mkstemp`` makes it 0600, which others sharing the project could not read."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, plain_file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def stable_hash(payload: Any, length: int = 64) -> str:
    """SHA-256 of the canonical JSON of ``payload`` (sorted keys, no whitespace)."""
    blob = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def file_sha256(path: str | Path) -> str:
    """sha256 hex digest of a file, read in 1 MiB blocks (never whole into memory)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: significant digits of every float a stage writes (parquet float columns, JSON numbers).
#: numpy and torch pick SIMD kernels by CPU (AVX2, AVX-512...), which may round the last
#: bits of a float differently (measured: 1.1e-16 on a bootstrap bound); cut to 10
#: significant digits, the same computation gives the same bytes on any x86-64, unless a
#: value lies within that last-bit margin of a rounding boundary (odds about 1e-6 per value).
FLOAT_DIGITS = 10


def round_float(value: float) -> float:
    """``value`` to :data:`FLOAT_DIGITS` significant digits, through Python's correctly
    rounded decimal formatting (no CPU-specific code); NaN and infinities unchanged."""
    return float(f"{value:.{FLOAT_DIGITS}g}") if math.isfinite(value) else float(value)


def round_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every float column's values at :data:`FLOAT_DIGITS` significant
    digits (dtype and missing values kept); the frame itself is not changed."""
    import numpy as np
    import pandas as pd

    columns = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c].dtype)]
    if not columns:
        return frame
    frame = frame.copy()
    for column in columns:
        values = frame[column].to_numpy(dtype="float64", na_value=np.nan).tolist()
        rounded = pd.Series([round_float(v) for v in values], index=frame.index, dtype="float64")
        frame[column] = rounded.astype(frame[column].dtype)
    return frame


def _round_json(data: Any) -> Any:
    if isinstance(data, float):
        return round_float(data)
    if isinstance(data, dict):
        return {key: _round_json(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_round_json(value) for value in data]
    return data


def write_parquet(frame: pd.DataFrame, path: str | Path) -> Path:
    """Parquet without the pandas index, floats at :data:`FLOAT_DIGITS` significant digits:
    same computation and pyarrow version -> same bytes, on any CPU."""
    frame = round_floats(frame)
    return _atomic(path, lambda tmp: frame.to_parquet(tmp, index=False, engine="pyarrow"))


def write_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """CSV without the index, floats to 6 significant digits (``dvc plots`` tables), its text
    :func:`spreadsheet_safe`."""
    frame = spreadsheet_safe(frame)
    return _atomic(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.6g"))


#: what a spreadsheet reads as a formula at the start of a cell (OWASP "CSV Injection"):
#: = + - @, tab and carriage return, and the full-width = + - @ some spreadsheets also read
_FORMULA = re.compile(r"[=+\-@\t\r\uff1d\uff0b\uff0d\uff20]")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _inert_cell(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if _FORMULA.match(value) and not _NUMBER.fullmatch(value):
        value = "'" + value  # OWASP's fix: a leading quote makes the cell text
    # a carriage return ends a row where the file is read, but the writer (lines end in \n)
    # leaves it unquoted: as a line feed it is quoted and stays inside its cell
    return value.replace("\r\n", "\n").replace("\r", "\n")


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` for a CSV a person opens in a spreadsheet: a text cell (or column name) a
    spreadsheet would run as a formula (``=HYPERLINK(...)``, ``@SUM(...)``, ``-2+3``) starts
    with ``'``, which shows it as text, and a carriage return in a cell becomes a line feed
    (which the writer quotes: a cell can never start a row of its own). Numbers, numeric
    columns and text such as ``-0.5`` that is a number stay as they are."""
    text = [i for i, dtype in enumerate(frame.dtypes) if dtype.kind not in "biufcmM"]
    names = [_inert_cell(c) for c in frame.columns]
    if not text and names == list(frame.columns):
        return frame
    out = frame.copy()
    for i in text:
        out.isetitem(i, out.iloc[:, i].map(_inert_cell))
    out.columns = names
    return out


def write_text(text: str, path: str | Path, *, if_changed: bool = False) -> Path:
    """``text`` as UTF-8, atomically. ``if_changed``: leave a file that already holds ``text``
    untouched (same inode and mtime), so DVC finds its hash in its state database instead of
    hashing the file again and committing the new entry (an fsync) on every run."""
    path = Path(path)
    if if_changed and _holds(path, text):
        return path
    return _atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes(data: bytes, path: str | Path) -> Path:
    """``data`` into ``path``, atomically."""
    return _atomic(path, lambda tmp: tmp.write_bytes(data))


def _holds(path: Path, text: str) -> bool:
    """Whether ``path`` already holds ``text`` (a missing or unreadable file does not)."""
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def write_json(data: Any, path: str | Path, *, if_changed: bool = False) -> Path:
    """Indented, sorted JSON, floats at :data:`FLOAT_DIGITS` significant digits (``if_changed``:
    :func:`write_text`)."""
    return write_text(
        json.dumps(_round_json(data), indent=2, sort_keys=True, default=str, allow_nan=False)
        + "\n",
        path,
        if_changed=if_changed,
    )


def check_file_size(
    path: str | Path, error: type[Exception] = ValueError, limit: int | None = None
) -> Path:
    """``path`` when it has at most ``limit`` bytes (:data:`genfair.limits.MAX_INPUT_FILE_BYTES`
    by default), checked before a reader holds it whole; else ``error``, one line naming the
    file and the bound."""
    limit = limits.MAX_INPUT_FILE_BYTES if limit is None else limit  # read now: tests lower it
    size = Path(path).stat().st_size
    if size > limit:
        raise error(
            f"{path}: {size:,} bytes, above the {limit:,} an input file read whole may have "
            "(genfair.limits.MAX_INPUT_FILE_BYTES): give the right file, or split it"
        )
    return Path(path)


def read_parquet(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: run the stage that makes it first (`dvc repro`)"
        )
    import pandas as pd
    import pyarrow

    try:
        return pd.read_parquet(path, engine="pyarrow")
    except (pyarrow.ArrowException, OSError) as exc:  # cut short, overwritten, not parquet
        raise ValueError(
            f"{path}: not a readable parquet file ({type(exc).__name__}: "
            f"{_first_line(exc)}); it was cut short or damaged: delete it and "
            f"rerun `dvc repro` (or `dvc checkout {path}` if DVC cached it)"
        ) from None


def read_json(path: str | Path, error: type[Exception] = ValueError, hint: str = "") -> Any:
    """The parsed JSON file at ``path``; ``error`` naming the path when the file is missing or
    not JSON, followed by ``hint`` (what the file should be, where to get it)."""
    path = Path(path)
    hint = f"; {hint}" if hint else ""
    if not path.is_file():
        raise error(f"{path}: not found{hint}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc}){hint}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"


def jsonable(value: Any) -> Any:
    """Nested dicts/lists of plain Python values; NaN -> None, floats rounded to 6 places."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 6)
    return value
