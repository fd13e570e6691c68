"""Floats are written at a stated precision (``genfair.io.FLOAT_DIGITS`` significant digits),
so a last-bit difference between two CPUs' SIMD kernels leaves the same bytes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from genfair.io import (
    FLOAT_DIGITS,
    file_sha256,
    round_float,
    round_floats,
    write_json,
    write_parquet,
)


def test_a_last_bit_difference_rounds_away() -> None:
    value = 0.1234567890123456
    assert (
        round_float(value)
        == round_float(math.nextafter(value, 1))
        == round_float(math.nextafter(value, 0))
    )
    assert round_float(0.1 + 0.2) == 0.3
    assert (
        round_float(-2.5e-300) == -2.5e-300 and round_float(123456789012345.0) == 123456789000000.0
    )
    assert len(repr(round_float(math.pi)).replace(".", "")) == FLOAT_DIGITS
    assert math.isnan(round_float(float("nan"))) and round_float(float("-inf")) == float("-inf")


def test_float_columns_are_rounded_keeping_dtype_and_missing_values() -> None:
    frame = pd.DataFrame(
        {
            "x": [1 / 3, float("nan")],
            "y": pd.array([2 / 3, None], dtype="Float64"),
            "z": np.array([1 / 7, 0.5], dtype="float32"),
            "n": [1, 2],
            "s": ["a", "b"],
        }
    )
    rounded = round_floats(frame)
    assert list(rounded.dtypes) == list(frame.dtypes)
    assert rounded["x"][0] == 0.3333333333 and math.isnan(rounded["x"][1])
    assert rounded["y"][0] == 0.6666666667 and rounded["y"].isna()[1]
    assert frame["x"][0] == 1 / 3  # the caller's frame is untouched
    assert rounded[["n", "s"]].equals(frame[["n", "s"]])


def test_outputs_a_last_bit_apart_are_the_same_bytes(tmp_path: Path) -> None:
    a, b = 0.7071067811865476, math.nextafter(0.7071067811865476, 1)
    write_parquet(pd.DataFrame({"bound": [a]}), tmp_path / "a.parquet")
    write_parquet(pd.DataFrame({"bound": [b]}), tmp_path / "b.parquet")
    assert file_sha256(tmp_path / "a.parquet") == file_sha256(tmp_path / "b.parquet")
    write_json({"ci": [a, {"hi": a}]}, tmp_path / "a.json")
    write_json({"ci": [b, {"hi": b}]}, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert "0.7071067812" in (tmp_path / "a.json").read_text()


def test_embedding_similarities_from_two_cpus_are_the_same_bytes(tmp_path: Path) -> None:
    """OpenBias's answer similarities with AVX-512/AMX kernels and capped to the x86-64
    baseline (the smoke study's simulated_t2i label table, measured): 4.8e-7 apart, past the
    writer's 10 digits, because they come from float32 embeddings. Matched at
    ``SIMILARITY_DECIMALS``, the label tables are the same bytes."""
    from genfair.instruments.answer_mapper import nearest_labels

    wide = np.array([[0.8490073681, 0.1], [0.8801017404, 0.2]])
    capped = np.array([[0.8490078449, 0.1], [0.8801014423, 0.2]])
    tables = []
    for name, scores in (("wide", wide), ("capped", capped)):
        matches = nearest_labels(["a", "b"], scores, ["x", "y"], 0.5, ("embedding", "below"))
        table = pd.DataFrame([m[:3] for m in matches.values()], columns=["label", "tier", "sim"])
        tables.append(file_sha256(write_parquet(table, tmp_path / f"{name}.parquet")))
    assert tables[0] == tables[1]
