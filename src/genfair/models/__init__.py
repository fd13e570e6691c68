"""Models under test: three modalities (llm, t2i, vlm), their backends, one response cache.

``build_backend(config)`` turns a validated model config into a backend. Heavy libraries
(torch, transformers, httpx) are imported only by the backend that needs them.
"""

from __future__ import annotations

from genfair.models.local import prefer_passive_waiting

prefer_passive_waiting()  # before any backend imports torch (see genfair.models.local)

from genfair.models.base import Completion, LLMBackend, Request  # noqa: E402
from genfair.models.cache import ResponseCache  # noqa: E402
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
    "Completion", "LLMBackend", "ModelConfig", "Request", "ResponseCache", "SamplingParams",
    "build_backend",
]


def build_backend(config: ModelConfig) -> LLMBackend:
    """The backend for a model config (dispatch on ``config.modality`` and ``config.backend``)."""
    if config.modality != "llm":
        return _build_media_backend(config)
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


def _build_media_backend(config: ModelConfig) -> LLMBackend:
    """t2i and vlm backends (``T2IBackend``, ``VLMBackend``)."""
    if isinstance(config, SimulatedT2IConfig):
        from genfair.models.simulated_images import SimulatedT2I

        return SimulatedT2I(config)
    if isinstance(config, DiffusersT2IConfig):
        from genfair.models.diffusers_backend import DiffusersT2I

        return DiffusersT2I.from_config(config)
    if isinstance(config, OpenAIT2IConfig):
        from genfair.models.openai_images import OpenAIImageBackend

        return OpenAIImageBackend(config)
    if isinstance(config, SimulatedVLMConfig):
        from genfair.models.vlm import SimulatedVLM

        return SimulatedVLM(config)
    if isinstance(config, HFVLMConfig):
        from genfair.models.vlm import HFVisionBackend

        return HFVisionBackend.from_config(config)
    if isinstance(config, OpenAIVLMConfig):
        from genfair.models.vlm import OpenAIVisionBackend

        return OpenAIVisionBackend(config)
    if isinstance(config, ClipVLMConfig):
        from genfair.models.clip import ClipZeroShotBackend

        return ClipZeroShotBackend.from_config(config)
    raise TypeError(f"unknown model config {type(config).__name__}")
