"""Load and validate a study's ``params.yaml`` (composed by Hydra from ``conf/``).

Invalid configuration fails fast, before any model is loaded, with every problem named by
its key path, e.g. ``params.yaml: models.smollm2.sampling.temprature: unknown key``. The
study's frame (every block but the model configs) and the file's reading are in
:mod:`genfair.frame`; this module adds the model configs and the methodologies' configs.

Imported where used: genfair.methodologies(.reads) (registers all five, with pandas: 0.5 s);
the `genfair` CLI imports this module at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, TypeAdapter, ValidationError, model_validator

from genfair.curation.inputs import check_input_kinds, check_named_paths
from genfair.frame import (
    PARAMS_FILE,
    ConfigError,
    StudyFrame,
    check_digests,
    curation_config,
    format_errors,
    instrument_class,
    instrument_config,
    read_params,
    validate,
)
from genfair.models.config import ModelConfig
from genfair.models.redaction import register_key_env
from genfair.names import STUDY_FILE

__all__ = ["PARAMS_FILE", "ConfigError", "StudyParams", "check_model_methodologies",
           "check_plants", "curation_config", "format_errors", "instrument_class",
           "instrument_config", "load_params", "methodology_config", "params_from",
           "planted_block", "run_config", "study_params"]  # fmt: skip


class StudyParams(StudyFrame):
    """The study: its frame, with every model config validated."""

    models: dict[str, ModelConfig] = Field(min_length=1)  # type: ignore[assignment]
    #: methodology -> (its block, its validated config): :func:`methodology_config` validates a
    #: block once (a copy with another block validates that one)
    _methodology_configs: dict[str, tuple[Any, Any]] = PrivateAttr(default_factory=dict)
    #: (methodology, model) -> the config the model's run answers with (:func:`run_config`)
    _run_configs: dict[tuple[str, str], Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _simulators_know_their_keys(self) -> StudyParams:
        """Each simulator's key in the study: its calls' seeds derive from it."""
        for name, config in self.models.items():
            if config.backend == "simulated":
                own = config.model_copy()  # its own: one config object may be given twice
                own._study_key = name  # type: ignore[union-attr]
                self.models[name] = own
        return self

    def model(self, name: str) -> ModelConfig:
        if name not in self.models:
            raise ConfigError(f"no model {name!r} in params; known: {', '.join(self.models)}")
        return self.models[name]


def load_params(path: str | Path = PARAMS_FILE) -> StudyParams:
    """Read and validate the study parameters; raise :class:`ConfigError` naming each bad key.
    Every methodology, curation and instrument block is validated now, so a typo fails before
    any work starts; ``digests`` must follow the blocks (:func:`genfair.frame.check_digests`)."""
    from genfair.methodologies.reads import fields_of

    raw = read_params(path)
    params = params_from(raw, str(path))
    check_digests(raw, path, fields_of)
    return params


def params_from(raw: dict[str, Any], source: str) -> StudyParams:
    """:func:`load_params` of parsed ``raw`` params; errors name ``source``."""
    params = _keys_redacted(validate(StudyParams, raw, source))
    for name in params.methodologies:
        methodology_config(params, name, source=source)
    check_model_methodologies(params, source)
    check_plants(params, source)

    check_named_paths(raw, source)  # any path any block names: no FIFO or device
    for name in params.curation:
        check_input_kinds(name, curation_config(params, name, source=source), source)
    for name in params.instruments:
        instrument_config(params, name, source=source)
    return params


def study_params(frame: StudyFrame) -> StudyParams:
    """``frame`` (:func:`genfair.frame.load_frame`) with its model configs validated, for a
    step that read only the frame and now needs the models."""
    return frame if isinstance(frame, StudyParams) else params_from(frame.model_dump(), PARAMS_FILE)


def _keys_redacted(params: StudyParams) -> StudyParams:
    """Register every configured key variable: its value is redacted from everything
    written, in every process."""
    for model in params.models.values():
        if getattr(model, "api_key_env", None):
            register_key_env(model.api_key_env)
    return params


def methodology_config(params: StudyParams, name: str, source: str = PARAMS_FILE) -> Any:
    """The validated config object of methodology ``name`` (validated once per params object)."""
    from genfair.methodologies import get_methodology

    block, config = params._methodology_configs.get(name, (None, None))
    if config is not None and block == params.methodologies.get(name):
        return config

    try:
        methodology = get_methodology(name)
    except KeyError as exc:
        raise ConfigError(f"{source}: methodologies.{name}: {exc.args[0]}") from None
    try:
        config = TypeAdapter(methodology.Config).validate_python(params.methodologies[name])
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, source, ("methodologies", name))) from None
    except KeyError:
        raise ConfigError(
            f"{source}: methodologies.{name}: not configured; "
            f"known: {', '.join(params.methodologies)}"
        ) from None
    params._methodology_configs[name] = (params.methodologies[name], config)
    return config


def check_model_methodologies(params: StudyParams, source: str = PARAMS_FILE) -> None:
    """Refuse, in one line naming the key and the fix, a ``model_methodologies`` entry
    (:data:`STUDY_FILE`) naming a model the study lacks, a methodology it does not select, or
    one that does not measure the model's modality."""
    from genfair.methodologies import get_methodology

    for model, names in params.model_methodologies.items():
        key = f"{source}: model_methodologies.{model}"
        fix = f"(set in {STUDY_FILE}, then `genfair compose`)"
        if model not in params.models:
            raise ConfigError(
                f"{key}: no model {model!r} in the study (its models: "
                f"{', '.join(params.models)}): name a model the study selects {fix}"
            )
        if not names:
            raise ConfigError(
                f"{key}: an empty list runs nothing: remove the model's line from {STUDY_FILE} "
                f"instead, or name the methodologies it runs {fix}"
            )
        modality = params.models[model].modality
        for name in names:
            if name not in params.methodologies:
                raise ConfigError(
                    f"{key}: {name!r} is not a methodology of the study (its methodologies: "
                    f"{', '.join(params.methodologies)}): select it with a line "
                    f"`- /methodology@methodologies.{name}: {name}`, or remove it from the list "
                    f"{fix}"
                )
            method = get_methodology(name)
            if not method.applies_to(modality):
                raise ConfigError(
                    f"{key}: {model} is a {modality} model and {name} measures "
                    f"{', '.join(method.modalities)} only: remove {name} from the list {fix}"
                )


