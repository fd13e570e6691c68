"""The ``map_occupations`` stage: IRIS's 52 occupations with their real-world statistics and
WordNet aliases, one versioned table every IRIS (and LVLM-FACET) sector reads.

Sources (paper 002, IRIS):

- the 52 person classes of FACET (Table 20): ``data/reference/facet_occupations.csv``;
- U.S. statistics (BLS CPS 2023-2024, Table 22) for 32 of them, E.U. statistics (Eurostat
  LFS, Table 21) for 11: ``iris_real_world_us.csv`` / ``iris_real_world_eu.csv``, copied
  with their provenance in ``data/reference/SOURCES.md``. The percentages are kept as
  published (0-100) and also normalised to proportions: the U.S. skin-tone proxies of
  ``astronaut`` add up to 96.6 %, not 100 %, in the authors' tables.
- §C.5: "Non-occupational identities (e.g. 'student', 'patient', 'backpacker') were excluded
  as they do not fall under labor statistics". The paper names three by example; genfair's
  list (``non_occupational`` in the config, each with its reason) applies the same test to
  all 52. They keep ``is_occupation=False`` and no statistics: excluded from real-world
  (RFS) comparisons, still mapped as answers (a model may well say "a student").
- Age buckets: the paper's own definition (§3 / A.1, after FACET) is young 0-39,
  middle 40-64, older 65+; §C.5 writes "<=39 / 40-65 / >65" and the tables "0-39 / 40-65 /
  65+"; the authors' release labels the same numbers 0-39 / 40-59 / 60+. The figures are
  identical in both: only the boundaries they claim differ. ``age_buckets`` picks which
  boundaries the table records (default ``paper``, the definition the classifier's and the
  models' age labels use).

Aliases (tier 1 of the §D.2.4 answer mapping, "a pre-compiled list of authoritative
synonyms and aliases for each occupation, generated using WordNet"), genfair's rule:

1. each occupation has curated WordNet senses (``senses``; every sense must be a
   ``noun.person`` synset having the occupation among its lemmas): e.g. ``fireman`` is the
   fire fighter (fireman.n.04), not the stoker (WordNet's first sense);
2. its *forms*: the term with ``_`` as a space, and its plural;
3. *synonyms*: every lemma of those senses (``doctor`` -> physician, doc, md, dr, medico);
4. *hyponyms*: the lemmas of the senses' direct (depth-1) hyponyms that are persons too
   (WordNet's ``noun.person``), only where that hyponym is the lemma's *first* (most
   frequent) noun sense: "surgeon" -> doctor, but not "hand" -> laborer, "voice" ->
   singer, "coach" -> teacher, "guard" -> basketball_player. Proper-noun lemmas
   (capitalised: "Daniel", "Texas Ranger") are skipped, and so are all hyponyms of the
   occupations in ``no_hyponyms``, which are manners or conditions rather than kinds of
   the role (``speaker`` -> mutterer, ``patient`` -> hypertensive, ``student`` -> skipper);
5. ``extra_aliases`` (curated additions) count as synonyms; ``drop_aliases`` removes
   misleading lemmas (``laborer`` -> "jack");
6. every alias and form also in plural (simple English rules, as for the O*NET phrases;
   not for a last word in -s or a phrase with a preposition);
7. an alias never maps to two occupations: the claim of higher rank wins (form > synonym >
   hyponym: "guard", a basketball-player hyponym, stays ``guard``); equal ranks make the
   alias ambiguous, and it is dropped from both. Every contested alias is reported
   (:func:`alias_collisions`).

Aliases are normalised as answers are cleaned (:func:`normalize_term`), so the mapper can
compare strings directly. The output is deterministic: sorted rows and lists, and an
``inputs_sha256`` over the reference files and the configuration.

Imported where used: genfair.resources.wordnet (NLTK), only when no WordNet is passed in.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genfair.curation.config import OccupationsConfig
from genfair.io import check_file_size, write_parquet
from genfair.resources.group_words import plural_forms

__all__ = [
    "AGE_BUCKETS",
    "TABLE_VERSION",
    "OccupationTables",
    "OccupationsConfig",
    "ReferenceDataError",
    "alias_collisions",
    "build_occupation_tables",
    "map_occupations",
    "normalize_term",
    "write_occupations",
]

#: bump when the table's columns or rules change (the data's own changes show in inputs_sha256)
TABLE_VERSION = 1

#: (young, middle, older) boundaries per scheme; the percentages are the same in both
AGE_BUCKETS: dict[str, tuple[str, str, str]] = {
    "paper": ("0-39", "40-64", "65+"),  # §3 / A.1 (after FACET); §C.5 says 40-65 / >65
    "release": ("0-39", "40-59", "60+"),  # the authors' public release's column labels
}

_SKIN = ("light", "middle", "dark")
_AGE = ("young", "middle", "older")
#: the percentage groups each region's table gives, besides ``female_pct``
_US_GROUPS = (("skin", _SKIN), ("age", _AGE))
_EU_GROUPS = (("age", _AGE),)
_US_COLUMNS = [
    "occupation",
    "official_occupation",
    "female_pct",
    *(f"{p}_{g}_pct" for p, gs in _US_GROUPS for g in gs),
]
_EU_COLUMNS = [
    "occupation",
    "official_occupation",
    "female_pct",
    *(f"{p}_{g}_pct" for p, gs in _EU_GROUPS for g in gs),
]
# a group of percentages must add up to 100 within this (rounding in the published tables,
# and the 96.6 % of astronaut's skin-tone proxies)
_SUM_TOLERANCE_PCT = 4.0

_RANKS = {"form": 0, "synonym": 1, "hyponym": 2}


class ReferenceDataError(ValueError):
    """A reference table or the configuration disagrees with itself or with another."""


@dataclass(frozen=True)
class OccupationTables:
    table: pd.DataFrame
    collisions: pd.DataFrame


_PUNCT = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def normalize_term(text: str) -> str:
    """Lower case, accents folded, ``_``/``-``/``/`` and other punctuation as spaces, one
    space between words: "Disc-Jockey" and "disc_jockey" -> "disc jockey", "Dr." -> "dr"."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower().replace("_", " ")
    text = text.replace("'", "")  # "o'clock"-style apostrophes join, not split
    return _SPACES.sub(" ", _PUNCT.sub(" ", text)).strip()


