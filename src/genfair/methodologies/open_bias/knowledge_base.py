"""The OpenBias knowledge base: per-caption bias proposals -> biases with classes and captions
(paper 003, §3.1; the steps and thresholds are the authors' ``utils/utils.py`` post-processing
and ``utils/config.py`` settings, since the paper's supplementary material is not public).

Each step is a function over :class:`Cluster` lists, run in this order by
:func:`build_knowledge_base`, each switchable in :class:`KnowledgeBaseConfig`:

1. :func:`group_proposals` -- keep proposals whose caption does not already answer the question
   (``present_in_prompt`` false) and that have >= 2 classes; group them by (refers to, name,
   class set), all lower-cased; the support of a group is its number of proposals.
2. :func:`filter_relative_support` -- within one (refers to, name), drop class sets whose support
   is below ``support_threshold`` (0.5) times the largest one's (and below ``min_support``).
3. :func:`merge_overlapping_classes` -- within one (refers to, name), merge class sets whose
   overlap ``|A & B| / min(|A|, |B|)`` is >= ``merge_threshold`` (0.75) into the earlier one.
4. :func:`remove_duplicate_names` -- within one "refers to", drop a later bias whose name, minus
   the refers-to words, is one word already in an earlier bias's name ("person gender" then
   "gender": the second goes).
5. :func:`filter_captions_naming_a_class` -- drop a caption from a bias when it contains one of
   the bias's classes or their synonyms / inflections (:class:`SynonymTable`, offline; the
   authors queried ConceptNet live). Tokens are compared, so punctuation never hides a word.
6. :func:`collapse_class_sets` -- one class set per bias: the best-supported one (first on a
   tie); the other sets' captions join it (their classes do not).
7. :func:`one_caption_per_image` -- at most one caption per source image (the first).
8. :func:`limit_captions` -- at most ``max_captions_per_bias`` (paper §4.1: 100 "randomly
   selected" captions: a seeded sample; the authors' code takes the first 100: ``"first"``).

Classes end sorted; ``unknown`` (the VQA's abstain choice) is never a proposed class.
Fixes over the authors' code are listed in ``docs/methodology.md`` (OpenBias section).
"""

from __future__ import annotations

import csv
import re
import unicodedata
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from genfair.io import check_file_size
from genfair.limits import MAX_RECORDS, MAX_SMALL
from genfair.methodologies.open_bias.proposals import BiasProposal
from genfair.strict import Strict

__all__ = [
    "DEFAULT_SYNONYMS",
    "Cluster",
    "Entry",
    "KnowledgeBase",
    "KnowledgeBaseConfig",
    "KnowledgeBias",
    "SynonymTable",
    "build_knowledge_base",
    "class_overlap",
    "collapse_class_sets",
    "filter_captions_naming_a_class",
    "filter_relative_support",
    "group_proposals",
    "inflections",
    "limit_captions",
    "merge_overlapping_classes",
    "one_caption_per_image",
    "remove_duplicate_names",
    "tokens",
]

DEFAULT_SYNONYMS = (
    Path(__file__).resolve().parents[4] / "data" / "reference" / "open_bias_synonyms.csv"
)


class KnowledgeBaseConfig(Strict):
    """Every knob of the post-processing (defaults: the authors' ``utils/config.py``)."""

    #: drop proposals the LLM marks as already answered by the caption (paper §3.1, stage 1)
    drop_present_in_caption: bool = True
    #: a class set must keep at least this many classes (authors: more than one)
    min_classes: int = Field(2, ge=2, le=MAX_SMALL)
    #: classes removed from every proposal: the VQA's abstain choice must not be a class
    drop_classes: tuple[str, ...] = ("unknown",)
    #: relative-support filter (authors' ``filter_threshold``); 0 disables it
    support_threshold: float = Field(0.5, ge=0.0, le=1.0)
    #: absolute support floor of a class set (authors' ``hard_threshold``)
    min_support: int = Field(0, ge=0, le=MAX_RECORDS)
    #: class-set merge threshold (authors' ``merge_threshold``); None disables merging
    merge_threshold: float | None = Field(0.75, gt=0.0, le=1.0)
    remove_duplicate_names: bool = True
    #: the "caption already names a class" filter (paper §3.1, stage 2)
    filter_named_classes: bool = True
    #: the synonym table of that filter (``term,synonym``)
    synonyms: str = "data/reference/open_bias_synonyms.csv"
    #: add regular English plural/singular forms of every class and synonym
    inflect: bool = True
    #: classes that never count as named in a caption ("other people" names no class)
    generic_classes: tuple[str, ...] = (
        "other",
        "others",
        "none",
        "unknown",
        "mixed",
        "various",
        "neutral",
    )
    one_caption_per_image: bool = True
    #: captions per bias (paper §4.1: 100); None keeps all
    max_captions_per_bias: int | None = Field(100, ge=1, le=MAX_RECORDS)
    #: "random": a seeded sample (paper); "first": the first ones in order (authors' code)
    caption_sample: Literal["random", "first"] = "random"
    seed: int = 0


