"""Prompt-image and image-image similarity of generated images (``instruments.image_semantics``).

Two optional encoders, each a Hugging Face checkpoint from a local folder or a model id in the
local cache (:func:`~genfair.instruments.pretrained.load_pretrained`; never fetched):

- ``clip`` (a ``CLIPModel`` with its processor): :meth:`ImageSemantics.prompt_similarity`,
  the cosine similarity of an image's projected CLIP image embedding and its prompt's text
  embedding ("CLIP-T", Ruiz et al. 2023, DreamBooth §4.1; Hessel et al. 2021's CLIPScore is
  2.5 * max(cos, 0) of the same cosine).
- ``dino`` (a DINOv2 ``Dinov2Model``): :meth:`ImageSemantics.embed`, the L2-normalised CLS
  (``pooler_output``) embedding; :func:`reference_similarity` is an image's mean cosine to a
  set of reference images ("DINO", DreamBooth §4.1: average pairwise cosine between generated
  and reference images' DINO embeddings).

``mode: oracle`` (SIMULATORS only; :func:`genfair.study.context.instruments` sets it) is a
STAND-IN: it measures nothing and returns the scores a simulator planted in an image's
``true_attributes`` (keys ``prompt_similarity`` and ``reference_similarity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from genfair.instruments.pretrained import load_pretrained, reading_identity
from genfair.models.clip import image_embeddings, text_embeddings
from genfair.strict import Strict

__all__ = [
    "ORACLE_KEYS",
    "ImageSemantics",
    "ImageSemanticsConfig",
    "reference_similarity",
]

#: the ``true_attributes`` keys an oracle-mode instrument reads
ORACLE_KEYS = {"prompt_similarity": "prompt_similarity", "reference": "reference_similarity"}


class ImageSemanticsConfig(Strict):
    """``instruments.image_semantics`` (conf/instrument/image_semantics.yaml)."""

    #: model | oracle (simulators: a stand-in that reads the planted scores)
    mode: Literal["model", "oracle"] = "model"
    #: CLIP checkpoint (folder or cached model id) for prompt-image similarity; None = none
    clip: str | None = None
    #: DINOv2 checkpoint (folder or cached model id) for image-image similarity; None = none
    dino: str | None = None
    device: str = "cpu"
    batch_size: int = Field(16, ge=1, le=1024)


def reference_similarity(embeddings: np.ndarray, references: np.ndarray) -> np.ndarray:
    """Each row's mean cosine similarity to the reference rows (all L2-normalised):
    ``mean_j <x, r_j> = <x, mean_j r_j>``; NaN for every row when there is no reference."""
    if len(references) == 0:
        return np.full(len(embeddings), np.nan)
    return np.asarray(embeddings, dtype=float) @ np.asarray(references, dtype=float).mean(axis=0)


class ImageSemantics:
    """The configured CLIP and DINOv2 encoders, loaded on first use."""

    def __init__(self, config: ImageSemanticsConfig | None = None) -> None:
        self.config = config or ImageSemanticsConfig()
        self._clip: tuple[Any, Any] | None = None
        self._dino: tuple[Any, Any] | None = None

    @property
    def oracle(self) -> bool:
        return self.config.mode == "oracle"

    @property
    def measures(self) -> dict[str, bool]:
        """Which scores this instrument gives (an oracle gives what the simulator planted)."""
        return {
            "prompt_similarity": self.oracle or self.config.clip is not None,
            "reference": self.oracle or self.config.dino is not None,
        }

    @property
    def name(self) -> str:
        if self.oracle:
            return "oracle (SIMULATED stand-in: planted scores)"
        parts = [f"clip={self.config.clip}" if self.config.clip else "",
                 f"dino={self.config.dino}" if self.config.dino else ""]  # fmt: skip
        given = ", ".join(p for p in parts if p)
        return f"image_semantics({given})" if given else "image_semantics (not configured)"

    def reading_identity(self) -> dict[str, list[str]]:
        """What computes a reading besides the config (:mod:`genfair.instruments.readings`)."""
        return reading_identity(__name__, (self.config.clip, self.config.dino))

    def _load(self, which: str) -> tuple[Any, Any]:
        """The ``clip`` (CLIPModel, CLIPProcessor) or ``dino`` (AutoModel, AutoImageProcessor)
        encoder, loaded once."""
        loaded = self._clip if which == "clip" else self._dino
        if loaded is None:
            ref = getattr(self.config, which)
            if ref is None:
                raise ValueError(f"instruments.image_semantics.{which} is not set")
            import transformers

            names = (
                ("CLIPModel", "CLIPProcessor")
                if which == "clip"
                else ("AutoModel", "AutoImageProcessor")
            )
            key = f"instruments.image_semantics.{which}"
            model = load_pretrained(getattr(transformers, names[0]), ref, key)
            loaded = (
                model.to(self.config.device).eval(),
                load_pretrained(getattr(transformers, names[1]), ref, key),
            )
            if which == "clip":
                self._clip = loaded
            else:
                self._dino = loaded
        return loaded

    def _batches(self, n: int) -> range:
        return range(0, n, self.config.batch_size)

    def prompt_similarity(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        """Cosine of each PIL image's CLIP embedding with its prompt's (one prompt per image)."""
        if len(images) != len(prompts):
            raise ValueError(f"{len(images)} images but {len(prompts)} prompts")

        model, processor = self._load("clip")
        out = np.empty(len(images))
        for start in self._batches(len(images)):
            stop = start + self.config.batch_size
            image = image_embeddings(model, processor, images[start:stop])
            text = text_embeddings(model, processor.tokenizer, list(prompts[start:stop]))
            out[start:stop] = (image * text).sum(dim=-1).float().cpu().numpy()
        return out

    def embed(self, images: Sequence[Any]) -> np.ndarray:
        """L2-normalised DINOv2 CLS embeddings, one row per PIL image."""
        import torch

        model, processor = self._load("dino")
        rows = []
        for start in self._batches(len(images)):
            batch = [i.convert("RGB") for i in images[start : start + self.config.batch_size]]
            pixels = processor(images=batch, return_tensors="pt")["pixel_values"]
            with torch.inference_mode():
                pooled = model(pixel_values=pixels.to(model.device)).pooler_output
            rows.append((pooled / pooled.norm(dim=-1, keepdim=True)).float().cpu().numpy())
        return np.concatenate(rows) if rows else np.zeros((0, 0))
