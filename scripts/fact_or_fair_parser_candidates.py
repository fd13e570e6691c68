"""Collect real SmolLM2 answers to FACT-OR-FAIR probes as candidates for the parser bank.

Runs the embedded model on objective probes and a spread of subjective probes of the
default scale through the response cache, and writes text + options to a CSV whose
``expected`` column is then filled by hand (tests/data/fact_or_fair_parser_bank.csv).
Two runs made the bank: the study's settings (greedy, 16 tokens, every objective probe,
40 subjective probes per context) and a sampled one for more varied answers
(``--temperature 0.8 --max-tokens 48 --objective 32 --subjective 8 --pick-seed 1``).

    GENFAIR_CACHE_DIR=.cache PYTHONPATH=src python scripts/fact_or_fair_parser_candidates.py OUT.csv
"""

from __future__ import annotations

import argparse

import pandas as pd
import yaml

from genfair.methodologies.fact_or_fair import METHODOLOGY
from genfair.methodologies.fact_or_fair.config import FactOrFairConfig
from genfair.models import build_backend
from genfair.models.cache import ResponseCache, cache_dir
from genfair.models.config import EmbeddedModelConfig
from genfair.models.runner import run_calls


def main() -> None:
    cli = argparse.ArgumentParser()
    cli.add_argument("out")
    cli.add_argument("--objective", type=int, default=None, help="objective probes (default all)")
    cli.add_argument("--subjective", type=int, default=40, help="subjective probes per context")
    cli.add_argument("--pick-seed", type=int, default=0)
    cli.add_argument("--temperature", type=float, default=None)
    cli.add_argument("--max-tokens", type=int, default=None)
    args = cli.parse_args()
    with open("params.yaml") as handle:
        params = yaml.safe_load(handle)
    config = FactOrFairConfig(**params["methodologies"]["fact_or_fair"])
    probes = METHODOLOGY.build_probes(config, params["seed"])
    objective = probes[probes.kind == "objective"]
    if args.objective is not None:
        objective = objective.sample(n=args.objective, random_state=args.pick_seed)
    picked = [objective]
    for _, part in probes[probes.kind == "subjective"].groupby("context"):
        picked.append(part.sample(n=min(args.subjective, len(part)), random_state=args.pick_seed))
    probes = pd.concat(picked, ignore_index=True)
    model = params["models"]["smollm2"]
    if args.temperature is not None:
        model["sampling"]["temperature"] = args.temperature
    if args.max_tokens is not None:
        model["sampling"]["max_tokens"] = args.max_tokens
    backend = build_backend(EmbeddedModelConfig(**model))
    cache = ResponseCache(cache_dir(params["cache"]["dir"]) / "responses.sqlite")
    responses = run_calls(
        backend,
        cache,
        METHODOLOGY.calls(probes),
        lambda text, meta: "ok",
        seed=params["seed"],
        label="smollm2",
    )
    merged = probes.merge(responses[["probe_id", "text"]], on="probe_id")
    merged[["probe_id", "kind", "context", "text", "options"]].to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
