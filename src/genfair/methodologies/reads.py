"""Which config fields each step of a methodology reads, and the config view that holds a step
to them.

A methodology declares, per step, the fields of its ``Config`` the step reads
(:attr:`~genfair.methodologies.base.Methodology.reads`; a step it does not name reads every
field). Composing ``conf/`` digests each step's fields apart (``digests.methodologies.<name>.
<step>`` in ``params.yaml``), and each stage depends on its step's digest alone: a field only
``metrics`` reads reruns ``metrics`` and what follows, never ``probes`` or ``generate``.

The declaration is enforced where it matters: a step is handed :func:`step_config`, a copy of
the config that refuses (:class:`UndeclaredRead`) every field its step did not declare, so a
methodology that reads more than it declares fails on its first run instead of leaving a stage
wrongly up to date. The plant fields (:attr:`~genfair.methodologies.base.Methodology.plants`)
are read by a simulator's ``generate`` only; a real model's sees them at their defaults, so a
planted rate reruns only the simulators' runs (its digest is in their ``runs`` entries).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from genfair.errors import UndeclaredRead
from genfair.methodologies.registry import get_methodology, names

#: the steps of a run or a methodology that read its config, in pipeline order (their stages
#: depend on ``digests.methodologies.<name>.<step>``)
STEPS = ("probes", "generate", "label", "metrics", "study")

__all__ = [
    "STEPS",
    "UndeclaredRead",
    "digest_fields",
    "every_field_but",
    "fields_of",
    "plant_fields",
    "step_config",
    "step_fields",
]


def _fields(method: Any) -> tuple[str, ...]:
    config = getattr(method, "Config", None)
    return (
        tuple(config.model_fields)
        if isinstance(config, type) and issubclass(config, BaseModel)
        else ()
    )


def plant_fields(method: Any) -> tuple[str, ...]:
    """``method``'s plant fields that its config has, with a default (a real model sees that)."""
    config = method.Config
    return tuple(
        f
        for f in getattr(method, "plants", ())
        if f in _fields(method) and not config.model_fields[f].is_required()
    )


def step_fields(method: Any, step: str) -> tuple[str, ...]:
    """The config fields ``step`` of ``method`` reads: those it declares, else every field;
    never the plants (a simulator's ``generate`` adds them)."""
    declared = getattr(method, "reads", {}).get(step)
    unknown = set(declared or ()) - set(_fields(method))
    if unknown:
        raise UndeclaredRead(
            f"{method.name}: reads[{step!r}] names {', '.join(sorted(unknown))}, not fields of "
            f"its Config ({', '.join(_fields(method))})"
        )
    plants = plant_fields(method)
    return tuple(
        f for f in _fields(method) if (declared is None or f in declared) and f not in plants
    )


def every_field_but(config: type[BaseModel], *fields: str) -> tuple[str, ...]:
    """Every field of ``config`` but ``fields``: a step's ``reads`` that stays safe when a
    field is added (a new field is read by every step until declared otherwise)."""
    unknown = set(fields) - set(config.model_fields)
    if unknown:
        raise UndeclaredRead(f"{config.__name__} has no field {', '.join(sorted(unknown))}")
    return tuple(f for f in config.model_fields if f not in fields)


def digest_fields(method: Any) -> dict[str, tuple[str, ...] | None]:
    """Step -> the fields its digest covers, plus ``plants``."""
    return {**{step: step_fields(method, step) for step in STEPS}, "plants": plant_fields(method)}


def fields_of(name: str) -> dict[str, tuple[str, ...] | None]:
    """:func:`digest_fields` of the methodology ``name`` (every step, every field, when no
    methodology has that name: loading the params then names it)."""
    if name not in names():
        return {step: None for step in STEPS}  # digests of the whole block
    return digest_fields(get_methodology(name))


def step_config(method: Any, config: Any, step: str, simulated: bool | None = None) -> Any:
    """``config`` as ``step`` may read it: every field it did not declare refused. For
    ``generate``, ``simulated`` says whether the model is a simulator: a simulator's also reads
    the plant fields; a real model's sees them at their defaults (never the planted rates)."""
    plants = plant_fields(method)
    if step == "generate" and not simulated and plants:
        defaults = {
            f: method.Config.model_fields[f].get_default(call_default_factory=True) for f in plants
        }
        config = config.model_copy(update=defaults)
    if not isinstance(config, BaseModel):
        return config
    allowed = {*step_fields(method, step), *(plants if step == "generate" else ())}
    refused = frozenset(_fields(method)) - allowed
    if not refused:
        return config
    view = _view_class(type(config), refused, method.name, step)
    return view.model_construct(_fields_set=config.model_fields_set, **dict(config))


@cache
def _view_class(cls: type[BaseModel], refused: frozenset[str], name: str, step: str) -> type:
    """A subclass of ``cls`` whose instances refuse the ``refused`` fields."""

    def __getattribute__(self: Any, attr: str) -> Any:  # noqa: N807 - the hook itself
        if attr in refused:
            raise UndeclaredRead(
                f"{name}'s {step} step read the config field {attr!r}, which it does not "
                f"declare: add it to {name}'s reads[{step!r}] (its stage would not rerun "
                "when the field changes)"
            )
        return object.__getattribute__(self, attr)

    return type(
        cls.__name__, (cls,), {"__getattribute__": __getattribute__, "__module__": cls.__module__}
    )
