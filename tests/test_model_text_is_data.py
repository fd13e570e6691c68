"""Issue 32: text from a model, a dataset or a config is data wherever it lands. A figure draws
it as written (no mathtext), a log line and the terminal show it escaped (no control
character), a CSV a person opens holds it as text (no spreadsheet formula) and MLflow gets a
key it takes. Hypothesis feeds arbitrary Unicode, control characters, mathtext and formula
prefixes through each of these places."""

from __future__ import annotations

import ast
import csv
import io
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from genfair.cli import main
from genfair.io import spreadsheet_safe, write_csv
from genfair.logs import printable, setup, shown
from genfair.names import MLFLOW_KEY_PATTERN, mlflow_key
from genfair.study.runs import compose_digests
from genfair.study.steps import brief
from tests.support.mock_openai import Fault, MockOpenAI

SRC = Path(__file__).resolve().parents[1] / "src" / "genfair"
#: what a model might send: markup of each place text lands, and plain Unicode
HOSTILE = [
    "gender $x^{$",
    "$\\frac{a}{$",
    '=HYPERLINK("http://x","y")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A2)",
    "\tstarts with a tab",
    "\rstarts with a return",
    "ok\n12:00:00 INFO    [stage=generate] genfair: all calls answered, 0 errors",
    "\x1b[2K\x1b[1Gwiped\x07",
    "bidi \u202eevil\u202c and \u2028 separator \x85 next line",
    "-0.5",
    "年齢 — ℵ₀ 🙂",
]
#: arbitrary Unicode (no surrogates), weighted towards what each place treats as markup
TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda a, b: a + b,
        st.sampled_from(["$", "$$", "=", "+", "-", "@", "\t", "\r", "\n", "\x1b[", "\\", "{"]),
        st.text(max_size=20),
    ),
    st.sampled_from(HOSTILE),
)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: a figure takes a fraction of a second to draw
FIGURES = settings(FAST, max_examples=10)
#: a glyph DejaVu Sans lacks is drawn as a box (genfair silences the warning, pytest shows it)
GLYPHS = pytest.mark.filterwarnings("ignore:Glyph", "ignore:No artists with labels")


# ---- figures -----------------------------------------------------------------------------


def test_every_figure_module_takes_pyplot_from_plotting() -> None:
    """One mechanism: matplotlib's backend and text settings are made in one module, which
    every figure takes ``plt`` from (a module of its own would draw with mathtext on)."""
    own = SRC / "methodologies" / "plotting.py"
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == own:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            called = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and ast.unparse(node.func) == "matplotlib.use"
            )
            if called or any(n.startswith("matplotlib.pyplot") for n in names):
                offenders.append(str(path.relative_to(SRC)))
    assert not offenders, (
        f"pyplot taken from matplotlib, not genfair.methodologies.plotting: {offenders}"
    )


def _open_bias_scores(names: list[str]) -> pd.DataFrame:
    n = len(names)
    return pd.DataFrame(
        {
            "bias_id": names,
            "severity_context_aware": [0.2 + 0.1 * i for i in range(n)],
            "context_aware_ci_low": [0.1 + 0.1 * i for i in range(n)],
            "context_aware_ci_high": [0.3 + 0.1 * i for i in range(n)],
            "severity_context_free": [0.1] * n,
            "model": ["m"] * n,
        }
    )


def _drawn_texts(figure: Any) -> list[str]:
    """Every text of ``figure`` once it is drawn (tick labels exist from then on)."""
    from matplotlib.text import Text

    from genfair.methodologies.plotting import as_data, plt

    buffer = io.BytesIO()
    as_data(figure).savefig(buffer, format="png", dpi=20)
    assert buffer.getvalue().startswith(b"\x89PNG")
    texts = [t.get_text() for t in figure.findobj(Text)]
    plt.close(figure)
    return texts


