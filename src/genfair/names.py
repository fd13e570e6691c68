"""Names a user sets that become paths, stage names, shell words or MLflow run names.

A model key lands in ``dvc.yaml``'s ``cmd`` (``python stages/generate.py ${item.model} ...``,
run by a shell), in output folders (``data/responses/<model>/``), in DVC params keys
(``models.<model>``) and in MLflow run names; a methodology, scale, curation step or
instrument name likewise. So every such name must match :data:`NAME_PATTERN`: lowercase
letters, digits, ``_`` and ``-``, starting with a letter or digit, at most 64 characters.
That excludes every shell metacharacter, whitespace, ``/`` and ``..`` (no traversal) and
``.`` (DVC reads ``models.a.b`` as a nested key). Paths built from names are also checked
lexically to stay inside their root (:func:`inside`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from genfair.errors import ConfigError

__all__ = ["NAME_PATTERN", "PARAMS_FILE", "check_name", "inside", "name_problem"]

#: the study's params file, from the repository root (here, not in :mod:`genfair.params`, so
#: that what reads its bytes without validating it imports no pydantic: :mod:`genfair.stamps`)
PARAMS_FILE = "params.yaml"

NAME_PATTERN = "[a-z0-9][a-z0-9_-]{0,63}"
_NAME = re.compile(NAME_PATTERN)
#: how much of a bad name an error quotes (a 300-character key must not flood the line)
_QUOTED = 40


def _quoted(value: object) -> str:
    text = repr(value)  # repr: a newline or control character stays on the one line
    return text if len(text) <= _QUOTED else f"{text[:_QUOTED]}…' ({len(str(value))} characters)"


def name_problem(value: object) -> str | None:
    """Why ``value`` is not a name (one line, quoting it), or ``None`` when it is one."""
    if isinstance(value, str) and _NAME.fullmatch(value):
        return None
    return (
        f"{_quoted(value)} is not a name: use 1-64 lowercase letters, digits, "
        f"'_' or '-', starting with a letter or digit (pattern {NAME_PATTERN})"
    )


def check_name(value: object, key: str) -> str:
    """``value`` when it is a name; else :class:`ConfigError` naming ``key`` and the pattern."""
    problem = name_problem(value)
    if problem:
        raise ConfigError(f"{key}: {problem}")
    return value  # type: ignore[return-value]


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """``path`` (relative to the working directory, like ``root``) when it stays inside
    ``root`` once ``..`` is resolved lexically (a symlinked data folder is the owner's choice
    and stays allowed); else :class:`ConfigError`."""
    base = os.path.abspath(root)
    full = os.path.abspath(path)
    if os.path.commonpath([base, full]) != base:
        raise ConfigError(
            f"{os.fspath(path)!r} would be written outside {os.fspath(root)!r}: refused"
        )
    return Path(path)
