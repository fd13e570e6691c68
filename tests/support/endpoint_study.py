"""A smoke study whose model under test is an OpenAI-compatible endpoint (the mock), for
tests and benchmarks that run generate against a counting server: the toy quiz on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.conf import ROOT, with_runs


def endpoint_params(
    folder: Path, base_url: str, questions: int, concurrency: int = 4, keep: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Composed smoke params with the model ``endpoint`` (an openai LLM at ``base_url``) on
    ``toy_quiz`` (``questions`` probes), the methodologies in ``keep`` as composed, and
    ``runs`` made again; ``folder`` receives the composed file."""
    from genfair.cli import compose
    from genfair.study_params import load_params

    overrides = [
        "scale=smoke",
        *[f"~model@models.{m}" for m in ("smollm2", "simulated_t2i", "simulated_vlm")],
    ]
    raw = load_params(compose(overrides, folder / "composed.yaml", conf=ROOT / "conf")).model_dump(
        mode="json"
    )
    raw["models"].pop("simulated_llm")
    raw["methodologies"] = {
        "toy_quiz": {"questions": questions},
        **{name: raw["methodologies"][name] for name in keep},
    }
    raw["models"]["endpoint"] = {
        "modality": "llm",
        "backend": "openai",
        "model_id": "mock",
        "base_url": base_url,
        "api_key_env": None,
        "concurrency": concurrency,
        "max_retries": 0,
        "timeout_s": 20,
    }
    return with_runs(raw)