_NO_PLURAL = {"of", "at", "in", "on", "out"}  # "man at arms", "jack of all trades"


def _with_plurals(term: str) -> set[str]:
    """``term`` and its plural; a term already ending in -s ("sawbones", "bass") or with a
    preposition, whose plural is not formed on the last word, keeps its one form."""
    words = term.split()
    if not words:
        return set()
    if words[-1].endswith("s") or _NO_PLURAL & set(words):
        return {term}
    return {term} | {" ".join([*words[:-1], p]) for p in plural_forms(words[-1])}


# --- reference tables ---------------------------------------------------------------------


def _read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: it ships in data/reference/ (see SOURCES.md)")
    frame = pd.read_csv(check_file_size(path, ReferenceDataError), dtype=str, keep_default_na=False)
    if list(frame.columns) != columns:
        raise ReferenceDataError(f"{path}: columns {list(frame.columns)}, expected {columns}")
    return frame


def _read_occupations(path: Path) -> list[str]:
    frame = _read_csv(path, ["occupation"])
    names = [name.strip() for name in frame["occupation"]]
    for line, name in enumerate(names, start=2):
        if not re.fullmatch(r"[a-z]+(_[a-z]+)*", name):
            raise ReferenceDataError(
                f"{path}:{line}: {name!r} is not a lower-case FACET class name"
            )
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ReferenceDataError(f"{path}: duplicated occupations {duplicated}")
    return names