@dataclass(frozen=True)
class Entry:
    """One caption of a bias, with the question the LLM wrote for it."""

    caption_id: str
    question: str


@dataclass
class Cluster:
    """One class set of one bias: (refers to, name, classes) with its support and captions."""

    refers_to: str
    name: str
    classes: tuple[str, ...]
    support: int = 0
    entries: list[Entry] = field(default_factory=list)
    #: every class of every class set this bias had (the caption filter checks them all)
    seen_classes: frozenset[str] = frozenset()

    @property
    def bias_key(self) -> tuple[str, str]:
        return (self.refers_to, self.name)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", str(text).strip().lower())


def _by_bias(clusters: Sequence[Cluster]) -> dict[tuple[str, str], list[Cluster]]:
    out: dict[tuple[str, str], list[Cluster]] = defaultdict(list)
    for cluster in clusters:
        out[cluster.bias_key].append(cluster)
    return out


def group_proposals(
    proposals: Iterable[tuple[str, BiasProposal]],
    drop_present_in_caption: bool = True,
    min_classes: int = 2,
    drop_classes: Sequence[str] = ("unknown",),
) -> list[Cluster]:
    """Step 1: group ``(caption_id, proposal)`` pairs by (refers to, name, sorted class set),
    in order of first appearance. Names, refers-to and classes are lower-cased and stripped;
    repeated and dropped classes removed. Support = number of proposals in the group."""
    dropped = {_norm(c) for c in drop_classes}
    groups: dict[tuple[str, str, tuple[str, ...]], Cluster] = {}
    for caption_id, proposal in proposals:
        if drop_present_in_caption and proposal.present_in_caption:
            continue
        classes = tuple(sorted({_norm(c) for c in proposal.classes} - dropped - {""}))
        if len(classes) < min_classes:
            continue
        key = (_norm(proposal.refers_to), _norm(proposal.name), classes)
        cluster = groups.get(key)
        if cluster is None:
            cluster = groups[key] = Cluster(*key, seen_classes=frozenset(classes))
        cluster.support += 1
        cluster.entries.append(Entry(str(caption_id), proposal.question))
    return list(groups.values())


def filter_relative_support(
    clusters: Sequence[Cluster], threshold: float = 0.5, min_support: int = 0
) -> list[Cluster]:
    """Step 2: keep a class set if ``support / max support of its bias >= threshold`` and
    ``support >= min_support`` (authors' ``filter_classes``)."""
    best = {key: max(c.support for c in group) for key, group in _by_bias(clusters).items()}
    return [
        c
        for c in clusters
        if c.support / best[c.bias_key] >= threshold and c.support >= min_support
    ]


