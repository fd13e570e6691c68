"""A small FACET-format release built from photos shipped with scikit-image: a FIXTURE.

The real FACET release (Meta, by request under its own licence) cannot ship with genfair,
so the default study curates this instead. It has FACET's layout and columns
(``images/`` + ``annotations.csv``) and exercises every path of ``curate_facet``:

- ``astronaut.png``: ``skimage.data.astronaut()`` (Eileen Collins, a NASA astronaut), one
  annotated person; box set by hand from the photo (her hair top to the frame's bottom,
  left sleeve to right shoulder);
- ``lfw_single_*.png`` / ``lfw_group_*.png``: faces from ``skimage.data.lfw_subset()``
  (25x25 px, upscaled to 100x100) pasted on grey canvases, one or several per image (one
  touches the left border, so its crop is padded); boxes are the paste rectangles, exact
  by construction;
- ``camera.png`` (the cameraman) has no row: the HOG person detector finds him;
- ``coffee.png`` and ``chelsea.png`` (a cup, a cat) have no row and no person.

Occupation, gender, age and skin-tone votes of the pasted faces are NOT knowable from the
photos: they are fixture labels assigned by a fixed schedule so every group occurs; the
astronaut's class is true, her other labels are fixture labels too. Every row has
``fixture=True`` and the folder's README says it is not FACET. No malformed rows here:
tests add their own.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

from genfair.curation.config import FACET_CLASSES
from genfair.curation.facet import (
    AGE_COLUMNS,
    GENDER_COLUMNS,
    SKIN_COLUMNS,
)

FIXTURE_COLUMNS = [
    "person_id",
    "filename",
    "class1",
    "class2",
    *GENDER_COLUMNS.values(),
    *SKIN_COLUMNS,
    "skin_tone_na",
    *AGE_COLUMNS.values(),
    "bounding_box",
    "fixture",
]
FACE_PX = 100
#: the astronaut's box, read off the 512x512 photo by eye (see the module docstring)
ASTRONAUT_BOX = {"x": 18, "y": 14, "width": 348, "height": 498}
#: (file, canvas width x height, top-left corners of the pasted faces)
CANVASES: list[tuple[str, tuple[int, int], list[tuple[int, int]]]] = [
    ("lfw_single_1.png", (300, 300), [(100, 60)]),
    ("lfw_single_2.png", (300, 300), [(0, 120)]),  # at the left border: the crop is padded
    ("lfw_single_3.png", (320, 240), [(180, 40)]),
    ("lfw_single_4.png", (240, 320), [(70, 150)]),
    ("lfw_group_1.png", (420, 200), [(20, 50), (160, 40), (300, 60)]),
    ("lfw_group_2.png", (300, 180), [(30, 40), (170, 50)]),
]
#: fixture label schedules, cycled over the pasted faces so every group appears
_GENDERS = ["masc", "fem", "fem", "masc", "non_binary", "na"]
_AGES = ["young", "middle", "older", "middle", "young", "na"]
#: annotator votes per MST level 1..10 (three annotators, as FACET has for most persons)
_SKIN_VOTES = [
    {2: 2, 3: 1},  # median 2 -> light
    {5: 2, 6: 1},  # median 5 -> medium / middle
    {8: 3},  # dark under both presets
    {6: 1, 7: 2},  # median 7 -> dark (lvlm_facet) but middle (iris)
    {1: 1, 4: 1, 9: 1},  # median 4: annotators disagree widely
    {},  # no votes -> unknown
]
README = """# FACET-format FIXTURE (not FACET)

This folder is a small, synthetic stand-in built by `genfair.curation.facet_fixture` from
photos shipped with scikit-image, in the layout and columns of Meta's FACET release
(`images/`, `annotations.csv`). It lets the default study run offline. It is NOT FACET:

- the faces are 25x25 px LFW thumbnails pasted on grey canvases;
- occupations (except the astronaut's), gender presentation, age and skin-tone votes are
  FIXTURE LABELS assigned by a fixed schedule, not annotations of the people shown;
- every row has `fixture=True`; results computed on it say nothing about any model's
  fairness on real people.

Point `release_dir` at a real FACET release for real results.
"""


def _png(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def _rgb(array: np.ndarray) -> np.ndarray:
    if array.dtype != np.uint8:
        array = np.clip(np.round(array * 255), 0, 255).astype(np.uint8)
    return np.stack([array] * 3, axis=-1) if array.ndim == 2 else array[..., :3]


def _row(person_id: str, filename: str, cls: str, box: dict[str, int], k: int) -> dict[str, str]:
    gender, age, votes = _GENDERS[k % 6], _AGES[k % 6], _SKIN_VOTES[k % 6]
    row = {
        "person_id": person_id,
        "filename": filename,
        "class1": cls,
        "class2": "",
        **{c: str(int(c.endswith("_" + gender))) for c in GENDER_COLUMNS.values()},
        **{c: str(votes.get(level, 0)) for level, c in enumerate(SKIN_COLUMNS, start=1)},
        "skin_tone_na": str(int(not votes)),
        **{c: str(int(c.endswith("_" + age))) for c in AGE_COLUMNS.values()},
        "bounding_box": json.dumps(box, sort_keys=True),
        "fixture": "True",
    }
    return row


def build_facet_fixture(out_dir: Path) -> Path:
    """Write the fixture release into ``out_dir`` (``images/``, ``annotations.csv``,
    ``README.md``) and return ``out_dir``. Deterministic: same package versions, same bytes."""
    from skimage import data  # noqa: PLC0415 - heavy import, only needed here

    out_dir = Path(out_dir)
    images = out_dir / "images"
    images.mkdir(parents=True, exist_ok=True)
    files: dict[str, np.ndarray] = {
        "astronaut.png": _rgb(data.astronaut()),
        "camera.png": _rgb(data.camera()),
        "coffee.png": _rgb(data.coffee()),
        "chelsea.png": _rgb(data.chelsea()),
    }
    rows = [_row("1", "astronaut.png", "astronaut", ASTRONAUT_BOX, 1)]
    faces = data.lfw_subset()[:100]  # the first 100 are faces, the last 100 are not
    occupations = [c for c in FACET_CLASSES if c != "astronaut"]
    k = 0
    for name, (width, height), corners in CANVASES:
        canvas = np.full((height, width, 3), 128, np.uint8)
        for x, y in corners:
            face = Image.fromarray(_rgb(faces[k * 7 % 100])).resize(
                (FACE_PX, FACE_PX), Image.Resampling.LANCZOS
            )
            canvas[y : y + FACE_PX, x : x + FACE_PX] = np.asarray(face)
            box = {"x": x, "y": y, "width": FACE_PX, "height": FACE_PX}
            rows.append(_row(str(100 + k), name, occupations[k * 5 % len(occupations)], box, k))
            k += 1
        files[name] = canvas
    for name, array in sorted(files.items()):
        (images / name).write_bytes(_png(array))
    with (out_dir / "annotations.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIXTURE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    (out_dir / "README.md").write_text(README, encoding="utf-8")
    return out_dir
