"""The model interface every backend implements, and the records that cross it.

A backend turns :class:`Request` objects into :class:`Completion` objects. It never
decides whether an answer is *valid* for a methodology (that is the instruments' job);
it only reports what the model said, or that the call failed after its own transport
retries. Everything that crosses this boundary is a plain dataclass so that it can be
cached as JSON and stored in parquet.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: What a single call produced. ``refused`` is a refusal reported by the endpoint itself
#: (e.g. ``finish_reason == "content_filter"``); refusals written as text are detected
#: later by instruments. ``error`` is a transport failure left after all retries.
CompletionStatus = Literal["ok", "refused", "error"]


@dataclass(frozen=True)
class Request:
    """One sample of one probe row sent to a model.

    ``messages`` is the full chat input (OpenAI message format). ``sample_index`` and
    ``attempt`` make repeated samples and re-asks distinct cache entries. ``seed`` is the
    per-request seed derived from the study seed. ``meta`` carries probe columns that a
    simulator may read; it is *not* part of the cache key and real backends ignore it.
    """

    messages: tuple[dict[str, str], ...]
    sample_index: int = 0
    attempt: int = 0
    seed: int = 0
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def key_payload(self) -> dict[str, Any]:
        """The request's part of the cache key (everything but ``meta``)."""
        return {
            "messages": list(self.messages),
            "sample_index": self.sample_index,
            "attempt": self.attempt,
            "seed": self.seed,
        }


@dataclass
class Completion:
    """What one call returned."""

    status: CompletionStatus
    text: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    latency_s: float = 0.0
    #: transport-level tries the backend made (1 = first call succeeded)
    tries: int = 1
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        return cls(**data)


OnDone = Callable[[Request, Completion], None]


class LLMBackend(ABC):
    """Text in, text out. Subclasses: hf, embedded, openai, simulated."""

    #: ``True`` when the same request always gives the same text (greedy local decoding),
    #: so re-asking after an invalid answer is pointless.
    deterministic: bool = False
    #: ``True`` for planted-bias simulators: their results are labelled everywhere.
    simulated: bool = False

    @property
    @abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """Identity of the model for cache keys: backend, model id, revision, sampling."""

    @abstractmethod
    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        """Answer every request, calling ``on_done`` as soon as each one is finished.

        Implementations must call ``on_done`` exactly once per request, with an
        ``error`` completion rather than raising when a call fails, so that the caller
        can persist each result the moment it exists.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, GPU memory)."""


def stable_hash(payload: Any, length: int = 64) -> str:
    """SHA-256 of the canonical JSON of ``payload`` (sorted keys, no whitespace)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def derive_seed(*parts: Any) -> int:
    """A deterministic 31-bit seed from any JSON-able parts (study seed, ids, indices)."""
    return int(stable_hash(list(parts), 8), 16) & 0x7FFFFFFF
