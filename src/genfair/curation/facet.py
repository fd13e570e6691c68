"""The ``curate_facet`` stage: one square person crop per FACET annotation, with its labels.

FACET (Gustafson et al., ICCV 2023) annotates every person in an image: an occupation class
(``class1``, one of 52), perceived gender presentation, perceived age and Monk skin tone
(MST, 1-10) votes, and a person bounding box. Two papers use it:

- paper 004 (``lvlm_facet``) keeps only images with a single person and groups skin tone
  as light MST 1-3 / medium 4-6 / dark 7-10;
- paper 002 (``iris``) cuts one 384x384 crop per person (several per multi-person image),
  inheriting the annotations, and groups skin tone as light 1-3 / middle 4-7 / dark 8-10.

This module writes ``crops/<person_id>.png``, ``persons.parquet`` and ``report.json`` into
an output folder. Rules where the papers are silent (documented in docs/methodology.md):

- crop: a square centred on the box centre, side ``max(w, h) * margin``, the part outside the
  image padded (black by default, or edge pixels), resized to ``crop_size`` with Lanczos;
- Monk level: the lower median of the pooled annotator votes (``monk_rule="median"``) or
  the most-voted level (``"majority"``; a tie takes the lower median of the tied levels);
- gender / age: the presentation column with strictly the most votes; a tie or a
  ``_na`` win gives ``unknown``;
- ``n_persons_in_image`` counts every annotation row naming the image, bad rows included
  (a person with a broken box is still in the picture), so ``single_person_only`` never
  keeps an image that really shows two people.

Images in ``images_dir`` that no row names can go through OpenCV's HOG people detector
(``detector.enabled``); its persons carry ``source="detector"`` and no labels.

Bad rows (unparsable box, NaN or infinite coordinates, a side under one pixel, empty or
unsafe file name, duplicate id,
unreadable image...) are listed in the report with their 1-based data row number (the
header is not counted) and never stop the run; rows naming an image that does not exist
are counted as missing images. Output bytes depend only on the inputs and the config.

Memory is bounded per image: an image whose header declares more than ``max_image_pixels``
is never decoded (each of its rows is a bad row), and a box whose square (side
``max(w, h)``) covers more than ``max_box_area_ratio`` times the image's area is a bad row, so
the padded crop square never exceeds ``margin² * max_box_area_ratio * max_image_pixels``
pixels. Decoding needs 3 bytes per pixel: with the defaults at most 120 MB for the image and
about 350 MB for a crop square.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError
from PIL.PngImagePlugin import PngInfo

from genfair.curation.config import DetectorConfig, FacetConfig
from genfair.io import check_file_size, file_sha256, write_bytes, write_json, write_parquet
from genfair.logs import progress as show_progress

log = logging.getLogger(__name__)

GENDER_COLUMNS = {
    "male": "gender_presentation_masc",
    "female": "gender_presentation_fem",
    "non_binary": "gender_presentation_non_binary",
    "unknown": "gender_presentation_na",
}
AGE_COLUMNS = {
    "young": "age_presentation_young",
    "middle": "age_presentation_middle",
    "older": "age_presentation_older",
    "unknown": "age_presentation_na",
}
SKIN_COLUMNS = [f"skin_tone_{level}" for level in range(1, 11)]
REQUIRED_COLUMNS = [
    "person_id",
    "filename",
    "class1",
    *GENDER_COLUMNS.values(),
    *SKIN_COLUMNS,
    *AGE_COLUMNS.values(),
    "bounding_box",
]
#: (upper MST bound, group) per preset; paper 002 (IRIS) and paper 004 (LVLM on FACET)
SKIN_GROUP_PRESETS: dict[str, list[tuple[int, str]]] = {
    "iris": [(3, "light"), (7, "middle"), (10, "dark")],
    "lvlm_facet": [(3, "light"), (6, "medium"), (10, "dark")],
}
PERSON_COLUMNS = [
    "person_id",
    "filename",
    "crop_path",
    "occupation",
    "gender",
    "monk_level",
    "skin_group",
    "age_group",
    "box_x",
    "box_y",
    "box_width",
    "box_height",
    "n_persons_in_image",
    "source",
    "fixture",
    "crop_sha256",
    *SKIN_COLUMNS,  # the annotators' MST vote counts as released (0 for detected persons)
]
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}
_KEY_CHUNK = "genfair:crop_key"
_CROP_FIELDS = {"crop_size", "margin", "crop_side", "pad_mode", "pad_value"}
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class FacetAnnotationError(ValueError):
    """The annotations file cannot be used at all; the message names the file and the fix."""


@dataclass
class CurationReport:
    """What happened to every row; ``as_dict`` is written to ``report.json``."""

    rows: int = 0
    persons_written: int = 0
    persons_annotated: int = 0
    persons_detected: int = 0
    bad_rows: list[dict[str, Any]] = field(default_factory=list)  #: row, person_id, reason
    missing_images: dict[str, list[int]] = field(default_factory=dict)  #: filename -> rows
    filtered: Counter[str] = field(default_factory=Counter)
    detector_images: int = 0
    images_without_person: list[str] = field(default_factory=list)
    fixture: bool = False
    #: crops found already written with the same key (not in the JSON: it depends on history)
    reused: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "persons_written": self.persons_written,
            "persons_annotated": self.persons_annotated,
            "persons_detected": self.persons_detected,
            "bad_rows": sorted(self.bad_rows, key=lambda b: b["row"]),
            "n_bad_rows": len(self.bad_rows),
            "missing_images": {
                "count": len(self.missing_images),
                "rows": sum(len(r) for r in self.missing_images.values()),
                "files": dict(sorted(self.missing_images.items())),
            },
            "filtered": dict(sorted(self.filtered.items())),
            "detector": {
                "images": self.detector_images,
                "images_without_person": sorted(self.images_without_person),
            },
            "fixture": self.fixture,
        }


# --- labels -----------------------------------------------------------------------------


def _lower_median(levels: list[int]) -> int:
    ordered = sorted(levels)
    return ordered[(len(ordered) - 1) // 2]


def monk_level(votes: list[int] | tuple[int, ...], rule: str = "median") -> int | None:
    """The MST level (1-10) from annotator vote counts ``votes[i]`` for level ``i + 1``.

    ``median``: the lower median of all votes pooled; ``majority``: the most-voted level,
    a tie resolved by the lower median of the tied levels. No votes -> None."""
    if len(votes) != 10:
        raise ValueError(f"need 10 vote counts (MST 1-10), got {len(votes)}")
    if sum(votes) == 0:
        return None
    if rule == "median":
        return _lower_median([lvl for lvl, n in enumerate(votes, start=1) for _ in range(n)])
    if rule == "majority":
        top = max(votes)
        return _lower_median([lvl for lvl, n in enumerate(votes, start=1) if n == top])
    raise ValueError(f"unknown monk rule {rule!r}; use 'median' or 'majority'")


def skin_group(level: int | None, preset: str) -> str:
    """The skin-tone group of an MST level under a preset; None -> ``unknown``."""
    if level is None:
        return "unknown"
    for upper, name in SKIN_GROUP_PRESETS[preset]:
        if level <= upper:
            return name
    raise ValueError(f"MST level {level} is outside 1-10")


def majority_label(counts: dict[str, int]) -> str:
    """The label with strictly the most votes; ties and all-zero give ``unknown``."""
    top = max(counts.values())
    winners = [label for label, n in counts.items() if n == top]
    return winners[0] if top > 0 and len(winners) == 1 else "unknown"


# --- rows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float


class _BadRow(ValueError):
    pass


#: a box side below this (pixels of the stored image) is a bad row: its crop would be empty
MIN_BOX_SIDE_PX = 1.0


def parse_box(text: str) -> Box:
    """FACET's ``bounding_box`` cell: a JSON object with x, y, width, height (pixels)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _BadRow(f"bounding_box is not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise _BadRow("bounding_box is not a JSON object")
    missing = [k for k in ("x", "y", "width", "height") if k not in data]
    if missing:
        raise _BadRow(f"bounding_box lacks {missing}")
    values = {}
    for key in ("x", "y", "width", "height"):
        value = data[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value):
            raise _BadRow(f"bounding_box {key} is not a finite number: {value!r}")
        values[key] = float(value)
    if values["width"] <= 0 or values["height"] <= 0:
        raise _BadRow(f"bounding_box has a non-positive size {values['width']}x{values['height']}")
    if values["width"] < MIN_BOX_SIDE_PX or values["height"] < MIN_BOX_SIDE_PX:
        # its crop (side max(w, h) * margin, margin >= 1) would be under a pixel: nothing to see
        raise _BadRow(
            f"bounding_box {values['width']:g}x{values['height']:g} has a side under "
            f"{MIN_BOX_SIDE_PX:g} pixel: fix the box"
        )
    if not (
        math.isfinite(values["x"] + values["width"])
        and math.isfinite(values["y"] + values["height"])
    ):
        raise _BadRow("bounding_box reaches past the largest number a float holds: fix the box")
    return Box(**values)


