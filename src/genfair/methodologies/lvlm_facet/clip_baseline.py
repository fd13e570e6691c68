"""CLIP for paper 004 (§3.1, Table 2's CLIP row; Appendix A.2's CLIP text matcher).

The zero-shot classifier is a ``vlm`` model kind (``backend: clip``), so it lives with the
backends in :mod:`genfair.models.clip` and is re-exported here. :class:`ClipTextEncoder` is
a CLIP checkpoint's text tower as a text encoder for answer matching (the paper's CLIP
encoder; ``encoder: clip_text:<path>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from genfair.models.clip import (
    CLIP_TEMPLATE,
    ClipZeroShot,
    ClipZeroShotBackend,
    load_clip,
    text_embeddings,
)

__all__ = ["CLIP_TEMPLATE", "ClipTextEncoder", "ClipZeroShot", "ClipZeroShotBackend", "load_clip"]


class ClipTextEncoder:
    """A CLIP checkpoint's text tower as an answer-matching encoder (``encode`` -> rows)."""

    def __init__(self, model: Any, tokenizer: Any, name: str) -> None:
        self.model, self.tokenizer, self.name = model, tokenizer, name

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], device: str = "cpu") -> ClipTextEncoder:
        model, processor = load_clip(path, device)
        return cls(
            model, processor.tokenizer, f"clip_text:{Path(path).name}"
        )  # = matching.encoder_name

    def encode(self, texts: list[str]) -> np.ndarray:
        return text_embeddings(self.model, self.tokenizer, texts).float().cpu().numpy()