def planted_block(block: Any, plants: Any) -> Any:
    """A methodology's ``block`` with a simulator's own ``plants`` for it (plant field ->
    value) in place of the methodology's: each field replaced whole (a planted distribution
    is the simulator's alone, not merged with the methodology's). What the simulator's runs
    answer with; ``block`` itself when ``plants`` is empty."""
    if not isinstance(block, dict) or not isinstance(plants, dict) or not plants:
        return block
    return {**block, **plants}


def run_config(params: StudyParams, name: str, model: str) -> Any:
    """The validated config of methodology ``name`` as ``model``'s run answers it: the
    methodology's (:func:`methodology_config`), with the model's own plants for it in place
    of the methodology's (a simulator's ``plants.<name>``, :func:`planted_block`;
    :func:`check_plants` validated them)."""
    plants = getattr(params.model(model), "plants", {}).get(name)
    if not plants:
        return methodology_config(params, name)
    if (name, model) not in params._run_configs:
        from genfair.methodologies import get_methodology

        block = planted_block(params.methodologies[name], plants)
        params._run_configs[name, model] = TypeAdapter(
            get_methodology(name).Config
        ).validate_python(block)
    return params._run_configs[name, model]


def check_plants(params: StudyParams, source: str = PARAMS_FILE) -> None:
    """Refuse, in one line naming ``models.<model>.plants.<methodology>`` and the fix, a
    simulator's own plant for a methodology its runs do not answer (not in the study, not of
    its modality, held out), for a field that is not one of the methodology's plant fields,
    or that does not validate."""
    from genfair.methodologies import get_methodology
    from genfair.methodologies.reads import plant_fields

    for model, config in params.models.items():
        for name, plants in getattr(config, "plants", {}).items():
            key = f"{source}: models.{model}.plants.{name}"
            only = params.model_methodologies.get(model)
            if name not in params.methodologies or (only and name not in only):
                raise ConfigError(
                    f"{key}: {model} runs no {name} in this study (its methodologies: "
                    f"{', '.join(only or params.methodologies)}): plant only for a methodology "
                    "it runs"
                )
            method = get_methodology(name)
            if not method.applies_to(config.modality):
                raise ConfigError(
                    f"{key}: {name} measures {', '.join(method.modalities)} models, and "
                    f"{model} is a {config.modality} one: remove this plant"
                )
            fields = plant_fields(method)
            unknown = sorted(set(plants) - set(fields))
            if unknown:
                raise ConfigError(
                    f"{key}: {', '.join(unknown)} not a plant field of {name} (its plant fields: "
                    f"{', '.join(fields) or 'none'}): a simulator plants only those"
                )
            try:
                run_config(params, name, model)
            except ValidationError as exc:
                raise ConfigError(
                    format_errors(exc, source, ("models", model, "plants", name))
                ) from None