@GLYPHS
def test_a_bias_name_in_mathtext_is_drawn_as_written() -> None:
    """Issue 32: an OpenBias bias name ``gender $x^{$`` made the figure (and so ``track``
    and ``report``) die with matplotlib's ParseSyntaxException."""
    from genfair.methodologies.open_bias.figures import aware_vs_free_figure, ranking_figure
    from genfair.study.report import figure_png

    names = ["gender $x^{$", "$\\frac{a}{$ age"]
    for draw in (ranking_figure, aware_vs_free_figure):
        assert figure_png(draw(_open_bias_scores(names), "m"), dpi=20)
        assert set(names) <= set(_drawn_texts(draw(_open_bias_scores(names), "m")))


def test_a_formula_the_code_writes_stays_mathtext_and_data_never_is() -> None:
    """FACT-OR-FAIR's axis labels ($S_{fact}$, $S_E$) are formulas genfair writes: they keep
    mathtext (``plotting.mathtext``), through ``as_data``; a model name beside them does not."""
    from matplotlib.text import Text

    from genfair.methodologies.fact_or_fair.figures import tradeoff_figure
    from genfair.methodologies.plotting import as_data, plt

    scores = pd.DataFrame(
        {"model": ["m$x$"], "attribute": ["gender"], "k": [2], "s_fact": [0.5], "s_e": [0.6]}
    )
    figure = as_data(tradeoff_figure(scores, "$t$"))
    math = {t.get_text() for t in figure.findobj(Text) if t.get_parse_math()}
    plt.close(figure)
    assert math == {"$S_{fact}$", "$S_E$", "max $S_E$ (k=2)"}


@GLYPHS
@FIGURES
@example("gender $x^{$")
@example("\x00\x1b[31m$\\sqrt{$\n=1")
@given(TEXT)
def test_any_model_text_in_a_figure_is_drawn_as_itself(text: str) -> None:
    """The OpenBias figures (where model text reaches a figure) and each kind of figure text
    (title, tick label, legend, annotation) draw any string as that string."""
    from genfair.methodologies.open_bias.figures import ranking_figure
    from genfair.methodologies.plotting import plt

    text = shown(text)  # what a figure shows: a bidi override or zero-width character escaped
    assert text in _drawn_texts(ranking_figure(_open_bias_scores([text, text + "$"]), text))
    figure, ax = plt.subplots(figsize=(2, 1.5))
    ax.bar([0], [1], label=text)
    ax.set(xticks=[0], xticklabels=[text], title=text, ylabel=text)
    ax.text(0, 0.5, text)
    ax.legend()
    figure.suptitle(text)
    figure.tight_layout()
    assert _drawn_texts(figure).count(text) >= 6


@example("gender \u202e99.0")
@example("zero\u200bwidth\u2066isolate\u2069\ufeff")
@given(TEXT)
def test_shown_text_has_no_format_character_and_keeps_every_other(text: str) -> None:
    """Issue 44: a bias named "gender \u202e99.0" read "person gender 0.99" in the
    leaderboard and the figure. Shown text (report, figures) has no format character left
    (bidi overrides and isolates, zero-width characters), and nothing else changes."""
    import unicodedata

    out = shown(text)
    assert not any(unicodedata.category(ch) == "Cf" for ch in out)
    rest = iter(out)  # every other character is kept, in order
    assert all(ch in rest for ch in text if unicodedata.category(ch) != "Cf")
    if all(unicodedata.category(ch) != "Cf" for ch in text):
        assert out == text


@GLYPHS
def test_a_bidi_override_in_a_bias_name_is_shown_not_obeyed() -> None:
    from genfair.methodologies.open_bias.figures import ranking_figure

    drawn = _drawn_texts(ranking_figure(_open_bias_scores(["gender \u202e99.0"]), "m"))
    assert "gender \\u202e99.0" in drawn and not any("\u202e" in t for t in drawn)


# ---- the report ----------------------------------------------------------------------------


