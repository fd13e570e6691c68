"""Biased vs unbiased prompts (paper 001, Results, "Gender Bias of AIGC under Biased
Prompts", Figures 8-10): the same bias measures under both prompt types, with the change
and a two-sample test.

For each level, attribute and measure, the per-article values under the biased prompt
(``b``) are compared with those under the unbiased prompt (``u``):

* ``delta = mean(b) - mean(u)`` with a confidence interval, and the p-value of Welch's
  two-sample t-test (``scipy.stats.ttest_ind(equal_var=False)``). The paper shows the two
  bars side by side without naming a test; the two samples are not paired article by
  article, because refused articles leave each side (the paper's ChatGPT answered only
  10.87% of biased prompts), so genfair uses the unpaired test and documents it.

Measures: ``W`` (word level, Eq. 3), ``S`` and ``T`` (sentence level, Eq. 5-6), and the
focal group's change ``f_h - f_o`` in percentage points at the word level over all kept
pairs (``change_<group>_pp``).

Within prejudiced articles (Figures 8b, 9b, 10b; the paper's "Δ=0.49%, p=0.605" for
Grover's word level): ``prejudice_change`` compares the focal group's change over the
prejudiced articles of each prompt type (word level: ``100 (f_h - f_o)`` where ``f_h <
f_o``, percentage points; sentence level, per measure: ``h - o`` where the article is
prejudiced for that measure, score units; the document level: the same in
``topics_study``), with the same Welch test: the paper's Grover numbers (-39.64%, CI
[-40.97, -38.30], N = 2,244 unbiased; -39.15%, [-40.44, -37.86], N = 2,214 biased) give
p = 0.605 by this test. ``prejudice_pct`` compares the share of prejudiced articles
(Figures 8a, 9a, 10a; per article 100 or 0 over the base, so Δ is in percentage points and
Welch's test on the indicators is the unpooled two-proportion test).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from genfair.methodologies.news_bias.sentence_level import MEASURES
from genfair.methodologies.news_bias.word_level import FOCAL_GROUP

COLUMNS = [
    "level",
    "attribute",
    "measure",
    "mean_unbiased",
    "mean_biased",
    "delta",
    "delta_ci_low",
    "delta_ci_high",
    "n_unbiased",
    "n_biased",
    "statistic",
    "p_value",
]


def welch_delta(
    biased: np.ndarray, unbiased: np.ndarray, confidence: float = 0.95
) -> dict[str, float]:
    """``mean(biased) - mean(unbiased)`` with Welch's t-test and its confidence interval.

    NaNs are dropped. With fewer than two values on a side (or no variance at all) the
    test is undefined: ``statistic``, ``p_value`` and the interval are NaN.
    """
    from scipy import stats

    b = np.asarray(biased, dtype=float)
    u = np.asarray(unbiased, dtype=float)
    b, u = b[np.isfinite(b)], u[np.isfinite(u)]
    out = {
        "mean_unbiased": float(u.mean()) if u.size else math.nan,
        "mean_biased": float(b.mean()) if b.size else math.nan,
        "n_unbiased": int(u.size),
        "n_biased": int(b.size),
        "statistic": math.nan,
        "p_value": math.nan,
        "delta_ci_low": math.nan,
        "delta_ci_high": math.nan,
    }
    out["delta"] = out["mean_biased"] - out["mean_unbiased"]
    if b.size >= 2 and u.size >= 2 and (b.var() > 0 or u.var() > 0):
        result = stats.ttest_ind(b, u, equal_var=False)
        ci = result.confidence_interval(confidence)
        out.update(
            statistic=float(result.statistic),
            p_value=float(result.pvalue),
            delta_ci_low=float(ci.low),
            delta_ci_high=float(ci.high),
        )
    return out


def prompt_comparison(
    word_pairs: pd.DataFrame, sentence_pairs: pd.DataFrame, confidence: float = 0.95
) -> pd.DataFrame:
    """One row per level x attribute x measure present under both prompt types.

    ``word_pairs`` / ``sentence_pairs`` are the per-pair tables of the metrics stage, with
    ``prompt_type`` and ``attribute`` columns (``word_pairs``: ``W``, ``dropped``,
    ``f_h_<g>``, ``f_o_<g>``; ``sentence_pairs``: ``S``/``T`` and ``dropped_<measure>``).
    """
    rows: list[dict[str, Any]] = []
    for level, table, measures in (
        ("word", word_pairs, {"W": "dropped"}),
        ("sentence", sentence_pairs, {"S": "dropped_sentiment", "T": "dropped_toxicity"}),
    ):
        if table.empty or not {"unbiased", "biased"} <= set(table["prompt_type"]):
            continue
        for attribute, part in table.groupby("attribute", sort=False):
            values = dict(_measures(part, measures, level, attribute))
            for measure, by_prompt in values.items():
                rows.append(
                    {
                        "level": level,
                        "attribute": attribute,
                        "measure": measure,
                        **welch_delta(by_prompt["biased"], by_prompt["unbiased"], confidence),
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def _measures(
    part: pd.DataFrame, measures: dict[str, str], level: str, attribute: str
) -> list[tuple[str, dict[str, np.ndarray]]]:
    out = []
    for measure, dropped in measures.items():
        if measure not in part:
            continue
        kept = part[~part[dropped].astype(bool)]
        out.append(
            (
                measure,
                {
                    p: kept.loc[kept["prompt_type"] == p, measure].to_numpy(float)
                    for p in ("unbiased", "biased")
                },
            )
        )
    focal = FOCAL_GROUP.get(attribute)
    if level == "word" and focal and f"f_h_{focal}" in part:
        kept = part[~part["dropped"].astype(bool)]
        change = 100.0 * (kept[f"f_h_{focal}"] - kept[f"f_o_{focal}"])
        out.append(
            (
                f"change_{focal}_pp",
                {
                    p: change[kept["prompt_type"] == p].to_numpy(float)
                    for p in ("unbiased", "biased")
                },
            )
        )
        # base: kept pairs whose original has the focal group (word_level.prejudice_summary)
        out += _prejudice_measures(
            kept,
            kept[f"f_o_{focal}"] > 0,
            100.0 * kept[f"f_h_{focal}"],
            100.0 * kept[f"f_o_{focal}"],
            "lower",
            "",
        )
    if level == "sentence" and focal:
        for measure, direction in MEASURES.items():
            h_col, o_col = f"h_{measure}_{focal}", f"o_{measure}_{focal}"
            if h_col in part and o_col in part:
                h, o = part[h_col].astype(float), part[o_col].astype(float)
                out += _prejudice_measures(
                    part, h.notna() & o.notna(), h, o, direction, f"_{measure}"
                )
    return out


def prejudice_values(
    base: pd.Series, generated: pd.Series, original: pd.Series, direction: str = "lower"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-article values behind a prejudice figure: the indicator (100 or 0) of prejudice
    over the ``base`` articles, and the change ``generated - original`` over the prejudiced
    ones (prejudice: ``generated < original`` for ``lower``, ``>`` for ``higher``)."""
    base = base.astype(bool).to_numpy()
    h, o = generated.to_numpy(float), original.to_numpy(float)
    with np.errstate(invalid="ignore"):
        prejudiced = base & ((h < o) if direction == "lower" else (h > o))
    return 100.0 * prejudiced[base], (h - o)[prejudiced]


def _prejudice_measures(
    part: pd.DataFrame,
    base: pd.Series,
    generated: pd.Series,
    original: pd.Series,
    direction: str,
    suffix: str,
) -> list[tuple[str, dict[str, np.ndarray]]]:
    sides = {
        p: prejudice_values(
            base[part["prompt_type"] == p],
            generated[part["prompt_type"] == p],
            original[part["prompt_type"] == p],
            direction,
        )
        for p in ("unbiased", "biased")
    }
    return [
        (f"prejudice_pct{suffix}", {p: v[0] for p, v in sides.items()}),
        (f"prejudice_change{suffix}", {p: v[1] for p, v in sides.items()}),
    ]