def _count(record: dict[str, str], column: str) -> int:
    text = (record.get(column) or "").strip()
    try:
        value = float(text) if text else 0.0
    except ValueError as exc:
        raise _BadRow(f"{column} is not a number: {text!r}") from exc
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise _BadRow(f"{column} is not a non-negative whole count: {text!r}")
    return int(value)


def _safe_filename(name: str) -> str:
    name = name.strip()
    if not name:
        raise _BadRow("empty filename")
    if "/" in name or "\\" in name or name in {".", ".."}:
        raise _BadRow(f"filename {name!r} is not a plain file name")
    if Path(name).suffix.lower() not in IMAGE_SUFFIXES:
        raise _BadRow(f"filename {name!r} is not an image ({sorted(IMAGE_SUFFIXES)})")
    return name


def _truthy(text: str | None) -> bool:
    return (text or "").strip().lower() in {"1", "true", "yes"}


def _read_annotations(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str] | str]]]:
    """Header and ``(data row number, record or why it is malformed)``."""
    if not path.is_file():
        raise FacetAnnotationError(
            f"{path}: no such file; set release_dir/annotations_file to the FACET "
            "release's annotations.csv"
        )
    raw = check_file_size(path, FacetAnnotationError).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise FacetAnnotationError(
            f"{path}: line {line} (byte {exc.start}) is not UTF-8; save the file as UTF-8 "
            "(FACET's annotations.csv is)"
        ) from None
    with io.StringIO(text, newline="") as fh:
        # strict: an unclosed quote is an error, not a cell that silently swallows the rest
        reader = csv.reader(fh, strict=True)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise FacetAnnotationError(f"{path}: empty file; expected FACET's header row") from None
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise FacetAnnotationError(
                f"{path}: missing column(s) {missing}; found {header}. FACET's annotations.csv "
                "has them: point annotations_file at the release's file, or add the columns "
                "(vote counts may be 0)."
            )
        rows: list[tuple[int, dict[str, str] | str]] = []
        try:
            for number, cells in enumerate(reader, start=1):
                if not any(c.strip() for c in cells):
                    rows.append((number, "blank row"))
                elif len(cells) != len(header):
                    rows.append((number, f"{len(cells)} fields, the header has {len(header)}"))
                else:
                    rows.append((number, dict(zip(header, cells, strict=True))))
        except csv.Error as exc:
            raise FacetAnnotationError(
                f"{path}: CSV syntax error at line {reader.line_num}, after data row {len(rows)} "
                f"({exc}); fix the quoting"
            ) from exc
    return header, rows


