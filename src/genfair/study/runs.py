"""The study's runs: every (model, methodology) pair it measures.

A model runs a methodology when the methodology measures the model's modality and the study
does not hold the model to some methodologies only (``model_methodologies`` in
``conf/study.yaml``: model -> the methodologies it runs; :func:`chosen`). The pairs are
written into ``params.yaml`` as ``runs`` (``<model>-<methodology>`` -> the two names, and
``reads``) when ``conf/`` is composed, by the OmegaConf resolver ``genfair_runs`` (registered
through ``hydra_plugins.genfair``, which Hydra imports before ``dvc exp run`` and
``genfair compose`` compose): ``dvc.yaml``'s generate/label/metrics stages fan out over them,
so a pair a methodology cannot measure has no stage at all (``dvc status`` parses
``params.yaml`` once per stage: fewer stages keep a no-op ``dvc repro`` fast).

``reads`` holds a content hash of each other model of the study that the run's steps read
(:meth:`~genfair.methodologies.base.Methodology.models_read`, e.g. a proposer LLM or a
VQA judge): ``generate`` depends on its ``runs`` entry, so it reruns when one of those
models changes, and not when an unrelated model is added.

Composing also writes ``digests`` (a content hash of each model config, each methodology
config and the instruments: the stages' params dependencies, :func:`genfair.frame.digests_for`),
``methodology_code`` (methodology -> the folder of its code, in the
tree or installed: :func:`~genfair.methodologies.registry.code_path`), which each run's
``code`` repeats, ``study_steps`` (the same, for the methodologies some model runs: a
study step reads its runs' outputs), and ``plots`` (each ``dvc plots`` figure the study's
methodologies declare): a methodology's stages depend on its own code and no other's, and
``dvc.yaml`` names no methodology. ``sizes`` names the sizes each methodology ran at
(:func:`sizes_for`): the study's scale, unless its sizes were picked apart from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from genfair.frame import digests_for, methodology_digests
from genfair.methodologies import get_methodology, names
from genfair.methodologies.reads import fields_of, plant_fields
from genfair.methodologies.registry import code_path
from genfair.models.base import stable_hash
from genfair.models.config import PLACEMENT_KEYS, ModelConfig, modality_of
from genfair.names import name_problem
from genfair.study_params import ConfigError, StudyParams, planted_block
from genfair.yaml_guard import read_yaml

__all__ = [
    "check_runs",
    "chosen",
    "code_for",
    "compose_code",
    "compose_digests",
    "compose_plots",
    "compose_runs",
    "compose_sizes",
    "compose_study_steps",
    "measures",
    "model_hash",
    "plots_for",
    "run_key",
    "runs_for",
    "sizes_for",
    "study_steps_for",
]

#: where each methodology's sizes per scale are (``conf/sizes/<methodology>/<scale>.yaml``),
#: from the repository root, where DVC and ``genfair compose`` compose
SIZES = Path("conf/sizes")
#: the sizes of a methodology whose block holds none of its sizes files' values
CUSTOM = "custom"


def measures(methodology: str, modality: str) -> bool:
    """Whether a model of ``modality`` runs ``methodology`` (a registered one that measures
    the modality): the one rule behind ``runs`` and every step's choice of models."""
    return methodology in names() and get_methodology(methodology).applies_to(modality)


def chosen(model: str, methodology: str, only: Mapping[str, Any] | None) -> bool:
    """Whether the study lets ``model`` run ``methodology``: ``only`` (the study's
    ``model_methodologies``) names the methodologies of the models it holds to some."""
    return not only or model not in only or methodology in (only[model] or ())


def run_key(model: str, methodology: str) -> str:
    """The name of a run: ``generate@<run_key>`` is its stage."""
    return f"{model}-{methodology}"


def model_hash(config: Any) -> str | None:
    """A content hash of a model config (validated, so spelling out a default changes
    nothing); None when it does not validate (``load_params`` names the key)."""
    try:
        valid = (
            config
            if isinstance(config, BaseModel)
            else TypeAdapter(ModelConfig).validate_python(config)
        )
    except ValidationError:
        return None
    return stable_hash(valid.model_dump(mode="json", exclude=set(PLACEMENT_KEYS)), 16)


