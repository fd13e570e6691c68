"""FairFace's 7 races onto FACT-OR-FAIR's 4: the census mapping and the authors' code preset
(Indian and Middle Eastern skipped: the next most probable label counts)."""

from __future__ import annotations

import numpy as np
import pytest

from genfair.instruments.face_demographics import (
    FAIRFACE_AUTHORS_CODE,
    FAIRFACE_RACES,
    FAIRFACE_TO_PAPER,
    RaceConfig,
    pick_races,
)

# order: White, Black, Latino_Hispanic, East Asian, Southeast Asian, Indian, Middle Eastern
P = np.array(
    [
        [0.02, 0.03, 0.04, 0.01, 0.05, 0.60, 0.25],  # Indian, Middle Eastern, then Southeast Asian
        [0.10, 0.02, 0.03, 0.05, 0.05, 0.05, 0.70],  # Middle Eastern first, then White
        [0.02, 0.02, 0.02, 0.30, 0.04, 0.40, 0.20],  # Indian first, then East Asian
        [0.00, 0.90, 0.02, 0.02, 0.02, 0.02, 0.02],  # Black: same under both
    ]
)


def test_census_mapping_takes_the_arg_max():
    races = pick_races(P, FAIRFACE_RACES, FAIRFACE_TO_PAPER)
    assert [r.race for r in races] == ["asian", "white", "asian", "black"]
    assert [r.raw for r in races] == ["Indian", "Middle Eastern", "Indian", "Black"]
    assert races[0].confidence == pytest.approx(0.60)


def test_authors_code_skips_indian_and_middle_eastern():
    races = pick_races(P, FAIRFACE_RACES, FAIRFACE_AUTHORS_CODE)
    assert [r.race for r in races] == ["asian", "white", "asian", "black"]
    assert [r.raw for r in races] == ["Southeast Asian", "White", "East Asian", "Black"]
    assert races[2].confidence == pytest.approx(0.30)


def test_race_config_presets_and_errors(tmp_path):
    weights = tmp_path / "w.onnx"
    assert RaceConfig(weights=weights, mapping="authors_code").mapping == FAIRFACE_AUTHORS_CODE
    assert RaceConfig(weights=weights, mapping="census").mapping == FAIRFACE_TO_PAPER
    assert RaceConfig(weights=weights).mapping == FAIRFACE_TO_PAPER
    with pytest.raises(ValueError, match="preset must be one of"):
        RaceConfig(weights=weights, mapping="authors")
    with pytest.raises(ValueError, match="skips every classifier label"):
        pick_races(P[:1], FAIRFACE_RACES, dict.fromkeys(FAIRFACE_RACES))
