"""Which FACET persons paper 004 evaluates, and their demographic groups.

Input: ``persons.parquet`` of the ``curate_facet`` stage (:mod:`genfair.curation.facet`),
one row per annotated person with ``occupation`` (FACET ``class1``), the majority
``gender`` (male / female / non_binary / unknown) and ``age_group`` (young / middle /
older / unknown) and the annotators' Monk Skin Tone vote counts ``skin_tone_1..10``.

Selection (paper §2.1, "we selected only images containing a single person"): persons from
annotation rows (not the person detector) whose image has exactly one annotated person
(``n_persons_in_image == 1``), in the configured class subset (the paper's results use 13
classes, :data:`PAPER_CLASSES`; ``"all"`` keeps FACET's 52).

Groups (paper Appendix A.3):

- gender presentation: ``male`` (masc), ``female`` (fem); non-binary and unknown ->
  ``unknown`` (the paper's Table 1 has Male / Female / Unknown only);
- age: FACET's perceived age presentation, whose buckets are the paper's: ``younger``
  (< 25), ``middle`` (25-65), ``older`` (> 65); FACET's ``na`` -> ``unknown``;
- skin tone: light (MST 1-3), medium (4-6), dark (7-10). How several annotators' votes
  become one group is not stated in the paper; :data:`SKIN_RULES`:

  * ``majority_bucket`` (default): votes summed per bucket, the bucket with strictly the
    most votes; a tie between buckets -> ``unknown``;
  * ``median_level``: the lower median of the pooled votes, then its bucket;
  * ``majority_level``: the most-voted level (ties: lower median of the tied levels, as
    curation's ``monk_rule="majority"``), then its bucket.

  No votes -> ``unknown`` under every rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from genfair.curation.config import FACET_CLASSES
from genfair.curation.facet import SKIN_COLUMNS, monk_level, skin_group

__all__ = [
    "ATTRIBUTES",
    "DISPARITY_PAIRS",
    "GROUPS",
    "PAPER_CLASSES",
    "SKIN_RULES",
    "age_group",
    "gender_group",
    "lvlm_persons",
    "resolve_classes",
    "skin_tone_group",
]

#: the 13 classes of the paper's Table 2 and appendix tables, in the paper's order
PAPER_CLASSES: tuple[str, ...] = (
    "gardener", "craftsman", "laborer", "skateboarder", "prayer", "guitarist", "singer",
    "dancer", "retailer", "nurse", "student", "gymnast", "horseman",
)  # fmt: skip
ATTRIBUTES = ("gender", "skin_tone", "age")
#: each attribute's groups in the paper's table order (``unknown`` is never a column)
GROUPS: dict[str, tuple[str, ...]] = {
    "gender": ("male", "female"),
    "skin_tone": ("light", "medium", "dark"),
    "age": ("younger", "middle", "older"),
}
#: the paper's headline disparity per attribute: recall(a) - recall(b) (Table 2)
DISPARITY_PAIRS: dict[str, tuple[str, str]] = {
    "gender": ("male", "female"),
    "skin_tone": ("light", "dark"),
    "age": ("younger", "older"),
}
SKIN_RULES = ("majority_bucket", "median_level", "majority_level")
SkinRule = Literal["majority_bucket", "median_level", "majority_level"]
#: (lowest, highest) MST level per bucket, paper 004 Appendix A.3
SKIN_BUCKETS: dict[str, tuple[int, int]] = {"light": (1, 3), "medium": (4, 6), "dark": (7, 10)}
_GENDER = {"male": "male", "female": "female", "non_binary": "unknown", "unknown": "unknown"}
_AGE = {"young": "younger", "middle": "middle", "older": "older", "unknown": "unknown"}
_CURATED_COLUMNS = ["person_id", "filename", "occupation", "gender", "age_group",
                    "n_persons_in_image", "source", *SKIN_COLUMNS]  # fmt: skip


def resolve_classes(classes: str | Sequence[str]) -> tuple[str, ...]:
    """``"paper"`` -> the 13 classes of the paper, ``"all"`` -> FACET's 52, or a list of
    FACET class names (validated)."""
    if isinstance(classes, str):
        if classes == "paper":
            return PAPER_CLASSES
        if classes == "all":
            return FACET_CLASSES
        raise ValueError(f"classes: {classes!r} is not a preset; use 'paper', 'all' or a list")
    chosen = tuple(dict.fromkeys(classes))
    unknown = sorted(set(chosen) - set(FACET_CLASSES))
    if unknown or not chosen:
        raise ValueError(
            f"classes: unknown FACET class(es) {unknown} (or an empty list); use names from "
            "genfair.curation.config.FACET_CLASSES"
        )
    return chosen


def gender_group(curated: str) -> str:
    """``male`` / ``female``; non-binary and unknown presentation -> ``unknown``."""
    try:
        return _GENDER[curated]
    except KeyError:
        raise ValueError(
            f"gender {curated!r} is not a curated FACET value {sorted(_GENDER)}"
        ) from None


def age_group(curated: str) -> str:
    """FACET's perceived age presentation as the paper names it (younger / middle / older)."""
    try:
        return _AGE[curated]
    except KeyError:
        raise ValueError(
            f"age_group {curated!r} is not a curated FACET value {sorted(_AGE)}"
        ) from None


