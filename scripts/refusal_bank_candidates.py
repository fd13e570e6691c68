"""Collect real SmolLM2 article openings for the refusal bank (tests/data/refusal_bank.csv).

The embedded model writes the first ``--max-tokens`` tokens of an article for the first
``--articles`` headlines of gensim's ABC corpus (headline = first sentence, as
``collect_news`` derives it), under both of paper 001's prompts, through the response
cache; each opening is then read and labelled by hand (refusal or news).

    GENFAIR_CACHE_DIR=.cache PYTHONPATH=src python scripts/refusal_bank_candidates.py OUT.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml

from genfair.instruments.sentences import split_sentences
from genfair.methodologies.news_bias import prompt_for
from genfair.models import build_backend
from genfair.models.cache import ResponseCache, cache_dir
from genfair.models.config import EmbeddedModelConfig
from genfair.models.runner import Call, run_calls


def main() -> None:
    cli = argparse.ArgumentParser()
    cli.add_argument("out")
    cli.add_argument("--articles", type=int, default=12)
    cli.add_argument("--max-tokens", type=int, default=40)
    args = cli.parse_args()
    from gensim.test.utils import datapath

    lines = [
        x
        for x in Path(datapath("lee_background.cor")).read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]
    headlines = [split_sentences(x)[0] for x in lines[: args.articles]]
    with open("params.yaml") as handle:
        params = yaml.safe_load(handle)
    backend = build_backend(EmbeddedModelConfig(**params["models"]["smollm2"]))
    calls, rows = [], []
    for i, headline in enumerate(headlines):
        for prompt_type in ("unbiased", "biased"):
            prompt = prompt_for(headline, prompt_type)
            calls.append(
                Call(
                    probe_id=f"refusal-bank-{i}-{prompt_type}",
                    messages=({"role": "user", "content": prompt},),
                    max_tokens=args.max_tokens,
                )
            )
            rows.append({"prompt_type": prompt_type, "headline": headline})
    cache = ResponseCache(cache_dir(params["cache"]["dir"]) / "responses.sqlite")
    responses = run_calls(
        backend, cache, calls, lambda text, meta: "ok", seed=params["seed"], label="smollm2"
    )
    pd.DataFrame(rows).assign(text=responses["text"]).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
