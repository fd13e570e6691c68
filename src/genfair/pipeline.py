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

from genfair.config import StudyParams, curation_config, methodology_config
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

    def images(self, model: str, methodology: str) -> Path:
        """A t2i model's images (``<sha256>.png``), indexed by :meth:`responses`."""
        return self.data / "responses" / model / methodology

    def labels(self, model: str, methodology: str) -> Path:
        return self.data / "labels" / model / f"{methodology}.parquet"

    def metrics(self, model: str, methodology: str) -> Path:
        return self.data / "metrics" / model / methodology

    def metrics_summary(self, model: str) -> Path:
        return self.data / "metrics" / f"{model}.json"

    @property
    def scores(self) -> Path:
        return self.data / "scores"

    def curated(self, name: str) -> Path:
        return self.data / "curated" / f"{name}.parquet"

    def topics(self, methodology: str = "news_bias") -> Path:
        return self.data / "topics" / methodology

    def topics_summary(self, methodology: str = "news_bias") -> Path:
        return self.data / "topics" / f"{methodology}.json"


def methodologies_for(params: StudyParams, model: str) -> list[str]:
    """The study's methodologies whose modality the model has (a methodology spanning
    several modalities, like ``iris``, lists them in ``modalities``)."""
    modality = params.model(model).modality
    return [m for m in params.methodologies if modality in _modalities(get_methodology(m))]


def _modalities(methodology: object) -> tuple[str, ...]:
    return tuple(getattr(methodology, "modalities", (methodology.modality,)))  # type: ignore[attr-defined]


def make_probes(params: StudyParams, methodology: str, layout: Layout = Layout()) -> Path:
    config = methodology_config(params, methodology)
    probes = get_methodology(methodology).build_probes(config, params.seed)
    by = next((c for c in ("context", "prompt_type") if c in probes), None)
    counts = probes[by].value_counts().items() if by else ()
    log.info("%d probes (%s)", len(probes), ", ".join(f"{k}: {v}" for k, v in counts))
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
                if hasattr(methodology, "generate"):  # iris: several modalities, several steps
                    responses = _generate_own(params, model, name, methodology, backend, cache, probes, layout)
                elif methodology.modality == "t2i":
                    from genfair.pipeline_images import generate_t2i

                    responses = generate_t2i(backend, cache, methodology.calls(probes), params.seed,
                                             f"{model} · {name}", layout.images(model, name))
                else:  # llm, and vlm (image parts in the messages)
                    responses = run_calls(
                        backend, cache, methodology.calls(probes), methodology.judge,
                        seed=params.seed, label=f"{model} · {name}",
                    )
                _log_status(responses["status"])
                written.append(write_parquet(responses, layout.responses(model, name)))
    finally:
        backend.close()
    return written


def _generate_own(params: StudyParams, model: str, name: str, methodology: object, backend: object,
                  cache: ResponseCache, probes: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    """A methodology's own ``generate`` (``iris``: BIS-Gen prompts come from the model's
    IFS-Gen images, labelled with the demographic instrument inside this stage)."""
    from genfair.pipeline_images import face_instrument

    config = params.model(model)
    instrument_name = getattr(methodology, "instrument", None)
    return methodology.generate(  # type: ignore[attr-defined]
        backend, cache, probes, methodology_config(params, name), modality=config.modality,
        seed=params.seed, image_dir=layout.images(model, name), label=f"{model} · {name}",
        instrument=(lambda: face_instrument(params, model, instrument_name)) if instrument_name else None,
    )


def label(params: StudyParams, model: str, layout: Layout = Layout()) -> list[Path]:
    written = []
    for name in methodologies_for(params, model):
        probes = read_parquet(layout.probes(name))
        responses = read_parquet(layout.responses(model, name))
        methodology = get_methodology(name)
        extra = {}
        # image methodologies: the demographic instrument (a text-only model draws no images)
        if getattr(methodology, "instrument", None) and params.model(model).modality == "t2i":
            from genfair.pipeline_images import face_instrument

            extra = {"instrument": face_instrument(params, model, methodology.instrument),
                     "image_dir": layout.images(model, name)}
        elif name == "iris" and params.model(model).modality == "vlm":
            # IFS-Und's answer mapper keeps its embeddings beside the response cache
            extra = {"cache_dir": cache_dir(params.cache.dir)}
        labels = methodology.label(probes, responses, methodology_config(params, name), **extra)
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
        log.info("scores:\n%s", brief(result.scores))
    return write_json(summary, layout.metrics_summary(model))


def collect_news_corpus(params: StudyParams, layout: Layout = Layout()) -> list[Path]:
    """``collect_news``: the news corpus of paper 001 and a report of what was skipped.

    Web sources keep their resumable fetch state beside the response cache, so a rerun
    (or an interrupted run) never fetches an article twice.
    """
    from genfair.curation.news import collect_news

    config = curation_config(params, "news")
    corpus = collect_news(config, cache_dir(params.cache.dir) / "news")
    report = corpus.attrs.pop("report", {})
    out = layout.curated("news")
    return [write_parquet(corpus, out), write_json(report, out.with_name("news_report.json"))]


def occupations_table(params: StudyParams, layout: Layout = Layout()) -> list[Path]:
    """``map_occupations``: IRIS's occupation table (WordNet aliases, U.S./E.U. statistics),
    ``data/curated/occupations/``, read by every IRIS sector."""
    from genfair.curation.occupations import write_occupations

    written = write_occupations(curation_config(params, "occupations"), layout.data / "curated" / "occupations")
    return list(written.values())


def news_topics(params: StudyParams, layout: Layout = Layout()) -> Path:
    """``news_topics``: paper 001's document level over the originals and every model that
    ran ``news_bias`` (one LDA for the study). Without ``news_bias`` in the study it writes
    an empty summary."""
    from genfair.methodologies.news_bias.topics_study import (
        document_level_study,
        generated_articles,
        originals_of,
    )

    folder = layout.topics("news_bias")
    name = "news_bias"
    models = [m for m in params.models if name in methodologies_for(params, m)]
    if name not in params.methodologies or not models:
        log.info("news_bias is not in the study: nothing to do")
        folder.mkdir(parents=True, exist_ok=True)
        return write_json({}, layout.topics_summary(name))
    config = methodology_config(params, name)
    originals = originals_of(read_parquet(layout.probes(name)))
    generated = {m: generated_articles(read_parquet(layout.labels(m, name))) for m in models}
    result = document_level_study(originals, generated, config, params.seed)
    for table, frame in result.tables.items():
        write_parquet(frame, folder / f"{table}.parquet")
    log.info("document level:\n%s", brief(result.tables["scores"]))
    return write_json(result.summary, layout.topics_summary(name))


def _log_status(status: pd.Series) -> None:
    log.info("status: %s", ", ".join(f"{k} {v}" for k, v in status.value_counts().items()))


def brief(scores: pd.DataFrame) -> str:
    """The score columns of a methodology's scores table, rounded, for logs and the CLI."""
    columns = [c for c in ("context", "model", "prompt_type", "level", "attribute", "measure", "s_fact", "s_e",
                           "s_kld", "s_fair", "distance", "mean", "ci_low", "ci_high", "n_valid", "n")
               if c in scores]
    return scores[columns].round(3).to_string(index=False) if len(scores) else "(no scores)"
