"""Embedded SmolLM2: batched generation vs one prompt at a time (tokens per second).

Calls the backend directly, bypassing the response cache, on real FACT-OR-FAIR prompts.
Quick mode (benchmarks/conftest.py): 2 prompts instead of 32, one answer each still checked.
Run: make benchmark (or pytest benchmarks/test_embedded_throughput.py --benchmark-only -s)
"""

from __future__ import annotations

import pytest

from genfair.methodologies import get_methodology
from genfair.models import Request, build_backend
from genfair.study_params import load_params, methodology_config

#: prompts (half objective, half subjective): full mode, quick mode
N_PROMPTS = {"full": 32, "quick": 2}


@pytest.fixture(scope="module")
def prompts(mode) -> list[Request]:  # type: ignore[no-untyped-def]
    n_prompts = N_PROMPTS[mode.size("full", "quick")]
    params = load_params()
    config = methodology_config(params, "fact_or_fair").model_copy(
        update={"objective_rounds": 1, "scenarios_per_direction": 1, "samples_per_prompt": 1}
    )
    probes = get_methodology("fact_or_fair").build_probes(config, params.seed)
    rows = probes.groupby("kind").head(n_prompts // 2)  # half objective, half subjective
    return [Request(messages=({"role": "user", "content": p},)) for p in rows["prompt"]]


@pytest.mark.parametrize("batch_size", [1, 16])
def test_embedded_tokens_per_second(  # type: ignore[no-untyped-def]
    benchmark, mode, prompts: list[Request], batch_size: int, monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = load_params().models["smollm2"].model_copy(update={"batch_size": batch_size})
    backend = build_backend(config)
    assert backend.model is not None  # the weights load on first need: here, not timed
    texts: list[str] = []

    def run() -> None:
        texts.clear()
        backend.complete(prompts, lambda _r, c: texts.append(c.text or ""))

    _, seconds = mode.measure(benchmark, run, stat="mean")
    tokens = sum(len(backend.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    benchmark.extra_info.update(
        batch_size=batch_size,
        prompts=len(prompts),
        generated_tokens=tokens,
        tokens_per_s=round(tokens / seconds, 2),
        prompts_per_s=round(len(prompts) / seconds, 3),
    )
    print(
        f"\nbatch_size={batch_size}: {len(prompts)} prompts in {seconds:.1f} s, "
        f"{tokens / seconds:.1f} generated tokens/s, {len(prompts) / seconds:.2f} prompts/s"
    )
    assert len(texts) == len(prompts)
