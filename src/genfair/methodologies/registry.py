"""Where methodologies are found: genfair's own, plus any a package registers.

A package registers one without editing genfair, either with an entry point::

    [project.entry-points."genfair.methodologies"]
    my_method = "my_package.my_module:MyMethodology"

or, in code that runs before the study (tests, notebooks), with :func:`register`.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points
from typing import TypeVar

from genfair.methodologies.base import Methodology

ENTRY_POINT_GROUP = "genfair.methodologies"

#: genfair's own methodologies: name -> "module:class" (imported on first use)
BUILTIN = {
    "fact_or_fair": "genfair.methodologies.fact_or_fair:FactOrFair",
    "news_bias": "genfair.methodologies.news_bias:NewsBias",
    "iris": "genfair.methodologies.iris.methodology:Iris",
    "lvlm_facet": "genfair.methodologies.lvlm_facet.methodology:LvlmFacet",
    "open_bias": "genfair.methodologies.open_bias.methodology:OpenBias",
}

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


def _sources() -> dict[str, str]:
    found = dict(BUILTIN)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value)
    return found


def names() -> list[str]:
    """Every methodology that can be configured, builtin ones first."""
    return list(dict.fromkeys([*_sources(), *_registered]))


def get_methodology(name: str) -> Methodology:
    """The methodology registered as ``name`` (one shared instance)."""
    if name in _instances:
        return _instances[name]
    if name in _registered:
        cls: type = _registered[name]
    else:
        target = _sources().get(name)
        if target is None:
            raise KeyError(f"unknown methodology {name!r}; known: {', '.join(sorted(names()))}")
        module, _, attr = target.partition(":")
        cls = getattr(import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Methodology)):
        raise TypeError(f"methodology {name!r} ({cls!r}) does not subclass genfair.methodologies.base.Methodology")
    if cls.name != name:
        raise ValueError(f"methodology registered as {name!r} calls itself {cls.name!r}")
    _instances[name] = cls()
    return _instances[name]
