"""The contexts a methodology's steps receive, built from the study's params."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from genfair.frame import cache_dir, cache_url, images_url
from genfair.io import read_parquet
from genfair.methodologies import Methodology, get_methodology
from genfair.methodologies.base import ModelInfo, ModelRun, StepContext, StudyContext
from genfair.methodologies.reads import step_config
from genfair.models import open_cache
from genfair.study.layout import Layout
from genfair.study.runs import chosen, measures
from genfair.study_params import (
    ConfigError,
    StudyParams,
    instrument_class,
    instrument_config,
    methodology_config,
    run_config,
)


def model_info(params: StudyParams, model: str) -> ModelInfo:
    config = params.model(model)
    return ModelInfo(
        name=model,
        modality=config.modality,
        backend=config.backend,
        simulated=config.backend == "simulated",
        architecture=getattr(config, "architecture", None),
    )


def runs_methodology(params: StudyParams, model: str, methodology: str) -> bool:
    """Whether ``model`` runs ``methodology`` in this study (it is in the study, measures the
    model's modality and the study's ``model_methodologies`` lets the model run it)."""
    return (
        methodology in params.methodologies
        and measures(methodology, params.model(model).modality)
        and chosen(model, methodology, params.model_methodologies)
    )


def methodologies_for(params: StudyParams, model: str) -> list[str]:
    """The study's methodologies that ``model`` runs."""
    return [m for m in params.methodologies if runs_methodology(params, model, m)]


def models_for(params: StudyParams, methodology: str) -> list[str]:
    """The study's models that run ``methodology``, in study order."""
    return [m for m in params.models if runs_methodology(params, m, methodology)]


def instrument_for(params: StudyParams, model: str, name: str) -> Any:
    """The config of instrument ``name`` as it measures ``model``'s outputs. An instrument
    with an ``oracle`` mode reads a simulator's planted attributes (``source = "oracle"``)
    and is never in that mode for a real model, nor forced into it for a simulator whose
    pixels are made to be measured (``measured``: the realistic t2i simulator)."""
    config = instrument_config(params, name)
    under_test = params.model(model)
    simulated = under_test.backend == "simulated"
    if hasattr(config, "mode"):
        if simulated and not getattr(under_test, "measured", False):
            config = config.model_copy(update={"mode": "oracle"})
        elif config.mode == "oracle" and not simulated:
            raise ConfigError(
                f"params.yaml: instruments.{name}.mode: oracle reads a simulator's planted "
                f"attributes, but model {model!r} is not a simulator; set mode: model"
            )
    return config


def instruments(params: StudyParams, model: str) -> Callable[[str], Any]:
    """A factory of the configured instruments for ``model``'s outputs
    (:func:`instrument_for`)."""
    built: dict[str, Any] = {}

    def build(name: str) -> Any:
        if name not in built:
            built[name] = instrument_class(name)(instrument_for(params, model, name))
        return built[name]

    return build


def run_models(params: StudyParams, model: str, methodology: str) -> list[str]:
    """The models a run's steps read: the model under test and those of the methodology's
    ``models_read`` that the study has (generate@ depends on them through ``runs``)."""
    method, config = configured(params, methodology)
    return [name for name in (model, *method.models_read(config)) if name in params.models]


def cache_opener(params: StudyParams) -> Callable[[], Any]:
    """Opens the study's response cache and image store: picklable, so a Dask worker opens
    the same ones (their locations resolved here: a worker has its own working directory).
    SQLAlchemy is imported when it is called, not before (a stage that opens no cache
    starts without it)."""
    config = params.cache
    resolved = config.model_copy(
        update={
            "url": cache_url(config),
            "images": images_url(config),
            "dir": str(cache_dir(config.dir).resolve()),
        }
    )
    return partial(open_cache, resolved)


def step_context(
    params: StudyParams, model: str, methodology: str, layout: Layout, **extra: Any
) -> StepContext:
    models = {name: params.models[name] for name in run_models(params, model, methodology)}
    return StepContext(
        model=model_info(params, model),
        seed=params.seed,
        cache_dir=cache_dir(params.cache.dir),
        image_dir=layout.images(model, methodology),
        desc=f"{model} · {methodology}",
        instrument=instruments(params, model),
        models=models,
        **{"open_cache": cache_opener(params), **extra},
    )


def study_context(params: StudyParams, methodology: str, layout: Layout) -> StudyContext:
    def run(model: str) -> ModelRun:
        metrics = layout.metrics(model, methodology)
        return ModelRun(
            model=model_info(params, model),
            labels=lambda: read_parquet(layout.labels(model, methodology)),
            scores=lambda: read_parquet(metrics / "scores.parquet"),
            table=lambda name: read_parquet(metrics / f"{name}.parquet"),
        )

    return StudyContext(
        seed=params.seed,
        cache_dir=cache_dir(params.cache.dir),
        runs=tuple(run(m) for m in models_for(params, methodology)),
        probes=lambda: read_parquet(layout.probes(methodology)),
    )


def configured(
    params: StudyParams, name: str, step: str | None = None, model: str | None = None
) -> tuple[Methodology, Any]:
    """The methodology ``name`` and its validated config; for a ``step``, the config as that
    step may read it (of ``model``'s run, for ``generate``:
    :func:`genfair.methodologies.reads.step_config`)."""
    method, config = get_methodology(name), methodology_config(params, name)
    if step is None:
        return method, config
    simulated = model is not None and params.model(model).backend == "simulated"
    if simulated and step == "generate":  # a simulator answers with its own plants, if any
        config = run_config(params, name, model)
    return method, step_config(method, config, step, simulated)


__all__ = [
    "cache_opener",
    "configured",
    "instruments",
    "methodologies_for",
    "model_info",
    "models_for",
    "run_models",
    "runs_methodology",
    "step_context",
    "study_context",
]