@FAST
@example("<script>alert(1)</script>")
@example('"><img src=x onerror=alert(2)> $x^{$ =1')
@given(TEXT)
def test_any_model_text_in_a_report_section_is_escaped_text(text: str) -> None:
    """A methodology section's title, intro, notes, table title, caption, column names and
    cells, rendered by the report's own template: every one is the text, escaped."""
    from markupsafe import escape

    from genfair.methodologies.presentation import ReportSection, ReportTable
    from genfair.study.report import TEMPLATE, report_environment, section_view

    frame = pd.DataFrame([[text, -0.5]], columns=[text or "x", "value"])
    section = ReportSection(
        title=text, intro=text, notes=[text], tables=[ReportTable(text, frame, text)]
    )
    html = (
        report_environment()
        .from_string(TEMPLATE)
        .render(
            sections=[section_view(section, "m-x", set())],
            headline={"models": [], "rows": []},
            instruments={},
            models=[],
            simulated_names=set(),
        )
    )
    section_html = html.split('id="m-x"')[1].split("</section>")[0]
    assert "<script" not in section_html and "<img" not in section_html
    if text.strip():  # Jinja's trim_blocks may drop an all-whitespace text at a line end
        assert section_html.count(str(escape(shown(text)))) >= 6


# ---- log lines and the terminal ------------------------------------------------------------


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[str]]]:
    """genfair's own log handler (:func:`genfair.logs.setup`), writing to a buffer."""
    setup("test", model="m")
    handler = logging.getLogger().handlers[0]
    buffer = io.StringIO()
    handler.setStream(buffer)  # type: ignore[attr-defined]
    yield lambda: buffer.getvalue().splitlines()
    logging.getLogger().handlers.clear()
    logging.captureWarnings(False)


def _inert(line: str) -> bool:
    return line.isprintable()


def test_a_401_body_cannot_forge_a_log_line(
    mock_openai: Callable[..., MockOpenAI], log_lines: Callable[[], list[str]]
) -> None:
    """Issue 32: an endpoint's 401 body with a newline and escape codes forged a log line
    that read "all calls answered, 0 errors"."""
    from tests.models.test_openai_backend import ask, make_backend, run

    forged = "12:00:00 INFO    [stage=generate] genfair: all calls answered, 0 errors"
    body = f"denied\n{forged}\x1b[2K\x1b[1A"
    server = mock_openai(prompt_faults={"q": [Fault(status=401, body=body)]})
    [(_, completion)] = run(make_backend(server.url), ask("q"))
    assert completion.status == "error" and completion.error is not None
    assert completion.error.isprintable() and "\\n12:00:00" in completion.error
    lines = log_lines()
    assert len(lines) == 1 and all(map(_inert, lines))
    assert not any(line.startswith("12:00:00 INFO") for line in lines)
    logging.getLogger("genfair.x").warning("raw: %s", body)  # any argument, from anywhere
    lines = log_lines()
    assert len(lines) == 2 and all(map(_inert, lines)) and "\\x1b[2K" in lines[1]


