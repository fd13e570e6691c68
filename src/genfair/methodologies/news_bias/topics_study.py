"""The document level of paper 001 across a study: one LDA over the originals and every
model's articles, then Eq. 7-9 per corpus (Methods, "Evaluating Document Level Bias";
Figures 6-7; Appendix B).

A *corpus* is a set of articles whose sentences share one contingency matrix ``O``: the
originals, and each model's articles under each prompt type (``<model>/<prompt_type>``).

1. Documents: the originals plus every ``ok`` generated article, tokenised (lower-cased,
   lemmatised with simplemma when configured, stop words kept as the paper does).
2. ``K`` from ``num_topics_grid`` by held-out perplexity, then LDA with ``K`` topics on all
   documents (:mod:`genfair.instruments.topics`).
3. Per corpus and attribute: each sentence's most probable topic and its group (the group
   with the strictly highest count of group words; ties and no words: neutral), ``O``, the
   chi-squared test, the standardised residuals (Eq. 7) and the topic-group associations
   (residual > ``residual_threshold``).
4. Per generated article: ``g_h`` (Eq. 8) with its corpus's associations, ``g_o`` of its
   original with the originals' associations, ``W`` (Eq. 9) and the focal group's change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from genfair.instruments.sentences import assign_groups, split_sentences
from genfair.instruments.topics import (
    choose_num_topics,
    document_topics,
    fit_lda,
    identity_lemmatizer,
    sentence_topics,
    tokenize,
)
from genfair.io import jsonable
from genfair.methodologies.base import StudyResult
from genfair.methodologies.news_bias.biased_prompts import prejudice_values, welch_delta
from genfair.methodologies.news_bias.config import DocumentLevelConfig, NewsBiasConfig
from genfair.methodologies.news_bias.document_level import (
    NEUTRAL,
    associated_topics,
    chi2_test,
    contingency,
    document_bias,
    document_distribution,
    example_topics,
    standardized_residuals,
)
from genfair.methodologies.news_bias.word_level import FOCAL_GROUP
from genfair.resources.group_words import GroupWordCounter

log = logging.getLogger(__name__)

ORIGINALS = "originals"
ATTRIBUTES = ("gender", "race")
SCORE_COLUMNS = [
    "model",
    "prompt_type",
    "attribute",
    "level",
    "measure",
    "mean",
    "ci_low",
    "ci_high",
    "n",
    "n_dropped",
    "prejudice_group",
    "prejudice_n_base",
    "prejudice_pct",
    "prejudice_change",
    "prejudice_change_ci_low",
    "prejudice_change_ci_high",
]


@lru_cache(maxsize=200_000)
def _simplemma(token: str) -> str:
    import simplemma

    return simplemma.lemmatize(token, lang="en")


def lemmatizer(enabled: bool) -> Callable[[str], str]:
    """simplemma's English lemmatiser (offline, rule + dictionary based) or the identity."""
    return _simplemma if enabled else identity_lemmatizer


