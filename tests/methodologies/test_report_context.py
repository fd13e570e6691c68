"""ReportContext's helpers for report sections: the leaderboard's shown columns and the study
step's non-empty tables, and the sections of news_bias and IRIS that use them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from genfair.methodologies.base import StudyResult
from genfair.methodologies.iris.report import report_section as iris_section
from genfair.methodologies.news_bias.report import report_section as news_section
from genfair.methodologies.presentation import ReportContext


def _context(board: pd.DataFrame, tables: dict[str, pd.DataFrame] | None) -> ReportContext:
    study = None if tables is None else StudyResult(tables=tables, summary={}, params={})
    return ReportContext(board=board, study=study, models=(), config=None)


def test_leaderboard_keeps_the_listed_columns_it_has_in_their_order() -> None:
    board = pd.DataFrame({"rank": [1], "model": ["m"], "hidden": [0]})
    table = _context(board, None).leaderboard(["model", "absent", "rank"], "why", title="Scores")
    assert (table.title, table.caption, list(table.frame.columns)) == (
        "Scores",
        "why",
        ["model", "rank"],
    )


def test_study_table_is_none_without_a_study_an_absent_or_an_empty_table() -> None:
    assert _context(pd.DataFrame(), None).study_table("chi2") is None
    ctx = _context(pd.DataFrame(), {"chi2": pd.DataFrame(), "perplexity": pd.DataFrame({"k": [2]})})
    assert ctx.study_table("chi2") is None and ctx.study_table("absent") is None
    assert ctx.study_table("perplexity")["k"].tolist() == [2]


def test_news_and_iris_sections_show_only_their_non_empty_study_tables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module, name in (("news_bias", "bias_bars"), ("iris", "sector_figure")):  # tables only
        monkeypatch.setattr(
            f"genfair.methodologies.{module}.figures.{name}", lambda *a, **k: plt.figure()
        )
    board = pd.DataFrame(
        {
            "model": ["m"],
            "simulated": [False],
            "sector": ["IFS-Gen"],
            "score": [50.0],
            "prompt_type": ["unbiased"],
            "level": ["word"],
            "attribute": ["gender"],
            "measure": ["W"],
            "mean": [0.1],
            "ci_low": [0.0],
            "ci_high": [0.2],
            "n": [3],
        }
    )
    ctx = _context(
        board,
        {
            "perplexity": pd.DataFrame({"k": [2]}),
            "chi2": pd.DataFrame(),
            "validation": pd.DataFrame({"check": ["ok"]}),
        },
    )
    news = news_section(ctx)
    assert [t.title for t in news.tables] == ["Leaderboard", "Document level: perplexity"]
    assert "sector" not in news.tables[0].frame.columns
    iris = iris_section(ctx)
    assert [t.title for t in iris.tables] == ["Scores per sector", "Validation"]
    assert list(iris.tables[0].frame.columns) == ["model", "simulated", "sector", "score"]
