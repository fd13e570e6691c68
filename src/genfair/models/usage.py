"""Token and image usage of a block of calls, answered from the cache and sent counted apart.

The runner reports every answer it uses to the active ledger (:func:`recording`; none: not
counted). Each answer counts, in order of preference:

- prompt and completion tokens from the endpoint's ``usage`` (OpenAI-compatible backends
  store it with the answer);
- else the model's own tokenizer (local models: the prompt as the backend builds it, chat
  template included, and the answer's text re-encoded);
- else :func:`~genfair.models.base.estimated_tokens` of the prompt's and answer's text (one
  token per 4 characters), e.g. a simulator's made-up text; the rule is recorded.

An image drawn by a text-to-image model counts as one image. Failed calls count nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from genfair.models.base import (
    ESTIMATE_RULE,
    Completion,
    LLMBackend,
    Request,
    estimated_tokens,
    message_text,
)

#: how a count was made, as outputs state it
USAGE_RULE = "the endpoint's usage"
TOKENIZER_RULE = "the model's tokenizer"

Source = Literal["cached", "sent"]


@dataclass
class Counts:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    images: int = 0

    def add(self, other: Counts) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class Usage:
    """What a block of calls used: answers read from the cache and answers sent, apart."""

    cached: Counts = field(default_factory=Counts)
    sent: Counts = field(default_factory=Counts)
    rules: set[str] = field(default_factory=set)

    def total(self) -> Counts:
        both = Counts()
        both.add(self.cached)
        both.add(self.sent)
        return both

    def to_dict(self) -> dict[str, Any]:
        return {
            "cached": asdict(self.cached),
            "sent": asdict(self.sent),
            "rules": sorted(self.rules),
        }


_ledger: ContextVar[Usage | None] = ContextVar("genfair_usage", default=None)


@contextmanager
def recording() -> Iterator[Usage]:
    """Count every answer the runner uses in this block."""
    usage = Usage()
    token = _ledger.set(usage)
    try:
        yield usage
    finally:
        _ledger.reset(token)


def prompt_tokens(
    backend: LLMBackend, request: Request, completion: Completion | None = None
) -> tuple[int, str]:
    """``request``'s prompt tokens and the rule that counted them (the answer's ``usage``
    when it has one)."""
    if completion is not None and "prompt_tokens" in completion.usage:
        return completion.usage["prompt_tokens"], USAGE_RULE
    counted = backend.prompt_tokens(request)
    if counted is not None:
        return counted, TOKENIZER_RULE
    return estimated_tokens(message_text(request.messages)), ESTIMATE_RULE


def completion_tokens(backend: LLMBackend, completion: Completion) -> tuple[int, str]:
    """The answer's tokens and the rule that counted them."""
    if "completion_tokens" in completion.usage:
        return completion.usage["completion_tokens"], USAGE_RULE
    text = completion.text or ""
    counted = backend.text_tokens(text) if text else None
    if counted is not None:
        return counted, TOKENIZER_RULE
    return estimated_tokens(text), ESTIMATE_RULE


def count(backend: LLMBackend, request: Request, completion: Completion) -> tuple[Counts, set[str]]:
    """One answer's counts and the rules they were made by."""
    prompt, prompt_rule = prompt_tokens(backend, request, completion)
    made, made_rule = completion_tokens(backend, completion)
    return Counts(1, prompt, made, int(completion.image is not None)), {prompt_rule, made_rule}


def record(backend: LLMBackend, request: Request, completion: Completion, source: Source) -> None:
    """Add one answer to the active ledger (nothing without one; failed calls count nothing)."""
    usage = _ledger.get()
    if usage is None or completion.status == "error":
        return
    counts, rules = count(backend, request, completion)
    getattr(usage, source).add(counts)
    usage.rules |= rules
