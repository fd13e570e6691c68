"""No-reference image quality of generated images (``instruments.image_quality``).

The model is a Hugging Face checkpoint from a local folder or a model id in the local cache
(:func:`~genfair.instruments.pretrained.load_pretrained`; never fetched), one of two kinds:

- ``clip_iqa`` (a ``CLIPModel`` with its processor): CLIP-IQA (Wang, Chan & Loy, AAAI 2023,
  "Exploring CLIP for Assessing the Look and Feel of Images", §3): the softmax, over an
  antonym prompt pair (default ``Good photo.`` / ``Bad photo.``), of the model's scaled cosine
  similarities (``logit_scale.exp()``, 100 for the released CLIPs), taking the first prompt's
  probability: a score in [0, 1], higher = better. The paper's CLIP-IQA uses a ResNet-50 CLIP
  without positional embedding; any CLIP checkpoint computes the same formula.
- ``regression`` (``AutoModelForImageClassification`` with one output, ``num_labels: 1``):
  the model's output as the score (higher = better; negate a lower-is-better model's head).

:meth:`ImageQuality.score` scores whole images; :func:`face_crop` cuts a face box (widened by
``face_margin``) so the same model scores the face alone.

``mode: oracle`` (SIMULATORS only) is a STAND-IN: it measures nothing and returns the scores a
simulator planted in an image's ``true_attributes`` (keys ``quality`` and ``face_quality``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from genfair.errors import ConfigError
from genfair.instruments.pretrained import load_pretrained, reading_identity
from genfair.models.clip import image_embeddings, text_embeddings
from genfair.strict import Strict

__all__ = ["ORACLE_KEYS", "ImageQuality", "ImageQualityConfig", "face_crop"]

#: the ``true_attributes`` keys an oracle-mode instrument reads
ORACLE_KEYS = {"image": "quality", "face": "face_quality"}


class ImageQualityConfig(Strict):
    """``instruments.image_quality`` (conf/instrument/image_quality.yaml)."""

    #: model | oracle (simulators: a stand-in that reads the planted scores)
    mode: Literal["model", "oracle"] = "model"
    #: the IQA checkpoint (folder or cached model id); None = no quality scores
    checkpoint: str | None = None
    kind: Literal["clip_iqa", "regression"] = "clip_iqa"
    #: CLIP-IQA's antonym pair (positive first)
    prompts: tuple[str, str] = ("Good photo.", "Bad photo.")
    #: also score the face crop (the demographic instrument's face box)
    face: bool = True
    #: the face box is widened by this fraction of its size on each side
    face_margin: float = Field(0.25, ge=0.0, le=2.0)
    device: str = "cpu"
    batch_size: int = Field(16, ge=1, le=1024)


def face_crop(image: Any, box: tuple[int, int, int, int], margin: float = 0.25) -> Any:
    """The PIL ``image`` cut to ``box`` (left, top, width, height) widened by ``margin``."""
    x, y, w, h = box
    dx, dy = w * margin, h * margin
    left, top = max(0, int(x - dx)), max(0, int(y - dy))
    right, bottom = min(image.width, int(x + w + dx)), min(image.height, int(y + h + dy))
    return image.crop((left, top, max(right, left + 1), max(bottom, top + 1)))


class ImageQuality:
    """The configured IQA model, loaded on first use."""

    def __init__(self, config: ImageQualityConfig | None = None) -> None:
        self.config = config or ImageQualityConfig()
        self._model: tuple[Any, Any] | None = None
        self._text: Any = None

    @property
    def oracle(self) -> bool:
        return self.config.mode == "oracle"

    @property
    def measures(self) -> dict[str, bool]:
        """Which scores this instrument gives (an oracle gives what the simulator planted)."""
        on = self.oracle or self.config.checkpoint is not None
        return {"image": on, "face": on and self.config.face}

    @property
    def name(self) -> str:
        if self.oracle:
            return "oracle (SIMULATED stand-in: planted scores)"
        if self.config.checkpoint is None:
            return "image_quality (not configured)"
        return f"image_quality({self.config.kind}={self.config.checkpoint})"

    def reading_identity(self) -> dict[str, list[str]]:
        """What computes a reading besides the config (:mod:`genfair.instruments.readings`)."""
        return reading_identity(__name__, (self.config.checkpoint,))

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            if self.config.checkpoint is None:
                raise ValueError("instruments.image_quality.checkpoint is not set")
            key = "instruments.image_quality.checkpoint"
            if self.config.kind == "clip_iqa":
                from transformers import CLIPModel, CLIPProcessor

                model = load_pretrained(CLIPModel, self.config.checkpoint, key)
                processor = load_pretrained(CLIPProcessor, self.config.checkpoint, key)
                model = model.to(self.config.device).eval()
                self._text = text_embeddings(model, processor.tokenizer, list(self.config.prompts))
            else:
                from transformers import AutoImageProcessor, AutoModelForImageClassification

                model = load_pretrained(
                    AutoModelForImageClassification, self.config.checkpoint, key
                )
                if model.config.num_labels != 1:
                    raise ConfigError(
                        f"params.yaml: {key}: {self.config.checkpoint} has "
                        f"{model.config.num_labels} outputs; kind: regression needs a one-output "
                        "(num_labels: 1) IQA head"
                    )
                processor = load_pretrained(AutoImageProcessor, self.config.checkpoint, key)
                model = model.to(self.config.device).eval()
            self._model = (model, processor)
        return self._model

    def score(self, images: Sequence[Any]) -> np.ndarray:
        """One quality score per PIL image (higher = better)."""
        import torch

        model, processor = self._load()
        out = np.empty(len(images))
        size = self.config.batch_size
        for start in range(0, len(images), size):
            batch = [i.convert("RGB") for i in images[start : start + size]]
            if self.config.kind == "clip_iqa":
                emb = image_embeddings(model, processor, batch)
                with torch.inference_mode():
                    logits = model.logit_scale.exp() * emb @ self._text.T
                    scores = logits.softmax(dim=-1)[:, 0]
            else:
                pixels = processor(images=batch, return_tensors="pt")["pixel_values"]
                with torch.inference_mode():
                    scores = model(pixel_values=pixels.to(model.device)).logits[:, 0]
            out[start : start + len(batch)] = scores.float().cpu().numpy()
        return out
