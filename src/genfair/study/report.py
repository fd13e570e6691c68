"""The study report: one self-contained HTML file, ``data/report/index.html``.

It opens offline from disk: CSS is inline, figures are PNGs inside the page (``data:`` URLs).
Its one inline script is the sample browser (``samples.js``, allowed by its hash); the rows it
shows are script files beside the page (:mod:`genfair.study.sample_files`), loaded on demand, and
the Content-Security-Policy allows no other script and no request off the disk, so a model's
text can neither run nor call home. Every string that a model wrote or a dataset supplied goes
through Jinja2's autoescaping in the page and ``textContent`` in the browser. Sections:

- the study: models (backend, modality, SIMULATED or not), methodologies (each with the sizes
  it ran at), scale, seed, the study's fingerprint; the git commit and render time come from
  ``build.js`` beside the page (:func:`write_build`), outside the DVC output, so the page's
  bytes depend on the study only and a rebuild leaves ``dvc.lock`` unchanged;
- headline numbers: each methodology's :class:`~genfair.methodologies.comparison.Headline` per
  model, with the model's rank among real models (simulators are never ranked);
- one section per methodology, from its
  :meth:`~genfair.methodologies.presentation.Presentation.report_section` (the generic code
  names no methodology);
- instruments: the face instrument's validation, the instruments each methodology used (the
  ``instruments`` entry of its metrics summaries) and the answer mapper's tiers (``tiers``).

Why matplotlib and static PNGs rather than Vega-Altair or Plotly: docs/report.md.

Imported where used: :mod:`genfair.methodologies.plotting` (matplotlib), when a figure is drawn,
and :mod:`genfair.study.precision` (SQLAlchemy), when the forecasts are shown.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import urllib.parse
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from genfair.io import read_json, read_parquet, write_text
from genfair.logs import progress, shown
from genfair.methodologies import get_methodology
from genfair.methodologies.base import ModelInfo
from genfair.methodologies.comparison import NEUTRAL
from genfair.methodologies.presentation import ReportContext, ReportSection, ReportTable
from genfair.names import split_pair
from genfair.study.context import configured, model_info, models_for
from genfair.study.layout import Layout
from genfair.study.sample_files import SampleFile, script_json, write_samples
from genfair.study.scoring import REPORTED, headline_rows
from genfair.study.steps import read_study
from genfair.study.store import workspace_root
from genfair.study.tracking import git_commit
from genfair.study_params import StudyParams

if TYPE_CHECKING:
    from jinja2 import Environment

log = logging.getLogger(__name__)

#: rows of a table shown in the report (the full tables are in data/)
MAX_ROWS = 60
#: the sample browser's script, inlined in the page (allowed by its hash)
VIEWER = files("genfair.study") / "web" / "samples.js"
SIMULATED = "SIMULATED"


def figure_png(figure: Any, dpi: int = 96) -> str:
    """A matplotlib figure as a base64 PNG (the figure is closed). A figure its code laid out
    (``tight_layout``) is saved as laid out, in one drawing pass; any other is cropped to
    what it holds (``bbox_inches="tight"``: one more layout pass and a draw)."""
    from genfair.methodologies.plotting import as_data, laid_out, one_pass, plt

    buffer = io.BytesIO()
    crop = None if laid_out(figure) else "tight"
    one_pass(as_data(figure)).savefig(buffer, format="png", dpi=dpi, bbox_inches=crop)
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _cell(value: Any, column: str, simulated: set[str]) -> dict[str, Any]:
    """A table cell: its text and whether it carries the SIMULATED badge."""
    if column == "simulated":
        return {"text": "", "sim": bool(value) if not _missing(value) else False}
    if _missing(value):
        return {"text": "–", "sim": False}
    if isinstance(value, bool):
        return {"text": "yes" if value else "no", "sim": False}
    if isinstance(value, float):
        return {"text": f"{value:.4g}", "sim": False}
    text = str(value)
    return {"text": text, "sim": column == "model" and text in simulated}


def _missing(value: Any) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def table_view(table: ReportTable, simulated: set[str], max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """A :class:`ReportTable` as the template's rows of escaped-later cells."""
    frame = table.frame
    shown = frame.head(max_rows)
    rows = [
        [_cell(v, str(c), simulated) for c, v in zip(shown.columns, row, strict=True)]
        for row in shown.itertuples(index=False, name=None)
    ]
    return {
        "title": table.title,
        "caption": table.caption,
        "columns": [str(c) for c in frame.columns],
        "rows": rows,
        "more": max(0, len(frame) - max_rows),
    }


