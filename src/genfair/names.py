"""Names a user sets that become paths, stage names, shell words or MLflow run names.

A model key lands in ``dvc.yaml``'s ``cmd`` (``python stages/generate.py ${item.model} ...``,
run by a shell), in output folders (``data/responses/<methodology>/<model>/``), in DVC params keys
(``models.<model>``) and in MLflow run names; a methodology, scale, curation step or
instrument name likewise. So every such name must match :data:`NAME_PATTERN`: lowercase
letters, digits, ``_`` and ``-``, starting with a letter or digit, at most 64 characters.
That excludes every shell metacharacter, whitespace, ``/`` and ``..`` (no traversal) and
``.`` (DVC reads ``models.a.b`` as a nested key). Paths built from names are also checked
lexically to stay inside their root (:func:`inside`).

MLflow param and metric keys come from config keys (a model's ``extra_body``, which the
endpoint defines) and from data (a score row's labels), so they are not refused but mapped:
:func:`mlflow_key` keeps a key MLflow takes and turns any other into one, deterministically.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from pathlib import Path
from typing import Any

from genfair.errors import ConfigError
from genfair.urls import strip_in_text

__all__ = ["INSTRUMENTS_FOLDER", "MLFLOW_KEY_PATTERN", "NAME_PATTERN", "PARAMS_FILE",
           "PAIR_SEPARATOR", "check_name", "flatten", "inside", "mlflow_key", "name_problem",
           "STUDY_FILE", "pair_key", "pair_problem", "split_pair"]  # fmt: skip

#: the study's params file, from the repository root (here, not in :mod:`genfair.frame`, so
#: that what reads its bytes without validating it imports no pydantic: :mod:`genfair.stamps`)
PARAMS_FILE = "params.yaml"
#: the user's study: which methodologies run on which models (genfair.study.selection)
STUDY_FILE = "conf/study.yaml"

NAME_PATTERN = "[a-z0-9][a-z0-9_-]{0,63}"
#: the instruments' folder beside the methodologies' (``data/metrics/<methodology>/``,
#: ``data/headline/<methodology>/``): no methodology may take this name
INSTRUMENTS_FOLDER = "instruments"
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


#: joins two model names into a comparison's key, folder and matrix cell (``a_vs_b``)
PAIR_SEPARATOR = "_vs_"


def pair_problem(name: str) -> str | None:
    """Why the model name ``name`` could make two pairs one key (one line), or ``None``.
    A name that contains ``_vs_``, starts with ``vs_`` or ends with ``_vs`` can: models
    ``a``, ``b_vs_c``, ``a_vs_b`` and ``c`` give ``a_vs_b_vs_c`` twice (issue 44)."""
    if PAIR_SEPARATOR not in f"_{name}_":
        return None
    return (
        f"{_quoted(name)} would make two comparisons one key ('{PAIR_SEPARATOR}' joins a pair "
        "of models): name the model without '_vs_', a leading 'vs_' or a trailing '_vs'"
    )


def pair_key(a: str, b: str) -> str:
    """The one key of the pair (``a``, ``b``); unique while no name has a
    :func:`pair_problem`."""
    return f"{a}{PAIR_SEPARATOR}{b}"


def split_pair(key: str) -> tuple[str, str]:
    """The names :func:`pair_key` joined."""
    a, _, b = key.partition(PAIR_SEPARATOR)
    return a, b


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


#: an MLflow param or metric key on every platform: MLflow's own rule (word characters,
#: ``.``, ``-``, space and ``/``; its ``:`` is refused on Windows), at most 250 characters
MLFLOW_KEY_PATTERN = r"[\w./ -]{1,250}"
_MLFLOW_KEY = re.compile(MLFLOW_KEY_PATTERN)
#: how a mapped key ends (see :func:`mlflow_key`)
_MAPPED_KEY_END = re.compile(r"-[0-9a-f]{8}\Z")


def mlflow_key(key: str) -> str:
    """``key`` when MLflow takes it as a param or metric key, else a key it takes: every
    character outside :data:`MLFLOW_KEY_PATTERN` (``/`` too) becomes ``_``, a leading ``.``
    gets a ``_`` before it, and ``-`` plus the first 8 hex digits of the key's SHA-256 follow
    (so two keys never map to one), within 250 characters: ``model.extra_body.x!y`` ->
    ``model.extra_body.x_y-<8 hex>``. A key that already ends in ``-`` and 8 hex digits is
    mapped too, so a kept key never equals a mapped one (``x_y-1472d3f1`` and ``x!y`` were
    one key, issue 44). MLflow also refuses a key that its path rules would
    change (``a//b``, ``a/../b``, ``/a``, ``a/``), which is mapped the same way."""
    norm = posixpath.normpath(key)
    if (
        _MLFLOW_KEY.fullmatch(key)
        and not _MAPPED_KEY_END.search(key)
        and norm == key
        and norm != "."
        and not norm.startswith(("..", "/"))
    ):
        return key
    safe = re.sub(r"[^\w. -]", "_", key)
    safe = "_" + safe if safe.startswith(".") else safe
    return f"{safe[:241]}-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as MLflow params: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists become
    strings, and a URL's credentials are stripped from every string."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(data, str):  # a URL's credentials never become an MLflow param
        return {prefix.rstrip("."): strip_in_text(data)}
    return {
        prefix.rstrip("."): data
        if isinstance(data, (int, float, bool)) or data is None
        else str(data)
    }
