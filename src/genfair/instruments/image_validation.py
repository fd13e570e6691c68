"""Validation of the image-quality and image-semantics instruments on photos that ship inside
installed packages (:func:`~genfair.instruments.validation.package_photo_set`), with checks
whose right answer their package documents or genfair makes by construction:

- quality: each photo against its own degraded copies (Gaussian blur of radius 2 and 4,
  JPEG at quality 10, Gaussian pixel noise of sd 25): ``accuracy`` is the share of (photo,
  degradation) pairs the instrument scores lower than the original (an IQA model should
  prefer the original), ``mean_drop`` the mean score difference;
- prompt similarity (CLIP): each photo against the captions of all photos, written from what
  its package documents (``skimage.data.astronaut``: "a photo of an astronaut"; ``chelsea``:
  a cat; ``coffee``: a cup of coffee; ``rocket``: a rocket launch; matplotlib's
  ``grace_hopper``: a portrait of a woman in a navy uniform): ``accuracy`` is the share of
  photos whose own caption is the most similar;
- reference similarity (DINOv2): each photo's flipped and centre-cropped copy against the
  originals: ``accuracy`` is the share of copies closest to their own original.

A handful of photos measures whether an instrument is wired and behaves sensibly, not its
accuracy on generated images of people (the paper, §7, says as much of its own proxies).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd

from genfair.instruments.validation import package_photo_set

__all__ = [
    "CAPTIONS",
    "DEGRADATIONS",
    "VALIDATED_ON",
    "captioned_photos",
    "validate_image_instrument",
]

#: photo id (package_photo_set) -> a caption of what its package documents
CAPTIONS = {
    "astronaut": "a photo of an astronaut",
    "grace_hopper": "a portrait of a woman in a navy uniform",
    "chelsea": "a photo of a cat",
    "coffee": "a photo of a cup of coffee",
    "rocket": "a photo of a rocket launch",
}
DEGRADATIONS = ("blur_2", "blur_4", "jpeg_10", "noise_25")

COLUMNS = ["check", "what", "n", "accuracy", "mean_drop"]
#: what the checks were run on (the report's caption)
VALIDATED_ON = (
    "Checked on 5 photos shipped in packages (skimage astronaut, chelsea, coffee, rocket; "
    "matplotlib grace_hopper). Quality: each photo scored above its own blurred (radius 2, 4), "
    "JPEG-10 and noisy (sd 25) copies; CLIP: its documented caption the most similar of the "
    "5; DINOv2: its flipped, cropped copy closest to it. accuracy = share right; mean_drop = "
    "mean score margin. Not a check on generated images of people."
)


def captioned_photos() -> list[tuple[str, Any, str]]:
    """``(photo id, RGB PIL image, caption)`` for the photos of :data:`CAPTIONS`."""
    from PIL import Image

    photos = {p.image_id: p for p in package_photo_set(lfw=False)}
    return [
        (pid, Image.fromarray(np.asarray(photos[pid].load())[..., :3]).convert("RGB"), caption)
        for pid, caption in CAPTIONS.items()
    ]


def degrade(image: Any, kind: str) -> Any:
    """``image`` degraded by one of :data:`DEGRADATIONS` (noise from a fixed seed)."""
    from PIL import Image, ImageFilter

    name, level = kind.rsplit("_", 1)
    if name == "blur":
        return image.filter(ImageFilter.GaussianBlur(int(level)))
    if name == "jpeg":
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=int(level))
        return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    rng = np.random.default_rng(0)
    noisy = np.asarray(image, dtype=float) + rng.normal(
        0, int(level), (image.height, image.width, 3)
    )
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def validate_quality(instrument: Any, photos: list[tuple[str, Any, str]]) -> pd.DataFrame:
    """One row per degradation: the share of photos scored below their original."""
    originals = instrument.score([p for _, p, _ in photos])
    rows = []
    for kind in DEGRADATIONS:
        degraded = instrument.score([degrade(p, kind) for _, p, _ in photos])
        rows.append(
            {
                "check": kind,
                "what": f"original scored above its {kind} copy",
                "n": len(photos),
                "accuracy": float(np.mean(originals > degraded)),
                "mean_drop": float(np.mean(originals - degraded)),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _retrieval(check: str, what: str, sims: np.ndarray) -> dict[str, Any]:
    """A retrieval check from ``sims`` (row i: item i against every candidate; i's own is i):
    the share whose own candidate is the most similar, and the mean margin over the rest."""
    n = len(sims)
    own = np.diag(sims)
    return {
        "check": check,
        "what": what,
        "n": n,
        "accuracy": float(np.mean(sims.argmax(axis=1) == np.arange(n))),
        "mean_drop": float(np.mean(own - (sims.sum(axis=1) - own) / (n - 1))),
    }


def validate_semantics(instrument: Any, photos: list[tuple[str, Any, str]]) -> pd.DataFrame:
    """Caption retrieval (CLIP) and copy retrieval (DINOv2), for the encoders configured."""
    from PIL import ImageOps

    images = [p for _, p, _ in photos]
    captions = [c for _, _, c in photos]
    rows = []
    if instrument.measures["prompt_similarity"]:
        sims = np.array([instrument.prompt_similarity(images, [c] * len(images)) for c in captions])
        rows.append(_retrieval("caption_retrieval", "own caption the most similar (CLIP)", sims.T))
    if instrument.measures["reference"]:
        copies = [
            ImageOps.mirror(ImageOps.crop(p, (p.width // 20, p.height // 20) * 2)) for p in images
        ]
        sims = instrument.embed(copies) @ instrument.embed(images).T
        what = "flipped, cropped copy closest to its original (DINOv2)"
        rows.append(_retrieval("copy_retrieval", what, sims))
    return pd.DataFrame(rows, columns=COLUMNS)


def validate_image_instrument(instrument: Any, photos: list[tuple[str, Any, str]]) -> pd.DataFrame:
    """The checks of an image-quality (``score``) or image-semantics instrument; no rows when
    it measures nothing (not configured)."""
    if not any(instrument.measures.values()):
        return pd.DataFrame(columns=COLUMNS)
    if hasattr(instrument, "score"):
        return validate_quality(instrument, photos)
    return validate_semantics(instrument, photos)