def class_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """``|A & B| / min(|A|, |B|)``: the larger of the two shares (authors' ``compute_overlap``)."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        raise ValueError(
            f"class_overlap needs two non-empty class sets, got {sorted(sa)} and {sorted(sb)}"
        )
    return len(sa & sb) / min(len(sa), len(sb))


def merge_overlapping_classes(
    clusters: Sequence[Cluster], threshold: float = 0.75
) -> list[Cluster]:
    """Step 3: within each bias, in order, merge every later class set whose overlap with an
    earlier (already merged) one is >= ``threshold`` into it: classes united, support added,
    captions appended. Upstream united the later set with the earlier set's *original*
    classes, losing the classes of sets merged before; here the union accumulates."""
    out: list[Cluster] = []
    for group in _by_bias(clusters).values():
        merged: list[Cluster] = []
        for cluster in group:
            target = next(
                (m for m in merged if class_overlap(m.classes, cluster.classes) >= threshold), None
            )
            if target is None:
                merged.append(replace(cluster, entries=list(cluster.entries)))
                continue
            target.classes = tuple(sorted(set(target.classes) | set(cluster.classes)))
            target.support += cluster.support
            target.entries.extend(cluster.entries)
            target.seen_classes = target.seen_classes | cluster.seen_classes
        out.extend(merged)
    return out


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text)


def remove_duplicate_names(clusters: Sequence[Cluster]) -> list[Cluster]:
    """Step 4: within each "refers to", in order of first appearance, drop every later bias
    whose name minus the refers-to words is a single word contained in an earlier kept bias's
    name minus its refers-to words (authors' ``remove_duplicated_biases``; upstream removed
    the refers-to text as a substring, so "man" also cut "woman" to "wo")."""
    attributes: dict[tuple[str, str], set[str]] = {}
    for cluster in clusters:
        if cluster.bias_key not in attributes:
            subject = set(_words(cluster.refers_to))
            attributes[cluster.bias_key] = {w for w in _words(cluster.name) if w not in subject}
    kept: dict[str, list[tuple[str, str]]] = defaultdict(list)
    removed: set[tuple[str, str]] = set()
    for key, words in attributes.items():
        refers_to = key[0]
        if len(words) == 1 and any(words & attributes[k] for k in kept[refers_to]):
            removed.add(key)
        else:
            kept[refers_to].append(key)
    return [c for c in clusters if c.bias_key not in removed]


def tokens(text: str) -> list[str]:
    """Lower-case ASCII word tokens: accents folded, every non-alphanumeric a separator
    ("Middle-aged," -> ["middle", "aged"], "women's" -> ["women", "s"])."""
    folded = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", folded)


_SIBILANT = re.compile(r"(s|x|z|ch|sh)$")


def inflections(word: str) -> set[str]:
    """The word with the regular English plural (or, for a word that looks plural, singular)
    of its last token: man/men, y/ies, -es after sibilants, -s. Irregular forms and
    synonyms belong in the synonym table."""
    parts = tokens(word)
    if not parts:
        return set()
    *head, last = parts
    forms = {last}
    if last.endswith("men"):
        forms.add(last[:-3] + "man")
    elif last.endswith("man"):
        forms.add(last[:-3] + "men")
    elif last.endswith("s") and not last.endswith("ss") and len(last) > 3:  # looks plural
        if last.endswith("ies"):
            forms.add(last[:-3] + "y")
        elif last.endswith("es") and _SIBILANT.search(last[:-2]):
            forms.add(last[:-2])
        else:
            forms.add(last[:-1])
    elif re.search(r"[^aeiou]y$", last):
        forms.add(last[:-1] + "ies")
    elif _SIBILANT.search(last):
        forms.add(last + "es")
    else:
        forms.add(last + "s")
    return {" ".join([*head, f]) for f in forms}


class SynonymTable:
    """Words that name a class in a caption: ``term,synonym`` rows (lower case; plurals are
    rows of their own), written by the project (``data/reference/open_bias_synonyms.csv``)."""

    def __init__(self, pairs: Mapping[str, Iterable[str]] | None = None) -> None:
        self.synonyms: dict[str, set[str]] = defaultdict(set)
        for term, words in (pairs or {}).items():
            self.synonyms[" ".join(tokens(term))].update(" ".join(tokens(w)) for w in words)

    @classmethod
    def from_csv(cls, path: str | Path = DEFAULT_SYNONYMS) -> SynonymTable:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: synonym table not found (knowledge_base.synonyms)")
        pairs: dict[str, list[str]] = defaultdict(list)
        with check_file_size(path).open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or not {"term", "synonym"} <= set(reader.fieldnames):
                raise ValueError(f"{path}: expected columns term,synonym; got {reader.fieldnames}")
            for line, row in enumerate(reader, start=2):
                term, synonym = (row["term"] or "").strip(), (row["synonym"] or "").strip()
                if not tokens(term) or not tokens(synonym):
                    raise ValueError(f"{path}: line {line}: empty term or synonym: {row}")
                pairs[term].append(synonym)
        return cls(pairs)

    def words_for(
        self, classes: Iterable[str], inflect: bool = True, generic: Iterable[str] = ()
    ) -> set[tuple[str, ...]]:
        """Token sequences whose presence in a caption names one of ``classes``."""
        skip = {" ".join(tokens(g)) for g in generic}
        out: set[tuple[str, ...]] = set()
        for cls_ in classes:
            term = " ".join(tokens(cls_))
            if not term or term in skip:
                continue
            words = {term} | self.synonyms.get(term, set())
            if inflect:
                words = set().union(*(inflections(w) | {w} for w in words))
            out.update(tuple(w.split()) for w in words if w and w not in skip)
        return out


def _contains(caption_tokens: Sequence[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(
        tuple(caption_tokens[i : i + n]) == phrase for i in range(len(caption_tokens) - n + 1)
    )


def filter_captions_naming_a_class(
    clusters: Sequence[Cluster],
    captions: Mapping[str, str],
    synonyms: SynonymTable,
    inflect: bool = True,
    generic_classes: Sequence[str] = (),
) -> list[Cluster]:
    """Step 5: drop a caption from a bias when its tokens contain any class the bias had in
    any of its class sets, a synonym, or (``inflect``) their plural/singular forms. A class
    set left with no caption is dropped. ``captions`` maps caption_id -> text."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for cluster in clusters:
        seen[cluster.bias_key] |= set(cluster.seen_classes) | set(cluster.classes)
    phrases = {
        key: synonyms.words_for(classes, inflect, generic_classes) for key, classes in seen.items()
    }
    out = []
    for cluster in clusters:
        kept = []
        for entry in cluster.entries:
            if entry.caption_id not in captions:
                raise KeyError(
                    f"caption_id {entry.caption_id!r} has proposals but is not in the caption table"
                )
            words = tokens(captions[entry.caption_id])
            if not any(_contains(words, p) for p in phrases[cluster.bias_key]):
                kept.append(entry)
        if kept:
            out.append(replace(cluster, entries=kept))
    return out


