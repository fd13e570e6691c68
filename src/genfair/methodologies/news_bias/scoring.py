"""The rows of news_bias's scores table: the refusal rate, and one row per word- or
sentence-level result of a prompt type and attribute."""

from __future__ import annotations

from typing import Any

import pandas as pd

from genfair.metrics.intervals import proportion_ci

__all__ = ["refusal_rate", "sentence_row", "tagged", "word_row"]


def refusal_rate(status: pd.Series, level: float) -> dict[str, Any]:
    """Share of refused answers among the answered ones (errors are not answers), with a
    Wilson interval."""
    counts = status.value_counts()
    out = {f"n_{s}": int(counts.get(s, 0)) for s in ("ok", "refused", "invalid", "error")}
    answered = status[status != "error"]
    ci = proportion_ci(int((answered == "refused").sum()), len(answered), level)
    return {
        **out,
        "rate": ci["mean"],
        "ci_low": ci["ci_low"],
        "ci_high": ci["ci_high"],
        "n_answered": ci["n"],
    }


def word_row(prompt_type: str, attribute: str, word: dict[str, Any]) -> dict[str, Any]:
    """The scores row of one word-level result (W, with its prejudice when measured)."""
    row = {
        "prompt_type": prompt_type,
        "level": "word",
        "attribute": attribute,
        "measure": "W",
        **word["W"],
        "n_dropped": word["n_dropped"],
    }
    if "prejudice" in word:
        row.update(_prejudice(word["prejudice"], "decrease"))
    return row


def sentence_row(
    prompt_type: str, attribute: str, measure: str, entry: dict[str, Any]
) -> dict[str, Any]:
    """The scores row of one sentence-level ``measure`` (its mean, with its prejudice)."""
    row = {
        "prompt_type": prompt_type,
        "level": "sentence",
        "attribute": attribute,
        "measure": measure,
        **entry["mean"],
        "n_dropped": entry["n_dropped"],
    }
    if "prejudice" in entry:
        row.update(_prejudice(entry["prejudice"], "change"))
    return row


def _prejudice(prejudice: dict[str, Any], change_key: str) -> dict[str, Any]:
    change = prejudice[change_key]
    return {
        "prejudice_group": prejudice["group"],
        "prejudice_n_base": prejudice["n_base"],
        "prejudice_pct": prejudice["pct_prejudice"],
        "prejudice_change": change["mean"],
        "prejudice_change_ci_low": change["ci_low"],
        "prejudice_change_ci_high": change["ci_high"],
    }


def tagged(table: pd.DataFrame, prompt_type: str, attribute: str) -> pd.DataFrame:
    """``table`` with its prompt type and attribute as its first columns."""
    out = table.copy()
    out.insert(0, "attribute", attribute)
    out.insert(0, "prompt_type", prompt_type)
    return out
