"""Step contexts for calling a methodology's steps directly in tests (the study layer
builds them from params in a real run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from genfair.errors import NotConfigured
from genfair.methodologies import get_methodology
from genfair.methodologies.base import MetricsResult, ModelInfo, StepContext
from genfair.models import ResponseCache


def step_context(
    modality: str = "llm",
    seed: int = 0,
    *,
    tmp: Path | None = None,
    instrument: Any = None,
    backend: Any = None,
    cache: Any = None,
    image_dir: Path | None = None,
    cache_dir: Path | None = None,
    simulated: bool = True,
) -> StepContext:
    """A context for one test model; ``instrument``: the face instrument (returned for
    ``face_demographics``; other instruments are not configured), or a dict name -> object."""
    tmp = tmp or Path(".")
    extra = {"instrument": _instruments(instrument)} if instrument is not None else {}
    return StepContext(
        model=ModelInfo(
            name="test",
            modality=modality,
            backend="simulated" if simulated else "hf",
            simulated=simulated,
        ),
        seed=seed,
        cache_dir=cache_dir or tmp / "cache",
        image_dir=image_dir or tmp / "images",
        desc="test",
        backend=backend,
        cache=cache,
        **extra,
    )


def _instruments(given: Any) -> Any:
    table = given if isinstance(given, dict) else {"face_demographics": given}

    def build(name: str) -> Any:
        if name not in table:
            raise NotConfigured(f"instruments.{name}: not configured in this test")
        return table[name]

    return build


def run_steps(
    name: str,
    config: Any,
    modality: str,
    seed: int,
    tmp: Path,
    backend: Any,
    instrument: Any = None,
) -> tuple[Any, Any, Any, MetricsResult]:
    """Methodology ``name`` on one model as the stages run it: ``(probes, responses, labels,
    metrics)``, generated through a response cache under ``tmp/cache``."""
    method = get_methodology(name)
    probes = method.build_probes(config, seed)
    with ResponseCache(tmp / "cache" / "responses.sqlite") as cache:
        ctx = step_context(
            modality, seed, tmp=tmp, instrument=instrument, backend=backend, cache=cache
        )
        responses = method.generate(probes, config, ctx)
    labels = method.label(probes, responses, config, ctx)
    return probes, responses, labels, method.metrics(labels, config, ctx)
