"""Sentence toxicity (paper 001, Methods, "Evaluating Sentence Level Bias").

The paper used Detoxify (https://github.com/unitaryai/detoxify), "toxicity score of a
sentence ranges from 0 to 1". Detoxify needs ``torch``/``transformers`` and a checkpoint
downloaded from the network on first use, which genfair cannot do offline. So:

* :class:`Detoxify` wraps ``detoxify.Detoxify`` only when the package is importable
  *and* its checkpoint is already on disk (``checkpoint=`` path, or the torch-hub cache
  file for ``model_type``); otherwise it raises :class:`ToxicityUnavailable` with the
  reason. It never downloads.
* :class:`AltProfanityCheck` is the offline fallback: ``profanity_check.predict_prob``
  (alt-profanity-check, a linear SVM on bag-of-words, calibrated probabilities in
  [0, 1]). It measures *profanity*, narrower than Detoxify's toxicity, so its T scores
  are not comparable with the paper's numbers; results must record which instrument
  ran.
* :func:`build_toxicity` picks by name (``"detoxify"``, ``"alt-profanity-check"`` or
  ``"auto"`` = Detoxify if available else alt-profanity-check); the returned scorer's
  ``.name`` records the one that ran (and ``.fallback_reason`` why Detoxify did not).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "AltProfanityCheck",
    "Detoxify",
    "ToxicityScorer",
    "ToxicityUnavailable",
    "build_toxicity",
]

#: Checkpoint file names Detoxify downloads into the torch-hub cache, by model type.
_DETOXIFY_CHECKPOINTS = {
    "original": "toxic_original-c1212f89.ckpt",
    "unbiased": "toxic_debiased-c7548aa0.ckpt",
    "multilingual": "multilingual_debiased-0b549669.ckpt",
}


class ToxicityUnavailable(RuntimeError):
    """The requested toxicity instrument cannot run on this machine."""


@runtime_checkable
class ToxicityScorer(Protocol):
    """Scores sentences: ``score(sentences) -> (n,) float array in [0, 1]``."""

    name: str

    def score(self, sentences: Sequence[str]) -> np.ndarray: ...


class AltProfanityCheck:
    """Offline profanity probability (alt-profanity-check ``predict_prob``), batched. Not
    cached: a sentence costs about 0.01 CPU-ms, about a lookup in the readings cache
    (docs/architecture.md, "Readings")."""

    name = "alt-profanity-check"

    def __init__(self, batch_size: int = 4096) -> None:
        from profanity_check import predict_prob

        self._predict = predict_prob
        self.batch_size = batch_size
        self.fallback_reason: str | None = None

    def score(self, sentences: Sequence[str]) -> np.ndarray:
        sentences = list(sentences)
        if not sentences:
            return np.zeros(0, dtype=float)
        parts = [
            np.asarray(self._predict(sentences[i : i + self.batch_size]), dtype=float)
            for i in range(0, len(sentences), self.batch_size)
        ]
        return np.clip(np.concatenate(parts), 0.0, 1.0)


def _torch_hub_checkpoints() -> Path:
    torch_home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch"
    )
    return Path(torch_home) / "hub" / "checkpoints"


class Detoxify:
    """Detoxify ``toxicity`` head, only from a checkpoint already on disk. Its scores are
    cached readings (``reading_name``; :func:`genfair.instruments.readings.scored_once`): a
    BERT network costs milliseconds a sentence, hundreds of lookups."""

    name = "detoxify"
    reading_name = "toxicity_detoxify"

    def __init__(
        self,
        model_type: str = "original",
        checkpoint: str | Path | None = None,
        device: str = "cpu",
        batch_size: int = 64,
    ) -> None:
        if importlib.util.find_spec("detoxify") is None:
            raise ToxicityUnavailable(
                "Detoxify is not installed (package 'detoxify'); install it together with "
                "its checkpoint, or use 'alt-profanity-check'"
            )
        if checkpoint is None:
            fname = _DETOXIFY_CHECKPOINTS.get(model_type)
            if fname is None:
                raise ToxicityUnavailable(f"unknown Detoxify model_type {model_type!r}")
            checkpoint = _torch_hub_checkpoints() / fname
        checkpoint = Path(checkpoint)
        if not checkpoint.is_file():
            raise ToxicityUnavailable(
                f"Detoxify checkpoint not found at {checkpoint}; genfair never downloads "
                "it (offline). Place the file there or pass checkpoint=..."
            )
        from detoxify import Detoxify as _Detoxify  # pragma: no cover - not installed here

        self._model = _Detoxify(model_type, checkpoint=str(checkpoint), device=device)
        self.batch_size = batch_size
        self.fallback_reason = None
        self.config = {"model_type": model_type, "device": device}
        self.checkpoint = checkpoint

    def reading_identity(self) -> dict[str, list[str]]:  # pragma: no cover
        """What computes a score besides the config: this module, the packages that run
        the network, and its checkpoint file."""
        return {
            "modules": [__name__],
            "packages": ["detoxify", "torch", "transformers"],
            "files": [str(self.checkpoint)],
        }

    def score(self, sentences: Sequence[str]) -> np.ndarray:  # pragma: no cover
        sentences = list(sentences)
        out = []
        for i in range(0, len(sentences), self.batch_size):
            res = self._model.predict(sentences[i : i + self.batch_size])
            out.append(np.asarray(res["toxicity"], dtype=float))
        return np.concatenate(out) if out else np.zeros(0, dtype=float)


def build_toxicity(name: str = "auto", **kwargs) -> ToxicityScorer:
    """``"detoxify"`` (raises if unavailable), ``"alt-profanity-check"``, or ``"auto"``.

    With ``"auto"`` the returned scorer's ``.name`` says which ran and
    ``.fallback_reason`` holds Detoxify's error when it fell back.
    """
    key = name.strip().lower().replace("_", "-")
    if key == "detoxify":
        return Detoxify(**kwargs)
    if key in ("alt-profanity-check", "profanity-check"):
        return AltProfanityCheck(**kwargs)
    if key == "auto":
        try:
            return Detoxify(**kwargs)
        except ToxicityUnavailable as exc:
            scorer = AltProfanityCheck()
            scorer.fallback_reason = str(exc)
            return scorer
    raise ValueError(
        f"unknown toxicity instrument {name!r}; expected 'detoxify', "
        "'alt-profanity-check' or 'auto'"
    )