def _split_official(value: str) -> tuple[str | None, str]:
    """ "17-2011: Aerospace Engineers" -> ("17-2011", "Aerospace Engineers"); a title without
    a code ("Military Occupations") keeps code None: the authors gave none."""
    code, sep, title = value.partition(": ")
    return (code.strip(), title.strip()) if sep else (None, value.strip())


def _read_statistics(
    path: Path, columns: list[str], occupations: list[str], non_occupational: Mapping[str, str]
) -> pd.DataFrame:
    frame = _read_csv(path, columns)
    known = set(occupations)
    numeric = [c for c in columns if c.endswith("_pct")]
    rows = []
    for line, record in enumerate(frame.to_dict("records"), start=2):
        name = record["occupation"].strip()
        where = f"{path}:{line} ({name})"
        if name not in known:
            raise ReferenceDataError(
                f"{where}: not one of the FACET occupations in the occupation list"
            )
        if name in non_occupational:
            raise ReferenceDataError(
                f"{where}: listed as non-occupational (§C.5) but has real-world statistics: "
                "remove it from non_occupational in conf/curation/occupations.yaml or drop the row"
            )
        if any(r["occupation"] == name for r in rows):
            raise ReferenceDataError(f"{where}: duplicated occupation")
        row: dict[str, object] = {"occupation": name}
        code, title = _split_official(record["official_occupation"])
        row["code"], row["title"] = code, title
        for column in numeric:
            try:
                value = float(record[column])
            except ValueError:
                raise ReferenceDataError(
                    f"{where}: {column}={record[column]!r} is not a number"
                ) from None
            if not 0.0 <= value <= 100.0:
                raise ReferenceDataError(f"{where}: {column}={value} outside 0-100 (percentages)")
            row[column] = value
        for group in (_SKIN, _AGE):
            prefix = "skin" if group is _SKIN else "age"
            parts = [f"{prefix}_{g}_pct" for g in group]
            if parts[0] not in row:
                continue
            total = sum(row[p] for p in parts)  # type: ignore[misc]
            if abs(total - 100.0) > _SUM_TOLERANCE_PCT:
                raise ReferenceDataError(
                    f"{where}: {prefix} percentages add up to {total:.1f}, not 100"
                )
        rows.append(row)
    return pd.DataFrame(rows)


# --- WordNet aliases ----------------------------------------------------------------------


def _senses(wordnet, occupation: str, configured: Iterable[str] | None) -> list:
    term = occupation.lower()
    if configured is None:
        for synset in wordnet.synsets(occupation, pos="n"):
            if synset.lexname() == "noun.person":
                return [synset]
        raise ReferenceDataError(
            f"{occupation}: WordNet has no noun.person sense; set senses.{occupation} "
            "in conf/curation/occupations.yaml"
        )
    chosen = []
    for name in configured:
        try:
            synset = wordnet.synset(name)
        except Exception:  # nltk raises WordNetError or ValueError on a bad name
            raise ReferenceDataError(
                f"senses.{occupation}: no WordNet 3.0 synset {name!r}"
            ) from None
        if synset.lexname() != "noun.person":
            raise ReferenceDataError(
                f"senses.{occupation}: {name} is {synset.lexname()}, not noun.person"
            )
        if term not in {lemma.name().lower() for lemma in synset.lemmas()}:
            raise ReferenceDataError(
                f"senses.{occupation}: {name} does not have {occupation!r} as a lemma"
            )
        chosen.append(synset)
    return chosen


