"""The reverse question of a precision forecast (issue 47.2, ``genfair plan --target
HEADLINE=HALFWIDTH``): the units a headline's 95% half-width needs to reach a target
(:func:`needed_units`: ``n = n_planned x (half-width / target)^2``, checked by a forecast at
that ``n`` and corrected once), the size knob of the methodology's size files and its value
that give them (:func:`size_knob`: of the integer settings the files set to several values
that size the headline's units (:func:`headline_knobs`), the one whose doubling moves the
plan's calls most proportionally, each candidate planned again; its value read off the line
through the two plans), and the calls and cost there (the
run's cost per call to send). docs/methodology.md, "Planning for precision"."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from genfair.models.base import derive_seed
from genfair.study.compare import Unit
from genfair.study.context import configured, model_info
from genfair.study.layout import Layout
from genfair.study.precision import (
    RESAMPLES,
    Forecast,
    forecast_model,
    json_safe,
    read_pilot,
    run_units,
    short,
    text_columns,
)
from genfair.study.runs import SIZES
from genfair.study.steps import read_study
from genfair.study_params import ConfigError, StudyParams


def needed_units(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    labels: pd.DataFrame,
    unit: Unit,
    headline: str,
    target: float,
    start: int,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[int | None, str]:
    """The units at which ``headline``'s forecast half-width reaches ``target``: from the
    forecast at ``start`` units, ``n = start x (half-width / target)^2`` (a half-width shrinks
    as 1/sqrt(n)), checked by a forecast at that ``n`` and corrected once the same way.
    None, with the reason, where the headline is not forecast."""
    n = start
    for _ in range(2):
        _, found = forecast_model(headlines, labels, unit, n, resamples=resamples, seed=seed)
        row = found.get(headline)
        if row is None:
            return None, f"{headline}: no such headline in the pilot"
        if row["half_width"] is None:
            return None, row["note"]
        if row["half_width"] == 0:
            return n, "its half-width is already 0"
        n = max(2, math.ceil(n * (row["half_width"] / target) ** 2))
    return n, ""


def _leaves(tree: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from _leaves(value, (*prefix, str(key)))
    else:
        yield prefix, tree


def knob_candidates(sizes: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """The integer settings a methodology's size files (``conf/sizes/<name>/*.yaml``) set
    to more than one value: its size knobs, dotted paths, in the files' order."""
    seen: dict[tuple[str, ...], set] = {}
    for size in sizes:
        for path, value in _leaves(size):
            if isinstance(value, int) and not isinstance(value, bool):
                seen.setdefault(path, set()).add(value)
    return [path for path, values in seen.items() if len(values) > 1]


