"""The default face instrument's readings of the validation photos before the speed work
(issue 43, point 4), and the comparison every later speed cut must pass.

``tests/data/face_readings_default.json``: per image (package photos and their full-size
composites at 512 and 1024 px, ``<id>@<side>``) the status and the faces in box order, as
measured by the code of commit bc94612."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "face_readings_default.json"
#: the ITA is a median of float64 arctangents, whose last bit may differ between CPUs'
#: vector kernels; every other reading is compared exactly
ITA = 5


def golden_readings() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())["readings"]


def assert_same_reading(got: tuple, want: list) -> None:
    """``got`` (:func:`~genfair.instruments.face_agreement.readings_of`) is ``want``."""
    status, faces = got
    assert status == want[0]
    assert len(faces) == len(want[1])
    for g, w in zip(faces, want[1], strict=True):
        g, w = list(g), list(w)
        if w[ITA] is None:
            assert g[ITA] is None
        else:
            assert g[ITA] == pytest.approx(w[ITA], abs=1e-9)
        g[ITA] = w[ITA] = None
        assert [list(g[0])] + g[1:] == [w[0]] + w[1:]
