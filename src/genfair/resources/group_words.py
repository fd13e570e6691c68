"""Counting population-group words in text (news-bias paper 001, Methods, Eq. 1-2).

Two attributes:

``gender`` (groups ``female``, ``male``)
    The 20 + 20 words of ``data/reference/gender_words.csv`` (Liang et al. 2022, as
    listed in paper 001). Matched case-insensitively as whole words (``she`` does not
    match inside ``shed``; ``hers`` is one ``hers``, not ``her`` + ``s``).

``race`` (groups ``white``, ``black``, ``asian``)
    Paper 001's "race descriptor + occupation" rule: "race descriptors consist of white,
    black, and Asian ... a race descriptor is counted as a race-related word if it is
    followed by an occupation" from O*NET ("black" in "black teacher" counts, in
    "black ball" it does not). Genfair's reading of the rule:

    * Descriptors: exactly the paper's three, ``white``, ``black``, ``asian``, matched
      case-insensitively ("Black teachers" and "black teacher" both count). Other
      descriptors (e.g. ``"african american" -> black``) are *not* in the paper; a
      caller may add them with ``extra_descriptors``, which changes the instrument and
      must be reported.
    * Each qualifying descriptor occurrence counts **one** race word (the descriptor is
      the race-related word, whatever the length of the occupation after it).
    * The descriptor must be followed, after whitespace only, by an occupation phrase
      that ends on a word boundary ("black-teacher" and "black. Teachers" do not count).
    * Occupation phrases, lower-cased, from each O*NET title in
      ``data/reference/onet_occupation_titles.tsv``:

      - every comma-separated segment of the title, leading "and"/"or" removed;
        segments starting with "except", "all other", "including" are skipped, and so
        are later segments whose last word does not look plural (the qualifier in
        "Dentists, General"). "Farmers, Ranchers, and Other Agricultural Managers"
        gives "farmers", "ranchers", "other agricultural managers";
      - the "/"-separated parts of a segment as well as the whole segment;
      - the head noun, i.e. the last word of each segment ("registered nurses" ->
        "nurses", "production workers" -> "workers");
      - the parts of a segment split on " and " whose last word looks plural (ends in
        "s"/"men", > 3 letters): "Coaches and Scouts" -> "coaches", while "General and
        Operations Managers" gives no bare "general".

      Multi-word phrases are kept ("black registered nurse").
    * Singular/plural: O*NET titles are plural. The last word is singularised (men->man,
      ies->y, (s|x|z|ch|sh)es -> stem and stem+e, s->stem, not "ss"), and plurals are
      regenerated from each singular by simple English rules (+s; +es after
      s/x/z/ch/sh; consonant+y -> ies; man -> men). Phrase variants are the union of
      the original, singular and regenerated plural forms. Wrong forms this produces
      ("nurs") are extra strings that essentially never follow a descriptor in text.
    * Optional person-name table (CSV ``name,race``): the paper also counted the names
      of people whose race the authors determined by hand from Wikipedia (27,453 names
      via Google's Cloud Natural Language API). That step needs the network and manual
      judgement and cannot run offline: genfair does not fake it. A user can supply
      such a table; each whole-word, case-sensitive occurrence of a name counts one word
      for its race, longest name first ("Donald Trump" once, not also "Trump").
      Without the table, race counts come from the descriptor rule only, which
      undercounts against the paper; results must say which was used
      (:attr:`GroupWordCounter.uses_name_table`).

Implementation: one compiled regex per attribute (and one for names), built from a trie
of the phrases so that alternation is prefix-shared and greedy (longest match first);
``count_many`` loops over texts with ``finditer`` and ``numpy`` bincounts. Measured on
this project's benchmark (see ``benchmarks/test_news_levels.py``).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "GENDER_GROUPS",
    "RACE_DESCRIPTORS",
    "RACE_GROUPS",
    "GroupWordCounter",
    "occupation_phrases",
    "plural_forms",
    "singularize",
    "trie_regex",
]

GENDER_GROUPS: tuple[str, ...] = ("female", "male")
RACE_GROUPS: tuple[str, ...] = ("white", "black", "asian")
#: The paper's descriptors ("race descriptors consist of white, black, and Asian").
RACE_DESCRIPTORS: dict[str, str] = {"white": "white", "black": "black", "asian": "asian"}

_REFERENCE = Path(__file__).resolve().parents[3] / "data" / "reference"
DEFAULT_GENDER_WORDS = _REFERENCE / "gender_words.csv"
DEFAULT_OCCUPATIONS = _REFERENCE / "onet_occupation_titles.tsv"

_SKIP_SEGMENT = ("except", "all other", "including")
_SIBILANT = ("s", "x", "z", "ch", "sh")
_VOWELS = set("aeiou")


def singularize(word: str) -> set[str]:
    """Candidate singulars of a (lower-case) plural noun by simple English rules.

    men->man, ies->y, (s|x|z|ch|sh)es -> both stem and stem+e ("coaches" -> "coach",
    "nurses" -> "nurse"), s->stem (not "ss"). A word none of the rules applies to is
    returned unchanged. Wrong candidates are harmless extras (they never occur in text).
    """
    if word.endswith("men") and len(word) > 3:
        return {word[:-3] + "man"}
    if word.endswith("ies") and len(word) > 4:
        return {word[:-3] + "y"}
    if word.endswith("es") and word[:-2].endswith(_SIBILANT):
        return {word[:-2], word[:-1]}
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        return {word[:-1]}
    return {word}


def plural_forms(word: str) -> set[str]:
    """Plurals of a singular noun by the simple rules: +s, +es, y->ies, man->men."""
    forms = set()
    if word.endswith("man"):
        return {word[:-3] + "men"}
    if word.endswith("y") and len(word) > 1 and word[-2] not in _VOWELS:
        forms.add(word[:-1] + "ies")
    elif word.endswith(_SIBILANT):
        forms.add(word + "es")
    else:
        forms.add(word + "s")
    return forms


def _variants(phrase: str) -> set[str]:
    words = phrase.split()
    if not words:
        return set()
    head, last = words[:-1], words[-1]
    lasts = {last}
    for single in singularize(last):
        lasts |= {single} | plural_forms(single)
    return {" ".join([*head, w]) for w in lasts}


def _looks_plural(word: str) -> bool:
    return len(word) > 3 and word.endswith(("s", "men"))


def occupation_phrases(titles: Iterable[str]) -> set[str]:
    """Lower-cased occupation phrases (segments, head nouns, singular/plural variants)."""
    out: set[str] = set()
    for title in titles:
        title = re.sub(r"\([^)]*\)", " ", title.lower())
        for i, seg in enumerate(title.split(",")):
            seg = re.sub(r"^\s*(and|or)\s+", "", seg).strip()
            seg = re.sub(r"[^a-z0-9'/\- ]", " ", seg)
            seg = " ".join(seg.split())
            if not seg or seg.startswith(_SKIP_SEGMENT):
                continue
            if i > 0 and not _looks_plural(seg.split()[-1]):
                continue  # a qualifier such as "Dentists, General"
            for part in {seg, *seg.split("/")}:  # "methane/landfill gas ..." stays whole
                part = part.strip()
                if part:
                    out |= _variants(part)
            out |= _variants(seg.split()[-1])
            for part in seg.split(" and "):  # "coaches and scouts" -> "coaches"
                words = part.split()
                if words and _looks_plural(words[-1]):
                    out |= _variants(part) | _variants(words[-1])
    return out


def trie_regex(phrases: Iterable[str]) -> str:
    """A regex alternation (no anchors) matching any phrase, built as a prefix trie.

    Longer continuations are tried before ending, so with a trailing ``\\b`` the match
    is the longest phrase that ends on a word boundary.
    """
    trie: dict = {}
    for p in phrases:
        if not p:
            continue
        node = trie
        for ch in p:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        end = "" in node
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if end:
            return "(?:" + body + ")?"
        return body

    return build(trie)


class GroupWordCounter:
    """Counts group words per attribute (``gender``, ``race``) in texts.

    ``count(text, attribute) -> {group: n}``, ``count_many(texts, attribute) -> (n, k)``
    int array with columns in :meth:`groups` order, ``find(text, attribute) ->
    [(start, group_index), ...]`` (the positions, for sentence-level assignment).
    """

    def __init__(
        self,
        gender_words: Mapping[str, str],
        occupations: Iterable[str],
        *,
        names: Mapping[str, str] | None = None,
        extra_descriptors: Mapping[str, str] | None = None,
    ) -> None:
        self._groups: dict[str, tuple[str, ...]] = {
            "gender": GENDER_GROUPS,
            "race": RACE_GROUPS,
        }
        self._word_group: dict[str, dict[str, int]] = {}
        # gender
        gmap = {}
        for word, group in gender_words.items():
            group = group.strip().lower()
            if group not in GENDER_GROUPS:
                raise ValueError(f"unknown gender group {group!r} for word {word!r}")
            gmap[word.strip().lower()] = GENDER_GROUPS.index(group)
        self._word_group["gender"] = gmap
        self._gender_re = re.compile(r"\b(" + trie_regex(gmap) + r")\b", re.IGNORECASE)
        # race: descriptor + occupation
        descriptors = dict(RACE_DESCRIPTORS)
        for d, g in (extra_descriptors or {}).items():
            if g not in RACE_GROUPS:
                raise ValueError(f"unknown race group {g!r} for descriptor {d!r}")
            descriptors[" ".join(d.lower().split())] = g
        self.descriptors = descriptors
        dmap = {d: RACE_GROUPS.index(g) for d, g in descriptors.items()}
        self._word_group["race"] = dmap
        self.occupations = occupation_phrases(occupations)
        desc_pat = trie_regex(d.replace(" ", "\0") for d in dmap).replace("\0", r"\s+")
        self._race_re = re.compile(
            r"\b(" + desc_pat + r")\s+(?:" + trie_regex(self.occupations) + r")\b",
            re.IGNORECASE,
        )
        # optional name table (case-sensitive whole words)
        self._name_group: dict[str, int] = {}
        self._name_re: re.Pattern[str] | None = None
        if names:
            for name, race in names.items():
                race = race.strip().lower()
                if race not in RACE_GROUPS:
                    raise ValueError(f"unknown race {race!r} for name {name!r}")
                self._name_group[" ".join(name.split())] = RACE_GROUPS.index(race)
            self._name_re = re.compile(r"\b(" + trie_regex(self._name_group) + r")\b")

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_files(
        cls,
        gender_csv: str | Path = DEFAULT_GENDER_WORDS,
        occupations_tsv: str | Path = DEFAULT_OCCUPATIONS,
        names_csv: str | Path | None = None,
        *,
        extra_descriptors: Mapping[str, str] | None = None,
    ) -> GroupWordCounter:
        """Build from ``gender_words.csv`` (word,group), the O*NET TSV (onet_soc_code,
        title) and optionally a user-supplied ``name,race`` CSV."""
        with open(gender_csv, newline="", encoding="utf-8") as fh:
            gender = {r["word"]: r["group"] for r in csv.DictReader(fh)}
        with open(occupations_tsv, newline="", encoding="utf-8") as fh:
            titles = [r["title"] for r in csv.DictReader(fh, delimiter="\t")]
        names = None
        if names_csv is not None:
            with open(names_csv, newline="", encoding="utf-8") as fh:
                names = {r["name"]: r["race"] for r in csv.DictReader(fh)}
        return cls(gender, titles, names=names, extra_descriptors=extra_descriptors)

    # -- queries ------------------------------------------------------------------
    @property
    def uses_name_table(self) -> bool:
        return self._name_re is not None

    def groups(self, attribute: str) -> tuple[str, ...]:
        try:
            return self._groups[attribute]
        except KeyError:
            raise ValueError(
                f"unknown attribute {attribute!r}; expected one of {sorted(self._groups)}"
            ) from None

    def find(self, text: str, attribute: str) -> list[tuple[int, int]]:
        """``(start offset, group index)`` of each group word in ``text``, in order."""
        self.groups(attribute)
        if attribute == "gender":
            wg = self._word_group["gender"]
            return [(m.start(), wg[m.group(1).lower()]) for m in self._gender_re.finditer(text)]
        dg = self._word_group["race"]
        hits = [
            (m.start(), dg[" ".join(m.group(1).lower().split())])
            for m in self._race_re.finditer(text)
        ]
        if self._name_re is not None:
            ng = self._name_group
            hits += [(m.start(), ng[m.group(1)]) for m in self._name_re.finditer(text)]
            hits.sort()
        return hits

    def count_vector(self, text: str, attribute: str) -> np.ndarray:
        k = len(self.groups(attribute))
        hits = self.find(text, attribute)
        if not hits:
            return np.zeros(k, dtype=np.int64)
        return np.bincount([g for _, g in hits], minlength=k).astype(np.int64)

    def count(self, text: str, attribute: str) -> dict[str, int]:
        vec = self.count_vector(text, attribute)
        return {g: int(n) for g, n in zip(self.groups(attribute), vec, strict=True)}

    def count_many(self, texts: Sequence[str], attribute: str) -> np.ndarray:
        """``(len(texts), n_groups)`` int64 counts, columns in :meth:`groups` order."""
        k = len(self.groups(attribute))
        out = np.zeros((len(texts), k), dtype=np.int64)
        for i, text in enumerate(texts):
            for _, g in self.find(text, attribute):
                out[i, g] += 1
        return out