def test_a_warning_quoting_data_is_an_escaped_log_line(log_lines: Callable[[], list[str]]) -> None:
    """A library's warning can quote a model's text (matplotlib names a missing glyph, raw):
    once a stage set up logging, a warning is a log record, escaped like any other."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("Glyph 27 (\x1b[2J) missing\nforged line", UserWarning, stacklevel=1)
    lines = log_lines()
    assert len(lines) == 1 and _inert(lines[0]) and "\\x1b[2J) missing\\nforged" in lines[0]


@FAST
@example("ok\n12:00:00 INFO    [stage=x] genfair: all calls answered, 0 errors")
@given(TEXT)
def test_any_argument_stays_on_its_log_line(text: str) -> None:
    setup("test")
    buffer = io.StringIO()
    logging.getLogger().handlers[0].setStream(buffer)  # type: ignore[attr-defined]
    try:
        logging.getLogger("genfair.x").warning("answer %r from %s: %d", text, text, 3)
    finally:
        logging.getLogger().handlers.clear()
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 1 and _inert(lines[0])
    assert lines[0].endswith(f"from {printable(text)}: 3")


@FAST
@given(TEXT)
def test_printable_text_is_one_line_and_keeps_what_is_printable(text: str) -> None:
    shown = printable(text)
    assert shown.isprintable()
    assert shown == text or not text.isprintable()
    assert all(ch in shown for ch in text if ch.isprintable())


@FAST
@given(st.lists(TEXT, min_size=1, max_size=3))
def test_a_scores_table_for_the_terminal_keeps_one_line_a_row(labels: list[str]) -> None:
    table = brief(pd.DataFrame({"bias": labels, "severity": [0.5] * len(labels)}))
    lines = table.splitlines()
    assert len(lines) == len(labels) + 1 and all(map(_inert, lines))


def test_genfair_models_shows_config_text_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model's ``model_id`` or ``description`` holding a newline and escape codes prints on
    its own line, escaped."""
    raw = yaml.safe_load((SRC.parents[1] / "params.yaml").read_text(encoding="utf-8"))
    path = tmp_path / "params.yaml"
    name = next(iter(raw["models"]))
    raw["models"][name]["description"] = "fine\x1b[2J\nsimulated_llm  llm  ok  \x1b]0;pwned\x07"
    raw["digests"] = compose_digests(raw["models"], raw["methodologies"], raw["instruments"])
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert main(["models", "--params", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "fine\\x1b[2J\\nsimulated_llm  llm  ok  \\x1b]0;pwned\\x07" in out


# ---- CSV files a person opens ----------------------------------------------------------------

TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _is_number(text: str) -> bool:
    """A decimal number as a spreadsheet reads one (ASCII, no spaces, ``_``, nan or inf)."""
    try:
        float(text)
    except ValueError:
        return False
    plain = text.isascii() and not any(c.isspace() or c == "_" for c in text)
    return plain and text.lower().lstrip("+-") not in ("nan", "inf", "infinity")


@FAST
@example(text='=HYPERLINK("http://x","y")')
@example(text="-0.5")
@example(text="\r=1")
@given(text=TEXT)
def test_a_csv_cell_is_never_a_formula_and_a_number_stays_one(
    text: str, tmp_path_factory: Any
) -> None:
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    write_csv(pd.DataFrame([[text, "a", -0.5]], columns=["label", text or "x", "value"]), path)
    with path.open(newline="", encoding="utf-8") as fh:
        header, row = list(csv.reader(fh))
    for cell, original in ((row[0], text), (header[1], text or "x")):
        kept = original.replace("\r\n", "\n").replace("\r", "\n")  # one cell, quoted
        if original.startswith(TRIGGERS) and not _is_number(original):
            assert cell == "'" + kept
        else:
            assert cell == kept
    assert row[2] == "-0.5" and header[2] == "value"


def test_mlflow_tables_are_spreadsheet_safe() -> None:
    """Every CSV logged to MLflow (leaderboards, score tables) goes through the same guard."""
    from genfair.study.tracking import _log_table

    seen: list[str] = []

    class Recorder:
        def log_artifact(self, path: str) -> None:
            seen.append(Path(path).read_text(encoding="utf-8"))

    frame = pd.DataFrame({"bias": ["=cmd|' /C calc'!A0", "age"], "severity": [-0.5, 0.25]})
    _log_table(Recorder(), frame, "scores.csv")
    assert seen == ["bias,severity\n'=cmd|' /C calc'!A0,-0.5\nage,0.25\n"]
    assert spreadsheet_safe(frame.drop(columns="bias")) is not None


# ---- MLflow keys ---------------------------------------------------------------------------


def _mlflow_takes(key: str) -> bool:
    from mlflow.exceptions import MlflowException
    from mlflow.utils.validation import (
        MAX_ENTITY_KEY_LENGTH,
        _validate_metric_name,
        _validate_param_name,
    )

    try:
        _validate_param_name(key)
        _validate_metric_name(key)
    except MlflowException:
        return False
    return len(key) <= MAX_ENTITY_KEY_LENGTH


@settings(max_examples=100, deadline=None)
@example("model.extra_body.x!y")
@example("..")
@example("a//b")
@example("x" * 300)
@given(st.one_of(TEXT, st.text(alphabet="ab./:!-_ ", max_size=12)))
def test_any_key_maps_to_one_mlflow_takes(key: str) -> None:
    import re

    mapped = mlflow_key(key)
    assert _mlflow_takes(mapped) and re.fullmatch(MLFLOW_KEY_PATTERN, mapped)
    if mapped != key:  # a mapped key is not kept: no key MLflow takes can equal it
        assert mlflow_key(mapped) != mapped
    looks_mapped = re.search(r"-[0-9a-f]{8}\Z", key)
    if _mlflow_takes(key) and ":" not in key and key.strip("\n") == key and not looks_mapped:
        assert mapped == key  # a key MLflow takes (on every platform) is kept


@given(st.text(max_size=8), st.text(max_size=8))
def test_two_keys_never_map_to_one(a: str, b: str) -> None:
    assert a == b or mlflow_key(a) != mlflow_key(b)


def test_a_key_shaped_like_a_mapped_one_is_mapped_too() -> None:
    """Issue 44: ``{"x!y": 1, "x_y-1472d3f1": 2}`` logged one key, one value lost."""
    mapped = mlflow_key("x!y")
    assert mapped.startswith("x_y-") and len(mapped) == len("x_y-") + 8
    assert mlflow_key(mapped) != mapped


@given(st.text(alphabet="xy!_-0123456789abcdef", max_size=14))
def test_no_key_maps_onto_the_mapping_of_another(key: str) -> None:
    other = mlflow_key(key)
    assert mlflow_key(other) != other or other == key


def test_a_dict_typed_model_field_reaches_mlflow_under_valid_keys() -> None:
    """Issue 32: ``extra_body: {"x!y": 1}`` composed and ran, then ``track`` failed with
    ``unexpected MlflowException``; every param and metric key genfair logs is now one MLflow
    takes, whatever the config or the scores hold."""
    from genfair.models.config import OpenAIModelConfig
    from genfair.study.tracking import _log_metrics, _log_params, _score_metrics, flatten

    config = OpenAIModelConfig(
        backend="openai", model_id="m", extra_body={"x!y": 1, "a//b": {"../c": 2}, "ok_key": 3}
    )
    logged: dict[str, Any] = {}

    class Recorder:
        def log_params(self, params: dict[str, Any]) -> None:
            logged.update(params)

        log_metrics = log_params

    _log_params(Recorder(), flatten(config.model_dump(mode="json"), "model."))
    assert all(map(_mlflow_takes, logged))
    assert logged["model.extra_body.ok_key"] == 3
    assert logged[mlflow_key("model.extra_body.x!y")] == 1
    logged.clear()
    metrics = _score_metrics(pd.DataFrame({"bias": HOSTILE, "severity": 0.5}), ("bias",))
    _log_metrics(Recorder(), metrics)
    assert len(logged) == len(HOSTILE) and all(map(_mlflow_takes, logged))


def test_an_experiment_changing_a_dict_typed_field_tags_its_run_under_valid_keys() -> None:
    """``genfair exp -S 'models.m.extra_body.x!y=2'`` tags the study run with the changed key:
    a tag key MLflow takes (it refuses tags by the same rule as params)."""
    from mlflow.exceptions import MlflowException
    from mlflow.utils.validation import _validate_tag_name

    from genfair.study.lineage import Experiment

    tags = Experiment("e", {"models.m.extra_body.x!y": "2 (was 1)", "seed": "2 (was 1)"}).tags()
    for key in tags:
        try:
            _validate_tag_name(key)
        except MlflowException as exc:  # pragma: no cover - the failure this test guards
            pytest.fail(f"{key!r}: {exc}")
    assert tags["genfair.changed.seed"] == "2 (was 1)"
    assert tags[mlflow_key("genfair.changed.models.m.extra_body.x!y")] == "2 (was 1)"
