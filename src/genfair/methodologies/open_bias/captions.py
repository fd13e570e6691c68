"""Captions for OpenBias: the project's caption set and the paper's two caption sources.

Every loader returns one table with the columns of :data:`CAPTION_COLUMNS` (all strings):
``caption_id`` (unique), ``image_id`` (the source image: OpenBias keeps at most one caption per
source image and bias), ``caption`` (whitespace collapsed, no newlines) and ``source``.

- :func:`load_caption_set`: ``data/reference/open_bias_captions.csv``, written by the genfair
  project (COCO-style person and object scenes; some name a class outright, e.g. "A woman
  riding a horse", "A red train", so the knowledge base's filters have work to do; some share
  an ``image_id`` so the one-caption-per-image rule does too). Its extra ``scene`` column says
  ``person`` or ``object``.
- :func:`load_coco_captions`: COCO 2017 (paper §4.1: "a subset of images whose caption contains
  a single person"; the authors' code keeps the images with exactly one ``person`` instance
  annotation and the first three captions of each, in file order).
- :func:`load_flickr30k_captions`: Flickr30k from a user-given path (the authors' code: the
  first three captions of each image, in file order).

A wrong layout raises :class:`CaptionDataError` naming the file and the expected layout.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd

from genfair.io import check_file_size, read_json

__all__ = [
    "CAPTION_COLUMNS",
    "DEFAULT_CAPTION_SET",
    "CaptionDataError",
    "clean_caption",
    "load_caption_set",
    "load_coco_captions",
    "load_flickr30k_captions",
]

CAPTION_COLUMNS = ["caption_id", "image_id", "caption", "source"]
DEFAULT_CAPTION_SET = "data/reference/open_bias_captions.csv"
#: the authors' ``n_prompts_per_image`` for COCO and Flickr30k
CAPTIONS_PER_IMAGE = 3


class CaptionDataError(ValueError):
    """A caption file is missing or has the wrong layout; the message names the file and fix."""


def clean_caption(text: object) -> str:
    """The caption with newlines removed and runs of whitespace collapsed (the authors' code
    removes newlines before prompting the LLM)."""
    return re.sub(r"\s+", " ", str(text)).strip()


def _table(rows: list[tuple[str, str, str]], source: str) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["caption_id", "image_id", "caption"], dtype=str)
    frame["source"] = source
    return frame[CAPTION_COLUMNS]


def _check_unique_ids(frame: pd.DataFrame, path: Path) -> None:
    duplicated = frame["caption_id"][frame["caption_id"].duplicated()].tolist()
    if duplicated:
        raise CaptionDataError(
            f"{path}: caption_id not unique: {duplicated[:5]}; give each row its own id"
        )


def load_caption_set(path: str | Path = DEFAULT_CAPTION_SET) -> pd.DataFrame:
    """The project's caption set (``caption_id,image_id,scene,caption``), plus ``source``."""
    path = Path(path)
    if not path.is_file():
        raise CaptionDataError(f"{path}: caption file not found (methodologies.open_bias.captions)")
    frame = pd.read_csv(check_file_size(path, CaptionDataError), dtype=str, keep_default_na=False)
    required = ["caption_id", "image_id", "caption"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise CaptionDataError(
            f"{path}: missing column(s) {missing}; expected a CSV with columns {required} "
            "(optionally scene)"
        )
    for column in required:
        empty = frame.index[frame[column].str.strip() == ""].tolist()
        if empty:
            raise CaptionDataError(
                f"{path}: empty {column} in data row(s) {[i + 1 for i in empty[:5]]}"
            )
    frame["caption"] = frame["caption"].map(clean_caption)
    frame["source"] = path.stem
    _check_unique_ids(frame, path)
    extra = [c for c in frame.columns if c not in CAPTION_COLUMNS]
    return frame[CAPTION_COLUMNS + extra].reset_index(drop=True)


def _read_json(path: Path, keys: list[str], what: str) -> dict:
    data = read_json(path, CaptionDataError, f"expected the COCO 2017 {what} file")
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise CaptionDataError(
            f"{path}: expected a JSON object with keys {keys} (the COCO 2017 {what} file, "
            "e.g. annotations/captions_train2017.json or annotations/instances_train2017.json)"
        )
    return data


def load_coco_captions(
    captions_json: str | Path,
    instances_json: str | Path,
    captions_per_image: int | None = CAPTIONS_PER_IMAGE,
    category: str = "person",
    instances_per_image: int = 1,
) -> pd.DataFrame:
    """Captions of the COCO images with exactly ``instances_per_image`` ``category`` instances.

    ``captions_json``: ``annotations/captions_train2017.json`` (``annotations`` with ``id``,
    ``image_id``, ``caption``). ``instances_json``: ``annotations/instances_train2017.json`` or
    ``person_keypoints_train2017.json`` (``categories`` and ``annotations`` with ``image_id``,
    ``category_id``; crowd regions count as instances, as in the authors' code). The first
    ``captions_per_image`` captions of each kept image in file order (None: all).
    ``caption_id`` is the caption annotation's id, ``image_id`` the COCO image id.
    """
    captions_path, instances_path = Path(captions_json), Path(instances_json)
    instances = _read_json(instances_path, ["categories", "annotations"], "instances")
    category_ids = {int(c["id"]) for c in instances["categories"] if c.get("name") == category}
    if not category_ids:
        names = sorted({str(c.get("name")) for c in instances["categories"]})
        raise CaptionDataError(
            f"{instances_path}: no category named {category!r}; it has {names[:10]}..."
        )
    per_image: dict[int, int] = defaultdict(int)
    for row, annotation in enumerate(instances["annotations"]):
        try:
            if int(annotation["category_id"]) in category_ids:
                per_image[int(annotation["image_id"])] += 1
        except (KeyError, TypeError, ValueError) as error:
            raise CaptionDataError(
                f"{instances_path}: annotation {row} lacks "
                f"an integer image_id/category_id ({error})"
            ) from error
    kept = {image for image, count in per_image.items() if count == instances_per_image}
    captions = _read_json(captions_path, ["annotations"], "captions")
    taken: dict[int, int] = defaultdict(int)
    rows = []
    for row, annotation in enumerate(captions["annotations"]):
        try:
            image, caption_id, text = (
                int(annotation["image_id"]),
                annotation["id"],
                annotation["caption"],
            )
        except (KeyError, TypeError, ValueError) as error:
            raise CaptionDataError(
                f"{captions_path}: annotation {row} lacks id/image_id/caption ({error}); "
                "is this a captions_*.json file?"
            ) from error
        if image in kept and (captions_per_image is None or taken[image] < captions_per_image):
            taken[image] += 1
            rows.append((str(caption_id), str(image), clean_caption(text)))
    frame = _table(rows, "coco")
    _check_unique_ids(frame, captions_path)
    return frame


def _flickr_file(path: Path) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        for name in ("captions.txt", "results.csv", "results_20130124.token"):
            if (path / name).is_file():
                return path / name
    raise CaptionDataError(
        f"{path}: no Flickr30k captions found; give the captions file or its folder, holding "
        "captions.txt (CSV 'image,caption'), results.csv ('image_name| comment_number| comment') "
        "or results_20130124.token ('<image>#<n><TAB><caption>')"
    )


def _flickr_rows(path: Path) -> list[tuple[str, str]]:
    """(image, caption) pairs in file order, from any of the three known layouts."""
    text = check_file_size(path, CaptionDataError).read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines:
        raise CaptionDataError(f"{path}: empty file")
    header = lines[0].strip().lower()
    pairs = []
    if "|" in header and "image_name" in header:  # results.csv (Kaggle flickr-image-dataset)
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split("|", 2)]
            if len(parts) != 3:
                raise CaptionDataError(
                    f"{path}: line {number} is not 'image_name| "
                    f"comment_number| comment': {line[:80]!r}"
                )
            pairs.append((parts[0], parts[2]))
    elif header.replace(" ", "") == "image,caption":  # captions.txt (the authors' layout)
        for number, row in enumerate(csv.reader(lines[1:]), start=2):
            if not row:
                continue
            if len(row) < 2:
                raise CaptionDataError(f"{path}: line {number} is not 'image,caption': {row!r}")
            pairs.append((row[0].strip(), ",".join(row[1:]).strip()))
    elif "\t" in lines[0] and "#" in lines[0].split("\t", 1)[0]:  # results_20130124.token
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            key, _, caption = line.partition("\t")
            if not caption or "#" not in key:
                raise CaptionDataError(
                    f"{path}: line {number} is not '<image>#<n><TAB><caption>': {line[:80]!r}"
                )
            pairs.append((key.rsplit("#", 1)[0].strip(), caption))
    else:
        raise CaptionDataError(
            f"{path}: unknown layout (first line {lines[0][:80]!r}); expected the header "
            "'image,caption' (captions.txt), 'image_name| comment_number| comment' (results.csv) "
            "or '<image>#<n><TAB><caption>' lines (results_20130124.token)"
        )
    empty = [i for i, (image, caption) in enumerate(pairs) if not image or not caption.strip()]
    if empty:
        raise CaptionDataError(
            f"{path}: empty image name or caption in data row(s) {[i + 1 for i in empty[:5]]}"
        )
    return pairs


def load_flickr30k_captions(
    path: str | Path, captions_per_image: int | None = CAPTIONS_PER_IMAGE
) -> pd.DataFrame:
    """Flickr30k captions from ``path`` (a captions file or its folder): the first
    ``captions_per_image`` captions of each image in file order (None: all).

    ``image_id`` is the image file name; ``caption_id`` is ``<image file name>#<k>`` with ``k``
    the caption's position among that image's captions (0-based). The authors' code used the
    file stem as the caption id for every caption of an image, so their ids are not unique.
    """
    file = _flickr_file(Path(path))
    taken: dict[str, int] = defaultdict(int)
    rows = []
    for image, caption in _flickr_rows(file):
        k = taken[image]
        taken[image] += 1
        if captions_per_image is None or k < captions_per_image:
            rows.append((f"{image}#{k}", image, clean_caption(caption)))
    return _table(rows, "flickr30k")