def document_level_study(
    originals: pd.DataFrame,
    generated: dict[str, pd.DataFrame],
    config: NewsBiasConfig,
    seed: int,
    counter: GroupWordCounter | None = None,
    simulated: frozenset[str] | set[str] = frozenset(),
) -> StudyResult:
    """Run the document level on ``originals`` (``article_id``, ``body``) and the ``ok``
    generated articles of each model (``pair_id``, ``prompt_type``, ``article_id``,
    ``generated_text``), keyed by model name. ``simulated`` names the SIMULATED models,
    left out of the LDA fit under ``documents.lda_fit: real_unbiased`` (see
    :func:`fit_corpora`)."""
    cfg = config.documents
    counter = counter or GroupWordCounter.from_files(
        config.gender_words, config.occupations, config.names
    )
    lemma = lemmatizer(cfg.lemmatize)
    corpora = _corpora(originals, generated)
    texts = {name: frame["text"].fillna("").tolist() for name, frame in corpora.items()}
    docs = {name: [tokenize(t, lemma) for t in ts] for name, ts in texts.items()}
    fitted = fit_corpora(list(corpora), cfg.lda_fit, simulated)
    all_docs = [d for name in fitted for d in docs[name] if d]
    if len(all_docs) < 3:
        raise ValueError(
            f"the document level needs at least 3 non-empty articles to fit its LDA on "
            f"({cfg.lda_fit}: {fitted}); got {len(all_docs)}"
        )

    k, perplexity = choose_num_topics(
        all_docs,
        cfg.num_topics_grid,
        cfg.holdout_fraction,
        seed,
        passes=cfg.passes,
        iterations=cfg.iterations,
    )
    log.info("LDA: %d topics chosen from %s on %d documents", k, cfg.num_topics_grid, len(all_docs))
    model, vocab = fit_lda(all_docs, k, seed, passes=cfg.passes, iterations=cfg.iterations)
    theta = {
        name: document_topics(model, vocab, ds, cfg.minimum_probability, seed)
        for name, ds in docs.items()
    }

    chi2_rows, assoc_rows, example_parts = [], [], []
    associations: dict[tuple[str, str], dict[str, set[int]]] = {}
    for name, ts in texts.items():
        sentences = [s for t in ts for s in split_sentences(t)]
        assigned = sentence_topics(model, vocab, [tokenize(s, lemma) for s in sentences], seed)
        for attribute in ATTRIBUTES:
            row, assoc, rows = _associations(
                name, attribute, sentences, assigned, counter, k, cfg.residual_threshold
            )
            chi2_rows.append(row)
            assoc_rows += rows
            associations[(name, attribute)] = assoc
            examples = example_topics(model, assoc, cfg.example_words, cfg.relevance_lambda)
            example_parts.append(examples.assign(corpus=name, attribute=attribute))

    pairs_table, score_rows = _all_document_scores(corpora, theta, associations, counter, config)
    tables = {
        "perplexity": perplexity,
        "chi2": pd.DataFrame(chi2_rows),
        "associations": pd.DataFrame(
            assoc_rows, columns=["corpus", "attribute", "group", "topic", "residual", "sentences"]
        ),
        "example_topics": pd.concat(example_parts, ignore_index=True)[
            ["corpus", "attribute", "group", "topic", "top_words"]
        ],
        "pairs": pairs_table,
        "scores": pd.DataFrame(score_rows, columns=SCORE_COLUMNS),
        "prompt_comparison": document_prompt_comparison(pairs_table, config.confidence_level),
    }
    summary, params = _summary(k, len(all_docs), fitted, cfg, score_rows)
    return StudyResult(tables=tables, summary=jsonable(summary), params=params)


