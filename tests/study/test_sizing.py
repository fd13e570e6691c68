"""What a text-to-image run's images take (issue 43.5, :mod:`genfair.study.sizing`): the
pixels a config draws, bytes per image measured or estimated, instrument CPU per image."""

from __future__ import annotations

import statistics

import pytest

from genfair.models.config import DiffusersT2IConfig, OpenAIT2IConfig, SimulatedT2IConfig
from genfair.models.images import ImageStore
from genfair.study.sizing import (
    DEFAULT_SIDE,
    INSTRUMENT_CPU,
    PNG_BYTES_PER_PIXEL,
    bytes_per_image,
    image_pixels,
    instrument_seconds,
    stored_bytes,
)
from tests.support.disk import PHOTOS


def _openai(size: str) -> OpenAIT2IConfig:
    return OpenAIT2IConfig(
        modality="t2i", backend="openai", model_id="m", base_url="http://127.0.0.1:9/v1", size=size
    )


def test_each_backend_says_the_pixels_it_draws() -> None:
    assert image_pixels(SimulatedT2IConfig(backend="simulated", size=96)) == (96, 96, True)
    assert image_pixels(_openai("1792x1024")) == (1792, 1024, True)
    assert image_pixels(_openai("auto")) == (DEFAULT_SIDE, DEFAULT_SIDE, False)
    sd15 = DiffusersT2IConfig(backend="diffusers", model_id="x", height=512, width=768)
    assert image_pixels(sd15) == (768, 512, True)
    unset = DiffusersT2IConfig(backend="diffusers", model_id="x")
    assert image_pixels(unset) == (DEFAULT_SIDE, DEFAULT_SIDE, False)


def test_bytes_per_image_is_measured_else_estimated_from_pixels() -> None:
    config = _openai("1024x768")
    assert bytes_per_image(config, [100, 300]) == (200.0, "mean of 2 cached images")
    estimate, rule = bytes_per_image(config, [])
    assert estimate == pytest.approx(1.26 * 1024 * 768)
    assert rule == "estimate: 1024x768 x 1.26 B/px"
    assert "(assumed)" in bytes_per_image(_openai("auto"), [])[1]


def test_stored_bytes_are_the_store_files_and_skip_what_it_lacks(tmp_path) -> None:
    store = ImageStore(tmp_path)
    kept = store.put(b"\x89PNG" + b"x" * 96)
    missing = "0" * 64
    assert stored_bytes(store, [kept, missing, kept]) == [100, 100]


def test_instrument_cpu_is_linear_in_pixels_through_its_two_measurements() -> None:
    face = INSTRUMENT_CPU["face_demographics"]
    assert face.seconds(512 * 512) == pytest.approx(0.184)
    assert face.seconds(1024 * 1024) == pytest.approx(0.275)
    # halfway in pixels, halfway in seconds
    assert face.seconds((512 * 512 + 1024 * 1024) // 2) == pytest.approx(0.2295)
    seconds, rule = instrument_seconds("face_demographics", "model", _openai("1024x1024"))
    assert seconds == pytest.approx(0.275) and "0.275 CPU-s per 1024x1024" in rule
    assert instrument_seconds("face_demographics", "oracle", _openai("1024x1024"))[0] == 0.0
    assert instrument_seconds("unknown", "model", _openai("1024x1024"))[0] is None


def test_the_png_estimate_is_the_photos_median() -> None:
    """PNG_BYTES_PER_PIXEL is measured, not guessed: real photographs (skimage's) at
    1024x1024, encoded as genfair encodes every image."""
    data = pytest.importorskip("skimage.data")
    from PIL import Image

    from genfair.models.images import encode_png

    size, lanczos = (1024, 1024), Image.Resampling.LANCZOS
    photos = [Image.fromarray(getattr(data, name)()).convert("RGB") for name in PHOTOS]
    per_pixel = [len(encode_png(p.resize(size, lanczos))) / 1024**2 for p in photos]
    assert round(statistics.median(per_pixel), 2) == PNG_BYTES_PER_PIXEL


def test_a_remote_store_gives_its_objects_size_without_fetching(tmp_path) -> None:
    store = ImageStore("memory://sizing-test/images", mirror=tmp_path / "mirror")
    kept = store.put(b"\x89PNG" + b"y" * 46)
    store.path(kept).unlink()  # this machine's copy gone: the remote object answers
    assert stored_bytes(store, [kept, "1" * 64]) == [50]
    assert not (tmp_path / "mirror" / kept[:2] / f"{kept}.png").exists()  # nothing fetched
