"""SCRIPTED: a bias proposer with fixed answers per caption (OpenBias's deterministic test
double for stage 1; ``proposer: scripted``).

Not a model. It answers each proposal chat with the JSON given for its caption in
``scripted_proposals`` (``{caption_id: {"bias": [...]}}``), found by the caption in the chat's
last user message (the request's ``meta["caption_id"]``). A caption not listed gets
``{"bias": []}``. Labelled ``scripted`` in its fingerprint, so its answers never share a
cache entry with a real model's, and ``simulated`` everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from genfair.io import read_json
from genfair.models.base import Completion, LLMBackend, OnDone, Request, stable_hash

__all__ = ["ScriptedProposer", "load_scripted"]


def load_scripted(source: str | Mapping[str, Any]) -> dict[str, Any]:
    """The scripted answers from a JSON file or a mapping (``caption_id -> {"bias": [...]}``)."""
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        data = read_json(
            source,
            hint="methodologies.open_bias.scripted_proposals: a JSON file of "
            'caption_id -> {"bias": [...]}',
        )
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(
            'scripted_proposals must map caption_id -> an answer object ({"bias": [...]})'
        )
    return {str(k): v for k, v in data.items()}


class ScriptedProposer(LLMBackend):
    """SCRIPTED bias proposer (see the module docstring)."""

    simulated = True
    deterministic = True

    def __init__(self, answers: Mapping[str, Any]):
        self.answers = dict(answers)

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "scripted",
            "model_id": "open-bias-scripted-proposer",
            "revision": stable_hash(self.answers, 16),
        }

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for request in requests:
            caption_id = str(request.meta.get("caption_id"))
            answer = self.answers.get(caption_id, {"bias": []})
            on_done(request, Completion(status="ok", text=json.dumps(answer), finish_reason="stop"))
