"""A generate step whose answers are all cached never loads a local model's weights (issue 31):
run again, it reads every answer from the cache, loads nothing and writes the same files
(responses, run_params with the model's runtime, usage with its tokenizer's counts)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genfair.methodologies import register
from genfair.study.layout import Layout
from genfair.study.steps import generate, make_probes
from genfair.study_params import load_params
from tests.study.toy_methodology import Quiz
from tests.support.conf import ROOT, with_runs
from tests.support.tiny_models import count_loads, tiny_llm_config

pytest.importorskip("transformers")


def test_a_generate_whose_answers_are_all_cached_loads_no_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    register(Quiz)
    raw = load_params(ROOT / "params.yaml").model_dump(mode="json", exclude_unset=True)
    raw["methodologies"] = {"toy_quiz": {"questions": 6}}
    raw["models"] = {"tiny": tiny_llm_config(tmp_path / "tiny", batch_size=3)}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(with_runs(raw)))
    params, layout = load_params(path), Layout(tmp_path)
    make_probes(params, "toy_quiz", layout)

    loads = count_loads(monkeypatch)
    folder = layout.responses("tiny", "toy_quiz").parent

    def written() -> dict[str, bytes]:
        return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.is_file()}

    generate(params, "tiny", "toy_quiz", layout)
    first = written()
    assert len(loads) == 1 and {"responses.parquet", "run_params.json", "usage.json"} <= set(first)
    generate(params, "tiny", "toy_quiz", layout)
    assert len(loads) == 1  # every answer from the cache: the weights never loaded
    assert written() == first