def skin_tone_group(votes: Sequence[int], rule: SkinRule = "majority_bucket") -> str:
    """light / medium / dark / unknown from the vote counts for MST 1..10 (see module doc)."""
    if len(votes) != 10 or any(int(v) < 0 for v in votes):
        raise ValueError(f"need 10 non-negative MST vote counts, got {list(votes)}")
    if sum(votes) == 0:
        return "unknown"
    if rule == "majority_bucket":
        totals = {name: sum(votes[lo - 1 : hi]) for name, (lo, hi) in SKIN_BUCKETS.items()}
        top = max(totals.values())
        winners = [name for name, n in totals.items() if n == top]
        return winners[0] if len(winners) == 1 else "unknown"
    if rule in ("median_level", "majority_level"):
        level = monk_level([int(v) for v in votes], rule.removesuffix("_level"))
        return skin_group(level, "lvlm_facet")
    raise ValueError(f"skin rule {rule!r} is not one of {SKIN_RULES}")


def lvlm_persons(
    persons: pd.DataFrame,
    classes: str | Sequence[str] = "paper",
    skin_rule: SkinRule = "majority_bucket",
    source: str = "persons.parquet",
) -> pd.DataFrame:
    """The evaluated persons (one per single-person image) with their groups.

    Returns ``person_id, filename, class, gender, skin_tone, age`` (plus ``crop_path`` and
    ``fixture`` / ``simulated`` when present), sorted by class then person id. ``source``
    names the table in error messages."""
    missing = [c for c in _CURATED_COLUMNS if c not in persons.columns]
    if missing:
        raise ValueError(
            f"{source}: missing column(s) {missing}; rebuild it with the curate_facet stage "
            "(genfair.curation.facet.curate_facet), which writes them"
        )
    chosen = resolve_classes(classes)
    keep = (
        (persons["source"] == "annotation")
        & (persons["n_persons_in_image"] == 1)
        & persons["occupation"].isin(chosen)
    )
    table = persons.loc[keep]
    votes = table[list(SKIN_COLUMNS)].to_numpy(dtype=np.int64)
    out = pd.DataFrame(
        {
            "person_id": table["person_id"].astype(str).to_numpy(),
            "filename": table["filename"].to_numpy(),
            "class": table["occupation"].to_numpy(),
            "gender": [gender_group(g) for g in table["gender"]],
            "skin_tone": [skin_tone_group(v, skin_rule) for v in votes],
            "age": [age_group(a) for a in table["age_group"]],
        }
    )
    for extra in ("crop_path", "fixture", "simulated"):
        if extra in table.columns:
            out[extra] = table[extra].to_numpy()
    order = {c: i for i, c in enumerate(chosen)}
    out = out.sort_values(
        ["class", "person_id"], key=lambda s: s.map(order) if s.name == "class" else s
    )
    return out.reset_index(drop=True)
