"""Skin tone measurement: ITA against hand-computed angles, synthetic skin patches of known
CIELAB colour, the Monk mapping and the papers' skin and age groups."""

from __future__ import annotations

import math
from itertools import pairwise

import cv2
import numpy as np
import pytest
from skimage.color import lab2rgb

from genfair.instruments import skin_tone as st


def patch_of(lab: tuple[float, float, float], size: int = 12) -> np.ndarray:
    """A uint8 sRGB patch of one CIELAB colour."""
    rgb = lab2rgb(np.array([[lab]], dtype=float))
    return np.tile((rgb * 255).round().astype(np.uint8), (size, size, 1))


@pytest.mark.parametrize(
    ("L", "b", "expected"),
    [
        (75.0, 25.0, 45.0),  # arctan(25/25) = 45
        (50.0, 10.0, 0.0),  # L* = 50 -> 0
        (25.0, 25.0, -45.0),  # arctan(-1)
        (50.0 + 10.0 * math.sqrt(3), 10.0, 60.0),  # arctan(sqrt 3) = 60
        (40.0, 10.0 * math.sqrt(3), -30.0),  # arctan(-1/sqrt 3) = -30
    ],
)
def test_ita_hand_computed(L: float, b: float, expected: float) -> None:
    assert st.ita(L, b) == pytest.approx(expected, abs=1e-9)


def test_ita_undefined_without_yellow_and_vectorised() -> None:
    out = st.ita(np.array([60.0, 60.0, 60.0]), np.array([0.0, -5.0, 10.0]))
    assert np.isnan(out[0]) and np.isnan(out[1])
    assert out[2] == pytest.approx(45.0)


@pytest.mark.parametrize(
    ("lab", "expected"),
    [
        ((65.0, 15.0, 15.0), 45.0),
        ((60.0, 12.0, 10.0 * math.sqrt(3)), 30.0),
        ((70.0, 10.0, 20.0 * math.sqrt(3)), 30.0),
        ((40.0, 15.0, 10.0 * math.sqrt(3)), -30.0),
        ((45.0, 12.0, 5.0 * math.sqrt(3)), -30.0),
    ],
)
def test_skin_ita_on_synthetic_patches_of_known_colour(lab, expected) -> None:
    """Lab -> 8-bit sRGB -> measured ITA: equal to the hand angle up to 8-bit rounding."""
    angle, n = st.skin_ita(patch_of(lab))
    assert n == 144
    assert angle == pytest.approx(expected, abs=1.0)
    # independent path: OpenCV's own sRGB -> Lab (float32 input gives L in 0-100; its
    # float32 arithmetic differs from skimage's float64 by up to ~0.4 deg near small b*)
    px = patch_of(lab)[:1, :1].astype(np.float32) / 255.0
    L, _, b = cv2.cvtColor(px, cv2.COLOR_RGB2Lab)[0, 0]
    assert angle == pytest.approx(math.degrees(math.atan((L - 50) / b)), abs=0.5)


def test_skin_ita_median_ignores_minority_and_non_skin_pixels() -> None:
    light, dark = patch_of((65.0, 15.0, 15.0)), patch_of((40.0, 15.0, 10.0 * math.sqrt(3)))
    blue = np.zeros_like(light)
    blue[...] = (30, 60, 200)  # fails the YCrCb rule
    mixed = np.concatenate([light[:6], dark[:4], blue[:2]])  # 72 light, 48 dark, 24 blue
    angle, n = st.skin_ita(mixed)
    assert n == 120
    assert angle == pytest.approx(45.0, abs=1.0)


def test_skin_mask_and_gray_patches_have_no_skin() -> None:
    gray = np.full((10, 10, 3), 128, np.uint8)
    assert not st.skin_mask(gray).any()
    angle, n = st.skin_ita(gray)
    assert math.isnan(angle) and n == 0
    few, n = st.skin_ita(patch_of((65.0, 15.0, 15.0), size=3), min_pixels=30)
    assert math.isnan(few) and n == 9
    with pytest.raises(ValueError, match="uint8 RGB patch"):
        st.skin_ita(np.zeros((4, 4), np.uint8))


def test_monk_swatch_ita_values_and_cuts() -> None:
    ita = st.MONK_SWATCH_ITA
    assert len(ita) == 10 and all(a > b for a, b in pairwise(ita))
    # MST 6 #a07e56: L* 55.14, b* 26.75 (CIELAB D65) -> arctan(5.14 / 26.75) = 10.88 deg
    assert ita[5] == pytest.approx(math.degrees(math.atan(5.14 / 26.75)), abs=0.05)
    # independent: OpenCV's conversion of every swatch
    rgb = np.array([[[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in st.MONK_HEX]], np.float32)
    lab = cv2.cvtColor(rgb / 255.0, cv2.COLOR_RGB2Lab)[0]
    np.testing.assert_allclose(ita, np.degrees(np.arctan((lab[:, 0] - 50) / lab[:, 2])), atol=0.3)
    assert st.MONK_SWATCH_CUTS[5] == pytest.approx((ita[5] + ita[6]) / 2)


def test_ita_to_monk_nearest_swatch_and_boundaries() -> None:
    for level, angle in enumerate(st.MONK_SWATCH_ITA, start=1):
        assert st.ita_to_monk(angle) == level
    cuts = st.MONK_SWATCH_CUTS
    assert st.ita_to_monk(cuts[0]) == 1 and st.ita_to_monk(cuts[0] - 1e-9) == 2
    assert st.ita_to_monk(90.0) == 1 and st.ita_to_monk(-90.0) == 10
    assert st.ita_to_monk(float("nan")) is None
    custom = [80, 70, 60, 50, 40, 30, 20, 10, 0]
    assert st.ita_to_monk(45.0, custom) == 5 and st.ita_to_monk(-1.0, custom) == 10
    with pytest.raises(ValueError, match="strictly decreasing"):
        st.ita_to_monk(10.0, [0, 10, 20, 30, 40, 50, 60, 70, 80])


def test_skin_groups_iris_and_lvlm_facet() -> None:
    iris, facet = st.SKIN_GROUP_PRESETS["iris"], st.SKIN_GROUP_PRESETS["lvlm_facet"]
    assert [st.monk_to_group(k, iris) for k in (1, 3, 4, 7, 8, 10)] == [
        "light",
        "light",
        "middle",
        "middle",
        "dark",
        "dark",
    ]
    assert [st.monk_to_group(k, facet) for k in (3, 4, 6, 7)] == [
        "light",
        "medium",
        "medium",
        "dark",
    ]
    assert st.monk_to_group(None, iris) is None
    with pytest.raises(ValueError, match="1-10"):
        st.monk_to_group(11, iris)


def test_age_groups_iris_and_lvlm_facet() -> None:
    iris, facet = st.AGE_GROUP_PRESETS["iris"], st.AGE_GROUP_PRESETS["lvlm_facet"]
    assert [st.age_group(a, iris) for a in (0, 39, 39.9, 40, 64, 65, 90)] == [
        "young",
        "young",
        "young",
        "middle-aged",
        "middle-aged",
        "older",
        "older",
    ]
    assert [st.age_group(a, facet) for a in (24, 25, 65, 65.5, 66)] == [
        "younger",
        "middle-aged",
        "middle-aged",
        "middle-aged",
        "older",
    ]
    assert st.age_group(None, iris) is None
    with pytest.raises(ValueError, match=">= 0"):
        st.age_group(-1, iris)
