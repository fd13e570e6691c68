"""Skin tone from face pixels: Individual Typology Angle (ITA), Monk Skin Tone (MST) level,
and the papers' coarse groups. Pure functions.

* ITA (Chardon et al. 1991, "Skin colour typology and suntanning pathways", Int. J. Cosmet.
  Sci. 13(4)): ``ITA = arctan((L* - 50) / b*) * 180 / pi`` on CIELAB (D65) colour. Higher is
  lighter. It is defined for yellowish colour (``b* > 0``), which all skin is; pixels with
  ``b* <= 0`` are not skin and give NaN here.
* ITA -> Monk level (an approximation, no published ITA bands for the Monk scale exist): the
  10 official Monk swatches (Monk 2019, https://skintone.google/get-started, the hex values
  paper 002 shows in its Fig. 6) are converted to CIELAB and their ITA computed; the ITAs
  fall strictly from MST 1 (83.0 deg) to MST 10 (-84.3 deg). A measured ITA gets the level of
  the swatch whose ITA is nearest, i.e. the cut points are the midpoints between consecutive
  swatch ITAs (:data:`MONK_SWATCH_CUTS`). Custom cut points are accepted.
* Monk level -> group: IRIS (paper 002, §3.2 / App. A) light 1-3, middle 4-7, dark 8-10;
  paper 004 (following Heldreth et al. 2024) light 1-3, medium 4-6, dark 7-10.
* Age years -> group: IRIS young 0-39, middle-aged 40-64, older 65+ (its formula reads
  "older if a > 65", leaving 65 unassigned; its text says ">= 65", used here); paper 004
  younger < 25, middle-aged 25-65, older > 65.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "AGE_GROUP_PRESETS",
    "MONK_HEX",
    "SKIN_GROUP_PRESETS",
    "YCRCB_SKIN",
    "age_group",
    "checked_cuts",
    "ita",
    "ita_to_monk",
    "monk_swatch_ita",
    "monk_to_group",
    "rgb_to_lab",
    "skin_ita",
    "skin_mask",
]

#: The Monk Skin Tone scale's 10 swatches, MST 1 (lightest) to 10 (darkest), sRGB hex
#: (Monk 2019; skintone.google).
MONK_HEX: tuple[str, ...] = (
    "#f6ede4",
    "#f3e7db",
    "#f7ead0",
    "#eadaba",
    "#d7bd96",
    "#a07e56",
    "#825c43",
    "#604134",
    "#3a312a",
    "#292420",
)

#: Skin-group bands by preset: group -> (lowest, highest) Monk level, inclusive.
SKIN_GROUP_PRESETS: dict[str, dict[str, tuple[int, int]]] = {
    "iris": {"light": (1, 3), "middle": (4, 7), "dark": (8, 10)},
    "lvlm_facet": {"light": (1, 3), "medium": (4, 6), "dark": (7, 10)},
}

#: Age-group bands by preset: group -> (lowest, highest) age in whole years, inclusive.
AGE_GROUP_PRESETS: dict[str, dict[str, tuple[int, int]]] = {
    "iris": {"young": (0, 39), "middle-aged": (40, 64), "older": (65, 200)},
    "lvlm_facet": {"younger": (0, 24), "middle-aged": (25, 65), "older": (66, 200)},
}

#: Explicit skin-colour rule in YCrCb (Chai & Ngan 1999, "Face segmentation using
#: skin-color map in videophone applications", IEEE TCSVT 9(4)): 133 <= Cr <= 173 and
#: 77 <= Cb <= 127, on OpenCV's 8-bit YCrCb.
YCRCB_SKIN: dict[str, tuple[int, int]] = {"cr": (133, 173), "cb": (77, 127)}


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (uint8 0-255, or float 0-1) ``(..., 3)`` -> CIELAB D65 (skimage ``rgb2lab``)."""
    from skimage.color import rgb2lab

    arr = np.asarray(rgb)
    if arr.shape[-1:] != (3,):
        raise ValueError(f"expected an RGB array of shape (..., 3), got {arr.shape}")
    if arr.dtype == np.uint8:
        arr = arr.astype(np.float64) / 255.0
    return rgb2lab(arr)


def ita(lightness: np.ndarray | float, b: np.ndarray | float) -> np.ndarray | float:
    """Individual Typology Angle in degrees: ``arctan((L* - 50) / b*) * 180 / pi``.

    NaN where ``b* <= 0`` (ITA is defined for yellowish colour only). Scalars in give a float.
    """
    L = np.asarray(lightness, dtype=np.float64)
    bb = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(bb > 0, np.degrees(np.arctan((L - 50.0) / bb)), np.nan)
    return float(out) if out.ndim == 0 else out