def section_view(
    section: ReportSection, anchor: str, simulated: set[str], samples: Sequence[SampleFile] = ()
) -> dict[str, Any]:
    return {
        "anchor": anchor,
        "samples": [
            {
                "model": f.model,
                "href": samples_href(f),
                "counts": f.counts(),
            }
            for f in samples
        ],
        "title": section.title,
        "intro": section.intro,
        "notes": section.notes,
        "figures": [
            {"png": figure_png(f.figure), "caption": f.caption, "name": f.name or f"figure-{i + 1}"}
            for i, f in enumerate(section.figures)
        ],
        "tables": [table_view(t, simulated) for t in section.tables],
    }


def samples_href(file: SampleFile, where: dict[str, str] | None = None) -> str:
    """The report address that opens ``file``'s rows in the sample browser, filtered by the
    entries of ``where`` that name one of its groups and a value that some row has."""
    query = {k: v for k, v in (where or {}).items() if v in file.groups.get(k, ())}
    address = f"#samples/{urllib.parse.quote(file.methodology)}/{urllib.parse.quote(file.model)}"
    return address + (f"?{urllib.parse.urlencode(query)}" if query else "")


def headline_view(
    params: StudyParams, layout: Layout, samples: Sequence[SampleFile] = ()
) -> dict[str, Any]:
    """Rows (methodology, headline name, better) x columns (models): value, rank and the
    link to the rows behind the number."""
    models = list(params.models)
    files = {(f.methodology, f.model): f for f in samples}
    rows = []
    for name in params.methodologies:
        board_path = layout.scores / f"{name}.parquet"
        board = read_parquet(board_path) if board_path.exists() else pd.DataFrame()
        method = get_methodology(name)
        headlines = {h.name: h for h in method.comparison.headline}
        by_name: dict[str, dict[str, Any]] = {}
        for row in headline_rows(method, board):
            file = files.get((name, row["model"]))
            if file is not None:
                where = method.presentation.sample_filter(headlines[row["name"]])
                row["samples"] = samples_href(file, where)
            entry = by_name.setdefault(
                row["name"],
                {
                    "methodology": name,
                    "name": row["name"],
                    "better": REPORTED if row["better"] == NEUTRAL else row["better"],
                    "cells": {},
                },
            )
            entry["cells"][row["model"]] = row
        rows.extend(by_name.values())
    for row in rows:
        row["cells"] = [row["cells"].get(m) for m in models]
    return {"models": models, "rows": rows}


def instruments_view(params: StudyParams, layout: Layout, simulated: set[str]) -> dict[str, Any]:
    """The instruments' validation (the face instrument's accuracy; the image instruments'
    checks, or why there are none), what each methodology used, and answer-mapper tiers."""
    folder = layout.instruments
    validation = [
        _instrument_validation(path, folder, simulated)
        for path in (sorted(folder.glob("*.json")) if folder.exists() else [])
    ]
    used, tiers = _instruments_used(params, layout)
    out = {"validation": validation, "used": None, "tiers": None}
    if used:
        out["used"] = table_view(
            ReportTable(
                "Instruments used",
                pd.DataFrame(used),
                "Named in each model's metrics summary (oracle = a simulator's planted truth).",
            ),
            simulated,
        )
    if tiers:
        out["tiers"] = table_view(
            ReportTable(
                "Answer mapper tiers",
                pd.DataFrame(tiers),
                "How free-text answers were mapped onto the label set "
                "(exact, alias, embedding, unmappable...).",
            ),
            simulated,
        )
    return out


