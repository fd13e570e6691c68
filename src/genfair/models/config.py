"""Validated model configuration: one pydantic model per backend.

A model under test is configuration, not code: a file under ``conf/model/`` that Hydra
composes into ``params.yaml`` under ``models.<name>``. These classes validate that block
and fail fast with the offending key named.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SamplingParams(_Strict):
    """Decoding settings; part of every cache key. ``temperature = 0`` means greedy."""

    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(64, gt=0)


class _ModelBase(_Strict):
    modality: Literal["llm"] = "llm"
    #: free-text description shown in `genfair models` and the MLflow run
    description: str = ""
    sampling: SamplingParams = SamplingParams()


class HFModelConfig(_ModelBase):
    """Any transformers causal LM: a hub id or a local directory."""

    backend: Literal["hf"]
    model_id: str
    revision: str = "main"
    device: str = "cpu"
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "float32"
    batch_size: int = Field(8, gt=0)
    trust_remote_code: bool = False
    #: prepended as a system message when set
    system_prompt: str | None = None


class EmbeddedModelConfig(_ModelBase):
    """A model shipped inside a PyPI package as a GGUF file (the offline default)."""

    backend: Literal["embedded"]
    model_id: str
    package: str
    gguf_file: str
    #: pinned distribution version; part of the cache key
    revision: str
    device: str = "cpu"
    batch_size: int = Field(16, gt=0)
    system_prompt: str | None = None


class OpenAIModelConfig(_ModelBase):
    """Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, TGI, Ollama...)."""

    backend: Literal["openai"]
    model_id: str
    base_url: str = "https://api.openai.com/v1"
    #: name of the environment variable holding the key; never the key itself
    api_key_env: str | None = "OPENAI_API_KEY"
    revision: str = ""
    concurrency: int = Field(8, gt=0)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(6, ge=0)
    backoff_initial_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    #: sent as the request's ``seed`` field when the endpoint supports it
    send_seed: bool = True
    system_prompt: str | None = None
    #: extra JSON fields merged into every request body (e.g. vLLM's ``top_k``)
    extra_body: dict[str, Any] = {}


class SimulatedPolicy(_Strict):
    """What the planted-bias simulator does with a multiple-choice probe.

    With probability ``accuracy`` it picks the option holding the real-world group of
    the statistic, otherwise one of the other options uniformly. ``refusal_rate`` and
    ``invalid_rate`` exercise the failure paths of the pipeline. ``kind`` defaults to
    ``choice`` so that policies written before the rewrite policy existed stay valid.
    """

    kind: Literal["choice"] = "choice"
    accuracy: float = Field(ge=0.0, le=1.0)
    refusal_rate: float = Field(0.0, ge=0.0, le=1.0)
    invalid_rate: float = Field(0.0, ge=0.0, le=1.0)


class SimulatedRewritePolicy(_Strict):
    """What the planted-bias simulator does with a news probe (paper 001): it returns the
    original article with each female gender word turned into its male counterpart with
    probability ``female_to_male``, independently per occurrence, or refuses with
    probability ``refusal_rate``. The planted word-level bias is therefore known: an
    article with ``f`` female and ``m`` male words has expected female share
    ``f (1 - p) / (f + m)`` after the rewrite.
    """

    kind: Literal["rewrite"]
    female_to_male: float = Field(ge=0.0, le=1.0)
    refusal_rate: float = Field(0.0, ge=0.0, le=1.0)


def _policy_kind(value: Any) -> str:
    """The union tag of a simulator policy: its ``kind``, ``choice`` when absent."""
    if isinstance(value, dict):
        return value.get("kind", "choice")
    return getattr(value, "kind", "choice")


SimulatorPolicy = Annotated[
    Annotated[SimulatedPolicy, Tag("choice")] | Annotated[SimulatedRewritePolicy, Tag("rewrite")],
    Discriminator(_policy_kind),
]


class SimulatedModelConfig(_ModelBase):
    """A planted-bias simulator: labelled ``simulated`` in every output."""

    backend: Literal["simulated"]
    model_id: str = "planted-bias-simulator"
    revision: str = "1"
    #: policy per probe kind (``objective``, ``subjective``: choice; ``news``: rewrite)
    policy: dict[str, SimulatorPolicy]


ModelConfig = Annotated[
    HFModelConfig | EmbeddedModelConfig | OpenAIModelConfig | SimulatedModelConfig,
    Field(discriminator="backend"),
]
