"""What a text-to-image run's images take (``genfair plan``): bytes on disk and instrument CPU.

Bytes per image: the mean stored size of the model's own images, up to
:data:`OBSERVED_IMAGES` of its latest cached answers in the image store; a model with no
cached image gets :data:`PNG_BYTES_PER_PIXEL` times the pixels its config draws (an
estimate, and the plan says which). Each image is one file on disk however many places
show it (the image store, ``data/responses/.../images/`` and DVC's cache share its inode:
docs/scale-out.md, "Disk"), so the plan counts each new image once.

Instrument CPU: the images a run's methodology measures (:attr:`Methodology.measures`)
times the instrument's CPU-seconds per image at the model's size (:data:`INSTRUMENT_CPU`,
one figure per instrument, with its source); an instrument reading a simulator's planted
truth (``mode: oracle``) measures no pixel and costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from genfair.models.images import ImageStore

#: how many of a model's cached images give its mean bytes per image
OBSERVED_IMAGES = 200

#: PNG bytes per pixel of a real photograph (genfair's ``encode_png``, zlib level 6): the
#: median of six ``skimage.data`` photographs (astronaut, coffee, rocket, chelsea,
#: hubble_deep_field, immunohistochemistry) resized to 1024x1024 (Lanczos): 0.83-1.81 B/px,
#: median 1.26, i.e. 1.32 MB per 1024-px image. Recomputed by
#: tests/study/test_sizing.py::test_the_png_estimate_is_the_photos_median. The simulator's
#: flat drawings are no guide (0.25 B/px at 64 px, 0.02 at 1024 px).
PNG_BYTES_PER_PIXEL = 1.26

#: the side a text-to-image model whose config sets no size is taken to draw (SDXL's,
#: DALL-E 3's and gpt-image-1's default; SD 1.5 draws 512: set ``height``/``width``)
DEFAULT_SIDE = 1024


@dataclass(frozen=True)
class PerImageCPU:
    """An instrument's CPU-seconds per image, linear in the image's pixels through two
    measured sizes (a fixed part: the networks run on fixed-size face crops; a part per
    pixel: decoding and detection at full size)."""

    small_side: int
    small_s: float
    large_side: int
    large_s: float
    source: str

    def seconds(self, pixels: int) -> float:
        small, large = self.small_side**2, self.large_side**2
        slope = (self.large_s - self.small_s) / (large - small)
        return max(self.small_s + slope * (pixels - small), 0.0)


#: CPU-seconds per image of each pixel-measuring instrument, by name. Update the figure
#: here when an instrument gets faster (docs/benchmarks.md records each measurement).
INSTRUMENT_CPU: dict[str, PerImageCPU] = {
    "face_demographics": PerImageCPU(
        512,
        0.184,
        1024,
        0.275,
        "the face instrument's benchmark after issue 43's third round of cuts (the Haar scan "
        "skips the padded copy's border, RGB PNGs decoded by libspng; readings unchanged): 0.184 "
        "CPU-s per 512-px image, 0.275 per 1024-px image (means of 42 images per side, one at a "
        "time, ONNX on one thread, an AVX-512 Xeon; the AVX2 machine of the second round gave "
        "the same figures within 1%); docs/benchmarks.md, 'Face instrument per image'",
    ),
}


def image_pixels(config: Any) -> tuple[int, int, bool]:
    """Width, height and whether the text-to-image model ``config`` sets them (False: its
    config leaves the size to the model, :data:`DEFAULT_SIDE` assumed)."""
    side = getattr(config, "size", None)
    if isinstance(side, int):  # the simulator: a square
        return side, side, True
    if isinstance(side, str):  # OpenAI's "WxH" or "auto"
        found = re.fullmatch(r"(\d+)x(\d+)", side)
        if found:
            return int(found[1]), int(found[2]), True
        return DEFAULT_SIDE, DEFAULT_SIDE, False
    width, height = getattr(config, "width", None), getattr(config, "height", None)
    return width or DEFAULT_SIDE, height or DEFAULT_SIDE, width is not None and height is not None


def stored_bytes(store: ImageStore, images: Iterable[str]) -> list[int]:
    """The stored sizes of ``images`` (SHA-256s; those the store lacks are left out)."""
    sizes = [store.size(sha256) for sha256 in images]
    return [size for size in sizes if size is not None]


def bytes_per_image(config: Any, measured: list[int]) -> tuple[float, str]:
    """Bytes per image of a text-to-image model and the rule: the mean of ``measured`` (its
    cached images' sizes), else :data:`PNG_BYTES_PER_PIXEL` times its pixels."""
    if measured:
        return sum(measured) / len(measured), f"mean of {len(measured)} cached images"
    width, height, configured = image_pixels(config)
    rule = f"estimate: {width}x{height}{'' if configured else ' (assumed)'} x "
    return PNG_BYTES_PER_PIXEL * width * height, rule + f"{PNG_BYTES_PER_PIXEL} B/px"


def instrument_seconds(instrument: str, mode: str | None, config: Any) -> tuple[float | None, str]:
    """CPU-seconds per image ``instrument`` (in ``mode``) takes on a text-to-image model's
    images (``config``), and the rule; None: not known."""
    if mode == "oracle":
        return 0.0, f"{instrument}: oracle (a simulator's planted truth, no pixel measured)"
    cpu = INSTRUMENT_CPU.get(instrument)
    if cpu is None:
        return None, f"{instrument}: no CPU figure"
    width, height, _ = image_pixels(config)
    per_image = cpu.seconds(width * height)
    return per_image, f"{instrument}: {per_image:.3g} CPU-s per {width}x{height} image"
