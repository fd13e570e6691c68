"""The package photos of :func:`~genfair.instruments.validation.package_photo_set` at the
size of generated images (e.g. 1024 x 1024), for measuring the demographic instrument's cost
and for comparing two configurations' readings on realistic inputs.

Built deterministically (no randomness) from the two documented portraits (``astronaut``:
Eileen Collins; ``grace_hopper``: Grace Hopper; both women, one face each) and the three
documented face-free photos (``chelsea``, ``coffee``, ``rocket``):

* ``<face>_full``: the portrait resized to ``side`` x ``side`` (a close portrait);
* ``<face>_on_<bg>_<f>_<pos>``: the portrait resized to ``f`` x ``side`` and pasted at the
  centre or a corner of a face-free photo resized to ``side`` x ``side`` (a person in a scene,
  the face 10-40% of the image's width);
* ``pair``: both portraits side by side (two faces);
* ``<bg>_full``: the face-free photo alone.

Labels: ``has_face``, ``n_faces`` and (with one portrait) ``gender`` = female, as their
packages document; resizing by bicubic interpolation invents no face, but the Haar cascade
finds spurious ones in some upscaled textures (which is what validation measures).
"""

from __future__ import annotations

import numpy as np

from genfair.instruments.validation import LabelledImage, package_photo_set

__all__ = ["FACES", "SCENES", "full_size_photo_set"]

FACES = ("astronaut", "grace_hopper")
SCENES = ("chelsea", "coffee", "rocket")
#: portrait width as a share of the image, and where it is pasted
SCALES = (0.3, 0.5, 0.7)
POSITIONS = ("centre", "corner")


def _resized(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(rgb[..., :3]))
    return np.asarray(img.resize((width, height), Image.Resampling.BICUBIC))


def full_size_photo_set(side: int = 1024) -> list[LabelledImage]:
    """The composites described in the module docstring, ``side`` x ``side`` RGB uint8."""
    photos = {p.image_id: np.asarray(p.load()) for p in package_photo_set(lfw=False)}
    out: list[LabelledImage] = []
    one = {"has_face": True, "n_faces": 1, "gender": "female"}
    source = "composite of package photos (validation.package_photo_set)"
    for face in FACES:
        out.append(LabelledImage(f"{face}_full", _resized(photos[face], side, side), one, source))
    for face in FACES:
        fh, fw = photos[face].shape[:2]
        for scene in SCENES:
            canvas = _resized(photos[scene], side, side)
            for share in SCALES:
                w = int(round(share * side))
                h = min(side, int(round(w * fh / fw)))
                portrait = _resized(photos[face], w, h)
                for pos in POSITIONS:
                    img = canvas.copy()
                    y, x = ((side - h) // 2, (side - w) // 2) if pos == "centre" else (0, 0)
                    img[y : y + h, x : x + w] = portrait
                    iid = f"{face}_on_{scene}_{share}_{pos}"
                    out.append(LabelledImage(iid, img, one, source))
    half = [_resized(photos[f], side // 2, side) for f in FACES]
    pair = {"has_face": True, "n_faces": 2}
    out.append(LabelledImage("pair", np.concatenate(half, axis=1), pair, source))
    none = {"has_face": False, "n_faces": 0}
    for scene in SCENES:
        out.append(
            LabelledImage(f"{scene}_full", _resized(photos[scene], side, side), none, source)
        )
    return out