def _instrument_validation(path: Path, folder: Path, simulated: set[str]) -> dict[str, Any]:
    """One instrument's validation tables, from its summary at ``path``: an image
    instrument's checks (or why there are none), else its accuracy per attribute and group."""
    summary = json.loads(path.read_text(encoding="utf-8"))
    checks = folder / path.stem / "checks.parquet"
    if checks.exists():  # an image instrument: its checks, or why there are none
        frame = read_parquet(checks)
        caption = summary.get("validated_on", "")
        if frame.empty:
            frame = pd.DataFrame([{"status": summary.get("status", "no checks")}])
        table = ReportTable(f"{path.stem}: validation checks", frame, caption)
        return {"name": path.stem, "tables": [table_view(table, simulated)]}
    per_attribute = folder / path.stem / "per_attribute.parquet"
    frame = (
        read_parquet(per_attribute)
        if per_attribute.exists()
        else pd.DataFrame(
            [
                {
                    "attribute": k,
                    **{f: v.get(f) for f in ("status", "n", "accuracy", "accuracy_disparity")},
                }
                for k, v in summary.items()
                if isinstance(v, dict)
            ]
        )
    )
    per_group = folder / path.stem / "per_group.parquet"
    tables = [
        table_view(
            ReportTable(
                f"{path.stem}: accuracy per attribute",
                frame,
                f"{summary.get('instrument', path.stem)} on {summary.get('images', '?')} "
                "labelled package photos (model mode: what real models' images get).",
            ),
            simulated,
        )
    ]
    if per_group.exists():
        tables.append(
            table_view(
                ReportTable(
                    f"{path.stem}: recall per group",
                    read_parquet(per_group),
                    "A gap between groups is the instrument's own bias.",
                ),
                simulated,
            )
        )
    return {"name": path.stem, "tables": tables}


