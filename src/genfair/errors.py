"""The errors that carry a message for the user (bad input, an incomplete run), in a module
that imports nothing: the CLI and the stage scripts catch them and print one line, and the
stages that run on every ``dvc repro`` must start without importing the model layer."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem, with the file and key paths in its message."""


class NotConfigured(ConfigError):
    """A section the study does not configure (e.g. an optional instrument left out)."""


class CacheError(RuntimeError):
    """The response cache file cannot be used (corrupt, not a database, unwritable)."""


class IncompleteGeneration(RuntimeError):
    """More calls ended in ``error`` than ``generation.max_error_rate`` allows (the stage
    fails; failed calls are never cached, so a rerun asks only them)."""


class UndeclaredRead(RuntimeError):
    """A methodology step read a config field its ``reads`` does not declare (its stage would
    not rerun when the field changes): a bug of the methodology, named with the fix."""


#: exception types whose message is the whole story for the user: one line, no traceback
EXPECTED: tuple[type[BaseException], ...] = (
    ConfigError,
    CacheError,
    IncompleteGeneration,
    UndeclaredRead,
    FileNotFoundError,
    KeyError,
    ValueError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