def collapse_class_sets(clusters: Sequence[Cluster]) -> list[Cluster]:
    """Step 6: one class set per bias, the best-supported (first on a tie); the other sets'
    support and captions join it, their classes do not (authors' ``merge_in_one_cluster``)."""
    out = []
    for group in _by_bias(clusters).values():
        best = max(group, key=lambda c: c.support)  # max keeps the first of equals
        others = [c for c in group if c is not best]
        out.append(
            replace(
                best,
                support=sum(c.support for c in group),
                entries=list(best.entries) + [e for c in others for e in c.entries],
                seen_classes=frozenset().union(*(c.seen_classes for c in group)),
            )
        )
    return out


def one_caption_per_image(entries: Sequence[Entry], image_of: Mapping[str, str]) -> list[Entry]:
    """Step 7: the first entry of each source image (so a caption listed twice counts once)."""
    seen, out = set(), []
    for entry in entries:
        image = image_of[entry.caption_id]
        if image not in seen:
            seen.add(image)
            out.append(entry)
    return out


def limit_captions(
    entries: Sequence[Entry],
    limit: int | None,
    mode: Literal["random", "first"] = "random",
    seed: int = 0,
    key: str = "",
) -> list[Entry]:
    """Step 8: at most ``limit`` entries: the first ones, or a sample without replacement
    seeded by ``(seed, crc32(key))`` (``key``: the bias id, so each bias's sample is fixed
    whatever the other biases are), kept in their original order."""
    if limit is None or len(entries) <= limit:
        return list(entries)
    if mode == "first":
        return list(entries[:limit])
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    chosen = np.sort(rng.choice(len(entries), size=limit, replace=False))
    return [entries[i] for i in chosen]


class KnowledgeBias(BaseModel):
    """One bias of the knowledge base: its classes and the captions (with questions) to test."""

    model_config = ConfigDict(frozen=True)

    bias_id: str
    refers_to: str
    name: str
    classes: list[str]
    support: int
    captions: list[tuple[str, str]]  # (caption_id, question)

    @property
    def label(self) -> str:
        """The display name: refers-to and name words, each once ("person gender")."""
        return " ".join(dict.fromkeys(self.refers_to.split() + self.name.split()))