@dataclass
class _Person:
    row: int | None
    person_id: str
    filename: str
    occupation: str | None
    gender: str
    monk_level: int | None
    age_group: str
    box: Box
    source: str
    fixture: bool
    n_persons_in_image: int = 0
    #: annotator vote counts for MST 1..10, kept so other aggregations stay possible
    skin_votes: tuple[int, ...] = (0,) * 10


def _parse_row(record: dict[str, str], row: int, cfg: FacetConfig) -> _Person:
    person_id = record["person_id"].strip()
    if not _SAFE_ID.match(person_id):
        raise _BadRow(f"person_id {person_id!r} is empty or not usable as a file name")
    filename = _safe_filename(record["filename"])
    occupation = record["class1"].strip()
    if not occupation:
        raise _BadRow("empty class1")
    box = parse_box(record["bounding_box"])
    gender = majority_label({g: _count(record, c) for g, c in GENDER_COLUMNS.items()})
    age = majority_label({a: _count(record, c) for a, c in AGE_COLUMNS.items()})
    votes = [_count(record, c) for c in SKIN_COLUMNS]
    return _Person(
        row=row,
        person_id=person_id,
        filename=filename,
        occupation=occupation,
        gender=gender,
        monk_level=monk_level(votes, cfg.monk_rule),
        age_group=age,
        box=box,
        source="annotation",
        fixture=_truthy(record.get("fixture")),
        skin_votes=tuple(votes),
    )


# --- images and crops -------------------------------------------------------------------


