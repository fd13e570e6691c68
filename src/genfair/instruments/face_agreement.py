"""How far two configurations of the demographic instrument agree, image by image: the
check behind every speed option (a smaller detection copy, another detector) that may move a
box by a pixel. The reference is the first configuration (the default); agreement is counted
per reference group, so an option that fails one gender, age group or skin group shows there.

Per image, paired by ``image_id``:

* ``identical``: every reading equal (status, and per face box, gender, confidence, age, ITA,
  Monk level, groups, skin pixels; faces in box order);
* ``has_face`` / ``n_faces``: the detector's verdicts equal;
* ``iou``: the primary faces' box intersection over union (both found a face);
* ``gender`` / ``age_group`` / ``skin_group``: the primary faces' readings equal (or neither
  configuration finds a face); an image where only one of them finds a face disagrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple
from typing import Any

import pandas as pd

from genfair.instruments.face_demographics import Box, ImageRecord

__all__ = ["GROUPED", "agreement", "agreement_by_group", "readings_of"]

#: the primary face's readings whose agreement is reported per reference group
GROUPED = ("gender", "age_group", "skin_group")


def readings_of(record: ImageRecord) -> tuple[Any, ...]:
    """Everything the instrument read off one image, faces in box order (a detector's own
    order can depend on its threads)."""
    faces = sorted(astuple(f) for f in record.faces)
    return record.status, tuple(faces)


def _iou(a: Box, b: Box) -> float:
    w = min(a.x + a.w, b.x + b.w) - max(a.x, b.x)
    h = min(a.y + a.h, b.y + b.h) - max(a.y, b.y)
    inter = max(0, w) * max(0, h)
    union = a.w * a.h + b.w * b.h - inter
    return inter / union if union else 0.0


def agreement(reference: Sequence[ImageRecord], other: Sequence[ImageRecord]) -> pd.DataFrame:
    """One row per image: the reference's primary-face groups and whether ``other`` agrees
    (see the module docstring)."""
    by_id = {r.image_id: r for r in other}
    if set(by_id) != {r.image_id for r in reference}:
        raise ValueError("the two runs measured different images; pair them by image_id")
    rows = []
    for ref in reference:
        oth = by_id[ref.image_id]
        a, b = ref.primary, oth.primary
        row: dict[str, Any] = {
            "image_id": ref.image_id,
            "identical": readings_of(ref) == readings_of(oth),
            "has_face": (ref.n_faces > 0) == (oth.n_faces > 0),
            "n_faces": ref.n_faces == oth.n_faces,
            "iou": _iou(a.box, b.box) if a and b and a.box and b.box else float("nan"),
        }
        for key in GROUPED:
            row[f"ref_{key}"] = getattr(a, key) if a else None
            row[key] = (a is None and b is None) or (
                a is not None and b is not None and getattr(a, key) == getattr(b, key)
            )
        rows.append(row)
    return pd.DataFrame(rows)


def agreement_by_group(table: pd.DataFrame) -> pd.DataFrame:
    """Per attribute and reference group (images whose reference primary face is in it):
    ``n`` and the share of them on which the other configuration gives the same reading."""
    rows = []
    for key in GROUPED:
        sub = table[table[f"ref_{key}"].notna()]
        for group, part in sub.groupby(f"ref_{key}", sort=True):
            rows.append(
                {"attribute": key, "group": group, "n": len(part), "agree": part[key].mean()}
            )
    return pd.DataFrame(rows, columns=["attribute", "group", "n", "agree"])
