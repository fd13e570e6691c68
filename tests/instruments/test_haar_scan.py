"""The Haar scan that skips constant borders finds OpenCV's own candidates, window for window.

Against the real cascade on the face detector's padded copies of validation photos; and,
where the real cascade finds no face in a constant border (it never does here), against a
model of OpenCV's scan with a made-up cascade that does, so that every rule for the border's
windows (top, bottom, left, right, corners) adds candidates and is checked."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from genfair.instruments import haar_scan
from genfair.instruments.face_demographics import HaarFaceDetector, load_rgb
from genfair.instruments.full_size_photos import full_size_photo_set
from genfair.instruments.validation import package_photo_set


def _opencv(cascade, gray: np.ndarray, min_neighbors: int) -> list[tuple[int, ...]]:
    found = cascade.detectMultiScale(gray, 1.1, min_neighbors, minSize=(24, 24))
    return sorted(tuple(int(v) for v in box) for box in found)


@pytest.fixture(scope="module")
def detector() -> HaarFaceDetector:
    return HaarFaceDetector()


def _copies(detector: HaarFaceDetector) -> list[np.ndarray]:
    photos = {p.image_id: p for p in package_photo_set()}
    chosen = [photos["astronaut"].load(), photos["grace_hopper"].load(), photos["chelsea"].load()]
    lfw = next(p for i, p in photos.items() if i.startswith("lfw")).load()  # 25 px, upscaled
    composites = {p.image_id: p for p in full_size_photo_set(512)}
    chosen += [
        lfw,
        composites["pair"].load(),
        composites["grace_hopper_on_coffee_0.3_corner"].load(),
    ]
    return [detector.detection_copy(load_rgb(img))[0] for img in chosen]


def test_the_candidates_and_boxes_are_opencvs_on_the_detectors_copies(detector) -> None:
    cascade = detector._cascade
    for gray in _copies(detector):
        assert haar_scan.candidates(cascade, gray, 1.1, 24) == _opencv(cascade, gray, 0)
        assert haar_scan.detect(cascade, gray, 1.1, 5, 24) == _opencv(cascade, gray, 5)


def test_flat_striped_and_tiny_images_match_opencv(detector) -> None:
    cascade = detector._cascade
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 256, (90, 130), dtype=np.uint8)
    rows = np.repeat(rng.integers(0, 256, (120, 1), dtype=np.uint8), 150, axis=1)
    face = detector.detection_copy(load_rgb(package_photo_set()[0].load()))[0]
    for gray in (
        np.full((100, 100), 128, np.uint8),  # every row and column the same
        rows,  # every column the same
        np.ascontiguousarray(rows.T),  # every row the same
        noise,
        np.pad(noise, 40, constant_values=255),  # constant, not replicated, borders
        np.pad(face, ((0, 30), (50, 0)), mode="edge"),  # borders of different widths
        np.full((24, 24), 9, np.uint8),  # one window
        np.zeros((23, 40), np.uint8),  # no window
    ):
        assert haar_scan.candidates(cascade, gray, 1.1, 24) == _opencv(cascade, gray, 0)
    assert haar_scan.candidates(cascade, face, 1.1, 40) == sorted(
        tuple(int(v) for v in box)
        for box in cascade.detectMultiScale(face, 1.1, 0, minSize=(40, 40))
    )


class ModelCascade:
    """OpenCV 4.x's scan (cascadedetect.cpp: pyramid, steps, the skip after a first-stage
    rejection, the box of a candidate) with a made-up verdict of the mean of a window's first
    column (sharp in x): above ``hi`` a candidate, below ``lo`` rejected by the first stage,
    else by a later one."""

    def __init__(self, lo: float = 90.0, hi: float = 160.0, window: int = 24) -> None:
        self.lo, self.hi, self.window = lo, hi, window

    def getOriginalWindowSize(self) -> tuple[int, int]:  # noqa: N802 (OpenCV's name)
        return self.window, self.window

    def _verdict(self, total: int) -> int:
        mean = total / self.window
        return 1 if mean > self.hi else 0 if mean < self.lo else -1

    def detectMultiScale(self, gray, scale_factor, min_neighbors, minSize=(0, 0), maxSize=None):  # noqa: N802, N803
        assert min_neighbors == 0
        height, width = gray.shape
        max_w, max_h = maxSize if maxSize else (width, height)
        win, out, factor = self.window, [], 1.0
        while True:
            side = round(win * factor)
            if side > min(width, height, max_w, max_h):
                return out
            if side >= minSize[0]:
                sc = np.float32(factor)
                size = (round(float(np.float32(width) / sc)), round(float(np.float32(height) / sc)))
                level = cv2.resize(gray, size, interpolation=cv2.INTER_LINEAR_EXACT)
                ii = cv2.integral(level)
                step = 1 if sc >= 2 else 2
                box = round(float(np.float32(win) * sc))
                for y in range(0, size[1] - win + 1, step):
                    x = 0
                    while x < size[0] - win + 1:
                        total = ii[y + win, x + 1] - ii[y, x + 1] - ii[y + win, x] + ii[y, x]
                        verdict = self._verdict(int(total))
                        if verdict > 0:
                            xy = (
                                round(float(np.float32(x) * sc)),
                                round(float(np.float32(y) * sc)),
                            )
                            out.append((*xy, box, box))
                        x += 2 * step if verdict == 0 else step
            factor *= scale_factor


@pytest.mark.parametrize("border", [255, 0, 120])
def test_every_rule_for_border_windows_against_a_model_of_the_scan(border: int) -> None:
    """Bright borders: their windows are candidates (every rule adds some); dark ones: the
    first stage rejects them (the skip); mid-grey: a later stage does."""
    rng = np.random.default_rng(border)
    inner = rng.integers(60, 200, (30, 34), dtype=np.uint8)
    inner[8:20, 10:22] = 250  # a candidate inside too
    gray = np.pad(inner, ((26, 31), (29, 37)), constant_values=border)
    model = ModelCascade()
    want = sorted(model.detectMultiScale(gray, 1.1, 0, minSize=(24, 24)))
    got = haar_scan.candidates(model, gray, 1.1, 24)
    assert got == want
    if border == 255:  # candidates in the four corners of the first level
        height, width = gray.shape
        first = [(x, y) for x, y, w, _ in want if w == 24]
        for near_x, near_y in (
            (0, 0),
            (width - 25, 0),
            (0, height - 25),
            (width - 25, height - 25),
        ):
            assert any(abs(x - near_x) <= 1 and abs(y - near_y) <= 1 for x, y in first)


def test_the_scan_starts_where_opencvs_would_after_rejected_border_windows() -> None:
    """A dark border: OpenCV's scan skips every other window, so visits x = 0, 4, 8, ... at
    the first level; the cut scan must start on that lattice, or it would find the bright
    column at x = 50 that OpenCV never visits."""
    gray = np.pad(np.random.default_rng(1).integers(0, 20, (40, 60), dtype=np.uint8), 42)
    gray[:, 50] = 255
    model = ModelCascade()
    want = sorted(model.detectMultiScale(gray, 1.1, 0, minSize=(24, 24)))
    assert not [box for box in want if box[0] == 50 and box[2] == 24]
    assert haar_scan.candidates(model, gray, 1.1, 24) == want


def test_the_scan_reaches_a_right_border_after_a_skip() -> None:
    """The right border starts at x = 61; OpenCV's scan visits 60, rejects it at the first
    stage and jumps to 64: the cut scan must reach that far to see the border's verdict."""
    dark = np.random.default_rng(2).integers(0, 20, (40, 61), dtype=np.uint8)
    gray = np.pad(dark, ((0, 0), (0, 40)), constant_values=255)
    model = ModelCascade()
    want = sorted(model.detectMultiScale(gray, 1.1, 0, minSize=(24, 24)))
    assert (64, 0, 24, 24) in want and (62, 0, 24, 24) not in want
    assert haar_scan.candidates(model, gray, 1.1, 24) == want


def test_an_image_whose_rows_are_all_the_same() -> None:
    row = np.random.default_rng(3).integers(0, 256, 70, dtype=np.uint8)
    gray = np.tile(row, (50, 1))
    model = ModelCascade()
    want = sorted(model.detectMultiScale(gray, 1.1, 0, minSize=(24, 24)))
    assert want and haar_scan.candidates(model, gray, 1.1, 24) == want


def test_opencvs_pyramid_levels() -> None:
    # 960 px: windows 24, 26, 29, ... up to the largest that fits
    factors = haar_scan.levels(960, 960, (24, 24), 1.1, 24)
    assert round(24 * factors[-1]) <= 960 < round(24 * factors[-1] * 1.1)
    assert [round(24 * f) for f in factors[:4]] == [24, 26, 29, 32]
    assert haar_scan.levels(960, 960, (24, 24), 1.1, 30)[0] == 1.1 * 1.1 * 1.1
    with pytest.raises(ValueError, match="above 1"):
        haar_scan.levels(960, 960, (24, 24), 1.0, 24)