def _summary(
    k: int,
    documents: int,
    fitted: list[str],
    cfg: DocumentLevelConfig,
    score_rows: list[dict[str, Any]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The study's summary (its ``W`` per model, prompt type and attribute) and MLflow params."""
    summary = {
        "num_topics": k,
        "documents": documents,
        "lda_fit": cfg.lda_fit,
        "lda_corpora": fitted,
        "lemmatizer": "simplemma" if cfg.lemmatize else "none",
        "scores": {
            f"{r['model']}.{r['prompt_type']}.{r['attribute']}": {
                "W": r["mean"],
                "W_ci": [r["ci_low"], r["ci_high"]],
                "n": r["n"],
                "prejudice_pct": r["prejudice_pct"],
            }
            for r in score_rows
        },
    }
    params = {
        "document.num_topics": k,
        "document.lemmatizer": summary["lemmatizer"],
        "document.documents": documents,
        "document.lda_fit": cfg.lda_fit,
    }
    return summary, params


def _all_document_scores(
    corpora: dict[str, pd.DataFrame],
    theta: dict[str, Any],
    associations: dict[tuple[str, str], dict[str, set[int]]],
    counter: GroupWordCounter,
    config: NewsBiasConfig,
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Step 4 for every generated corpus and attribute: the pairs table and the score rows."""
    pair_parts, score_rows = [], []
    original_index = {a: i for i, a in enumerate(corpora[ORIGINALS]["article_id"])}
    for name, frame in corpora.items():
        if name == ORIGINALS:
            continue
        rows = [original_index.get(a, -1) for a in frame["article_id"]]
        missing = [a for a, i in zip(frame["article_id"], rows, strict=True) if i < 0]
        if missing:
            raise ValueError(f"{name}: articles {missing[:5]} are not in the corpus of originals")
        for attribute in ATTRIBUTES:
            pairs, score = _document_scores(
                name, frame, attribute, theta, rows, associations, counter, config
            )
            pair_parts.append(pairs)
            score_rows.append(score)
    pairs_table = pd.concat(pair_parts, ignore_index=True) if pair_parts else pd.DataFrame()
    return pairs_table, score_rows


def _corpora(
    originals: pd.DataFrame, generated: dict[str, pd.DataFrame]
) -> dict[str, pd.DataFrame]:
    """The corpora by name, each with a ``text`` column: the originals (one row per article,
    in article order), then each model's articles per prompt type (``<model>/<prompt_type>``)."""
    originals = originals.drop_duplicates("article_id").sort_values("article_id", kind="stable")
    corpora: dict[str, pd.DataFrame] = {ORIGINALS: originals.rename(columns={"body": "text"})}
    for model, table in generated.items():
        for prompt_type, part in table.groupby("prompt_type", sort=True):
            corpora[f"{model}/{prompt_type}"] = part.rename(columns={"generated_text": "text"})
    return corpora


def _associations(
    name: str,
    attribute: str,
    sentences: list[str],
    topics: Sequence[int],
    counter: GroupWordCounter,
    k: int,
    threshold: float,
) -> tuple[dict[str, Any], dict[str, set[int]], list[dict[str, Any]]]:
    """Step 3 for one corpus and attribute, its sentences' ``topics`` given (of ``k``): its
    chi-squared row, the topics associated with each group (residual > ``threshold``) and
    one row per association."""
    groups = counter.groups(attribute)
    assigned = (
        assign_groups(counter.count_many(sentences, attribute))
        if sentences
        else np.zeros(0, dtype=int)
    )
    labels = [groups[g] if g >= 0 else NEUTRAL for g in assigned]
    observed = contingency(pd.DataFrame({"topic": topics, "group": labels}), groups, k)
    row: dict[str, Any] = {
        "corpus": name,
        "attribute": attribute,
        "n_sentences": int(observed.sum()),
        "num_topics": k,
    }
    assoc: dict[str, set[int]] = {g: set() for g in groups}
    assoc_rows: list[dict[str, Any]] = []
    try:
        test = chi2_test(observed)
        row.update(
            statistic=test.statistic,
            dof=test.dof,
            p_value=test.pvalue,
            topics_used=test.n_topics,
        )
        residuals = standardized_residuals(observed)
        assoc = associated_topics(residuals, groups, threshold)
        for group, topic_ids in assoc.items():
            m = list(groups).index(group)
            assoc_rows += [
                {
                    "corpus": name,
                    "attribute": attribute,
                    "group": group,
                    "topic": t,
                    "residual": float(residuals[t, m]),
                    "sentences": int(observed[t, m]),
                }
                for t in sorted(topic_ids)
            ]
    except ValueError as exc:  # too few groups present for a test
        row.update(statistic=np.nan, dof=np.nan, p_value=np.nan, topics_used=np.nan, note=str(exc))
    return row, assoc, assoc_rows


def _document_scores(
    name: str,
    frame: pd.DataFrame,
    attribute: str,
    theta: dict[str, Any],
    rows: list[int],
    associations: dict[tuple[str, str], dict[str, set[int]]],
    counter: GroupWordCounter,
    config: NewsBiasConfig,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Step 4 for one generated corpus and attribute: its pairs (``g_h``, ``g_o``, ``W``
    per article) and its ``W`` score row; ``rows``: each article's row among the originals."""
    model_name, prompt_type = name.rsplit("/", 1)
    groups = counter.groups(attribute)
    focus = FOCAL_GROUP[attribute]
    g_h = document_distribution(theta[name], associations[(name, attribute)], groups)
    g_o = document_distribution(
        theta[ORIGINALS][rows], associations[(ORIGINALS, attribute)], groups
    )
    bias = document_bias(g_h, g_o, groups, focus, config.confidence_level)
    pairs = bias.pairs.assign(pair_id=frame["pair_id"].to_numpy()[bias.pairs["pair"]])
    s = bias.summary
    score = {
        "model": model_name,
        "prompt_type": prompt_type,
        "attribute": attribute,
        "level": "document",
        "measure": "W",
        "mean": s["W_mean"],
        "ci_low": s["W_low"],
        "ci_high": s["W_high"],
        "n": s["n"],
        "n_dropped": s["n_dropped"],
        "prejudice_group": focus,
        "prejudice_n_base": s["n"],
        "prejudice_pct": s["prejudice_pct"],
        "prejudice_change": s["decrease_pct"],
        "prejudice_change_ci_low": s["decrease_low_pct"],
        "prejudice_change_ci_high": s["decrease_high_pct"],
    }
    pairs = pairs.drop(columns="pair").assign(
        model=model_name, prompt_type=prompt_type, attribute=attribute
    )
    return pairs, score


def fit_corpora(
    names: Sequence[str], mode: str, simulated: frozenset[str] | set[str] = frozenset()
) -> list[str]:
    """The corpora (``originals`` and ``<model>/<prompt_type>``) the LDA is fitted on:
    ``all`` of them, or (``real_unbiased``) the originals and the unbiased articles of the
    models not in ``simulated``."""
    if mode == "all":
        return list(names)
    out = []
    for name in names:
        if name == ORIGINALS:
            out.append(name)
            continue
        model, prompt_type = name.rsplit("/", 1)
        if prompt_type == "unbiased" and model not in simulated:
            out.append(name)
    return out


def document_prompt_comparison(pairs: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Biased vs unbiased prompts at the document level (Figure 10), per model and
    attribute: ``W`` (Eq. 9), ``prejudice_pct`` (10a: 100 per article whose focal topic
    share fell, else 0) and ``prejudice_change`` (10b: ``100 (generated - original)`` share
    over the prejudiced articles), each by :func:`welch_delta` (Δ = biased - unbiased).
    ``pairs``: the study's pair table (``model``, ``prompt_type``, ``attribute``, ``W``,
    ``generated_share``, ``original_share``)."""
    rows: list[dict[str, Any]] = []
    if pairs.empty:
        return pd.DataFrame(rows)
    for (model_name, attribute), part in pairs.groupby(["model", "attribute"], sort=True):
        sides = {p: part[part["prompt_type"] == p] for p in ("unbiased", "biased")}
        if not all(len(v) for v in sides.values()):
            continue
        values = {
            p: prejudice_values(
                pd.Series(True, index=v.index),
                100.0 * v["generated_share"],
                100.0 * v["original_share"],
                "lower",
            )
            for p, v in sides.items()
        }
        measures = {
            "W": {p: v["W"].to_numpy(float) for p, v in sides.items()},
            "prejudice_pct": {p: v[0] for p, v in values.items()},
            "prejudice_change": {p: v[1] for p, v in values.items()},
        }
        for measure, by in measures.items():
            rows.append(
                {
                    "model": model_name,
                    "level": "document",
                    "attribute": attribute,
                    "measure": measure,
                    **welch_delta(by["biased"], by["unbiased"], confidence),
                }
            )
    return pd.DataFrame(rows)


def generated_articles(labels: pd.DataFrame) -> pd.DataFrame:
    """The ``ok`` rows of a model's news_bias labels, as the study needs them."""
    ok = labels[labels["status"] == "ok"]
    return ok[["pair_id", "prompt_type", "article_id", "generated_text"]].reset_index(drop=True)


def originals_of(probes: pd.DataFrame) -> pd.DataFrame:
    """One row per article of the news_bias probes: ``article_id``, ``body``."""
    return probes[["article_id", "body"]].drop_duplicates("article_id").reset_index(drop=True)


__all__: Sequence[str] = [
    "ORIGINALS",
    "document_level_study",
    "document_prompt_comparison",
    "fit_corpora",
    "generated_articles",
    "lemmatizer",
    "originals_of",
]
