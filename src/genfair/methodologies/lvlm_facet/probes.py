"""Probe rows of paper 004: one per selected image and prompt kind.

A row names the image shown (the whole FACET image, as the paper; or curation's person
crop), the prompt text (:mod:`.prompts`; the single-choice questions ask about the image's
own class), the prompt kind, and the person's class and groups, which the metrics group by
and a simulator reads (they are never sent to a real model).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import pandas as pd

from genfair.curation.config import FACET_CLASSES
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES
from genfair.methodologies.lvlm_facet.prompts import (
    PROMPT_IDS,
    PROMPT_KINDS,
    direct_prompt,
    single_choice_prompt,
)

__all__ = ["PROBE_COLUMNS", "probe_rows"]

PROBE_COLUMNS = [
    "probe_id",
    "person_id",
    "prompt",
    "prompt_id",
    "text",
    "image_path",
    "class",
    *ATTRIBUTES,
]


def probe_rows(
    persons: pd.DataFrame,
    images_dir: str | Path,
    prompts: Sequence[str] = PROMPT_KINDS,
    listed_classes: Sequence[str] = FACET_CLASSES,
    shuffle_seed: int | None = None,
    class_display: Literal["raw", "spaced"] = "raw",
    image: Literal["image", "crop"] = "image",
) -> pd.DataFrame:
    """Rows for a :func:`.groups.lvlm_persons` table. ``images_dir`` is the FACET release's
    image folder (``image="image"``, each row's ``filename``) or curation's output folder
    (``image="crop"``, each row's ``crop_path``). ``listed_classes`` are the classes the
    direct question lists (all 52, as the paper, whatever subset is evaluated)."""
    unknown = sorted(set(prompts) - set(PROMPT_KINDS))
    if unknown or not prompts:
        raise ValueError(f"prompts {list(prompts)}: use some of {list(PROMPT_KINDS)}")
    column = "filename" if image == "image" else "crop_path"
    if column not in persons.columns:
        raise ValueError(f"persons table has no {column!r} column for image={image!r}")
    direct = direct_prompt(listed_classes, shuffle_seed, class_display)
    folder = Path(images_dir)
    rows = []
    for prompt in prompts:
        for person in persons.to_dict("records"):  # "class" is no attribute name
            cls = person["class"]
            text = (
                direct if prompt == "direct" else single_choice_prompt(cls, prompt, class_display)
            )  # type: ignore[arg-type]
            rows.append({
                "probe_id": f"{person['person_id']}:{prompt}",
                "person_id": person["person_id"],
                "prompt": prompt,
                "prompt_id": PROMPT_IDS[prompt],
                "text": text,
                "image_path": str(folder / person[column]),
                "class": cls,
                **{a: person[a] for a in ATTRIBUTES},
            })  # fmt: skip
    return pd.DataFrame(rows, columns=PROBE_COLUMNS)
