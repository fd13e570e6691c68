"""The rows behind a methodology's numbers, as the report's sample browser shows them.

A methodology says which of its columns matter (:class:`SampleView`, the class attribute
``Presentation.sample_view``); :func:`join_samples` makes one row per label row out of its
label, response and probe tables. The generic report code (:mod:`genfair.study.sample_files`)
exports these rows per model, and names no methodology.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

#: the fields of every sample row the report's sample browser shows (``Presentation.sample_rows``)
SAMPLE_FIELDS = ("probe_id", "prompt", "answer", "label", "status", "attempts", "image")


@dataclass(frozen=True)
class SampleView:
    """Which columns the report's sample browser shows of a methodology's rows (its label
    table, joined with its responses and probes by :meth:`Presentation.sample_rows`).

    ``groups``: the label columns a reader filters by (statistic, context, sector, class,
    bias...); empty: the label table's short text columns (at most :data:`MAX_LEVELS` values).
    ``label``: the parsed label, these columns joined with `` / `` (empty: the first of
    ``label``, ``choice``, ``answer`` there is). ``answer``: the raw answer, the first of these
    columns of the labels, else of the responses. ``probe``: the labels' column naming the
    probe. ``prompt``: the probes' column holding the prompt. ``image``: the column (labels or
    responses) naming a generated image's file in the model's image folder; ``probe_image``:
    the probes' column holding an input image's path from the study root (vision probes).
    """

    groups: tuple[str, ...] = ()
    label: tuple[str, ...] = ()
    answer: tuple[str, ...] = ("text",)
    probe: str = "probe_id"
    prompt: str = "prompt"
    image: str | None = "file"
    probe_image: str | None = None

    def __post_init__(self) -> None:
        clash = set(self.groups) & set(SAMPLE_FIELDS)
        if clash:
            raise ValueError(f"SampleView.groups: {sorted(clash)} name sample fields; rename them")


#: the most values a column may have to be guessed a grouping column (:class:`SampleView`)
MAX_LEVELS = 50


def join_samples(
    view: SampleView,
    probes: pd.DataFrame,
    responses: pd.DataFrame,
    labels: pd.DataFrame,
    images: Path,
) -> pd.DataFrame:
    """One row per label row: :data:`SAMPLE_FIELDS` then ``view``'s grouping columns (or,
    with none named, :func:`guess_groups`), every value text or None (``attempts``: an integer
    or None). A field the tables lack is None; a grouping column they lack is left out.
    Responses are matched on the probe (and ``sample_index`` where a probe has several)."""
    if labels.empty or view.probe not in labels:
        return pd.DataFrame(columns=list(SAMPLE_FIELDS))
    rows = labels.reset_index(drop=True).rename(columns={view.probe: "probe_id"})
    rows["probe_id"] = rows["probe_id"].astype("string")
    answer = next((c for c in view.answer if c in rows), None)
    wanted = [c for c in ("status", "attempts", view.image, view.prompt) if c and c not in rows]
    if answer is None:
        answer = next((c for c in view.answer if c in responses), None)
        wanted += [answer] if answer else []
    if wanted and "probe_id" in responses:
        rows = _with_responses(rows, responses, [c for c in wanted if c in responses])
    out = pd.DataFrame(index=rows.index)
    out["probe_id"] = rows["probe_id"]
    # the probe's prompt, else the row's own (a probe that expands into several prompts)
    prompts = _by_probe(rows["probe_id"], probes, view.prompt)
    out["prompt"] = prompts.where(prompts.notna(), _text(rows, view.prompt))
    out["answer"] = _text(rows, answer)
    out["label"] = _joined(rows, _label_columns(view, rows))
    out["status"] = _text(rows, "status")
    out["attempts"] = (
        pd.to_numeric(rows["attempts"], errors="coerce").astype("Int64")
        if "attempts" in rows
        else pd.Series(pd.NA, index=rows.index, dtype="Int64")
    )
    out["image"] = _images(rows, probes, view, images)
    for group in view.groups or guess_groups(labels, view):
        if group in rows:
            out[group] = _text(rows, group)
    return out


def guess_groups(labels: pd.DataFrame, view: SampleView) -> tuple[str, ...]:
    """The label table's columns that look like groups: text or yes/no, 2 to
    :data:`MAX_LEVELS` distinct values, not a sample field nor a column ``view`` names."""
    named = {*SAMPLE_FIELDS, view.probe, *view.answer, view.image, "sample_index"}
    named |= set(_label_columns(view, labels))
    groups = []
    for column in labels.columns:
        values = labels[column]
        if column in named or not (
            pd.api.types.is_string_dtype(values)
            or pd.api.types.is_object_dtype(values)
            or pd.api.types.is_bool_dtype(values)
        ):
            continue
        try:
            levels = values.nunique(dropna=True)
        except TypeError:  # lists or dicts in the cells: not a group
            continue
        if 2 <= levels <= MAX_LEVELS:
            groups.append(str(column))
    return tuple(groups)


def _label_columns(view: SampleView, rows: pd.DataFrame) -> tuple[str, ...]:
    """The parsed label's columns: ``view.label``, else the first of ``label``, ``choice``,
    ``answer`` that ``rows`` has."""
    return view.label or next(((c,) for c in ("label", "choice", "answer") if c in rows), ())


def _with_responses(
    rows: pd.DataFrame, responses: pd.DataFrame, columns: list[str]
) -> pd.DataFrame:
    """``rows`` with ``columns`` of the response to each: by probe, and by ``sample_index``
    where a probe has several responses (each response at most once)."""
    if not columns:
        return rows
    keys = ["probe_id"]
    if (
        not responses["probe_id"].is_unique
        and "sample_index" in responses
        and "sample_index" in rows
    ):
        keys.append("sample_index")
    right = responses[[*keys, *columns]].copy()
    right["probe_id"] = right["probe_id"].astype("string")
    left = rows.copy()
    if "sample_index" in keys:
        for frame in (left, right):
            frame["sample_index"] = pd.to_numeric(frame["sample_index"], errors="coerce").astype(
                "Int64"
            )
    right = right.drop_duplicates(keys)
    return left.merge(right, on=keys, how="left", validate="many_to_one")


def _by_probe(probe_ids: pd.Series, probes: pd.DataFrame, column: str | None) -> pd.Series:
    """The probes' ``column`` for each of ``probe_ids``, as text (None where absent)."""
    if not column or column not in probes or "probe_id" not in probes:
        return _series([None] * len(probe_ids), probe_ids.index)
    table = probes.drop_duplicates("probe_id")
    values = dict(zip(table["probe_id"].astype(str), _texts(table[column]), strict=True))
    return _series([values.get(p) for p in _texts(probe_ids)], probe_ids.index)


