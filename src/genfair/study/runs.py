"""The study's runs: every (model, methodology) pair it measures.

A model runs a methodology when the methodology measures the model's modality. The pairs are
written into ``params.yaml`` as ``runs`` (``<model>-<methodology>`` -> its two names) when
``conf/`` is composed, by the OmegaConf resolver ``genfair_runs`` (registered through
``hydra_plugins.genfair``, which Hydra imports before ``dvc exp run`` and ``genfair compose``
compose): ``dvc.yaml``'s generate/label/metrics stages fan out over them, so a pair a
methodology cannot measure has no stage at all (``dvc status`` parses ``params.yaml`` once
per stage: fewer stages keep a no-op ``dvc repro`` fast).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from genfair.config import ConfigError, StudyParams
from genfair.methodologies import get_methodology, names
from genfair.models.config import modality_of

__all__ = ["check_runs", "compose_runs", "measures", "run_key", "runs_for"]


def measures(methodology: str, modality: str) -> bool:
    """Whether a model of ``modality`` runs ``methodology`` (a registered one that measures
    the modality): the one rule behind ``runs`` and every step's choice of models."""
    return methodology in names() and get_methodology(methodology).applies_to(modality)


def run_key(model: str, methodology: str) -> str:
    """The name of a run: ``generate@<run_key>`` is its stage."""
    return f"{model}-{methodology}"


def runs_for(modalities: Mapping[str, str], methodologies: Iterable[str]) -> dict[str, dict[str, str]]:
    """Every pair, in study order (model, then methodology), of a model (name -> modality)
    and a methodology that measures its modality."""
    return {run_key(model, name): {"model": model, "methodology": name}
            for model, modality in modalities.items() for name in methodologies if measures(name, modality)}


def compose_runs(models: Mapping[str, Any], methodologies: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The ``genfair_runs`` resolver: ``runs`` from the composed ``models`` and
    ``methodologies`` sections. Nothing is validated here: ``load_params`` does, naming the key."""
    models = _plain(models)
    return runs_for({name: str(modality_of(config)) for name, config in models.items()}, _plain(methodologies))


def check_runs(params: StudyParams) -> None:
    """Fail when ``params.yaml``'s ``runs`` is not the pairs its models and methodologies give
    (``params.yaml`` edited by hand: the stages would miss or invent runs)."""
    if params.runs is None:
        return
    expected = runs_for({name: config.modality for name, config in params.models.items()}, params.methodologies)
    if params.runs != expected:
        missing = sorted(set(expected) - set(params.runs))
        extra = sorted(set(params.runs) - set(expected))
        raise ConfigError(
            f"params.yaml: runs does not follow models x methodologies (missing: {', '.join(missing) or '-'}; "
            f"not measured: {', '.join(extra) or '-'}): params.yaml was edited by hand; edit conf/ and "
            "recompose it with `genfair compose` (or `make compose`)")


def _plain(node: Any) -> Any:
    """An OmegaConf node as plain Python (the resolver receives nodes)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig | ListConfig) else node
