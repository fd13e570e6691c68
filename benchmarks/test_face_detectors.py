"""A modern face detector against the Haar cascade (issue 43, point 4): NudeNet 3.4.2's
YOLOv8n (PyPI ``nudenet``; its ``320n.onnx`` ships in the wheel, run by onnxruntime on one
thread; classes FACE_FEMALE and FACE_MALE kept, its own 0.2 score and 0.45 NMS thresholds)
in place of the default detector, everything else the default instrument.

On the validation photos composited to full size (:mod:`genfair.instruments.full_size_photos`,
42 per side) and the package photos (:func:`~genfair.instruments.validation.package_photo_set`):
CPU per image (detection alone and the whole measurement), agreement with the default per
reference group (:mod:`genfair.instruments.face_agreement`), and accuracy against the photos'
documented labels (:func:`~genfair.instruments.validation.validate_instrument`).

NudeNet is not a genfair dependency (its wheel's licence file is the AGPL-3.0, and its face
classes come from a nudity detector): install it by hand to run this, ``pip install
--no-deps nudenet==3.4.2`` (its dependencies, numpy, onnxruntime and OpenCV, are genfair's).
The decision and the figures: docs/methodology.md, "Face instrument: cost per image".
Quick mode: 3 images per side and the 5 full-size package photos, nothing timed.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.instruments import face_demographics as fd
from genfair.instruments.face_agreement import agreement, agreement_by_group
from genfair.instruments.full_size_photos import full_size_photo_set
from genfair.instruments.validation import package_photo_set, validate_instrument

nudenet = pytest.importorskip("nudenet.nudenet", reason="pip install --no-deps nudenet==3.4.2")

QUICK_IDS = ("astronaut_full", "grace_hopper_on_coffee_0.5_centre", "rocket_full")


class NudeNetFaces:
    """NudeNet's face boxes as a genfair face detector."""

    name = "nudenet_faces"

    def __init__(self) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self._detector = nudenet.NudeDetector()
        weights = Path(nudenet.__file__).with_name("320n.onnx")
        self._detector.onnx_session = ort.InferenceSession(
            str(weights), options, providers=["CPUExecutionProvider"]
        )

    def detect(self, rgb: np.ndarray) -> list[fd.Box]:
        h, w = rgb.shape[:2]
        found = self._detector.detect(np.ascontiguousarray(rgb[..., ::-1]))  # it wants BGR
        faces = [d["box"] for d in found if d["class"] in ("FACE_FEMALE", "FACE_MALE")]
        return sorted(fd._clip_box(*box, w, h) for box in faces)


@pytest.fixture(scope="module")
def instruments():  # type: ignore[no-untyped-def]
    fd.DETECTORS.setdefault(NudeNetFaces.name, NudeNetFaces)
    yield fd.FaceDemographics(), fd.FaceDemographics({"detector": {"name": NudeNetFaces.name}})
    fd.DETECTORS.pop(NudeNetFaces.name)


def _cpu_per_image(fn, images) -> tuple[list, float]:  # type: ignore[no-untyped-def]
    began = time.process_time()
    out = [fn(img, image_id=iid) for iid, img in images]
    return out, (time.process_time() - began) / len(images)


def test_nudenet_against_haar(benchmark, mode, instruments) -> None:  # type: ignore[no-untyped-def]
    haar, modern = instruments
    sets = {
        side: [
            (p.image_id, p.load())
            for p in full_size_photo_set(side)
            if not mode.quick or p.image_id in QUICK_IDS
        ]
        for side in (512, 1024)
    }

    def run() -> dict:
        out = {}
        for side, images in sets.items():
            ref, t_ref = _cpu_per_image(haar.measure, images)
            other, t_other = _cpu_per_image(modern.measure, images)
            _, d_ref = _cpu_per_image(lambda img, image_id: haar.detector.detect(img), images)
            _, d_oth = _cpu_per_image(lambda img, image_id: modern.detector.detect(img), images)
            out[side] = (agreement(ref, other), (t_ref, t_other, d_ref, d_oth))
        return out

    results, _ = mode.measure(benchmark, run)
    with pd.option_context("display.width", 200):
        for side, (table, (t_ref, t_other, d_ref, d_oth)) in results.items():
            print(
                f"\n{side} px, {len(table)} images: CPU-s per image haar {t_ref:.3f} "
                f"(detect {d_ref:.3f}), nudenet {t_other:.3f} (detect {d_oth:.3f}); same "
                f"readings {table['identical'].mean():.0%}, has_face {table['has_face'].mean():.0%}"
                f", n_faces {table['n_faces'].mean():.0%}, primary box IoU median "
                f"{table['iou'].median():.2f}\n" + agreement_by_group(table).round(2).to_string()
            )
        photos = [p for p in package_photo_set(lfw=not mode.quick)]
        for side in (1024,):
            photos += [p for p in full_size_photo_set(side) if not mode.quick]
        for name, inst in (("haar", haar), ("nudenet", modern)):
            report = validate_instrument(inst, photos)
            cols = ["attribute", "n", "n_predicted", "accuracy"]
            print(f"\n{name} against the documented labels ({len(photos)} photos)")
            print(report.per_attribute[cols].round(3).to_string(index=False))
            print(report.per_group.round(3).to_string(index=False))
    for table, _ in results.values():
        assert table["has_face"].mean() >= 0.5  # the two detectors were both wired up