class KnowledgeBase(BaseModel):
    """The biases, plus how many biases and (bias, caption) pairs each step left."""

    model_config = ConfigDict(frozen=True)

    biases: list[KnowledgeBias]
    steps: list[dict[str, int | str]]

    def to_frame(self, captions: pd.DataFrame) -> pd.DataFrame:
        """One row per (bias, caption): bias_id, refers_to, name, label, classes, caption_id,
        image_id, caption, question."""
        by_id = captions.set_index("caption_id")
        rows = [
            {
                "bias_id": b.bias_id,
                "refers_to": b.refers_to,
                "name": b.name,
                "label": b.label,
                "classes": list(b.classes),
                "caption_id": caption_id,
                "image_id": str(by_id.at[caption_id, "image_id"]),
                "caption": str(by_id.at[caption_id, "caption"]),
                "question": question,
            }
            for b in self.biases
            for caption_id, question in b.captions
        ]
        columns = [
            "bias_id",
            "refers_to",
            "name",
            "label",
            "classes",
            "caption_id",
            "image_id",
            "caption",
            "question",
        ]
        return pd.DataFrame(rows, columns=columns)


def _log(steps: list, step: str, clusters: Sequence[Cluster]) -> None:
    steps.append(
        {
            "step": step,
            "biases": len({c.bias_key for c in clusters}),
            "class_sets": len(clusters),
            "captions": sum(len(c.entries) for c in clusters),
        }
    )


def build_knowledge_base(
    captions: pd.DataFrame,
    proposals: Iterable[tuple[str, BiasProposal]],
    config: KnowledgeBaseConfig | None = None,
    synonyms: SynonymTable | None = None,
) -> KnowledgeBase:
    """Steps 1-8 over ``(caption_id, proposal)`` pairs (in caption order) and the caption
    table (``caption_id, image_id, caption``). Bias ids are ``"<refers to>/<name>"``."""
    config = config or KnowledgeBaseConfig()
    missing = {"caption_id", "image_id", "caption"} - set(captions.columns)
    if missing:
        raise ValueError(f"caption table lacks columns {sorted(missing)}")
    text = dict(
        zip(captions["caption_id"].astype(str), captions["caption"].astype(str), strict=True)
    )
    image = dict(
        zip(captions["caption_id"].astype(str), captions["image_id"].astype(str), strict=True)
    )
    steps: list[dict[str, int | str]] = []
    clusters = group_proposals(
        proposals, config.drop_present_in_caption, config.min_classes, config.drop_classes
    )
    _log(steps, "group", clusters)
    clusters = filter_relative_support(clusters, config.support_threshold, config.min_support)
    _log(steps, "relative_support", clusters)
    if config.merge_threshold is not None:
        clusters = merge_overlapping_classes(clusters, config.merge_threshold)
        _log(steps, "merge_classes", clusters)
    if config.remove_duplicate_names:
        clusters = remove_duplicate_names(clusters)
        _log(steps, "duplicate_names", clusters)
    if config.filter_named_classes:
        table = synonyms if synonyms is not None else SynonymTable.from_csv(config.synonyms)
        clusters = filter_captions_naming_a_class(
            clusters, text, table, config.inflect, config.generic_classes
        )
        _log(steps, "named_class", clusters)
    clusters = collapse_class_sets(clusters)
    _log(steps, "one_class_set", clusters)
    biases = []
    for cluster in clusters:
        bias_id = f"{cluster.refers_to}/{cluster.name}"
        if config.one_caption_per_image:
            entries = one_caption_per_image(cluster.entries, image)
        else:  # still each caption once
            entries = one_caption_per_image(
                cluster.entries, {e.caption_id: e.caption_id for e in cluster.entries}
            )
        entries = limit_captions(
            entries, config.max_captions_per_bias, config.caption_sample, config.seed, bias_id
        )
        biases.append(
            KnowledgeBias(
                bias_id=bias_id,
                refers_to=cluster.refers_to,
                name=cluster.name,
                classes=sorted(cluster.classes),
                support=cluster.support,
                captions=[(e.caption_id, e.question) for e in entries],
            )
        )
    steps.append(
        {
            "step": "captions_per_bias",
            "biases": len(biases),
            "class_sets": len(biases),
            "captions": sum(len(b.captions) for b in biases),
        }
    )
    return KnowledgeBase(biases=biases, steps=steps)
