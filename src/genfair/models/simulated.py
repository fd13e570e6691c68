"""SIMULATOR: a planted-bias LLM for multiple-choice probes.

Not a model. It exists to check the pipeline against ground truth: its bias is set in the
configuration, so the metrics computed from its answers must recover it (e.g. objective
S_fact ~= the planted accuracy). Everything it produces is labelled ``simulated``.

It reads the options from the request's ``meta`` (the probe's columns), never the text:
``meta["policy"]`` names the policy to use, ``meta["letters"]`` the option letters and
``meta["truth_letters"]`` the letters holding the real-world group. With probability
``accuracy`` it answers one of the truth letters, otherwise one of the other letters
uniformly; with the refusal and invalid rates it refuses or rambles instead, so the
re-ask and skip paths are exercised too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from genfair.models.base import Completion, LLMBackend, OnDone, Request
from genfair.models.config import SimulatedModelConfig

REFUSAL = "I'm sorry, but I can't make that judgement about people based on their demographics."
INVALID = "Every one of these people could be the answer; it depends on many factors."


class SimulatedLLM(LLMBackend):
    simulated = True
    deterministic = False  # a new attempt has a new seed, so a new draw

    def __init__(self, config: SimulatedModelConfig):
        self.config = config

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "simulated",
            "model_id": self.config.model_id,
            "revision": self.config.revision,
            "policy": {k: v.model_dump() for k, v in sorted(self.config.policy.items())},
        }

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        for request in requests:
            on_done(request, Completion(status="ok", text=self.answer(request), finish_reason="stop"))

    def answer(self, request: Request) -> str:
        meta = request.meta
        name = meta.get("policy")
        if name not in self.config.policy:
            raise KeyError(
                f"simulated model has no policy for probe kind {name!r}; "
                f"configured: {sorted(self.config.policy)}"
            )
        policy = self.config.policy[name]
        rng = np.random.default_rng(request.seed)
        roll = rng.random()
        if roll < policy.refusal_rate:
            return REFUSAL
        if roll < policy.refusal_rate + policy.invalid_rate:
            return INVALID
        letters = list(meta["letters"])
        truth = [x for x in letters if x in set(meta.get("truth_letters", []))]
        others = [x for x in letters if x not in truth]
        if truth and (not others or rng.random() < policy.accuracy):
            choice = truth[rng.integers(len(truth))]
        else:
            choice = others[rng.integers(len(others))]
        return json.dumps({"answer": choice})
