"""The report's samples: the rows behind every number, one script file per methodology and model.

``data/report/samples/<methodology>/<model>.js`` holds the rows that
:meth:`~genfair.methodologies.presentation.Presentation.sample_rows` makes of the model's labels,
responses and probes, and registers them with the report's sample browser
(``genfairSamples({...})``). Script files, not JSON: a page opened from disk (``file://``)
may load a script but Chromium refuses it ``fetch()`` of a local file. The report loads a
file when a reader asks for that methodology and model, so its own size does not grow with
the rows; the browser renders a page of rows at a time.

Columns are stored column-wise: a column with few distinct values (a group, the status, a
prompt shared by many samples) as its levels and one code per row, any other as its values.
Every string is JSON, with ``<``, ``>``, ``&`` and the two JavaScript line separators escaped,
so no text (a model's ``</script>``) can end the script or the page's JSON block. Images are
not copied: a row links to the study's own image file, relative to the report
(``../responses/<methodology>/<model>/images/<sha256>.png``), shown scaled down.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.errors import ConfigError
from genfair.io import read_parquet, write_text
from genfair.methodologies import get_methodology
from genfair.methodologies.sample_view import SAMPLE_FIELDS
from genfair.names import inside
from genfair.study.context import models_for
from genfair.study.layout import Layout
from genfair.study_params import StudyParams

#: the report's folder of sample files (next to ``index.html``)
FOLDER = "samples"
#: the function each sample file calls (defined by the report's script)
REGISTER = "genfairSamples"
#: characters that must not appear raw in JSON inside a script or an HTML page
_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


@dataclass
class SampleFile:
    """One methodology and model's sample file, as the report's index lists it."""

    methodology: str
    model: str
    #: the file's URL relative to the report
    src: str
    rows: int
    #: rows per status
    statuses: dict[str, int]
    #: the grouping columns and the values they take (for the headline numbers' links)
    groups: dict[str, set[str]] = field(default_factory=dict)

    def counts(self) -> str:
        """``1110 rows: 808 ok, 302 invalid``."""
        statuses = ", ".join(f"{n} {status}" for status, n in self.statuses.items())
        return f"{self.rows} rows" + (f": {statuses}" if statuses else "")

    def index_entry(self) -> dict[str, Any]:
        """What the page's index holds: no row, no level (the file has them)."""
        return {
            "methodology": self.methodology,
            "model": self.model,
            "src": self.src,
            "rows": self.rows,
            "statuses": self.statuses,
            "groups": list(self.groups),
        }


def script_json(data: Any) -> str:
    """``data`` as compact JSON that is safe inside a ``<script>`` element or file: ``<``,
    ``>`` and ``&`` (hence ``</script>`` and ``<!--``) and U+2028/U+2029 escaped."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escaped in _ESCAPES.items():  # str.replace: C speed on a paper-scale file
        text = text.replace(char, escaped)
    return text


def encode_rows(rows: pd.DataFrame) -> dict[str, Any]:
    """``rows`` column-wise: ``{"n": rows, "columns": {name: {"levels": [...], "codes":
    [...]} or {"values": [...]}}}``; levels when a column has at most half as many distinct
    values as rows. Missing values are null; ``attempts`` stays an integer."""
    columns: dict[str, Any] = {}
    for name in rows.columns:
        values = [v if type(v) is str else _plain(v) for v in rows[name].tolist()]
        levels = list(dict.fromkeys(values))
        if len(levels) * 2 <= len(values):
            index = {level: i for i, level in enumerate(levels)}
            columns[str(name)] = {"levels": levels, "codes": [index[v] for v in values]}
        else:
            columns[str(name)] = {"values": values}
    return {"n": len(rows), "columns": columns}


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float):
        return None if value != value else value
    return value if isinstance(value, (int, str)) else str(value)


def image_urls(images: pd.Series, root: Path, report_dir: Path) -> pd.Series:
    """Each image path (from the study root) as a URL relative to the report folder; None
    for no image or a path that leaves the study root."""
    base: dict[str, str | None] = {}

    def url(path: Any) -> str | None:
        if not isinstance(path, str) or not path:
            return None
        folder, name = os.path.split(path)
        if folder not in base:
            try:
                full = inside(root, root / folder) if folder else root
                base[folder] = Path(os.path.relpath(full, report_dir)).as_posix()
            except (ConfigError, ValueError):
                base[folder] = None
        prefix = base[folder]
        if prefix is None or name in ("", ".", ".."):
            return None
        return urllib.parse.quote(f"{prefix}/{name}")

    return pd.Series([url(p) for p in images.tolist()], index=images.index, dtype="object")


def sample_rows(
    methodology: str, model: str, layout: Layout, probes: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The model's rows of ``methodology`` (its labels joined with its responses and
    ``probes``, read when not given), images as paths from the study root; empty when the
    model has no labels yet."""
    labels_path = layout.labels(model, methodology)
    if not labels_path.exists():
        return pd.DataFrame(columns=list(SAMPLE_FIELDS))
    if probes is None:
        probes = _read(layout.probes(methodology))
    images = Path(os.path.relpath(layout.images(model, methodology), layout.root))
    return get_methodology(methodology).presentation.sample_rows(
        probes, _read(layout.responses(model, methodology)), read_parquet(labels_path), images
    )


def _read(path: Path) -> pd.DataFrame:
    return read_parquet(path) if path.exists() else pd.DataFrame()


def write_samples(params: StudyParams, layout: Layout) -> list[SampleFile]:
    """Every methodology and model's sample file under the report's ``samples/`` folder
    (files of models or methodologies no longer in the study are removed)."""
    report_dir = layout.report.parent
    folder = report_dir / FOLDER
    written: list[SampleFile] = []
    for methodology in params.methodologies:
        probes = _read(layout.probes(methodology))
        for model in models_for(params, methodology):
            rows = sample_rows(methodology, model, layout, probes)
            rows["image"] = image_urls(rows["image"], layout.root, report_dir)
            path = layout.named(folder, methodology, model, suffix=".js")
            data = {"methodology": methodology, "model": model, **encode_rows(rows)}
            write_text(f"{REGISTER}({script_json(data)});\n", path, if_changed=True)
            groups = [c for c in rows.columns if c not in SAMPLE_FIELDS]
            written.append(
                SampleFile(
                    methodology,
                    model,
                    f"{FOLDER}/{methodology}/{model}.js",
                    len(rows),
                    {str(k): int(v) for k, v in rows["status"].value_counts().items()},
                    {g: set(rows[g].dropna().astype(str)) for g in groups},
                )
            )
    keep = {folder / f.methodology / f"{f.model}.js" for f in written}
    for stale in folder.rglob("*.js") if folder.exists() else []:
        if stale not in keep:
            stale.unlink()
    return written
