"""Where methodologies are found, without a list to edit.

- **genfair's own**: every package under ``genfair/methodologies/`` is one methodology, named
  after its folder; its ``__init__`` exports the :class:`Methodology` subclass whose ``name``
  is that folder's name. Adding a folder adds the methodology.
- **another package's**: an entry point in its ``pyproject.toml``::

      [project.entry-points."genfair.methodologies"]
      my_method = "my_package.my_module:MyMethodology"

- **in code** that runs before the study (tests, notebooks): :func:`register`.

:func:`code_path` says where a methodology's code lives, so its stages can depend on it.
"""

from __future__ import annotations

import pkgutil
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import TypeVar

from genfair.methodologies.base import Methodology

ENTRY_POINT_GROUP = "genfair.methodologies"
#: the folder whose packages are genfair's own methodologies
PACKAGE_DIR = Path(__file__).resolve().parent

_registered: dict[str, type[Methodology]] = {}
_instances: dict[str, Methodology] = {}

M = TypeVar("M", bound=type[Methodology])


def register(cls: M) -> M:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, Methodology)):
        raise TypeError(f"{cls!r} is not a genfair.methodologies.base.Methodology subclass")
    _registered[cls.name] = cls
    _instances.pop(cls.name, None)
    return cls


@cache
def builtin() -> tuple[str, ...]:
    """genfair's own methodologies: the packages of :data:`PACKAGE_DIR` (found without importing
    them)."""
    return tuple(m.name for m in pkgutil.iter_modules([str(PACKAGE_DIR)]) if m.ispkg)


def _entry_points() -> dict[str, str]:
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    """Every methodology that can be configured, genfair's own first."""
    return list(dict.fromkeys([*builtin(), *_entry_points(), *_registered]))


def _class_of(name: str) -> type:
    if name in _registered:
        return _registered[name]
    if name in builtin():
        package = import_module(f"{__package__}.{name}")
        found = [
            c
            for c in vars(package).values()
            if isinstance(c, type)
            and issubclass(c, Methodology)
            and getattr(c, "name", None) == name
        ]
        if not found:
            raise TypeError(
                f"genfair/methodologies/{name}/__init__.py exports no Methodology subclass named "
                f"{name!r} (import it there: `from .methodology import MyMethodology`)"
            )
        return found[0]
    target = _entry_points().get(name)
    if target is None:
        raise KeyError(f"unknown methodology {name!r}; known: {', '.join(sorted(names()))}")
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


def get_methodology(name: str) -> Methodology:
    """The methodology registered as ``name`` (one shared instance)."""
    if name in _instances:
        return _instances[name]
    cls = _class_of(name)
    if not (isinstance(cls, type) and issubclass(cls, Methodology)):
        raise TypeError(
            f"methodology {name!r} ({cls!r}) does not "
            "subclass genfair.methodologies.base.Methodology"
        )
    if cls.name != name:
        raise ValueError(f"methodology registered as {name!r} calls itself {cls.name!r}")
    _instances[name] = cls()
    return _instances[name]


def code_path(name: str, root: Path | None = None) -> str | None:
    """The folder (or file) of methodology ``name``'s code, found without importing it:
    ``src/genfair/methodologies/<name>`` for genfair's own (the study's source tree's when
    it has one), the top-level package of an
    entry point's module otherwise; relative to ``root`` (default: the working directory)
    when inside it, so a committed ``params.yaml`` names no machine path. None for one
    registered in code (nothing for DVC to watch) or not found."""
    if name in _registered and name not in builtin():
        return None
    root = (root or Path.cwd()).resolve()
    if name in builtin():
        # the study's own source tree when it has one (what dvc.yaml's generic deps name too)
        in_tree = root / "src" / "genfair" / "methodologies" / name
        where = in_tree if in_tree.is_dir() else PACKAGE_DIR / name
    else:
        target = _entry_points().get(name)
        if target is None:
            return None
        spec = find_spec(target.partition(":")[0].split(".")[0])  # a top-level name imports nothing
        if spec is None or spec.origin is None and not spec.submodule_search_locations:
            return None
        locations = list(spec.submodule_search_locations or [])
        where = Path(locations[0]) if locations else Path(str(spec.origin))
    where = where.resolve()
    return where.relative_to(root).as_posix() if where.is_relative_to(root) else where.as_posix()