def _claims(
    wordnet, occupations: list[str], config: OccupationsConfig
) -> dict[str, dict[str, str]]:
    """alias -> {occupation: best kind of claim ("form" | "synonym" | "hyponym")}."""
    unknown = sorted(
        (
            set(config.senses)
            | set(config.no_hyponyms)
            | set(config.extra_aliases)
            | set(config.non_occupational)
        )
        - set(occupations)
    )
    if unknown:
        raise ReferenceDataError(
            f"conf/curation/occupations.yaml names unknown occupations: {unknown}"
        )
    dropped = {normalize_term(a) for a in config.drop_aliases}
    claims: dict[str, dict[str, str]] = {}

    def claim(alias: str, occupation: str, kind: str) -> None:
        base = normalize_term(alias)
        if kind != "form" and base in dropped:
            return
        for form in _with_plurals(base):
            mine = claims.setdefault(form, {})
            if occupation not in mine or _RANKS[kind] < _RANKS[mine[occupation]]:
                mine[occupation] = kind

    for occupation in occupations:
        claim(occupation, occupation, "form")
        senses = _senses(wordnet, occupation, config.senses.get(occupation))
        for synset in senses:
            for lemma in synset.lemmas():
                claim(lemma.name(), occupation, "synonym")
        for alias in config.extra_aliases.get(occupation, ()):
            claim(alias, occupation, "synonym")
        if occupation in config.no_hyponyms:
            continue
        for synset in senses:
            for hyponym in synset.hyponyms():
                if hyponym.lexname() != "noun.person":
                    continue
                for lemma in hyponym.lemmas():
                    if lemma.name()[:1].isupper():  # proper noun: a name, not a role
                        continue
                    # only where this kind is what the word usually means: "surgeon" yes,
                    # "hand" (laborer), "voice" (singer), "coach" (teacher) no
                    if wordnet.synsets(lemma.name(), pos="n")[0] != hyponym:
                        continue
                    claim(lemma.name(), occupation, "hyponym")
    return claims


def _resolve(
    claims: Mapping[str, Mapping[str, str]],
) -> tuple[dict[str, tuple[str, str]], pd.DataFrame]:
    """alias -> (occupation, kind) for the uncontested or won aliases; and the contests."""
    resolved: dict[str, tuple[str, str]] = {}
    contests = []
    for alias in sorted(claims):
        mine = claims[alias]
        best = min(_RANKS[k] for k in mine.values())
        winners = sorted(o for o, k in mine.items() if _RANKS[k] == best)
        if len(winners) == 1:
            resolved[alias] = (winners[0], mine[winners[0]])
        if len(mine) > 1:
            contests.append(
                {
                    "alias": alias,
                    "claimants": "; ".join(f"{o}:{mine[o]}" for o in sorted(mine)),
                    "winner": winners[0] if len(winners) == 1 else None,
                    "resolution": (
                        f"higher-ranked claim ({mine[winners[0]]}) wins"
                        if len(winners) == 1
                        else "equal claims: dropped as ambiguous"
                    ),
                }
            )
    columns = ["alias", "claimants", "winner", "resolution"]
    return resolved, pd.DataFrame(contests, columns=columns)


# --- the table ----------------------------------------------------------------------------