def runs_for(
    models: Mapping[str, Any],
    methodologies: Mapping[str, Any],
    only: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every pair, in study order (model, then methodology), of a model (name -> config) and
    a methodology (name -> config) that measures its modality and that ``only`` (the
    study's ``model_methodologies``) lets it run, with the hashes of the other models its
    steps read."""
    reads = {
        name: _reads(name, config, models)
        for name, config in methodologies.items()
        if name in names()
    }
    code = code_for(methodologies)
    return {
        run_key(model, name): {
            "model": model,
            "methodology": name,
            "reads": dict(reads[name]),  # its own: a YAML dump of shared dicts has aliases
            "code": code[name],
            # a simulator's generate reads the methodology's planted rates; a real model's not
            # (its own plants for the methodology in their place: :func:`planted_block`)
            **(
                {
                    "plants": _plants(
                        name, planted_block(methodologies[name], _own(model_config, name))
                    )
                }
                if _simulated(model_config)
                else {}
            ),
        }
        for model, model_config in models.items()
        for name in methodologies
        if measures(name, str(modality_of(model_config))) and chosen(model, name, only)
    }


def _simulated(config: Any) -> bool:
    backend = (
        config.get("backend") if isinstance(config, Mapping) else getattr(config, "backend", None)
    )
    return backend == "simulated"


def _own(config: Any, methodology: str) -> Any:
    """A simulator's own plants for ``methodology`` (its config's ``plants``), if any."""
    plants = (
        config.get("plants") if isinstance(config, Mapping) else getattr(config, "plants", None)
    )
    return plants.get(methodology) if isinstance(plants, Mapping) else None


def _plants(methodology: str, block: Any) -> str:
    """The digest of ``methodology``'s plant fields in ``block`` (``digests...plants``)."""
    return methodology_digests(block, {"plants": plant_fields(get_methodology(methodology))})[
        "plants"
    ]


def _reads(methodology: str, config: Any, models: Mapping[str, Any]) -> dict[str, str]:
    """The hashes of the study's models that ``methodology`` (with ``config``) reads."""
    try:
        valid = TypeAdapter(get_methodology(methodology).Config).validate_python(config)
    except ValidationError:
        return {}  # load_params names the bad key
    hashes = {
        name: model_hash(models[name])
        for name in get_methodology(methodology).models_read(valid)
        if name in models
    }
    return {name: digest for name, digest in hashes.items() if digest is not None}


def code_for(methodologies: Mapping[str, Any]) -> dict[str, str | None]:
    """methodology -> the path of its code (``src/genfair/methodologies/<name>``, or an
    installed package's folder), for the dependencies of its stages."""
    return {name: code_path(name) for name in methodologies if name in names()}


def plots_for(methodologies: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``<methodology>-<plot>`` -> the plot's declaration
    (:class:`~genfair.methodologies.base.Plot`) with its methodology and code: ``dvc.yaml``'s
    ``plot`` stages fan out over it."""
    code = code_for(methodologies)
    return {
        f"{name}-{plot.name}": {"methodology": name, "code": code[name], **vars(plot)}
        for name in methodologies
        if name in names()
        for plot in get_methodology(name).presentation.plots
    }


def study_steps_for(
    models: Mapping[str, Any],
    methodologies: Mapping[str, Any],
    only: Mapping[str, Any] | None = None,
) -> dict[str, str | None]:
    """methodology -> the path of its code, for each methodology some model of the study runs:
    ``dvc.yaml``'s study stages fan out over it. A study step depends on its methodology's
    labels and metrics folders, which only its runs write (a methodology no model runs has
    no study step to take: nothing to read)."""
    ran = {run["methodology"] for run in runs_for(models, methodologies, only).values()}
    return {name: code for name, code in code_for(methodologies).items() if name in ran}


def compose_code(methodologies: Any) -> dict[str, str | None]:
    """The ``genfair_code`` resolver: ``methodology_code`` from the composed ``methodologies``."""
    return code_for(_plain(methodologies))


def compose_plots(methodologies: Any) -> dict[str, dict[str, Any]]:
    """The ``genfair_plots`` resolver: ``plots`` from the composed ``methodologies``."""
    return plots_for(_plain(methodologies))


def compose_study_steps(models: Any, methodologies: Any, only: Any = None) -> dict[str, str | None]:
    """The ``genfair_study_steps`` resolver: ``study_steps`` (:func:`study_steps_for`)."""
    return study_steps_for(_plain(models), _plain(methodologies), _plain(only))


def compose_digests(models: Any, methodologies: Any, instruments: Any) -> dict[str, Any]:
    """The ``genfair_digests`` resolver: ``digests`` (:func:`genfair.frame.digests_for`) from
    the composed ``models``, ``methodologies`` and ``instruments``."""
    return digests_for(_plain(models), _plain(methodologies), _plain(instruments), fields_of)


def compose_sizes(methodologies: Any, scale: str) -> dict[str, str | None]:
    """The ``genfair_sizes`` resolver: ``sizes`` (:func:`sizes_for`) of the composed
    ``methodologies`` at the study's ``scale``."""
    return sizes_for(_plain(methodologies), scale)


def sizes_for(
    methodologies: Mapping[str, Any], scale: str, folder: Path = SIZES
) -> dict[str, str | None]:
    """Methodology -> the sizes it runs at: the name of the sizes file
    (``<folder>/<methodology>/<name>.yaml``) whose every value its block holds, the study's
    ``scale`` first; :data:`CUSTOM` when it holds none (a size set by override); ``None`` for a
    methodology without sizes files. A methodology may run at other sizes than the study's scale
    (``conf/study.yaml``), so the report and MLflow record each one's."""
    out: dict[str, str | None] = {}
    for name, block in methodologies.items():
        files = sorted((folder / str(name)).glob("*.yaml"), key=lambda f: (f.stem != scale, f.stem))
        if not files:
            out[name] = None
            continue
        held = (f.stem for f in files if _holds(block, read_yaml(f) or {}))
        out[name] = next(held, CUSTOM)
    return out


def _holds(block: Any, sizes: Any) -> bool:
    """Whether ``block`` has every value of ``sizes`` (nested mappings compared key by key)."""
    if isinstance(sizes, Mapping):
        return isinstance(block, Mapping) and all(
            key in block and _holds(block[key], value) for key, value in sizes.items()
        )
    return block == sizes


def compose_runs(
    models: Mapping[str, Any], methodologies: Mapping[str, Any], only: Any = None
) -> dict[str, dict[str, Any]]:
    """The ``genfair_runs`` resolver: ``runs`` from the composed ``models`` and
    ``methodologies`` sections and the study's ``model_methodologies`` (``only``; ``None``
    when the study file has none). Nothing fails here (a config that does not validate reads no
    models): ``load_params`` names the bad key. A key that is not a name
    (:mod:`genfair.names`) gets no run, so it never reaches a stage's shell command
    (``dvc.yaml``'s ``cmd``), even from a composition that skips genfair's validation."""
    models, methodologies, only = _plain(models), _plain(methodologies), _plain(only)
    return runs_for(
        {k: v for k, v in models.items() if name_problem(k) is None},
        {k: v for k, v in methodologies.items() if name_problem(k) is None},
        only if isinstance(only, Mapping) else None,
    )


def check_runs(params: StudyParams) -> None:
    """Fail when ``params.yaml``'s ``runs`` is not the pairs its models and methodologies give
    (``params.yaml`` edited by hand: the stages would miss or invent runs)."""
    for key, written, expected_value in (
        ("methodology_code", params.methodology_code, code_for(params.methodologies)),
        (
            "study_steps",
            params.study_steps,
            study_steps_for(params.models, params.methodologies, params.model_methodologies),
        ),
        ("plots", params.plots, plots_for(params.methodologies)),
    ):
        if written is not None and written != expected_value:
            raise ConfigError(
                f"params.yaml: {key} does not follow the study's methodologies (their code moved, "
                "or their plots changed): recompose it with `genfair compose` (or `make compose`)"
            )
    if params.runs is None:
        return
    expected = runs_for(params.models, params.methodologies, params.model_methodologies)
    if params.runs != expected:
        missing = sorted(set(expected) - set(params.runs))
        extra = sorted(set(params.runs) - set(expected))
        stale = sorted(k for k in set(expected) & set(params.runs) if expected[k] != params.runs[k])
        raise ConfigError(
            "params.yaml: runs does not follow models x methodologies (and "
            "model_methodologies; missing: "
            f"{', '.join(missing) or '-'}; not measured: {', '.join(extra) or '-'}; "
            f"models read changed: {', '.join(stale) or '-'}): params.yaml was edited by "
            "hand; edit conf/ and recompose it with `genfair compose` (or `make compose`)"
        )


def _plain(node: Any) -> Any:
    """An OmegaConf node as plain Python (the resolver receives nodes)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    return (
        OmegaConf.to_container(node, resolve=True)
        if isinstance(node, DictConfig | ListConfig)
        else node
    )