def headline_knobs(
    declared: Mapping[str, Sequence[str]], headline: str, knobs: Sequence[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """Of a methodology's size ``knobs``, those that size ``headline``'s units: the ones its
    :attr:`~genfair.methodologies.base.Methodology.size_knobs` names for the headline's
    first dotted part (every knob where it names none)."""
    mine = declared.get(headline.split(".", 1)[0])
    return list(knobs) if mine is None else [k for k in knobs if ".".join(k) in mine]


def setting(tree: Mapping[str, Any], path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(tree, Mapping) or key not in tree:
            return None
        tree = tree[key]
    return tree


def with_setting(tree: Mapping[str, Any], path: Sequence[str], value: Any) -> dict[str, Any]:
    out = dict(tree)
    head, *rest = path
    out[head] = with_setting(out.get(head) or {}, rest, value) if rest else value
    return out


def size_knob(
    calls_at: Callable[[tuple[str, ...], int], int | None],
    current: Mapping[str, Any],
    knobs: Sequence[tuple[str, ...]],
    calls: int,
    needed: float,
) -> tuple[str, int, int] | None:
    """The size knob and value that make a run of ``calls`` calls ``needed`` times as large:
    of the ``knobs`` whose doubling changes the calls (``calls_at(knob, value)``: the plan's
    calls with the knob at ``value``), the one closest to proportional; its value from the
    line through the two plans. ``(dotted knob, value, calls at it)``; None: no knob moves
    the calls."""
    best = None
    for knob in knobs:
        value = setting(current, knob)
        if not isinstance(value, int) or value < 1:
            continue
        doubled = calls_at(knob, 2 * value)
        if doubled is None or doubled <= calls:
            continue
        slope = (doubled - calls) / value
        share = slope * value / calls  # 1: the calls are proportional to the knob
        if best is None or share > best[0]:
            best = (share, knob, value, slope)
    if best is None:
        return None
    _, knob, value, slope = best
    intercept = calls - slope * value
    target = max(1, math.ceil((needed * calls - intercept) / slope))
    return ".".join(knob), target, round(intercept + slope * target)


@dataclass
class Target:
    """What one run needs for a headline's half-width to reach ``target``."""

    methodology: str
    model: str
    headline: str
    target: float
    planned_units: int | None = None
    planned_half_width: float | None = None
    units: int | None = None
    knob: str | None = None
    value: int | None = None
    calls: int | None = None
    cost: float | None = None
    #: the cost at the re-asks the cache's rate expects (None: no rate observed)
    cost_expected: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


def parse_target(text: str) -> tuple[str, float]:
    """``HEADLINE=HALFWIDTH`` (e.g. ``objective.gender.distance=0.05``)."""
    name, _, value = text.partition("=")
    try:
        width = float(value)
    except ValueError:
        width = math.nan
    if not name.strip() or not math.isfinite(width) or width <= 0:
        raise ConfigError(
            f"--target {text!r}: write HEADLINE=HALFWIDTH with a positive half-width, "
            "e.g. objective.gender.distance=0.05 (the headlines: genfair plan --precision)"
        )
    return name.strip(), width


def sizes_of(methodology: str) -> list[dict[str, Any]]:
    """The methodology's size files (``conf/sizes/<methodology>/*.yaml``), read as YAML."""
    import yaml

    return [
        yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for path in sorted((SIZES / methodology).glob("*.yaml"))
    ]


def targets(
    params: StudyParams,
    rows: Sequence[Any],
    headline: str,
    target: float,
    result: Forecast,
    layout: Layout = Layout(),
    plan_calls: Callable[[StudyParams, str, str], Any] | None = None,
) -> list[Target]:
    """For every run whose forecast has ``headline``: the units its half-width needs to reach
    ``target`` (:func:`needed_units`), the size knob and value that give them
    (:func:`size_knob`, each candidate planned by ``plan_calls(params, model, methodology)``,
    the plan's row), and the calls and cost at that value (the run's cost per call to send)."""
    by_run = {(r.model, r.methodology): r for r in rows}
    out = []
    for h in result.half_widths:
        if h.headline != headline:
            continue
        row = Target(h.methodology, h.model, headline, target, h.units, h.half_width)
        out.append(row)
        if h.half_width is None:
            row.note = h.note or "not forecast"
            continue
        method, config = configured(params, h.methodology)
        study = read_study(h.methodology, layout)
        functions = method.comparison.paired_headline_function(
            config, model_info(params, h.model).modality, study
        )
        pilot = read_pilot(layout, h.model, h.methodology)
        assert pilot is not None and functions is not None  # it was forecast
        seed = derive_seed(params.seed, "precision", h.methodology, h.model)
        row.units, row.note = needed_units(
            functions,
            pilot.labels,
            method.comparison.paired_units,
            headline,
            target,
            h.units or 2,
            seed=seed,
        )
        plan_row = by_run.get((h.model, h.methodology))
        if row.units is None or plan_row is None or plan_calls is None or not plan_row.calls:
            continue
        block = params.methodologies[h.methodology]
        calls_at = _replanned(params, h.model, h.methodology, plan_calls)
        knobs = headline_knobs(
            method.size_knobs, headline, knob_candidates(sizes_of(h.methodology))
        )
        bigger = [k for k in knobs if not adds_units(params, h.model, h.methodology, k)]
        knobs = [k for k in knobs if k not in bigger]
        found = size_knob(calls_at, block, knobs, plan_row.calls, row.units / (h.units or 1))
        if found is None:
            row.note = (
                f"its size knobs ({', '.join('.'.join(k) for k in bigger)}) make its units "
                "bigger, not more: a pilot cannot forecast what they give"
                if bigger
                else "no size knob of its size files for this headline changes its calls"
            )
            continue
        row.knob, row.value, row.calls = found
        row.cost, row.cost_expected = target_cost(plan_row, row.calls)
    return out


def adds_units(params: StudyParams, model: str, methodology: str, knob: tuple[str, ...]) -> bool:
    """Whether doubling ``knob`` adds resampling units to the run (:func:`~genfair.study.
    precision.run_units`), rather than answers to each unit (more images per occupation); a
    run whose units its probes do not carry is taken to add them."""
    value = setting(params.methodologies[methodology], knob)
    if not isinstance(value, int) or value < 1:
        return True
    now, doubled = (
        run_units(with_knob(params, methodology, knob, v), methodology, model)
        for v in (value, 2 * value)
    )
    return now is None or doubled is None or doubled > now


def target_cost(plan_row: Any, calls: int) -> tuple[float | None, float | None]:
    """What ``calls`` calls of a run planned as ``plan_row`` cost beyond its cached ones: at
    its cost per call to send (re-asks at their maximum: a bound, as the plan's), and at its
    expected cost per call (:attr:`~genfair.study.plan.PlanRow.cost_expected`; None: no
    re-ask rate observed). ``(None, None)``: no price known."""
    to_send = max(0, calls - plan_row.cached)
    if plan_row.to_send and plan_row.cost is not None:
        expected = plan_row.cost_expected
        return (
            plan_row.cost / plan_row.to_send * to_send,
            None if expected is None else expected / plan_row.to_send * to_send,
        )
    return (0.0, 0.0) if plan_row.simulated else (None, None)


def _cost_cell(found: Target) -> str:
    """A target's cost: as the plan says it, ``≤`` the bound and ``exp.`` the expected cost
    where re-asks make them differ."""
    if found.calls is None:
        return "-"
    if found.cost is None:
        return "?"
    if found.cost_expected == found.cost:
        return f"{found.cost:,.4f}"
    expected = "" if found.cost_expected is None else f" exp. {found.cost_expected:,.4f}"
    return f"≤{found.cost:,.4f}{expected}"


def _replanned(
    params: StudyParams,
    model: str,
    methodology: str,
    plan_calls: Callable[[StudyParams, str, str], Any],
) -> Callable[[tuple[str, ...], int], int | None]:
    """``calls_at(knob, value)``: the plan's calls of the run with its size knob at ``value``
    (None: the run could not be planned so)."""

    def calls_at(knob: tuple[str, ...], value: int) -> int | None:
        again = plan_calls(with_knob(params, methodology, knob, value), model, methodology)
        return again.calls if again.planned else None

    return calls_at


def with_knob(
    params: StudyParams, methodology: str, knob: Sequence[str], value: Any
) -> StudyParams:
    """The study with the methodology's size ``knob`` (a dotted path, split) at ``value``."""
    block = with_setting(params.methodologies[methodology], knob, value)
    return params.model_copy(update={"methodologies": {**params.methodologies, methodology: block}})


def target_table(found: Sequence[Target]) -> str:
    head = (
        "methodology",
        "model",
        "headline",
        "planned n",
        "± plan",
        "n needed",
        "knob",
        "calls",
        "cost",
    )
    body = [
        (
            t.methodology,
            t.model,
            t.headline,
            str(t.planned_units or "-"),
            short(t.planned_half_width),
            str(t.units or "-"),
            f"{t.knob}={t.value}" if t.knob else (t.note or "-"),
            f"{t.calls:,}" if t.calls is not None else "-",
            _cost_cell(t),
        )
        for t in found
    ]
    target = found[0].target if found else math.nan
    return "\n".join(
        [
            *text_columns(head, body),
            "",
            f"to reach a 95% half-width of {target:g}: the units the forecast needs, the size "
            "knob (conf/sizes/<methodology>/) and its value giving them, the calls and cost there",
        ]
    )
