"""Photos of people that ship inside installed packages, labelled only with documented facts.

The realistic-pixel simulator (:func:`genfair.models.simulated_images.compose`) pastes them
into full-size pictures, and the demographic instrument's validation
(:func:`genfair.instruments.validation.package_photo_set`) scores itself on the same photos.

* ``astronaut`` (``skimage.data.astronaut``): its docstring says it is a photograph of
  Eileen Collins, an American astronaut, "She ...": gender female.
* ``grace_hopper`` (matplotlib's sample data ``grace_hopper.jpg``): the file is named for
  Grace Hopper, the U.S. Navy rear admiral (a woman): gender female.
* ``lfw_face_000..099`` (``skimage.data.lfw_subset``: "100 first images are faces"): 25x25
  grey crops of faces, with no documented gender, age, skin tone or race.
* ``chelsea``, ``coffee``, ``rocket``: no person (their docstrings: a cat, a cup, a launch).

No shipped photo documents a man, an age or a skin tone: what a simulator can plant in the
pixels is limited to what these labels say (see ``compose``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np

__all__ = ["NO_PERSON", "PersonPhoto", "grace_hopper", "load_photo", "people"]

#: the documented photos without a person
NO_PERSON = ("chelsea", "coffee", "rocket")


@dataclass(frozen=True)
class PersonPhoto:
    """A shipped photo of one person and the attributes its package documents."""

    photo_id: str
    load: Callable[[], np.ndarray] = field(repr=False, compare=False)
    labels: Mapping[str, str]
    source: str


def grace_hopper() -> np.ndarray:
    """matplotlib's ``grace_hopper.jpg`` as RGB uint8."""
    from matplotlib import cbook
    from PIL import Image

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        return np.asarray(Image.open(f).convert("RGB"))


@cache
def _lfw() -> np.ndarray:
    from skimage import data

    return data.lfw_subset()


def _lfw_face(i: int) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        gray = np.clip(np.round(_lfw()[i] * 255), 0, 255).astype(np.uint8)
        return np.repeat(gray[..., None], 3, axis=2)

    return load


def _skimage(name: str) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        from skimage import data

        return np.asarray(getattr(data, name)())[..., :3]

    return load


@cache
def people() -> tuple[PersonPhoto, ...]:
    """The shipped photos of one person each (see the module docstring)."""
    documented = (
        PersonPhoto(
            "astronaut",
            _skimage("astronaut"),
            {"gender": "female"},
            "skimage.data.astronaut docstring: Eileen Collins",
        ),
        PersonPhoto(
            "grace_hopper",
            grace_hopper,
            {"gender": "female"},
            "matplotlib sample_data/grace_hopper.jpg: Grace Hopper",
        ),
    )
    faces = tuple(
        PersonPhoto(
            f"lfw_face_{i:03d}",
            _lfw_face(i),
            {},
            "skimage.data.lfw_subset docstring: first 100 are faces",
        )
        for i in range(100)
    )
    return documented + faces


@cache
def load_photo(photo_id: str) -> np.ndarray:
    """The RGB uint8 pixels of a photo of :func:`people` or :data:`NO_PERSON` (loaded once
    per process)."""
    loaders = {p.photo_id: p.load for p in people()} | {n: _skimage(n) for n in NO_PERSON}
    if photo_id not in loaders:
        raise KeyError(f"no shipped photo {photo_id!r}")
    pixels = loaders[photo_id]()
    pixels.setflags(write=False)  # shared by every caller of the cache
    return pixels
