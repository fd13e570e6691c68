"""Models under test: one interface, four backends, one response cache.

``build_backend(config)`` turns a validated model config into a backend. Heavy libraries
(torch, transformers, httpx) are imported only by the backend that needs them.
"""

from __future__ import annotations

from genfair.models.base import Completion, LLMBackend, Request
from genfair.models.cache import ResponseCache
from genfair.models.config import (
    EmbeddedModelConfig,
    HFModelConfig,
    ModelConfig,
    OpenAIModelConfig,
    SamplingParams,
    SimulatedModelConfig,
)

__all__ = [
    "Completion", "LLMBackend", "ModelConfig", "Request", "ResponseCache", "SamplingParams",
    "build_backend",
]


def build_backend(config: ModelConfig) -> LLMBackend:
    """The backend for a model config (dispatch on ``config.backend``)."""
    if isinstance(config, SimulatedModelConfig):
        from genfair.models.simulated import SimulatedLLM

        return SimulatedLLM(config)
    if isinstance(config, EmbeddedModelConfig):
        from genfair.models.embedded import load_embedded

        return load_embedded(config)
    if isinstance(config, HFModelConfig):
        from genfair.models.hf import HFChatBackend

        return HFChatBackend.from_config(config)
    if isinstance(config, OpenAIModelConfig):
        from genfair.models.openai import OpenAIChatBackend

        return OpenAIChatBackend(config)
    raise TypeError(f"unknown model config {type(config).__name__}")
