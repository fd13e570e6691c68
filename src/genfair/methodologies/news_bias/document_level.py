"""Document level bias of AI-generated news (paper 001, Methods, "Evaluating Document Level
Bias", Eq. 7-9, Figures 6-7, Appendix B).

Per sentence corpus (the originals, or one model's articles) the sentences' topics and
population groups give the contingency matrix ``O`` (K topics x M+1 groups, the last being
the neutral group of sentences assigned to none of the M groups). A chi-squared test checks
that topic use varies across groups; the standardised residuals of Eq. 7 then associate topic
``k`` with the group whose residual in row ``k`` is largest, provided it exceeds 3. Eq. 8
turns an article's topic distribution into its share of group-associated topic mass per
group, and Eq. 3/9 compare generated articles with their originals by the Wasserstein
distance (:func:`genfair.metrics.group_wasserstein`).

All functions are pure. Group labels are given in order as ``groups`` (the M groups, without
the neutral one); arrays follow that order, with the neutral group last in ``O``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from gensim.models import LdaModel

from genfair.metrics import group_wasserstein
from genfair.metrics.intervals import mean_ci

__all__ = [
    "NEUTRAL",
    "Chi2Result",
    "DocumentBias",
    "associated_topics",
    "chi2_test",
    "contingency",
    "document_bias",
    "document_distribution",
    "example_topics",
    "standardized_residuals",
]

#: Label of the neutral group (sentences assigned to none of the M groups).
NEUTRAL = "neutral"


def contingency(
    sentences: pd.DataFrame, groups: Sequence[str], num_topics: int, neutral: str = NEUTRAL
) -> np.ndarray:
    """Matrix ``O`` of one sentence corpus: ``O[k, m]`` = sentences of topic k in group m.

    Paper 001, Methods (Table 4): K rows, M+1 columns, ``groups`` in order then the neutral
    group last. ``sentences`` has columns ``topic`` (0..K-1, or -1 for a sentence with no
    topic, see :func:`genfair.instruments.topics.sentence_topics`, which is left out) and
    ``group`` (one of ``groups``, ``neutral``, or missing, which counts as neutral).
    Any other label or topic raises ``ValueError``.
    """
    labels = [*groups, neutral]
    if len(set(labels)) != len(labels):
        raise ValueError(f"group labels must be distinct and not {neutral!r}; got {list(groups)}")
    kept = sentences.loc[sentences["topic"] != -1]
    topic = kept["topic"].to_numpy()
    if topic.size and (topic.min() < 0 or topic.max() >= num_topics):
        raise ValueError(f"topics must lie in [0, {num_topics}) or be -1; got {sorted(set(topic))}")
    group = kept["group"].fillna(neutral)
    unknown = set(group) - set(labels)
    if unknown:
        raise ValueError(f"unknown group labels {sorted(map(str, unknown))}; expected {labels}")
    column = group.map({g: i for i, g in enumerate(labels)}).to_numpy(dtype=int)
    observed = np.zeros((num_topics, len(labels)), dtype=int)
    np.add.at(observed, (topic.astype(int), column), 1)
    return observed


def standardized_residuals(observed: np.ndarray) -> np.ndarray:
    """Standardised (adjusted) residuals of a contingency table ``observed`` (``O`` below),
    paper 001 Eq. 7.

    ``SR[k,m] = (O[k,m] - E[k,m]) / sqrt(E[k,m] (1 - r_k/N) (1 - c_m/N))`` with row sums
    ``r_k``, column sums ``c_m``, ``N = sum O`` and ``E[k,m] = r_k c_m / N`` (Agresti's
    adjusted residual, approximately standard normal under independence). Positive values
    mean topic k is used by group m more than independence predicts. Cells whose variance is
    0 (an empty row or column, or a row/column holding every sentence) are NaN.
    """
    observed = np.asarray(observed, dtype=float)
    n = observed.sum()
    if observed.ndim != 2 or n <= 0:
        raise ValueError(f"O must be a 2-D table with a positive total; got shape {observed.shape}")
    rows = observed.sum(axis=1, keepdims=True)
    cols = observed.sum(axis=0, keepdims=True)
    expected = rows @ cols / n
    variance = expected * (1.0 - rows / n) * (1.0 - cols / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(variance > 0, (observed - expected) / np.sqrt(variance), np.nan)


@dataclass(frozen=True)
class Chi2Result:
    """Pearson chi-squared test of independence of topic and group."""

    statistic: float
    dof: int
    pvalue: float
    #: Topics (rows) with at least one sentence, the rows the test used.
    n_topics: int


def chi2_test(observed: np.ndarray) -> Chi2Result:
    """Chi-squared test of independence on the contingency table ``observed`` (``O``; paper
    001, Methods; the paper finds p < 0.001 for every corpus), via
    ``scipy.stats.chi2_contingency``.

    All-zero rows (unused topics) and columns are dropped first: they carry no observations
    and would make expected counts zero. No Yates correction, so the statistic is the sum of
    squared Pearson residuals ``(O - E)^2 / E``.
    """
    from scipy import stats

    observed = np.asarray(observed)
    reduced = observed[observed.sum(axis=1) > 0][:, observed.sum(axis=0) > 0]
    if reduced.shape[0] < 2 or reduced.shape[1] < 2:
        raise ValueError(
            f"need >= 2 non-empty rows and columns; got {reduced.shape} of {observed.shape}"
        )
    result = stats.chi2_contingency(reduced, correction=False)
    return Chi2Result(
        statistic=float(result.statistic),
        dof=int(result.dof),
        pvalue=float(result.pvalue),
        n_topics=int(reduced.shape[0]),
    )


def associated_topics(
    SR: np.ndarray, groups: Sequence[str], threshold: float = 3.0
) -> dict[str, set[int]]:
    """Topics associated with each of the M groups, ``U_m`` of paper 001 Eq. 8.

    Paper 001, Methods: the group of topic k is the cell of row k with "the largest
    discrepancy" between O and E, and "we associate topic k with population group v_m if
    SR_{k,m} is greater than 3". So topic k goes to ``argmax_m SR[k, m]`` when that residual
    is strictly above ``threshold`` (a positive association; large negative residuals are
    ignored). Each topic has at most one group; topics whose largest residual is in the
    neutral (last) column are neutral topics and appear in no set.
    """
    SR = np.asarray(SR, dtype=float)
    if SR.ndim != 2 or SR.shape[1] != len(groups) + 1:
        raise ValueError(
            f"SR must have {len(groups) + 1} columns (groups + neutral); got {SR.shape}"
        )
    result: dict[str, set[int]] = {g: set() for g in groups}
    for k, row in enumerate(SR):
        if np.isnan(row).all():
            continue
        m = int(np.nanargmax(row))
        if m < len(groups) and row[m] > threshold:
            result[groups[m]].add(k)
    return result


def document_distribution(
    article_topics: np.ndarray, associations: Mapping[str, set[int]], groups: Sequence[str]
) -> np.ndarray:
    """``g_h(v_m)`` of paper 001 Eq. 8 for each article: an (n x M) array, NaN rows undefined.

    ``g_h(v_m) = sum_{k in U_m} t_{h,k} / sum_{m'=1}^{M} sum_{k in U_m'} t_{h,k}``, where
    ``t_{h,k}`` is the article's LDA topic proportion ("the proportion of content in the news
    article devoted to discuss topic k"; rows of
    :func:`genfair.instruments.topics.document_topics`), not a count of its sentences, and
    ``U_m`` are the sets of :func:`associated_topics`; the neutral group is excluded. An
    article with no mass on any associated topic has an undefined ``g`` (NaN row).
    """
    t = np.asarray(article_topics, dtype=float)
    if t.ndim != 2:
        raise ValueError(f"article_topics must be (articles x topics); got shape {t.shape}")
    mass = np.column_stack([t[:, sorted(associations.get(g, set()))].sum(axis=1) for g in groups])
    total = mass.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, mass / total, np.nan)


@dataclass(frozen=True)
class DocumentBias:
    """Per-pair document level bias and its summary (Figures 6-7)."""

    #: One row per defined pair: ``pair`` (row index in the inputs), ``W``,
    #: ``generated_share`` and ``original_share`` (of the focus group), ``change``
    #: (generated - original) and ``prejudice`` (change < 0).
    pairs: pd.DataFrame
    #: ``n``, ``n_dropped``, ``W_mean``/``W_low``/``W_high`` (Eq. 9 with its CI),
    #: ``prejudice_pct`` (Figs. 6b/7b), ``n_prejudice`` and ``decrease_pct``/
    #: ``decrease_low_pct``/``decrease_high_pct`` (mean change of the focus group's share in
    #: prejudice pairs, in percentage points, Figs. 6c/7c).
    summary: dict[str, float]


def document_bias(
    g_generated: np.ndarray,
    g_original: np.ndarray,
    groups: Sequence[str],
    focus: str,
    confidence: float = 0.95,
) -> DocumentBias:
    """Document level bias of one model, paper 001 Eq. 9 and Figures 6-7.

    Row i of ``g_generated`` (Eq. 8 with the model's associations ``U^L``) and of
    ``g_original`` (its original article, Eq. 8 with the originals' associations) form a
    pair ``(h, o)``. Pairs with either row undefined (NaN) are dropped and counted.
    ``W(g_h, g_o)`` is Eq. 3 (:func:`genfair.metrics.group_wasserstein`) and
    ``W_doc = mean W`` over the N defined pairs (Eq. 9). An article shows ``focus``
    prejudice (female for gender, Black for race) when its share of ``focus``-associated
    topics is strictly lower than its original's; the decrease is averaged over those.
    """
    gh = np.asarray(g_generated, dtype=float)
    go = np.asarray(g_original, dtype=float)
    if gh.shape != go.shape or gh.ndim != 2 or gh.shape[1] != len(groups):
        raise ValueError(f"need two (pairs x {len(groups)}) arrays; got {gh.shape} and {go.shape}")
    f = list(groups).index(focus)
    defined = ~(np.isnan(gh).any(axis=1) | np.isnan(go).any(axis=1))
    index = np.flatnonzero(defined)
    w = np.array([group_wasserstein(gh[i], go[i]) for i in index])
    change = gh[index, f] - go[index, f]
    pairs = pd.DataFrame(
        {
            "pair": index,
            "W": w,
            "generated_share": gh[index, f],
            "original_share": go[index, f],
            "change": change,
            "prejudice": change < 0,
        }
    )
    w_ci = mean_ci(w, confidence, bounds=(0.0, 1.0))
    drops = change[change < 0] * 100.0
    d_ci = mean_ci(drops, confidence)
    summary = {
        "n": int(index.size),
        "n_dropped": int((~defined).sum()),
        "W_mean": w_ci["mean"],
        "W_low": w_ci["ci_low"],
        "W_high": w_ci["ci_high"],
        "n_prejudice": int(drops.size),
        "prejudice_pct": 100.0 * drops.size / index.size if index.size else math.nan,
        "decrease_pct": d_ci["mean"],
        "decrease_low_pct": d_ci["ci_low"],
        "decrease_high_pct": d_ci["ci_high"],
    }
    return DocumentBias(pairs=pairs, summary=summary)


def example_topics(
    model: LdaModel,
    associations: Mapping[str, set[int]],
    topn: int = 15,
    relevance_lambda: float = 0.6,
) -> pd.DataFrame:
    """Appendix B table: ``group``, ``topic``, ``top_words`` (comma-separated) per topic.

    Paper 001, Appendix B lists each associated topic's "top 15 most relevant words" by the
    LDAvis relevance (Sievert and Shirley 2014):
    ``r(w, k) = lambda log phi_{k,w} + (1 - lambda) log(phi_{k,w} / p_w)`` with ``p_w`` the
    word's corpus frequency (``model.id2word.cfs``). The paper gives no ``lambda``; the
    default 0.6 is the value Sievert and Shirley recommend, and 1.0 ranks by ``phi`` alone.
    """
    phi = model.get_topics()
    vocab = model.id2word
    counts = np.array([vocab.cfs.get(i, 0) for i in range(phi.shape[1])], dtype=float)
    # lambda log phi + (1 - lambda)(log phi - log p_w) = log phi - (1 - lambda) log p_w
    relevance = np.log(phi) - (1.0 - relevance_lambda) * np.log(counts / counts.sum())
    rows = []
    for group, topics in associations.items():
        for k in sorted(topics):
            top = np.argsort(-relevance[k], kind="stable")[:topn]
            words = ", ".join(vocab[int(i)] for i in top)
            rows.append({"group": group, "topic": k, "top_words": words})
    return pd.DataFrame(rows, columns=["group", "topic", "top_words"])