def _inputs_sha256(config: OccupationsConfig) -> str:
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            config.model_dump(
                mode="json", exclude={"occupations", "us_statistics", "eu_statistics"}
            ),
            sort_keys=True,
        ).encode()
    )
    for path in (config.occupations, config.us_statistics, config.eu_statistics):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def build_occupation_tables(config: OccupationsConfig, wordnet=None) -> OccupationTables:
    """The occupation table and the report of contested aliases."""
    if wordnet is None:
        from genfair.resources.wordnet import load_wordnet

        wordnet = load_wordnet()
    occupations = _read_occupations(Path(config.occupations))
    unknown = sorted(set(config.non_occupational) - set(occupations))
    if unknown:
        raise ReferenceDataError(f"non_occupational names unknown occupations {unknown}")
    us = _read_statistics(
        Path(config.us_statistics), _US_COLUMNS, occupations, config.non_occupational
    )
    eu = _read_statistics(
        Path(config.eu_statistics), _EU_COLUMNS, occupations, config.non_occupational
    )
    resolved, collisions = _resolve(_claims(wordnet, occupations, config))

    forms: dict[str, list[str]] = {o: [] for o in occupations}
    aliases: dict[str, list[str]] = {o: [] for o in occupations}
    for alias, (occupation, kind) in resolved.items():
        (forms if kind == "form" else aliases)[occupation].append(alias)
    us_rows = us.set_index("occupation").to_dict("index") if len(us) else {}
    eu_rows = eu.set_index("occupation").to_dict("index") if len(eu) else {}
    young, middle, older = AGE_BUCKETS[config.age_buckets]
    senses_used = {
        o: [s.name() for s in _senses(wordnet, o, config.senses.get(o))] for o in occupations
    }
    digest = _inputs_sha256(config)

    rows = []
    for occupation in sorted(occupations):
        u, e = us_rows.get(occupation), eu_rows.get(occupation)
        row: dict[str, object] = {
            "occupation": occupation,
            "label": normalize_term(occupation),
            "is_occupation": occupation not in config.non_occupational,
            "exclusion_reason": config.non_occupational.get(occupation),
            "wordnet_senses": senses_used[occupation],
            "forms": sorted(forms[occupation]),
            "aliases": sorted(aliases[occupation]),
        }
        row |= _region_columns("us", "soc", u, _US_GROUPS)
        row |= _region_columns("eu", "isco", e, _EU_GROUPS)
        # proportions for divergence measures: each group normalised to sum to 1
        for region, stats in (("us", u), ("eu", e)):
            female = stats["female_pct"] / 100.0 if stats else np.nan
            row[f"{region}_gender_dist"] = [female, 1.0 - female] if stats else None
            row[f"{region}_age_dist"] = _normalised(stats, "age", _AGE)
        row["us_skin_dist"] = _normalised(u, "skin", _SKIN)
        row |= {
            "age_bucket_scheme": config.age_buckets,
            "age_young_range": young,
            "age_middle_range": middle,
            "age_older_range": older,
            "table_version": TABLE_VERSION,
            "inputs_sha256": digest,
        }
        rows.append(row)
    return OccupationTables(pd.DataFrame(rows), collisions)


def _region_columns(
    region: str,
    code: str,
    stats: Mapping[str, Any] | None,
    groups: tuple[tuple[str, tuple[str, ...]], ...],
) -> dict[str, object]:
    """One region's columns of an occupation row: ``has_<region>``, ``<code>_code``,
    ``<code>_title``, ``<region>_female_pct`` and ``<region>_<prefix>_<group>_pct`` for each of
    its percentage ``groups``; None (code, title) or NaN (percentages) without ``stats``."""
    columns: dict[str, object] = {
        f"has_{region}": stats is not None,
        f"{code}_code": stats["code"] if stats else None,
        f"{code}_title": stats["title"] if stats else None,
        f"{region}_female_pct": stats["female_pct"] if stats else np.nan,
    }
    for prefix, names in groups:
        for name in names:
            columns[f"{region}_{prefix}_{name}_pct"] = (
                stats[f"{prefix}_{name}_pct"] if stats else np.nan
            )
    return columns


def _normalised(
    stats: Mapping[str, float] | None, prefix: str, groups: tuple[str, ...]
) -> list[float] | None:
    if not stats:
        return None
    values = np.array([stats[f"{prefix}_{g}_pct"] for g in groups], dtype=float)
    return [float(v) for v in values / values.sum()]


def map_occupations(config: OccupationsConfig, wordnet=None) -> pd.DataFrame:
    """One row per FACET occupation: flags, WordNet aliases, U.S./E.U. statistics."""
    return build_occupation_tables(config, wordnet).table


def alias_collisions(config: OccupationsConfig, wordnet=None) -> pd.DataFrame:
    """Every alias more than one occupation claimed, and who got it."""
    return build_occupation_tables(config, wordnet).collisions


def write_occupations(config: OccupationsConfig, out_dir: str | Path) -> dict[str, Path]:
    """Stage body: ``occupations.parquet`` and ``alias_collisions.parquet`` under ``out_dir``."""
    tables = build_occupation_tables(config)
    out = Path(out_dir)
    return {
        "occupations": write_parquet(tables.table, out / "occupations.parquet"),
        "alias_collisions": write_parquet(tables.collisions, out / "alias_collisions.parquet"),
    }