def _images(rows: pd.DataFrame, probes: pd.DataFrame, view: SampleView, images: Path) -> pd.Series:
    """A generated image's path in the model's image folder, else the probe's input image
    (both from the study root), else None."""
    out = _by_probe(rows["probe_id"], probes, view.probe_image)
    if view.image and view.image in rows:
        files = _texts(rows[view.image])
        paths = [p if f is None else str(images / f) for f, p in zip(files, out, strict=True)]
        out = _series(paths, rows.index)
    return out


def _text(rows: pd.DataFrame, column: str | None) -> pd.Series:
    if column is None or column not in rows:
        return _series([None] * len(rows), rows.index)
    return _series(_texts(rows[column]), rows.index)


def _joined(rows: pd.DataFrame, columns: tuple[str, ...]) -> pd.Series:
    """The ``columns`` present, as text joined with `` / `` (missing values left out)."""
    present = [c for c in columns if c in rows]
    if not present:
        return _series([None] * len(rows), rows.index)
    parts = [_texts(rows[c]) for c in present]
    joined = [
        " / ".join(p for p in row if p is not None) or None for row in zip(*parts, strict=True)
    ]
    return _series(joined, rows.index)


def _texts(values: pd.Series) -> list[str | None]:
    if pd.api.types.is_string_dtype(values.dtype) and not pd.api.types.is_object_dtype(
        values.dtype
    ):  # pandas' string dtype: str or a missing value, no per-cell checks needed
        return [v if isinstance(v, str) else None for v in values.tolist()]
    return [_as_text(v) for v in values.tolist()]


def _series(values: list[str | None], index: pd.Index) -> pd.Series:
    """Text cells that stay str or None (pandas' string dtype would make None a NaN)."""
    return pd.Series(values, index=index, dtype="object")


def _as_text(value: object) -> str | None:
    """A cell as text: None for a missing value, yes/no for booleans."""
    if value is None:
        return None
    if isinstance(value, (list, tuple, dict)):
        return str(value)
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        return str(value)
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
