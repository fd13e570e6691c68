"""Models under test: three modalities (llm, t2i, vlm), their backends, one response cache.

``build_backend(config)`` turns a validated model config into a backend. Heavy libraries
(torch, transformers, httpx) are imported only by the backend that needs them.
Imported where used: genfair.models.cache (SQLAlchemy, 0.3 s), which a stage that asks no model
never loads.
"""

from __future__ import annotations

from typing import Any

from genfair.models.local import prefer_passive_waiting

prefer_passive_waiting()  # before any backend imports torch (see genfair.models.local)

from genfair.models.base import Completion, LLMBackend, Request  # noqa: E402
from genfair.models.config import (  # noqa: E402
    ClipVLMConfig,
    DiffusersT2IConfig,
    EmbeddedModelConfig,
    HFModelConfig,
    HFVLMConfig,
    ModelConfig,
    OpenAIModelConfig,
    OpenAIT2IConfig,
    OpenAIVLMConfig,
    SamplingParams,
    SimulatedModelConfig,
    SimulatedT2IConfig,
    SimulatedVLMConfig,
)

__all__ = [
    "Completion",
    "LLMBackend",
    "ModelConfig",
    "Request",
    "ResponseCache",
    "SamplingParams",
    "build_backend",
    "open_cache",
]


#: model config class -> "module:callable" building its backend (imported on first use, so
#: heavy libraries load only for the backend that needs them)
BACKENDS: dict[type, str] = {
    SimulatedModelConfig: "genfair.models.simulated:SimulatedLLM",
    EmbeddedModelConfig: "genfair.models.embedded:load_embedded",
    HFModelConfig: "genfair.models.hf:HFChatBackend.from_config",
    OpenAIModelConfig: "genfair.models.openai:OpenAIChatBackend",
    SimulatedT2IConfig: "genfair.models.simulated_images:SimulatedT2I",
    DiffusersT2IConfig: "genfair.models.diffusers_backend:DiffusersT2I.from_config",
    OpenAIT2IConfig: "genfair.models.openai_images:OpenAIImageBackend",
    SimulatedVLMConfig: "genfair.models.vlm:SimulatedVLM",
    HFVLMConfig: "genfair.models.vlm:HFVisionBackend.from_config",
    OpenAIVLMConfig: "genfair.models.vlm:OpenAIVisionBackend",
    ClipVLMConfig: "genfair.models.clip:ClipZeroShotBackend.from_config",
}


def __getattr__(name: str) -> object:
    """``ResponseCache``, imported at first use: the cache needs SQLAlchemy (0.3 s), which a
    stage that asks no model never loads (tests/study/test_stage_startup.py)."""
    if name == "ResponseCache":
        from genfair.models.cache import ResponseCache

        return ResponseCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_cache(config: Any) -> Any:
    """The response cache ``config`` (a resolved ``CacheConfig``) names, SQLAlchemy imported
    only now: ``partial(open_cache, config)`` is a picklable opener
    (:func:`genfair.study.context.cache_opener`)."""
    from genfair.models.cache import ResponseCache

    return ResponseCache.configured(config)


def build_backend(config: ModelConfig) -> LLMBackend:
    """The backend for a model config (by its exact config class: see :data:`BACKENDS`)."""
    from importlib import import_module

    target = BACKENDS.get(type(config))
    if target is None:
        raise TypeError(f"unknown model config {type(config).__name__}")
    module, _, attribute = target.partition(":")
    factory: object = import_module(module)
    for part in attribute.split("."):
        factory = getattr(factory, part)
    backend: LLMBackend = factory(config)  # type: ignore[operator]
    backend.model_config = config
    return backend
