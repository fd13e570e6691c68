"""CLIP zero-shot classification as a ``vlm`` model kind (``backend: clip``): paper 004's CLIP
baseline row (Wu et al., §3.1, Table 2).

Each request's single image is classified among the configured classes (default: FACET's
52) by the cosine similarity of its CLIP image embedding to the text embeddings of
"a photo of a {class}" (Radford et al. 2021); the answer text is the class with the highest
similarity, as released (``basketball_player``), whatever the prompt says. The paper reports
CLIP for the direct question only, so a methodology sends it direct-question probes only
(``lvlm_facet`` does, when ``ModelInfo.backend == "clip"``).

Weights come from a user-given local folder (a transformers ``CLIPModel`` checkpoint with
its processor, e.g. a downloaded ``openai/clip-vit-base-patch32``, the paper's ViT-B/32);
nothing is fetched. The class text is shown with ``_`` as a space by default ("a photo of
a basketball player"); ``class_display="raw"`` keeps the released names, as the authors'
CLIP text matcher did.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from genfair.curation.config import FACET_CLASSES
from genfair.models.base import Completion, OnDone, Request, VLMBackend, chunks, complete_in_batches
from genfair.models.images import image_parts, read_image_part

if TYPE_CHECKING:
    from genfair.models.config import ClipVLMConfig

__all__ = [
    "CLIP_TEMPLATE",
    "ClipZeroShot",
    "ClipZeroShotBackend",
    "image_embeddings",
    "load_clip",
    "text_embeddings",
]

CLIP_TEMPLATE = "a photo of a {}"


def load_clip(path: str | os.PathLike[str], device: str = "cpu") -> tuple[Any, Any]:
    """``(CLIPModel, CLIPProcessor)`` from a local folder, offline; a clear error if the
    folder is missing or is not a CLIP checkpoint."""
    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"{folder}: no CLIP checkpoint (config.json missing); save one there with "
            "CLIPModel.save_pretrained and CLIPProcessor.save_pretrained"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import CLIPModel, CLIPProcessor

    processor = CLIPProcessor.from_pretrained(folder, local_files_only=True)
    model = CLIPModel.from_pretrained(folder, local_files_only=True).to(device).eval()
    return model, processor


def text_embeddings(model: Any, tokenizer: Any, texts: Sequence[str]) -> Any:
    """Projected, L2-normalised text embeddings (as CLIPModel's forward computes them)."""
    import torch

    inputs = tokenizer(list(texts), padding=True, truncation=True, return_tensors="pt").to(
        model.device
    )
    with torch.inference_mode():
        pooled = model.text_model(
            input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]
        ).pooler_output
        features = model.text_projection(pooled)
    return features / features.norm(dim=-1, keepdim=True)


def image_embeddings(model: Any, image_processor: Any, images: Sequence[Any]) -> Any:
    """Projected, L2-normalised image embeddings (as CLIPModel's forward computes them)."""
    import torch

    pixels = image_processor(images=[i.convert("RGB") for i in images], return_tensors="pt")
    with torch.inference_mode():
        pooled = model.vision_model(
            pixel_values=pixels["pixel_values"].to(model.device)
        ).pooler_output
        features = model.visual_projection(pooled)
    return features / features.norm(dim=-1, keepdim=True)


class ClipZeroShot:
    """Zero-shot classifier over ``classes`` with prompts ``template.format(class)``."""

    def __init__(
        self,
        model: Any,
        processor: Any,
        classes: Sequence[str] = FACET_CLASSES,
        template: str = CLIP_TEMPLATE,
        class_display: Literal["raw", "spaced"] = "spaced",
    ) -> None:
        if "{}" not in template:
            raise ValueError(f"CLIP template {template!r} must contain '{{}}' for the class")
        self.model, self.processor = model, processor
        self.classes = tuple(classes)
        if class_display not in ("raw", "spaced"):
            raise ValueError(f"class_display {class_display!r}: use 'raw' or 'spaced'")
        self.prompts = [
            template.format(c if class_display == "raw" else c.replace("_", " "))
            for c in self.classes
        ]
        self._text = text_embeddings(model, processor.tokenizer, self.prompts)

    def probabilities(self, images: Sequence[Any]) -> np.ndarray:
        """(n_images, n_classes) softmax over the scaled cosine similarities."""
        import torch

        image = image_embeddings(self.model, self.processor, images)
        with torch.inference_mode():
            logits = self.model.logit_scale.exp() * image @ self._text.T
        return logits.softmax(dim=-1).float().cpu().numpy()

    def classify(self, images: Sequence[Any]) -> list[str]:
        """The most similar class per image."""
        return [self.classes[int(k)] for k in self.probabilities(images).argmax(axis=1)]


class ClipZeroShotBackend(VLMBackend):
    """A ``vlm`` model kind: each request's (single) image is classified; the answer text
    is the class name as released (so the matcher's exact tier takes it)."""

    deterministic = True

    def __init__(self, classifier: ClipZeroShot, model_id: str, batch_size: int = 16) -> None:
        self.classifier = classifier
        self.model_id = model_id
        self.batch_size = batch_size

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], device: str = "cpu", **kwargs: Any
    ) -> ClipZeroShotBackend:
        batch_size = kwargs.pop("batch_size", 16)
        model_id = kwargs.pop("model_id", None) or Path(path).name
        model, processor = load_clip(path, device)
        return cls(ClipZeroShot(model, processor, **kwargs), model_id, batch_size)

    @classmethod
    def from_config(cls, config: ClipVLMConfig) -> ClipZeroShotBackend:
        """The backend a ``backend: clip`` model config describes (weights from ``path``)."""
        return cls.from_path(
            config.path,
            config.device,
            model_id=config.model_id,
            batch_size=config.batch_size,
            classes=config.classes or FACET_CLASSES,
            template=config.template,
            class_display=config.class_display,
        )

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "clip_zero_shot", "modality": "vlm", "model_id": self.model_id,
                "prompts": self.classifier.prompts}  # fmt: skip

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        complete_in_batches(chunks(requests, self.batch_size), self._run, on_done, "CLIP zero-shot")

    def _run(self, batch: Sequence[Request]) -> list[Completion]:
        from PIL import Image

        images = []
        for request in batch:
            parts = [p for m in request.messages for p in image_parts(m)]
            if len(parts) != 1:
                raise ValueError(
                    f"CLIP zero-shot needs exactly one image per request, got {len(parts)}"
                )
            with Image.open(io.BytesIO(read_image_part(parts[0]))) as image:
                images.append(image.convert("RGB"))
        return [
            Completion(status="ok", text=label, finish_reason="stop")
            for label in self.classifier.classify(images)
        ]
