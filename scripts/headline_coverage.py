"""Planted-truth coverage of the built-in methodologies' absolute-value headlines (issue 46.7):
FACT-OR-FAIR's objective distances, LVLM-FACET's disparities, news bias's word-level W, each
under genfair's percentile and BCa bootstrap of its headline function and, where its metrics
step runs on the drawn labels alone, the interval it reports. Every figure is SIMULATED.

    python scripts/headline_coverage.py [--reps 100] [--resamples 500] [--only fact_or_fair]

prints one table per methodology (the rows of docs/methodology.md, "Interval methods").
The plants (each draws one SIMULATED model's labels at a size; the truth is exact):

- fact_or_fair: the default study's probes and its SIMULATED LLM (the default plant: accuracy
  0.8 on the true group, the rest uniform), answered in-process and labelled by the
  methodology (its reported interval: the default smoothed bootstrap, at 200 replicates);
  size = objective rounds (answers per objective cell). Truth: the distance of
  the population S_fact and S_E (every cell's answer probabilities) from the trade-off curve.
- lvlm_facet: persons drawn from a pool of 2,000 SIMULATED FACET persons (its Table 1 shares);
  each answers every prompt right with the default plant's planted recall (no answer text
  or matching: the label is the class / ``yes`` on a hit, ``no`` otherwise); size = persons.
  Truth: the pool's mean planted recall of group a minus group b, per prompt.
- news_bias: articles drawn from the default study's corpus (gensim's 300 Lee background
  articles), rewritten by the SIMULATED LLM's unbiased plant (female to male 0.3, Black to
  White 0.3 per occurrence, 5% refused); size = articles. Truth: the corpus mean of each
  article's expected W (200 rewrites each).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from genfair.methodologies import get_methodology
from genfair.methodologies.base import Methodology, ModelInfo, StepContext
from genfair.study.coverage import Plant, headline_coverage
from genfair.study_params import load_params, methodology_config

ROOT = Path(__file__).resolve().parents[1]


def _config(name: str):  # noqa: ANN202 - each methodology's own Config
    return methodology_config(load_params(ROOT / "params.yaml"), name)


def _context(seed: int, tmp: Path) -> StepContext:
    model = ModelInfo("simulated_llm", "llm", "simulated", True)
    return StepContext(model=model, seed=seed, cache_dir=tmp / "cache", image_dir=tmp / "images")


# ---- FACT-OR-FAIR: objective distances, through the SIMULATED LLM


def fact_or_fair() -> tuple[Methodology, object, Plant, list[int]]:
    from genfair.methodologies.fact_or_fair.data import GROUPS
    from genfair.methodologies.fact_or_fair.scoring import (
        cell_index,
        formulas_for,
        replicate_scores,
        statistics_for,
    )
    from genfair.models.cache import ResponseCache
    from genfair.models.config import SimulatedModelConfig
    from genfair.models.runner import run_calls
    from genfair.models.simulated import SimulatedLLM

    method = get_methodology("fact_or_fair")
    base = _config("fact_or_fair").model_copy(
        update={"contexts": ["baseline"], "bootstrap_resamples": 200}
    )
    accuracy = base.simulated.llm.objective.accuracy
    simulator = SimulatedLLM(SimulatedModelConfig(backend="simulated"))
    truth = {}
    for attribute in ("gender", "race"):
        k = len(GROUPS[attribute])
        cells, groups = cell_index(statistics_for(base), "objective", attribute)
        true = np.array([GROUPS[attribute].index(g) if g else -1 for g in groups])
        p = np.full((len(true), k), 1 / k)  # no truth: any option
        p[true >= 0] = (1 - accuracy) / (k - 1)
        p[np.flatnonzero(true >= 0), true[true >= 0]] = accuracy
        at = {cell: i for i, cell in enumerate(cells)}
        pairs = [(at[(s, "high")], at[(s, "low")]) for s, d in cells if d == "high"
                 and (s, "low") in at]  # fmt: skip
        exact = formulas_for(base, "objective")
        scores = replicate_scores(100 * p[None], true, pairs, k, exact)
        truth[f"objective.{attribute}.distance"] = float(scores["distance"][0])

    def draw(size: int, rng: np.random.Generator) -> pd.DataFrame:
        config = base.model_copy(update={"objective_rounds": size})
        probes = method.probes_for(method.build_probes(config, 0), "llm")
        probes = probes[probes["context"] == "objective"]
        seed = int(rng.integers(2**31))
        with tempfile.TemporaryDirectory() as tmp:
            with ResponseCache(Path(tmp) / "responses.sqlite") as cache:
                calls = method.calls(probes, config, "llm")
                responses = run_calls(simulator, cache, calls, method.judge, seed=seed)
            return method.label(probes, responses, config, _context(seed, Path(tmp)))

    return method, base, Plant(draw, truth), [3, 10]


# ---- LVLM-FACET: pooled disparities, planted recall per person


def lvlm_facet() -> tuple[Methodology, object, Plant, list[int]]:
    from genfair.methodologies.lvlm_facet.groups import (
        DISPARITY_PAIRS,
        lvlm_persons,
        resolve_classes,
    )
    from genfair.methodologies.lvlm_facet.synthetic import synthetic_persons
    from genfair.models.vlm import planted_recall

    method = get_methodology("lvlm_facet")
    config = _config("lvlm_facet")
    policy = planted_recall(config.simulated)
    classes = list(resolve_classes(config.classes))
    pool = lvlm_persons(synthetic_persons(2000, seed=0), config.classes)
    pool = pool[pool["class"].isin(classes)].reset_index(drop=True)
    p = {prompt: policy.probabilities(pool, prompt) for prompt in config.prompts}
    truth = {}
    for h in method.comparison.headline:
        a, b = DISPARITY_PAIRS[h.where["attribute"]]
        groups = pool[h.where["attribute"]].to_numpy()
        planted = p[h.where["prompt"]]
        truth[h.name] = float(planted[groups == a].mean() - planted[groups == b].mean())

    def draw(size: int, rng: np.random.Generator) -> pd.DataFrame:
        rows = rng.integers(len(pool), size=size)
        frames = []
        for prompt in config.prompts:
            hit = rng.random(size) < p[prompt][rows]
            persons = pool.iloc[rows].reset_index(drop=True)
            miss = "no" if prompt != "direct" else "unknown"
            right = persons["class"] if prompt == "direct" else "yes"
            label = np.where(hit, right, miss)
            frames.append(
                persons.assign(person_id=[f"d{i}" for i in range(size)], prompt=prompt,
                               label=label, status="ok", tier="exact", encoder=None)
            )  # fmt: skip
        return pd.concat(frames, ignore_index=True)

    return method, config, Plant(draw, truth), [200, 2000]


# ---- news bias: word-level W, the SIMULATED LLM's rewrites of the default corpus


def news_bias() -> tuple[Methodology, object, Plant, list[int]]:
    from gensim.test.utils import datapath

    from genfair.methodologies.base import MetricsResult
    from genfair.methodologies.news_bias.scoring import word_row
    from genfair.methodologies.news_bias.word_level import summarize_word_level, word_level_pairs
    from genfair.models.simulated import rewrite, whiten
    from genfair.resources.group_words import GroupWordCounter

    class WordLevel(type(get_methodology("news_bias"))):
        """News bias whose metrics step scores the word level alone, with its own functions
        (the sentence level's instruments are not needed for W)."""

        def metrics(self, labels, config, ctx):  # noqa: ANN001, ANN202 - as the base's
            ok = labels[(labels["status"] == "ok")]
            rows = []
            for h in word:
                table = word_level_pairs(ok, counter, h.where["attribute"])
                summary = summarize_word_level(table, h.where["attribute"], config.confidence_level)
                rows.append(word_row("unbiased", h.where["attribute"], summary))
            return MetricsResult(pd.DataFrame(rows))

    method = WordLevel()
    config = _config("news_bias")
    plant = config.simulated.unbiased
    lines = Path(datapath("lee_background.cor")).read_text(encoding="utf-8").splitlines()
    corpus = [line for line in lines if line.strip()]
    counter = GroupWordCounter.from_files(config.gender_words, config.occupations, config.names)
    word = [h for h in method.comparison.headline if h.where["level"] == "word"]

    def rewritten(articles: list[str], rng: np.random.Generator) -> list[str]:
        out = []
        for article in articles:
            if plant.black_to_white > 0:
                article = whiten(article, plant.black_to_white, rng)
            out.append(rewrite(article, plant.female_to_male, rng))
        return out

    rng = np.random.default_rng(46)
    repeats = 200
    originals = corpus * repeats
    frame = pd.DataFrame({"original_text": originals, "generated_text": rewritten(originals, rng)})
    truth = {}
    for h in word:
        table = word_level_pairs(frame, counter, h.where["attribute"])
        per_article = table["W"].to_numpy(float).reshape(repeats, len(corpus))
        kept = ~table["dropped"].to_numpy(bool).reshape(repeats, len(corpus))
        expected = np.where(kept, per_article, np.nan).mean(axis=0)
        if np.isfinite(expected).any():  # the corpus has the attribute's words
            truth[h.name] = float(np.nanmean(expected))

    def draw(size: int, rng: np.random.Generator) -> pd.DataFrame:
        articles = [corpus[i] for i in rng.integers(len(corpus), size=size)]
        refused = rng.random(size) < plant.refusal_rate
        return pd.DataFrame(
            {
                "pair_id": np.arange(size),
                "prompt_type": "unbiased",
                "status": np.where(refused, "refused", "ok"),
                "original_text": articles,
                "generated_text": rewritten(articles, rng),
            }
        )

    return method, config, Plant(draw, truth), [60, 300, 1000]


def open_bias_severity(reps: int) -> pd.DataFrame:
    """OpenBias's severities (paper 003, Eq. 4-6) straight from planted VQA class counts, not
    through :func:`headline_coverage` (its headline function needs a knowledge base): per
    (captions, images per caption) of the default study (8, 4) and the paper (100, 10), each
    caption's true class distribution over 3 classes drawn once from Dirichlet(4, 2, 1),
    each draw's counts multinomial, the interval by its own ``severity_interval`` (the
    config's ``ci_method``: percentile or BCa, 2,000 resamples, contained). Truth: the
    severities of the true distributions; ``plugin``: the estimator's own expectation at that
    many images (4,000 draws), and ``coverage_plugin`` how often the interval holds it."""
    from genfair.methodologies.open_bias.severity import (
        Bootstrap,
        context_aware_severity,
        context_free_severity,
        severity_interval,
    )

    rows = []
    for captions, images in ((8, 4), (100, 10)):
        p = np.random.default_rng(3).dirichlet([4.0, 2.0, 1.0], size=captions)
        entropy = -(p * np.log(p)).sum(axis=1) / np.log(3)
        pooled = p.mean(axis=0)
        truth = {
            "context_aware": 1 - entropy.mean(),
            "context_free": 1 + (pooled * np.log(pooled)).sum() / np.log(3),
        }
        big = np.random.default_rng([captions, images])  # the plug-in's own expectation
        drawn = [np.stack([big.multinomial(images, row) for row in p]) for _ in range(4000)]
        plugin = {
            "context_aware": np.mean([context_aware_severity(c) for c in drawn]),
            "context_free": np.mean([context_free_severity(c) for c in drawn]),
        }
        for method in ("percentile", "BCa"):
            found = {k: [] for k in truth}
            for rep in range(reps):
                rng = np.random.default_rng([captions, images, rep])
                counts = np.stack([rng.multinomial(images, row) for row in p])
                for statistic in truth:
                    r = severity_interval(
                        counts, statistic, "mean", Bootstrap(0.95, method, 2000, rep)
                    )
                    found[statistic].append((r["estimate"], r["ci_low"], r["ci_high"]))
            for statistic, draws in found.items():
                estimate, low, high = np.array(draws).T
                held = (low <= truth[statistic]) & (truth[statistic] <= high)
                held_plugin = (low <= plugin[statistic]) & (plugin[statistic] <= high)
                rows.append({
                    "headline": f"severity_{statistic}", "truth": truth[statistic],
                    "size": f"{captions}x{images}", "method": method, "reps": reps,
                    "coverage": float(held.mean()),
                    "estimate": float(estimate.mean()), "plugin": float(plugin[statistic]),
                    "coverage_plugin": float(held_plugin.mean()),
                })  # fmt: skip
    return pd.DataFrame(rows)


#: name -> (its plant, the methods measured, the modality of its SIMULATED model)
PLANTS: dict[str, tuple[Callable, tuple[str, ...], str]] = {
    "fact_or_fair": (fact_or_fair, ("percentile", "bca", "reported"), "llm"),
    "lvlm_facet": (lvlm_facet, ("percentile", "bca", "reported"), "vlm"),
    "news_bias": (news_bias, ("percentile", "bca", "reported"), "llm"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--only", choices=sorted([*PLANTS, "open_bias"]))
    parser.add_argument("--methods", help="comma-separated subset of each plant's methods")
    parser.add_argument("--sizes", help="comma-separated sizes instead of the plant's own")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    for name, (plant_of, methods, modality) in PLANTS.items():
        if args.only and name != args.only:
            continue
        if args.methods:  # the same draws (seeded by size and draw), fewer intervals
            methods = tuple(m for m in methods if m in args.methods.split(","))
        method, config, plant, sizes = plant_of()
        sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else sizes
        table = headline_coverage(
            method, config, plant, sizes, args.reps, modality=modality, methods=methods,
            resamples=args.resamples,
        )  # fmt: skip
        print(f"== {name} (SIMULATED; {args.reps} draws, {args.resamples} resamples)")
        print(table.round(4).to_string(index=False), flush=True)
    if not args.only or args.only == "open_bias":
        print(f"== open_bias severities (SIMULATED; {args.reps} draws, 2,000 resamples)")
        print(open_bias_severity(args.reps).round(4).to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
