"""Load and validate a study's ``params.yaml`` (composed by Hydra from ``conf/``).

Invalid configuration fails fast, before any model is loaded, with every problem named by
its key path, e.g. ``params.yaml: models.smollm2.sampling.temprature: unknown key``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from genfair.models.config import ModelConfig

PARAMS_FILE = "params.yaml"


class ConfigError(ValueError):
    """A configuration problem, with the file and key paths in its message."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CacheConfig(_Strict):
    dir: str = ".genfair/cache"


class TrackingConfig(_Strict):
    experiment: str = "genfair"
    #: MLFLOW_TRACKING_URI overrides; None = SQLite store in the repository root
    uri: str | None = None


class GenerationConfig(_Strict):
    """``generation``: when a ``generate`` stage counts as done."""

    #: the share of calls that may end in ``error`` (transport failures after retries) before
    #: the stage fails; errors are never cached, so a rerun asks only them again
    max_error_rate: float = Field(0.0, ge=0.0, le=1.0)


class StudyParams(_Strict):
    # a key pasted where a variable name belongs must never be echoed in an error
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    seed: int
    scale: str
    generation: GenerationConfig = GenerationConfig()
    cache: CacheConfig = CacheConfig()
    tracking: TrackingConfig = TrackingConfig()
    models: dict[str, ModelConfig] = Field(min_length=1)
    #: validated per methodology by :func:`methodology_config`
    methodologies: dict[str, dict[str, Any]] = Field(min_length=1)
    #: dataset curation steps (``news``...), validated by :func:`curation_config`
    curation: dict[str, dict[str, Any]] = {}
    #: measuring instruments (``face_demographics``...), validated by :func:`instrument_config`
    instruments: dict[str, dict[str, Any]] = {}
    #: every (model, methodology) pair the study measures, ``<model>-<methodology>`` -> both
    #: names; composed from ``models`` and ``methodologies`` (:mod:`genfair.study.runs`)
    runs: dict[str, dict[str, str]] | None = None

    def model(self, name: str) -> ModelConfig:
        if name not in self.models:
            raise ConfigError(f"no model {name!r} in params; known: {', '.join(self.models)}")
        return self.models[name]


#: discriminator fields of tagged unions -> the tag pydantic uses when the field is absent
#: (a simulator policy without ``kind`` is a multiple-choice policy)
_TAG_FIELDS: dict[str, str | None] = {"modality": "llm", "backend": None, "kind": "choice"}


def _key_path(loc: tuple[str | int, ...], data: Any) -> list[str | int]:
    """``loc`` without the tags pydantic inserts for tagged unions (``models.x.embedded.y``
    -> ``models.x.y``): a part that is not a key of the input dict but is the value of one
    of its :data:`_TAG_FIELDS` (or that field's default) is a tag, not a key the user
    wrote."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if (
            isinstance(node, dict)
            and part not in node
            and any(node.get(f, default) == part for f, default in _TAG_FIELDS.items())
        ):
            continue
        path.append(part)
        try:
            node = node[part]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            node = None
    return path


def format_errors(
    error: ValidationError, source: str, prefix: tuple[str | int, ...] = (), data: Any = None
) -> str:
    """One line per problem: ``<source>: <key.path>: <message>``.

    ``data`` is the validated input; when given, union tags are dropped from key paths.
    """
    lines = []
    for item in error.errors():
        loc = ".".join(str(p) for p in (*prefix, *_key_path(item["loc"], data)))
        message = "unknown key (check its spelling)" if item["type"] == "extra_forbidden" else item["msg"]
        lines.append(f"{source}: {loc}: {message}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


#: libyaml's loader where PyYAML has it (several times faster than the pure-Python one)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_params(path: str | Path = PARAMS_FILE, *, sections: bool = True) -> StudyParams:
    """Read and validate the study parameters; raise :class:`ConfigError` naming each bad key.

    ``sections``: validate every methodology, curation and instrument block now, so a typo
    fails before any work starts. ``False`` validates only the study's frame (a block is
    validated when a step reads it): for the stages that run on every ``dvc repro``, as
    validating every block imports every methodology (seconds)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} not found: run from the repository root, or `genfair compose`")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        params = StudyParams.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, str(path), data=raw)) from None
    # every configured key is redacted from everything written, in every process
    from genfair.models.redaction import register_key_env

    for model in params.models.values():
        if getattr(model, "api_key_env", None):
            register_key_env(model.api_key_env)
    if not sections:
        return params
    for name in params.methodologies:
        methodology_config(params, name, source=str(path))
    for name in params.curation:
        curation_config(params, name, source=str(path))
    for name in params.instruments:
        instrument_config(params, name, source=str(path))
    return params


#: curation step -> "module:Config class" of its configuration
CURATION = {
    "news": "genfair.curation.config:NewsCollectionConfig",
    "facet": "genfair.curation.config:FacetConfig",
    "occupations": "genfair.curation.config:OccupationsConfig",
}

#: instrument -> "module:Config class" of its configuration; the instrument is the class
#: named in :data:`INSTRUMENT_CLASSES`
INSTRUMENTS = {
    "face_demographics": "genfair.instruments.face_demographics:FaceDemographicsConfig",
}
INSTRUMENT_CLASSES = {
    "face_demographics": "genfair.instruments.face_demographics:FaceDemographics",
}


def curation_config(params: StudyParams, name: str, source: str = PARAMS_FILE) -> Any:
    """The validated config object of curation step ``name`` (``curation.<name>``)."""
    return _section_config(params.curation, CURATION, "curation", "curation step", name, source)


def instrument_config(params: StudyParams, name: str, source: str = PARAMS_FILE) -> Any:
    """The validated config object of instrument ``name`` (``instruments.<name>``)."""
    return _section_config(params.instruments, INSTRUMENTS, "instruments", "instrument", name, source)


def instrument_class(name: str) -> Any:
    """The class of instrument ``name`` (built with its validated config)."""
    from importlib import import_module

    module, cls = INSTRUMENT_CLASSES[name].split(":")
    return getattr(import_module(module), cls)


def _section_config(
    blocks: dict[str, dict[str, Any]], registry: dict[str, str], section: str, what: str, name: str,
    source: str,
) -> Any:
    """Validate ``<section>.<name>`` with the config class ``registry[name]`` names; errors
    name the key and the fix (the conf/ group that composes it)."""
    from importlib import import_module

    group = {"curation": "curation", "instruments": "instrument"}[section]
    if name not in registry:
        raise ConfigError(f"{source}: {section}.{name}: unknown {what}; known: {', '.join(registry)}")
    if name not in blocks:
        raise ConfigError(f"{source}: {section}.{name}: not configured (add "
                          f"`{group}@{section}.{name}: <file>` to conf/config.yaml's defaults)")
    module, cls = registry[name].split(":")
    try:
        return getattr(import_module(module), cls).model_validate(blocks[name])
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, source, (section, name))) from None


def methodology_config(params: StudyParams, name: str, source: str = PARAMS_FILE) -> Any:
    """The validated config object of methodology ``name``."""
    from genfair.methodologies import get_methodology

    try:
        methodology = get_methodology(name)
    except KeyError as exc:
        raise ConfigError(f"{source}: methodologies.{name}: {exc.args[0]}") from None
    try:
        return TypeAdapter(methodology.Config).validate_python(params.methodologies[name])
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, source, ("methodologies", name))) from None
    except KeyError:
        raise ConfigError(
            f"{source}: methodologies.{name}: not configured; known: {', '.join(params.methodologies)}"
        ) from None