def monk_swatch_ita() -> np.ndarray:
    """ITA of each Monk swatch (index 0 = MST 1), computed from :data:`MONK_HEX`."""
    rgb = np.array([[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in MONK_HEX], np.uint8)
    lab = rgb_to_lab(rgb[None])[0]
    return np.asarray(ita(lab[:, 0], lab[:, 2]))


@functools.cache
def _swatches() -> dict[str, tuple[float, ...]]:
    swatch = tuple(float(x) for x in monk_swatch_ita())
    cuts = tuple((a + b) / 2.0 for a, b in zip(swatch[:-1], swatch[1:], strict=True))
    return {"MONK_SWATCH_ITA": swatch, "MONK_SWATCH_CUTS": cuts}


def __getattr__(name: str) -> tuple[float, ...]:
    """:data:`MONK_SWATCH_ITA` (ITA of each Monk swatch) and :data:`MONK_SWATCH_CUTS` (cut
    points between MST k and k+1, k = 1..9: midpoints of consecutive swatch ITAs), computed on
    first use: skimage's colour conversion imports scipy, which every stage's params
    validation would otherwise pay for (tests/study/test_stage_startup.py)."""
    if name in ("MONK_SWATCH_ITA", "MONK_SWATCH_CUTS"):
        return _swatches()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def checked_cuts(cuts: Sequence[float]) -> np.ndarray:
    """``cuts`` as an array if they are 9 strictly decreasing ITA angles, else ``ValueError``."""
    c = np.asarray(cuts, dtype=np.float64)
    if c.shape != (9,) or not np.all(np.diff(c) < 0):
        raise ValueError(
            f"Monk ITA cut points must be 9 strictly decreasing angles (MST 1|2 ... 9|10), "
            f"got {list(cuts)}"
        )
    return c


def ita_to_monk(value: float, cuts: Sequence[float] | None = None) -> int | None:
    """Monk level 1-10 for an ITA in degrees: level k+1 when ``cuts[k-1] > ita >= cuts[k]``.

    ``None`` for NaN (no measurable skin); ``cuts`` default: :data:`MONK_SWATCH_CUTS`.
    """
    c = checked_cuts(_swatches()["MONK_SWATCH_CUTS"] if cuts is None else cuts)
    if value is None or not np.isfinite(value):
        return None
    # number of cut points strictly above the value = levels passed on the way down
    return int(np.sum(c > value)) + 1


def _band(value: int, bands: Mapping[str, tuple[int, int]], what: str) -> str:
    for name, (lo, hi) in bands.items():
        if lo <= value <= hi:
            return name
    raise ValueError(f"{what} {value} falls in no band of {dict(bands)}; fix the bands")


def monk_to_group(level: int | None, bands: Mapping[str, tuple[int, int]]) -> str | None:
    """Skin group of a Monk level (1-10) under ``bands`` (e.g. ``SKIN_GROUP_PRESETS['iris']``)."""
    if level is None:
        return None
    if not 1 <= int(level) <= 10:
        raise ValueError(f"Monk level must be 1-10, got {level}")
    return _band(int(level), bands, "Monk level")


def age_group(years: float | None, bands: Mapping[str, tuple[int, int]]) -> str | None:
    """Age group of an age in years (floored to whole years) under ``bands``."""
    if years is None or not np.isfinite(years):
        return None
    if years < 0:
        raise ValueError(f"age must be >= 0 years, got {years}")
    return _band(int(np.floor(years)), bands, "age")


def skin_mask(
    rgb: np.ndarray,
    cr: tuple[int, int] = YCRCB_SKIN["cr"],
    cb: tuple[int, int] = YCRCB_SKIN["cb"],
) -> np.ndarray:
    """Boolean mask of skin-coloured pixels of a uint8 RGB image (YCrCb box rule)."""
    import cv2

    arr = np.ascontiguousarray(rgb, dtype=np.uint8)
    ycrcb = cv2.cvtColor(arr, cv2.COLOR_RGB2YCrCb)
    cr_, cb_ = ycrcb[..., 1], ycrcb[..., 2]
    return (cr_ >= cr[0]) & (cr_ <= cr[1]) & (cb_ >= cb[0]) & (cb_ <= cb[1])


def skin_ita(
    rgb: np.ndarray,
    *,
    cr: tuple[int, int] = YCRCB_SKIN["cr"],
    cb: tuple[int, int] = YCRCB_SKIN["cb"],
    min_pixels: int = 30,
) -> tuple[float, int]:
    """Median per-pixel ITA over the skin pixels of an RGB patch (e.g. a face's inner box).

    Returns ``(ita_degrees, n_skin_pixels)``; ITA is NaN when fewer than ``min_pixels``
    skin pixels with ``b* > 0`` are found. The median resists eyes, brows, lips and
    highlights that pass the colour rule.
    """
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"skin_ita needs a uint8 RGB patch (H, W, 3), got {arr.dtype} {arr.shape}")
    mask = skin_mask(arr, cr, cb)
    if not mask.any():
        return float("nan"), 0
    lab = rgb_to_lab(arr[mask][None])[0]
    angles = np.asarray(ita(lab[:, 0], lab[:, 2]))
    angles = angles[np.isfinite(angles)]
    if angles.size < min_pixels:
        return float("nan"), int(angles.size)
    return float(np.median(angles)), int(angles.size)
