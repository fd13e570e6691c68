"""The study's steps as library functions; ``stages/*.py`` call them with DVC's paths.

Each function reads validated params and its inputs, and writes its outputs atomically
under a :class:`Layout` root (the repository for ``dvc repro``; a scratch folder for
``genfair try``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from genfair.config import StudyParams, methodology_config
from genfair.io import read_parquet, write_json, write_parquet
from genfair.methodologies import get_methodology
from genfair.models import ResponseCache, build_backend
from genfair.models.cache import cache_dir
from genfair.models.runner import run_calls

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Layout:
    """Where each stage's outputs live (see DESIGN: data/probes, responses, labels...)."""

    root: Path = Path(".")

    @property
    def data(self) -> Path:
        return self.root / "data"

    def probes(self, methodology: str) -> Path:
        return self.data / "probes" / f"{methodology}.parquet"

    def responses(self, model: str, methodology: str) -> Path:
        return self.data / "responses" / model / f"{methodology}.parquet"

    def labels(self, model: str, methodology: str) -> Path:
        return self.data / "labels" / model / f"{methodology}.parquet"

    def metrics(self, model: str, methodology: str) -> Path:
        return self.data / "metrics" / model / methodology

    def metrics_summary(self, model: str) -> Path:
        return self.data / "metrics" / f"{model}.json"

    @property
    def scores(self) -> Path:
        return self.data / "scores"


def methodologies_for(params: StudyParams, model: str) -> list[str]:
    """The study's methodologies whose modality the model has."""
    modality = params.model(model).modality
    return [m for m in params.methodologies if get_methodology(m).modality == modality]


def make_probes(params: StudyParams, methodology: str, layout: Layout = Layout()) -> Path:
    config = methodology_config(params, methodology)
    probes = get_methodology(methodology).build_probes(config, params.seed)
    log.info("%d probes (%s)", len(probes), ", ".join(f"{k}: {v}" for k, v in probes["context"].value_counts().items()))
    return write_parquet(probes, layout.probes(methodology))


def generate(params: StudyParams, model: str, layout: Layout = Layout(), limit: int | None = None) -> list[Path]:
    """Ask the model every probe of its methodologies, through the response cache."""
    backend = build_backend(params.model(model))
    written = []
    try:
        with ResponseCache(cache_dir(params.cache.dir) / "responses.sqlite") as cache:
            for name in methodologies_for(params, model):
                methodology = get_methodology(name)
                probes = read_parquet(layout.probes(name))
                if limit is not None:
                    probes = probes.head(limit)
                responses = run_calls(
                    backend, cache, methodology.calls(probes), methodology.judge,
                    seed=params.seed, label=f"{model} · {name}",
                )
                _log_status(responses["status"])
                written.append(write_parquet(responses, layout.responses(model, name)))
    finally:
        backend.close()
    return written


def label(params: StudyParams, model: str, layout: Layout = Layout()) -> list[Path]:
    written = []
    for name in methodologies_for(params, model):
        probes = read_parquet(layout.probes(name))
        responses = read_parquet(layout.responses(model, name))
        labels = get_methodology(name).label(probes, responses)
        _log_status(labels["status"])
        written.append(write_parquet(labels, layout.labels(model, name)))
    return written


def compute_metrics(params: StudyParams, model: str, layout: Layout = Layout()) -> Path:
    summary = {}
    for name in methodologies_for(params, model):
        methodology = get_methodology(name)
        labels = read_parquet(layout.labels(model, name))
        result = methodology.metrics(labels, methodology_config(params, name), params.seed)
        folder = layout.metrics(model, name)
        write_parquet(result.scores, folder / "scores.parquet")
        for table, frame in result.tables.items():
            write_parquet(frame, folder / f"{table}.parquet")
        summary[name] = result.summary
        log.info("scores:\n%s", _brief(result.scores))
    return write_json(summary, layout.metrics_summary(model))


def _log_status(status: pd.Series) -> None:
    log.info("status: %s", ", ".join(f"{k} {v}" for k, v in status.value_counts().items()))


def _brief(scores: pd.DataFrame) -> str:
    columns = [c for c in ("context", "attribute", "s_fact", "s_e", "s_kld", "s_fair", "distance", "n_valid") if c in scores]
    return scores[columns].round(3).to_string(index=False) if len(scores) else "(no scores)"