def _instruments_used(
    params: StudyParams, layout: Layout
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The instruments each model's metrics summary names, and its answer-mapper tiers."""
    used: list[dict[str, Any]] = []
    tiers: list[dict[str, Any]] = []
    for model in params.models:
        for name in params.methodologies:
            summary_path = layout.metrics(model, name) / "summary.json"
            if not summary_path.exists():
                continue
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
            for instrument, value in (summary.get("instruments") or {}).items():
                used.append(
                    {
                        "model": model,
                        "methodology": name,
                        "instrument": instrument,
                        "value": str(value),
                    }
                )
            for where, counts in _find(summary, "tiers"):
                tiers.extend(
                    {
                        "model": model,
                        "methodology": name,
                        "where": where,
                        "tier": str(t),
                        "count": c,
                    }
                    for t, c in counts.items()
                )
    return used, tiers


def usage_view(params: StudyParams, layout: Layout, simulated: set[str]) -> dict[str, Any] | None:
    """The tokens and images of each run's answers (the ``usage`` of its metrics summary:
    :mod:`genfair.models.usage`), with the rule each was counted by; None when no run has it."""
    rows = []
    for model in params.models:
        for name in params.methodologies:
            path = layout.metrics(model, name) / "summary.json"
            usage = read_json(path).get("usage") if path.is_file() else None
            if isinstance(usage, dict):
                rules = usage.get("rules", [])
                rows.append(
                    {"model": model, "methodology": name}
                    | {
                        k: usage.get(k)
                        for k in ("calls", "prompt_tokens", "completion_tokens", "images")
                    }
                    | {"counted with": "; ".join(map(str, rules))}
                )
    if not rows:
        return None
    return table_view(
        ReportTable(
            "Calls, tokens and images per run",  # under the section's own "Usage" heading
            pd.DataFrame(rows),
            "Every answer a run used, re-asks included, whether it came from the response cache "
            "or was sent (the split is in the generate log): tokens from the endpoint's usage, "
            "else the model's own tokenizer, else 4 characters a token (a simulator's text); "
            "images drawn. `genfair plan` estimates them before a run.",
        ),
        simulated,
        max_rows=10_000,
    )


#: a comparison whose paired values are equal on every probe, said in words, not [0, 0]
IDENTICAL = "(identical on every probe)"


def comparisons_view(
    params: StudyParams, layout: Layout, simulated: set[str]
) -> list[dict[str, Any]]:
    """One matrix per compared headline (``data/comparisons.json``): the row model minus the
    column model, its paired interval, ``*`` where the Holm-adjusted p-value marks it."""
    found = read_json(layout.comparisons) if layout.comparisons.is_file() else {}
    views = []
    for name, headlines in found.items():
        for headline, pairs in headlines.items():
            cells: dict[str, dict[str, str]] = {}
            for key, c in pairs.items():
                a, b = split_pair(key)
                if c.get("difference") is None:
                    continue
                lo, hi = c.get("ci_low"), c.get("ci_high")
                mark = "*" if c.get("marked") else ""
                for row, column, sign in ((a, b, 1), (b, a, -1)):
                    interval = (
                        ""
                        if lo is None or hi is None
                        else f" [{_num(sign * (lo if sign > 0 else hi))}, "
                        f"{_num(sign * (hi if sign > 0 else lo))}]"
                    )
                    if c["difference"] == lo == hi == 0:  # every resample: a degenerate [0, 0]
                        interval = f" {IDENTICAL}"
                    cells.setdefault(row, {})[column] = (
                        f"{_num(sign * c['difference'])}{interval}{mark}"
                    )
            models = [m for m in params.models if m in cells]
            frame = pd.DataFrame(
                [{"model": m, **{o: cells[m].get(o, "") for o in models}} for m in models]
            )
            views.append(
                table_view(
                    ReportTable(
                        f"{name}: {headline}",
                        frame,
                        "Row model minus column model, with its paired 95% bootstrap interval "
                        "(the same probes resampled for both); * where the Holm-adjusted p-value "
                        "across the study's comparisons is below 0.05. "
                        f"{IDENTICAL}: the two models score the same on every probe, so every "
                        "resample differs by 0 (the interval [0, 0]). Simulators are compared "
                        "only with simulators.",
                    ),
                    simulated,
                )
            )
    return views


def precision_view(layout: Layout, simulated: set[str]) -> dict[str, Any] | None:
    """Each headline's 95% half-width and its forecast at the paper's size (issue 47: the
    ``precision`` stage's ``data/precision.json``); None when it is missing or no run has
    labels."""
    from genfair.study.precision import NO_PILOT, read_forecast

    found = read_forecast(layout.precision)
    rows = [h for h in found.half_widths if h.note != NO_PILOT] if found else []
    if not rows:
        return None
    frame = pd.DataFrame(
        {
            "methodology": [h.methodology for h in rows],
            "model": [h.model for h in rows],
            "headline": [h.headline for h in rows],
            "units": [h.pilot_units for h in rows],
            "± now": [
                _num(h.pilot_half_width) if h.pilot_half_width is not None else "" for h in rows
            ],
            "paper units": [h.units for h in rows],
            "± at paper size": [
                _num(h.half_width) if h.half_width is not None else h.note for h in rows
            ],
        }
    )
    caption = (
        "Each headline's 95% half-width now (its bootstrap over the run's resampling units) "
        "and forecast at the methodology's paper sizes (the run's units resampled up to the "
        "paper's number, scored with the methodology's own headline function; "
        'docs/methodology.md, "Planning for precision"). Not forecast: the run cannot say it '
        "(biased at its size, too few units, past its methodology's own limit, or paper sizes "
        "that make its units bigger rather than more)."
    )
    return table_view(ReportTable("Precision", frame, caption), simulated)


def _num(value: float) -> str:
    return f"{value + 0.0:.4g}"  # + 0.0: a negated 0 is "0", not "-0"


def _find(node: Any, key: str, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every ``key: {...}`` entry in a nested summary, with where it was found."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, dict):
                found.append((path or "-", v))
            else:
                found.extend(_find(v, key, f"{path}.{k}" if path else str(k)))
    return found


def report_context(params: StudyParams, name: str, layout: Layout) -> ReportContext:
    method, config = configured(params, name)
    board_path = layout.scores / f"{name}.parquet"

    def summary(model: str) -> dict[str, Any]:
        path = layout.metrics(model, name) / "summary.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def table(model: str, table_name: str) -> pd.DataFrame:
        path = layout.metrics(model, name) / f"{table_name}.parquet"
        return read_parquet(path) if path.exists() else pd.DataFrame()

    return ReportContext(
        board=read_parquet(board_path) if board_path.exists() else pd.DataFrame(),
        study=read_study(name, layout),
        models=tuple(model_info(params, m) for m in models_for(params, name)),
        config=config,
        summary=summary,
        table=table,
    )


#: the build's own facts beside the page (git commit, render time): not a DVC output
BUILD = "build.js"


def study_fingerprint(layout: Layout) -> str:
    """What the page's numbers were made from, the same on every machine and checkout: a digest
    of every headline number (``headline.json``) and the code fingerprints (``data/code``).
    A git commit cannot take this place: the commit that holds ``dvc.lock`` is made after the
    page it locks, so a page naming its commit never matches on a fresh clone."""
    digest = hashlib.sha256()
    for path in [layout.headline, *sorted((layout.data / "code").rglob("*.json"))]:
        if path.is_file():
            digest.update(path.relative_to(layout.data).as_posix().encode("utf-8") + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def write_build(layout: Layout, now: datetime | None = None) -> Path:
    """``build.js`` beside the page: the git commit (``-dirty`` for uncommitted changes) and
    the render time, which the page shows when the file is there. Kept out of the page (a DVC
    output) so that two renders of the same study are the same bytes."""
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    text = f"git commit {git_commit(workspace_root())}, rendered {when}"
    script = f'document.getElementById("build").textContent = {json.dumps(text)};\n'
    return write_text(script, layout.report.parent / BUILD)


def report_environment() -> Environment:
    """The report's Jinja environment: every text escaped, and shown with its bidi overrides
    and zero-width characters made visible (:func:`genfair.logs.shown`; a model's bias name
    "gender \\u202e99.0" read "gender 0.99"); the code's own markup passes as it is."""
    from jinja2 import Environment
    from markupsafe import Markup

    return Environment(
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda v: shown(v) if isinstance(v, str) and not isinstance(v, Markup) else v,
    )


def build_report(
    params: StudyParams, layout: Layout = Layout(), now: datetime | None = None
) -> Path:
    """``report``: write ``data/report/index.html`` from the study's outputs (and
    :func:`write_build`'s ``build.js`` beside it)."""
    from markupsafe import Markup

    infos: list[ModelInfo] = [model_info(params, m) for m in params.models]
    simulated = {m.name for m in infos if m.simulated}
    samples = write_samples(params, layout)
    sections = []
    for name in progress(
        list(params.methodologies), desc="report sections", unit="section", every=5
    ):
        presentation = get_methodology(name).presentation
        section = presentation.report_section(report_context(params, name, layout))
        mine = [f for f in samples if f.methodology == name]
        sections.append(section_view(section, f"m-{name}", simulated, mine))
    viewer = VIEWER.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(viewer.encode("utf-8")).digest()).decode("ascii")
    html = (
        report_environment()
        .from_string(TEMPLATE)
        .render(
            models=infos,
            methodologies=[f"{n} ({params.sizes_of(n)} sizes)" for n in params.methodologies],
            scale=params.scale,
            seed=params.seed,
            fingerprint=study_fingerprint(layout),
            build=BUILD,
            headline=headline_view(params, layout, samples),
            sections=sections,
            samples_index=Markup(script_json([f.index_entry() for f in samples])),
            viewer=Markup(viewer),
            viewer_hash=f"sha256-{digest}",
            instruments=instruments_view(params, layout, simulated),
            usage=usage_view(params, layout, simulated),
            comparisons=comparisons_view(params, layout, simulated),
            precision=precision_view(layout, simulated),
            any_simulated=bool(simulated),
            simulated_names=simulated,
            tracking=read_json(layout.tracking_store) if layout.tracking_store.is_file() else None,
        )
    )
    out = write_text(html, layout.report)  # atomic: a full disk leaves no temporary file
    write_build(layout, now)
    log.info("report: %s (%d sections, %.0f kB)", out, len(sections), out.stat().st_size / 1024)
    return out


TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
content="default-src 'none'; img-src data: 'self'; style-src 'unsafe-inline';
script-src '{{ viewer_hash }}' 'self'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>genfair study report ({{ scale }})</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d232b;
       background: #fafbfc; }
header, main { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 20px; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #d0d7de; padding-bottom: 4px; margin-top: 2.2em; }
h3 { margin-top: 1.6em; }
nav a { margin-right: 14px; }
section { margin-bottom: 2em; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 0.86em; background: #fff; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef1f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.sim { display: inline-block; background: #b3261e; color: #fff; font-size: 0.72em; font-weight: 600;
       padding: 1px 5px; border-radius: 3px; margin-left: 5px; letter-spacing: 0.04em; }
.caption, .note { color: #454f5b; font-size: 0.9em; max-width: 960px; }
.more { color: #6a737d; font-size: 0.85em; }
figure { margin: 14px 0 22px; background: #fff; border: 1px solid #d0d7de; padding: 10px; }
figure img { max-width: 100%; height: auto; }
figcaption { color: #454f5b; font-size: 0.9em; margin-top: 6px; max-width: 960px; }
.tablewrap { overflow-x: auto; }
.banner { background: #fff4e5; border: 1px solid #f0b37e; padding: 8px 12px; margin: 12px 0; }
a.samples-link { font-size: 0.85em; }
#sb-controls label { margin-right: 12px; white-space: nowrap; }
#sb-groups { display: inline; }
#sb-table tbody tr { cursor: pointer; }
#sb-table tbody tr:hover, #sb-table tr.open { background: #eef6ff; }
#sb-table td.answer { max-width: 420px; overflow-wrap: anywhere; }
img.thumb { width: 48px; height: 48px; object-fit: cover; }
img.large { max-width: 256px; max-height: 256px; border: 1px solid #d0d7de; }
#sb-detail { background: #fff; border: 1px solid #d0d7de; padding: 8px 14px; margin: 10px 0; }
#sb-detail dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; }
#sb-detail dt { font-weight: 600; }
#sb-detail pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa;
                 padding: 6px; }
</style>
</head>
<body>
<header>
<h1>genfair study report</h1>
<nav><a href="#study">Study</a><a href="#headline">Headline numbers</a>{% for s in sections %}
<a href="#{{ s.anchor }}">{{ s.title }}</a>{% endfor %}
<a href="#instruments">Instruments</a>
{% if comparisons %}<a href="#comparisons">Comparisons</a>{% endif %}
{% if precision %}<a href="#precision">Precision</a>{% endif %}
{% if usage %}<a href="#usage">Usage</a>{% endif %}<a href="#samples">Samples</a></nav>
</header>
<main>
<section id="study">
<h2>The study</h2>
<p>Scale <b>{{ scale }}</b>, seed <b>{{ seed }}</b>, study fingerprint
<code>{{ fingerprint }}</code> (its headline numbers and code),
<span id="build">git commit and render time not found ({{ build }} beside this page)</span>.
<script src="{{ build }}"></script>
{% if tracking %}
MLflow: {{ tracking.runs }} runs in experiment <b>{{ tracking.experiment }}</b>
of <code>{{ tracking.tracking_uri }}</code>.{% endif %}
Methodologies: {{ methodologies | join(", ") }}.</p>
{% if any_simulated %}
<p class="banner"><span class="sim">SIMULATED</span> marks a planted-bias simulator: it checks the
chain from responses to scores against a known truth, it is not a real model, and it is never
ranked.</p>
{% endif %}
<table id="models">
<tr><th>model</th><th>backend</th><th>modality</th><th>kind</th></tr>
{% for m in models %}
<tr><td>{{ m.name }}{% if m.simulated %}
<span class="sim">SIMULATED</span>{% endif %}
</td><td>{{ m.backend }}</td>
<td>{{ m.modality }}</td><td>{{ "simulator (planted biases)" if m.simulated
else "real model" }}</td></tr>
{% endfor %}
</table>
</section>

<section id="headline">
<h2>Headline numbers</h2>
<p class="caption">One fairness profile per model: each methodology's few headline numbers (its
name says the measure, the next column which way is better), as estimate [low, high] where the
methodology gives an interval. "#n" is the model's rank among real models of its modality;
simulators are never ranked, nor a number "reported, not ranked" (no direction is better).
Full tables: <code>data/scores/</code>; the same numbers: <code>dvc metrics show</code>.</p>
<div class="tablewrap">
<table id="headline-table">
<tr><th>methodology</th><th>headline</th><th>better</th>
{% for m in headline.models %}<th>{{ m }}{% if m in simulated_names %}
<span class="sim">SIMULATED</span>{% endif %}
</th>{% endfor %}
</tr>
{% for row in headline.rows %}
<tr><td>{{ row.methodology }}</td><td>{{ row.name }}</td><td>{{ row.better }}</td>
{% for cell in row.cells %}
<td class="num">{% if cell is none %}–{% elif cell.value is none %}n/a{% else %}
{{ "%.4g" | format(cell.value) }}{% if cell.low is not none and cell.high is not none %}
 [{{ "%.4g" | format(cell.low) }}, {{ "%.4g" | format(cell.high) }}]{% endif %}
{% if cell.rank is not none %} (#{{ cell.rank }}){% endif %}{% endif %}
{% if cell and cell.samples %} <a class="samples-link" href="{{ cell.samples }}"
title="the rows behind this number">rows</a>{% endif %}
</td>{% endfor %}
</tr>
{% endfor %}
</table>
</div>
</section>

{% for s in sections %}
<section id="{{ s.anchor }}" class="methodology">
<h2>{{ s.title }}</h2>
{% if s.intro %}<p>{{ s.intro }}</p>{% endif %}
{% for n in s.notes %}<p class="note">{{ n }}</p>{% endfor %}
{% if s.samples %}<p class="note samples-links">The rows behind these numbers:
{% for f in s.samples %}<a class="samples-link" href="{{ f.href }}">{{ f.model }}</a>
({{ f.counts }}){{ "; " if not loop.last }}{% endfor %}.</p>
{% endif %}
{% for f in s.figures %}
<figure id="{{ s.anchor }}-{{ f.name }}"><img src="data:image/png;base64,{{ f.png }}"
alt="{{ f.name }}">
<figcaption>{{ f.caption }}</figcaption></figure>
{% endfor %}
{% for t in s.tables %}{{ table(t) }}{% endfor %}
{% if not s.figures and not s.tables %}
<p class="note">No scores: no model of this study runs it.</p>{% endif %}
</section>
{% endfor %}

<section id="instruments">
<h2>Instruments</h2>
<p class="caption">What labelled the responses, and how well. A biased instrument biases every
score it feeds.</p>
{% for v in instruments.validation %}<h3>Validation: {{ v.name }}</h3>{% for t in v.tables %}
{{ table(t) }}{% endfor %}{% endfor %}
{% if instruments.used %}{{ table(instruments.used) }}{% endif %}
{% if instruments.tiers %}{{ table(instruments.tiers) }}{% endif %}
</section>
{% if comparisons %}
<section id="comparisons">
<h2>Model comparisons</h2>
{% for t in comparisons %}{{ table(t) }}{% endfor %}
</section>
{% endif %}
{% if precision %}
<section id="precision">
<h2>Precision</h2>
{{ table(precision) }}
</section>
{% endif %}
{% if usage %}
<section id="usage">
<h2>Usage</h2>
{{ table(usage) }}
</section>
{% endif %}

<section id="samples">
<h2>Samples</h2>
<p class="caption">The rows behind every number: each answer's probe, prompt, raw answer,
parsed label, status and attempts, with the methodology's groups, and the image for image
probes. Filter by methodology, model, status and group, or search the text (probe, prompt,
answer, label, groups); click a row to open it. A model's rows load when asked for, from
<code>samples/</code> beside this page; images are the study's own files
(<code>data/responses/</code>, <code>data/curated/</code>).</p>
<div id="sb-controls">
<label>methodology <select id="sb-methodology"></select></label>
<label>model <select id="sb-model"></select></label>
<label>status <select id="sb-status"></select></label>
<span id="sb-groups"></span>
<label>search <input id="sb-search" type="search" size="24"></label>
<button id="sb-load" type="button">show rows</button>
</div>
<p id="sb-info" class="more"></p>
<div class="tablewrap"><table id="sb-table"><thead></thead><tbody></tbody></table></div>
<p><button id="sb-prev" type="button">‹ previous</button> <span id="sb-page"></span>
<button id="sb-next" type="button">next ›</button></p>
<div id="sb-detail" hidden></div>
</section>
</main>
<script type="application/json" id="samples-index">{{ samples_index }}</script>
<script>{{ viewer }}</script>
</body>
</html>
"""

_TABLE = """{% macro table(t) %}
<h3>{{ t.title }}</h3>
{% if t.caption %}<p class="caption">{{ t.caption }}</p>{% endif %}
<div class="tablewrap"><table>
<tr>{% for c in t.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in t.rows %}<tr>{% for cell in row %}
<td>{{ cell.text }}{% if cell.sim %}<span class="sim">SIMULATED</span>{% endif %}
</td>{% endfor %}
</tr>
{% endfor %}
</table></div>
{% if t.more %}<p class="more">… {{ t.more }} more rows in the study's tables.</p>{% endif %}
{% endmacro %}"""

TEMPLATE = TEMPLATE.replace("<!DOCTYPE html>", _TABLE + "<!DOCTYPE html>", 1)
