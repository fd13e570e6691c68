"""Stage outputs are the same bytes for the same params and seed, with or without a cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from genfair.cli import compose
from genfair.study.layout import Layout
from genfair.study.steps import compute_metrics, generate, label, make_probes
from genfair.study_params import load_params


def _study(
    root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, seed: int | None = None
) -> Layout:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(cache))
    root.mkdir(parents=True)
    # FACT-OR-FAIR on the simulator: the methodologies that need curated data are left out
    overrides = [
        "scale=smoke",
        "~model@models.smollm2",
        "~methodology@methodologies.news_bias",
        "~methodology@methodologies.iris",
    ] + ([f"seed={seed}"] if seed else [])
    params = load_params(compose(overrides, root / "params.yaml"))
    layout = Layout(root)
    make_probes(params, "fact_or_fair", layout)
    generate(params, "simulated_llm", "fact_or_fair", layout)
    label(params, "simulated_llm", "fact_or_fair", layout)
    compute_metrics(params, "simulated_llm", "fact_or_fair", layout)
    return layout


def _outputs(layout: Layout) -> dict[str, bytes]:
    return {
        str(p.relative_to(layout.root)): p.read_bytes()
        for p in sorted(layout.data.rglob("*"))
        if p.is_file() and p.suffix in {".parquet", ".json"}
    }


def test_outputs_are_byte_identical_across_runs_and_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _outputs(_study(tmp_path / "a", tmp_path / "cache-a", monkeypatch))
    second = _outputs(_study(tmp_path / "b", tmp_path / "cache-b", monkeypatch))
    assert len(first) >= 5
    assert first == second


def test_another_seed_gives_other_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _outputs(_study(tmp_path / "a", tmp_path / "cache", monkeypatch))
    other = _outputs(_study(tmp_path / "b", tmp_path / "cache", monkeypatch, seed=7))
    assert first["data/probes/fact_or_fair.parquet"] != other["data/probes/fact_or_fair.parquet"]