class _ImageTooLarge(ValueError):
    pass


# what a damaged, truncated or mislabelled image file raises in PIL (SyntaxError: "broken PNG
# file"; DecompressionBombError is not an OSError); MemoryError: a last line of defence
_IMAGE_ERRORS = (
    OSError,
    ValueError,
    SyntaxError,
    EOFError,
    MemoryError,
    Image.DecompressionBombError,
)


def image_size(path: Path, max_pixels: int | None = None) -> tuple[int, int]:
    """(width, height) from the image's header, without decoding its pixels.

    Raises ``_ImageTooLarge`` above ``max_pixels`` or PIL's own decompression-bomb limit,
    ``OSError``/``UnidentifiedImageError`` for a file that is not a readable image."""
    try:
        with warnings.catch_warnings():
            # between MAX_IMAGE_PIXELS and twice that PIL only warns: max_pixels decides here
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                width, height = img.size
    except Image.DecompressionBombError as exc:
        raise _ImageTooLarge(f"image {path.name} is too large for PIL ({exc})") from None
    if max_pixels is not None and width * height > max_pixels:
        raise _ImageTooLarge(
            f"image {path.name} is {width}x{height} = {width * height} pixels, above "
            f"max_image_pixels={max_pixels}; downscale it (and its boxes) or raise "
            "curation.facet.max_image_pixels"
        )
    return width, height


