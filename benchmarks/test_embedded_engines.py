"""Embedded SmolLM2: today's path (transformers, fp32, batches of 16) against CTranslate2
(float32, the same weights, handed every call at once and cutting its own length-sorted
batches of ``CT2_BATCH``) over real FACT-OR-FAIR probes with the study's prompts, answer
length (the model's ``max_tokens``) and greedy decoding, paired in one run (A, B, A, B...):
calls per second, their ratio, and how many answers (text, answer letter) are identical.

Calls the backend directly, bypassing the response cache. Quick mode (benchmarks/conftest.py):
2 probes (one objective, one subjective), one round; the speed-up and the identical answers
are printed in both modes (a measurement: no goal is set). At such sizes CTranslate2 is the
slower engine: its prompts of unequal length are fed token by token past the shortest one
(``include_prompt_in_result=False``), which length-sorted batches of 64 amortise.
Run: pytest benchmarks/test_embedded_engines.py --benchmark-only -s
"""

from __future__ import annotations

import json
import statistics
import time

import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.fact_or_fair.parsing import parse_choice
from genfair.models import Request, build_backend
from genfair.study_params import load_params, methodology_config

#: probes, paired rounds: full mode, quick mode
SIZES = {"full": (64, 3), "quick": (2, 1)}
#: CTranslate2's batch size (its ``max_batch_size``; the model config's ``batch_size``)
CT2_BATCH = 64


@pytest.fixture(scope="module")
def probes(mode) -> list[tuple[Request, list[dict]]]:  # type: ignore[no-untyped-def]
    """Distinct study prompts, a third objective and the rest subjective, with their options."""
    n_probes, _ = SIZES[mode.size("full", "quick")]
    params = load_params()
    table = get_methodology("fact_or_fair").build_probes(
        methodology_config(params, "fact_or_fair"), params.seed
    )
    table = table[table["modality"] == "llm"].drop_duplicates("prompt")
    rows = [
        table[table["kind"] == "objective"].head(max(1, n_probes // 3)),
        table[table["kind"] == "subjective"].head(n_probes - max(1, n_probes // 3)),
    ]
    return [
        (Request(messages=({"role": "user", "content": r["prompt"]},)), json.loads(r["options"]))
        for part in rows
        for r in part.to_dict("records")
    ]


def test_ctranslate2_against_todays_path(benchmark, mode, probes, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("ctranslate2")
    config = load_params().models["smollm2"]
    batch = {"transformers": config.batch_size, "ctranslate2": CT2_BATCH}
    engines = {
        e: build_backend(
            config.model_copy(update={"engine": e, "dtype": "float32", "batch_size": batch[e]})
        )
        for e in ("transformers", "ctranslate2")
    }
    for backend in engines.values():  # weights (and the ctranslate2 copy) load on first need:
        assert backend.model is not None  # here, not in the timed rounds
    requests = [r for r, _ in probes]
    seconds: dict[str, list[float]] = {e: [] for e in engines}
    texts: dict[str, list[str]] = {}

    def answer(engine: str) -> None:
        done: dict[int, str] = {}
        start = time.perf_counter()
        engines[engine].complete(requests, lambda r, c: done.__setitem__(id(r), c.text or ""))
        seconds[engine].append(time.perf_counter() - start)
        texts[engine] = [done[id(r)] for r in requests]

    def paired() -> None:
        for engine in engines:
            answer(engine)

    _, rounds = SIZES[mode.size("full", "quick")]
    benchmark.pedantic(paired, rounds=rounds, iterations=1, warmup_rounds=0)
    ratios = [a / b for a, b in zip(seconds["transformers"], seconds["ctranslate2"], strict=True)]
    letters = {
        e: [parse_choice(t, o).letter for t, (_, o) in zip(texts[e], probes, strict=True)]
        for e in engines
    }
    same_text = sum(
        a == b for a, b in zip(texts["transformers"], texts["ctranslate2"], strict=True)
    )
    same_letter = sum(
        a == b for a, b in zip(letters["transformers"], letters["ctranslate2"], strict=True)
    )
    rate = {e: round(len(requests) / statistics.median(s), 3) for e, s in seconds.items()}
    benchmark.extra_info.update(
        probes=len(requests),
        calls_per_s=rate,
        speedup_median=round(statistics.median(ratios), 2),
        speedup_range=[round(min(ratios), 2), round(max(ratios), 2)],
        identical_texts=same_text,
        identical_letters=same_letter,
    )
    print(
        f"\n{len(requests)} probes: transformers {rate['transformers']} calls/s, ctranslate2 "
        f"{rate['ctranslate2']} calls/s; speedup median {statistics.median(ratios):.2f} (range "
        f"{min(ratios):.2f}-{max(ratios):.2f}); identical texts {same_text}/{len(requests)}, "
        f"letters {same_letter}/{len(requests)}"
    )
    assert len(texts["ctranslate2"]) == len(texts["transformers"]) == len(requests)
