"""The presentation role (issue 48.1): optional, its default works for a methodology that
implements only the pipeline (figures of its scores, a sample view of its label table, a report
section, an MLflow record), and each built-in package's own role lives in its ``report.py``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.base import Methodology
from genfair.methodologies.presentation import Presentation, ReportContext
from tests.study.toy_methodology import BareQuiz

BUILTIN = {
    "fact_or_fair": "FactOrFairPresentation",
    "iris": "IrisPresentation",
    "lvlm_facet": "LvlmFacetPresentation",
    "news_bias": "NewsBiasPresentation",
    "open_bias": "OpenBiasPresentation",
}
MEMBERS = (
    "title",
    "plots",
    "sample_view",
    "figures",
    "plot_tables",
    "report_section",
    "sample_rows",
    "sample_filter",
    "run_record",
)


BOARD = pd.DataFrame(
    {
        "model": ["real", "sim"],
        "simulated": [False, True],
        "measure": ["accuracy", "accuracy"],
        "mean": [0.9, 0.6],
        "ci_low": [0.8, 0.5],
        "ci_high": [0.95, 0.7],
        "rank": [1.0, None],
    }
)


def test_the_role_is_built_once_with_its_methodology() -> None:
    method = BareQuiz()
    assert type(method.presentation) is Presentation
    assert method.presentation is method.presentation and method.presentation.methodology is method
    assert not any(hasattr(Methodology, m) for m in MEMBERS)  # moved, not copied


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_each_package_sets_its_role_from_its_report_module(name: str) -> None:
    report = importlib.import_module(f"genfair.methodologies.{name}.report")
    assert type(get_methodology(name).presentation) is getattr(report, BUILTIN[name])
    assert not any(m in vars(type(get_methodology(name))) for m in MEMBERS)


def test_default_figures_draw_the_scores_a_bar_per_row() -> None:
    shown = BareQuiz().presentation
    ((figure, file),) = shown.figures(BOARD, "bare")
    assert file == "scores.png"
    # mean, ci_low, ci_high: one panel each (rank and the simulated flag are not drawn)
    assert [ax.get_title() for ax in figure.axes] == ["mean", "ci_low", "ci_high"]
    assert [len(ax.patches) for ax in figure.axes] == [2, 2, 2]
    names = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert names == ["real · accuracy", "sim (SIMULATED) · accuracy"]
    assert [bar.get_hatch() for bar in figure.axes[0].patches] == [None, "//"]
    assert shown.figures(BOARD.iloc[:0], "bare") == []
    assert shown.figures(BOARD[["model", "measure"]], "bare") == []  # nothing numeric


def test_default_report_section_has_the_docstring_figure_and_leaderboard() -> None:
    section = BareQuiz().presentation.report_section(ReportContext(BOARD, None, (), None))
    assert section.title == "toy_quiz_bare" and section.intro.startswith("Bare toy quiz: the")
    assert [f.name for f in section.figures] == ["scores.png"]
    assert [t.title for t in section.tables] == ["Leaderboard"]
    empty = BareQuiz().presentation.report_section(ReportContext(BOARD.iloc[:0], None, (), None))
    assert (empty.figures, empty.tables) == ([], [])


def test_default_samples_and_record_come_from_the_label_table_and_summary() -> None:
    shown = BareQuiz().presentation
    labels = pd.DataFrame(
        {"probe_id": ["q0", "q1"], "status": ["ok", "invalid"], "answer": ["A", None]}
    )
    responses = pd.DataFrame({"probe_id": ["q0", "q1"], "text": ['{"answer": "A"}', "x"]})
    probes = pd.DataFrame({"probe_id": ["q0", "q1"], "prompt": ["A or B?", "B or A?"]})
    rows = shown.sample_rows(probes, responses, labels, Path("img"))
    assert rows["prompt"].tolist() == ["A or B?", "B or A?"]
    assert rows["label"].tolist() == ["A", None] and rows["status"].tolist() == ["ok", "invalid"]
    params, metrics = shown.run_record("m", None, BOARD, {"instruments": {"judge": "x"}}, None)
    assert (params, metrics) == ({"toy_quiz_bare.instrument.judge": "x"}, {})