def load_rgb(path: Path, max_pixels: int | None = None) -> np.ndarray:
    """An image as an HxWx3 uint8 RGB array (pixel orientation as stored, EXIF ignored,
    because FACET's boxes are in stored pixel coordinates); its size is checked against
    ``max_pixels`` from the header before any pixel is decoded."""
    image_size(path, max_pixels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        with Image.open(path) as img:
            return np.asarray(img.convert("RGB"))


def check_box_area(box: Box, size: tuple[int, int], max_ratio: float) -> None:
    """Refuse a box whose square (side ``max(w, h)``) covers more than ``max_ratio`` times the
    image's area: its crop would be a padded square of that size in memory."""
    side = max(box.width, box.height)
    ratio = (side / size[0]) * (side / size[1])  # never squares a huge side: no OverflowError
    if ratio > max_ratio:
        raise _BadRow(
            f"bounding_box {box.width:g}x{box.height:g} is absurd for the {size[0]}x{size[1]} "
            f"image (its square is {ratio:.3g} times the image's area, max_box_area_ratio="
            f"{max_ratio:g}); fix the box"
        )


def crop_person(image: np.ndarray, box: Box, cfg: FacetConfig) -> np.ndarray:
    """A ``crop_size`` square RGB crop centred on the box centre, padded outside the image."""
    cx, cy = box.x + box.width / 2, box.y + box.height / 2
    side = cfg.crop_size if cfg.crop_side == "fixed" else max(box.width, box.height) * cfg.margin
    side_px = max(1, round(side))
    left, top = math.floor(cx - side_px / 2 + 0.5), math.floor(cy - side_px / 2 + 0.5)
    h, w = image.shape[:2]
    pads = ((max(0, -top), max(0, top + side_px - h)), (max(0, -left), max(0, left + side_px - w)))
    inner = image[max(0, top) : min(h, top + side_px), max(0, left) : min(w, left + side_px)]
    if inner.size == 0:
        raise _BadRow(f"bounding_box {box} lies outside the {w}x{h} image")
    if cfg.pad_mode == "constant":
        square = np.pad(inner, (*pads, (0, 0)), mode="constant", constant_values=cfg.pad_value)
    else:
        square = np.pad(inner, (*pads, (0, 0)), mode="edge")
    if side_px == cfg.crop_size:
        return np.ascontiguousarray(square)
    resized = Image.fromarray(square).resize(
        (cfg.crop_size, cfg.crop_size), Image.Resampling.LANCZOS
    )
    return np.asarray(resized)


def png_bytes(image: np.ndarray, crop_key: str | None = None) -> bytes:
    """PNG whose only metadata is the crop key: the same pixels and key give the same bytes."""
    info = PngInfo()
    if crop_key is not None:
        info.add_text(_KEY_CHUNK, crop_key)
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", pnginfo=info, compress_level=6)
    return buf.getvalue()


# --- person detector --------------------------------------------------------------------


@dataclass(frozen=True)
class Detection:
    box: Box
    score: float


def detect_persons(image: np.ndarray, cfg: DetectorConfig | None = None) -> list[Detection]:
    """People in an RGB image by OpenCV's HOG pedestrian detector, after non-max suppression.

    Boxes are clipped to the image; sorted by left edge, then top. A weak detector: it finds
    upright, mostly full-body people, misses close-up portraits more often than a CNN and
    fires on some vertical textures, which is why FACET's own boxes are preferred."""
    import cv2  # noqa: PLC0415 - only the detector needs OpenCV

    cfg = cfg or DetectorConfig()
    hog = cv2.HOGDescriptor()
    hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
    bgr = np.ascontiguousarray(image[..., ::-1])
    h, w = bgr.shape[:2]
    boxes: list[list[float]] = []
    scores: list[float] = []
    for side in cfg.work_sides:
        f = side / max(h, w)
        size = (max(1, round(w * f)), max(1, round(h * f)))
        interp = cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR
        small = cv2.resize(bgr, size, interpolation=interp)
        b = round(cfg.border_frac * side)
        small = cv2.copyMakeBorder(small, b, b, b, b, cv2.BORDER_REPLICATE)
        if small.shape[0] < 128 or small.shape[1] < 64:
            continue  # smaller than the HOG window: OpenCV may crash on it
        found, weights = hog.detectMultiScale(small, winStride=(4, 4), padding=(8, 8), scale=1.05)
        for (bx, by, bw, bh), score in zip(found, np.ravel(weights), strict=True):
            if score < cfg.min_score:
                continue
            x0, y0 = max(0.0, (bx - b) / f), max(0.0, (by - b) / f)
            x1, y1 = min(float(w), (bx - b + bw) / f), min(float(h), (by - b + bh) / f)
            if x1 - x0 >= 1 and y1 - y0 >= 1:
                boxes.append([x0, y0, x1 - x0, y1 - y0])
                scores.append(float(score))
    if not boxes:
        return []
    keep = np.ravel(cv2.dnn.NMSBoxes(boxes, scores, cfg.min_score, cfg.nms_iou))
    keep = sorted(keep, key=lambda i: -scores[i])[: cfg.max_persons]
    found_boxes = [
        Detection(Box(*(round(v, 1) for v in boxes[i])), round(scores[i], 4)) for i in keep
    ]
    return sorted(found_boxes, key=lambda d: (d.box.x, d.box.y))


# --- the stage --------------------------------------------------------------------------


def _filter_reason(person: _Person, cfg: FacetConfig) -> str | None:
    if cfg.classes is not None and person.occupation not in cfg.classes:
        return "class"
    if cfg.single_person_only and person.n_persons_in_image != 1:
        return "not_single_person"
    if min(person.box.width, person.box.height) < cfg.min_box_px:
        return "box_too_small"
    return None


def _crop_key(image_sha: str, box: Box, cfg: FacetConfig) -> str:
    """What a crop's pixels depend on: the image bytes, the box and the crop settings."""
    spec = {
        "image": image_sha,
        "box": [box.x, box.y, box.width, box.height],
        "crop": cfg.model_dump(include=_CROP_FIELDS),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _stored_key(path: Path) -> str | None:
    """The crop key in an existing crop's PNG text chunk (None if absent or unreadable)."""
    try:
        with Image.open(path) as img:
            return img.text.get(_KEY_CHUNK)  # type: ignore[attr-defined]
    except (OSError, UnidentifiedImageError, ValueError, AttributeError):
        return None


def curate_facet(config: FacetConfig, out_dir: Path, progress: bool = True) -> CurationReport:
    """Write ``out_dir/crops/<person_id>.png``, ``persons.parquet`` and ``report.json``.

    Resumable: each crop PNG carries a key (hash of the source image bytes, the box and the
    crop settings) in a text chunk; a crop whose stored key matches is neither decoded nor
    rewritten. Crops of persons no longer in the table are removed, so the folder matches
    the table. ``report.reused`` counts the skipped crops (not in report.json, which must
    not depend on the run's history)."""
    out_dir = Path(out_dir)
    crops_dir = out_dir / "crops"
    crops_dir.mkdir(parents=True, exist_ok=True)
    report = CurationReport()
    _, rows = _read_annotations(config.annotations_path())
    report.rows = len(rows)
    persons, rows_per_image = _parse_persons(rows, config, report)
    # a release whose every row says fixture=True is a fixture; its detections are too
    fixture = bool(rows) and all(
        not isinstance(r, str) and _truthy(r.get("fixture")) for _, r in rows
    )
    work = _images_to_crop(persons, rows_per_image, config, report)
    table: list[dict[str, Any]] = []
    reused = 0
    for name, group in show_progress(work, desc="facet crops", unit="image") if progress else work:
        records, reused_here = _crop_image(name, group, config, crops_dir, fixture, report)
        table += records
        reused += reused_here
    _remove_stale(crops_dir, {r["person_id"] for r in table})
    _write_table(table, report, out_dir)
    log.info(
        "FACET curation: %d rows -> %d crops (%d reused; %d bad rows, %d missing images, "
        "filtered %s)", report.rows, report.persons_written, reused, len(report.bad_rows),
        len(report.missing_images), dict(report.filtered),
    )  # fmt: skip
    report.reused = reused
    return report


def _parse_persons(
    rows: list[tuple[int, dict[str, str] | str]], cfg: FacetConfig, report: CurationReport
) -> tuple[list[_Person], Counter[str]]:
    """The annotated persons (a row that cannot be read, or repeats a ``person_id``, is a bad
    row) and how many rows name each image."""
    persons: list[_Person] = []
    seen_ids: set[str] = set()
    rows_per_image: Counter[str] = Counter()
    for number, record in rows:
        if isinstance(record, str):
            report.bad_rows.append({"row": number, "person_id": None, "reason": record})
            continue
        name = (record.get("filename") or "").strip()
        if name:
            rows_per_image[name] += 1
        try:
            person = _parse_row(record, number, cfg)
            if person.person_id in seen_ids:
                raise _BadRow(f"duplicate person_id {person.person_id!r}")
        except _BadRow as exc:
            pid = (record.get("person_id") or "").strip() or None
            report.bad_rows.append({"row": number, "person_id": pid, "reason": str(exc)})
            continue
        seen_ids.add(person.person_id)
        persons.append(person)
    for person in persons:
        person.n_persons_in_image = rows_per_image[person.filename]
    return persons, rows_per_image


def _images_to_crop(
    persons: list[_Person], rows_per_image: Counter[str], cfg: FacetConfig, report: CurationReport
) -> list[tuple[str, list[_Person] | None]]:
    """Each image with its annotated persons (an image not on disk is reported missing), then,
    with the detector on, each image of the folder no row names (``None``: detect its persons)."""
    images_dir = cfg.images_path()
    by_image: dict[str, list[_Person]] = defaultdict(list)
    for person in persons:
        if not (images_dir / person.filename).is_file():
            report.missing_images.setdefault(person.filename, []).append(person.row or 0)
            continue
        by_image[person.filename].append(person)
    detect_files: list[str] = []
    if cfg.detector.enabled and images_dir.is_dir():
        detect_files = sorted(
            p.name
            for p in images_dir.iterdir()
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and p.name not in rows_per_image
        )
        report.detector_images = len(detect_files)
    return [(name, by_image[name]) for name in sorted(by_image)] + [(n, None) for n in detect_files]


def _crop_image(
    name: str,
    group: list[_Person] | None,
    cfg: FacetConfig,
    crops_dir: Path,
    fixture: bool,
    report: CurationReport,
) -> tuple[list[dict[str, Any]], int]:
    """The table rows of one image's persons (``group``; ``None``: the detector's), their crops
    written, and how many crops were reused. A person that cannot be cropped is a bad row; an
    image that cannot be decoded (or is too large to) makes a bad row of every person in it not
    yet cropped, and the run goes on."""
    path = cfg.images_path() / name
    loaded: list[np.ndarray] = []

    def image() -> np.ndarray:
        if not loaded:  # decode once, and only if some crop must be made
            loaded.append(load_rgb(path, cfg.max_image_pixels))
        return loaded[0]

    records: list[dict[str, Any]] = []
    reused = 0
    try:
        image_sha = file_sha256(path)
        size = image_size(path, cfg.max_image_pixels)  # header only: nothing decoded
        if group is None:
            group = _detected_persons(name, image(), cfg, fixture)
            if not group:
                report.images_without_person.append(name)
        for person in group:
            reason = _filter_reason(person, cfg)
            if reason is not None:
                report.filtered[reason] += 1
                continue
            try:
                data, stored = _crop(person, image, image_sha, size, cfg, crops_dir)
            except _BadRow as exc:
                report.bad_rows.append(_bad_row(person, str(exc)))
                continue
            reused += stored
            records.append(_person_record(person, hashlib.sha256(data).hexdigest(), cfg))
    except _IMAGE_ERRORS as exc:
        reason, short = _image_error(name, exc)
        done = {r["person_id"] for r in records} | {b["person_id"] for b in report.bad_rows}
        for person in group or []:
            if person.person_id not in done:
                report.bad_rows.append(_bad_row(person, reason))
        if group is None:
            report.images_without_person.append(f"{name} ({short})")
    return records, reused


def _crop(
    person: _Person,
    image: Callable[[], np.ndarray],
    image_sha: str,
    size: tuple[int, int],
    cfg: FacetConfig,
    crops_dir: Path,
) -> tuple[bytes, bool]:
    """The PNG of ``person``'s crop, and whether it was already stored with the same key (not
    decoded nor rewritten then); :class:`_BadRow` if the box cannot be cropped."""
    check_box_area(person.box, size, cfg.max_box_area_ratio)
    key = _crop_key(image_sha, person.box, cfg)
    crop_path = crops_dir / f"{person.person_id}.png"
    if _stored_key(crop_path) == key:
        return crop_path.read_bytes(), True
    data = png_bytes(crop_person(image(), person.box, cfg), key)
    write_bytes(data, crop_path)
    return data, False


def _bad_row(person: _Person, reason: str) -> dict[str, Any]:
    return {"row": person.row, "person_id": person.person_id, "reason": reason}


def _image_error(name: str, exc: BaseException) -> tuple[str, str]:
    """A bad row's reason for the persons of an image that cannot be read, and its short form."""
    if isinstance(exc, _ImageTooLarge):
        return str(exc), "too large"
    if isinstance(exc, MemoryError):
        return f"out of memory on image {name}; lower max_image_pixels", "out of memory"
    return f"unreadable image {name}: {exc}", "unreadable"


def _write_table(table: list[dict[str, Any]], report: CurationReport, out_dir: Path) -> None:
    """``persons.parquet`` (sorted by ``person_id``) and ``report.json``, the report counted."""
    frame = pd.DataFrame(table, columns=PERSON_COLUMNS)
    frame = frame.astype(
        {"monk_level": "Int64", "n_persons_in_image": "int64", "fixture": bool}
        | dict.fromkeys(SKIN_COLUMNS, "int64")
    )
    frame = frame.sort_values("person_id", kind="stable", ignore_index=True)
    report.persons_written = len(frame)
    report.persons_annotated = int((frame["source"] == "annotation").sum())
    report.persons_detected = int((frame["source"] == "detector").sum())
    report.fixture = bool(len(frame)) and bool(frame["fixture"].all())
    write_parquet(frame, out_dir / "persons.parquet")
    write_json(report.as_dict(), out_dir / "report.json")


def _detected_persons(
    name: str, image: np.ndarray, cfg: FacetConfig, fixture: bool
) -> list[_Person]:
    found = detect_persons(image, cfg.detector)
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    return [
        _Person(
            row=None,
            person_id=f"det_{stem}_{k}",
            filename=name,
            occupation=None,
            gender="unknown",
            monk_level=None,
            age_group="unknown",
            box=det.box,
            source="detector",
            fixture=fixture,
            n_persons_in_image=len(found),
        )
        for k, det in enumerate(found)
    ]


def _person_record(person: _Person, crop_sha: str, cfg: FacetConfig) -> dict[str, Any]:
    return {
        "person_id": person.person_id,
        "filename": person.filename,
        "crop_path": f"crops/{person.person_id}.png",
        "occupation": person.occupation,
        "gender": person.gender,
        "monk_level": person.monk_level,
        "skin_group": skin_group(person.monk_level, cfg.skin_groups),
        "age_group": person.age_group,
        "box_x": person.box.x,
        "box_y": person.box.y,
        "box_width": person.box.width,
        "box_height": person.box.height,
        "n_persons_in_image": person.n_persons_in_image,
        "source": person.source,
        "fixture": person.fixture,
        "crop_sha256": crop_sha,
        **dict(zip(SKIN_COLUMNS, person.skin_votes, strict=True)),
    }


def _remove_stale(crops_dir: Path, keep: set[str]) -> None:
    for path in crops_dir.iterdir():
        stale = path.suffix == ".png" and path.stem not in keep
        if stale or path.name.startswith("."):  # leftovers of interrupted atomic writes
            path.unlink()
