"""Precision forecasts (issue 47): before a study is paid for, how wide each headline's 95%
interval will be at the planned size, and how large a difference between two models its
comparisons can detect.

**The pilot** is a model's labels for a methodology from any earlier run (its cached answers,
labelled: ``data/labels/<methodology>/<model>.parquet``, written by ``dvc repro`` at any scale
or ``genfair try --limit N --out .``); a model without them has "no pilot". Its ``n0`` units are
the methodology's own resampling units
(:meth:`~genfair.methodologies.comparison.Comparison.paired_units`).

**The planned size** is ``n = n0 x planned calls / pilot calls``: the plan's calls for the run
(:mod:`genfair.study.plan`, cached and to send) over the calls the pilot's run made (its
``usage.json``), i.e. the planned study is taken to have proportionally more units, each like
the pilot's. A methodology whose larger sizes make its units bigger rather than more (more
images per occupation) is forecast as if they were more: an approximation.

**Half-width.** Draw ``n`` of the pilot's units with replacement, ``R`` times
(:data:`RESAMPLES`), and score each draw with the methodology's own headline function
(:meth:`~genfair.methodologies.comparison.Comparison.paired_headline_function`; no formula per
methodology here): the replicates stand for the headline's sampling distribution at size
``n``, and ``1.96 x`` their SD is the forecast half-width of a 95% interval at ``n`` (at
``n = n0``, the pilot's own bootstrap interval; for the near-normal headlines that are
forecast, the percentile interval's half-width, steadier from 100 replicates).

**Not forecast.** Upscaling assumes the headline's spread shrinks smoothly with ``n``, which
fails where the pilot's estimate is itself biased at its size (a maximum over groups, an
absolute gap whose true value is near 0: its replicates all lie above it). The rule: from the
pilot's own bootstrap (``n0`` units), ``bias = mean(replicates) - estimate``; where
``|bias| > BIAS_LIMIT x SD(replicates)`` (:data:`BIAS_LIMIT`; unless ``|bias|`` and the SD
are both within ``BIAS_SHARE x |estimate|``, :data:`BIAS_SHARE`: a value known and biased
within a tenth of itself moves a smooth headline's level, and its spread, by about that
share), or the replicates have no spread or
no value, the headline is marked "not forecast" with the reason and no number. With ``R =
100`` the Monte Carlo error of the bias is about ``0.1 SD``, so 0.25 SD is not noise. And
the half-pilot checks, on :data:`SPLITS` random splits of the pilot's units into two
halves, each half drawn up to the pilot's size: no replicates of the pilot's or of any half
may put more than :data:`ATOM_LIMIT` of themselves on one value (a point mass: the spread
is not near normal and does not shrink as 1/sqrt(n); an empty cell or a gap stuck at 0 in
a thin half shows it), and the first split's halves must forecast the pilot's own
half-width within :data:`SCALE_LIMIT` (too few units behind a headline, or a spread that
does not shrink as units grow). Before all of these, the methodology's own limits
(:meth:`~genfair.methodologies.comparison.Comparison.pilot_limits`: what it knows of its
estimators that resampling cannot see, e.g. FACT-OR-FAIR's entropies of cells with too few
answers, whose resamples and halves share one plateau).

**Minimum detectable difference.** For every pair of models the comparisons would compare
(:mod:`genfair.study.compare`'s rules: one modality, simulators only with simulators), both
models' rows of the units both answered are drawn jointly ``n`` units at a time, and
``SD_n`` is the standard deviation of A - B over the replicates. With ``m`` comparisons in
the study (every pair's headlines, as Holm adjusts them together), Holm's first step tests at
``alpha / m``: a two-sided test at that level has 80% power against a true difference of
``MDD = (z_{1 - alpha/(2m)} + z_{0.8}) x SD_n``. Holm's later steps test at larger levels, so
this is the difference detectable whatever the comparison's place in Holm's order (an upper
bound for the others).

``genfair plan --precision`` prints the forecast (:func:`table`, ``--json``: :func:`to_json`);
``genfair plan --target HEADLINE=HALFWIDTH`` the size that reaches a half-width
(:mod:`genfair.study.targets`). docs/methodology.md, "Planning for precision".
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from genfair.errors import EXPECTED
from genfair.io import read_json, read_parquet, write_json
from genfair.methodologies.base import Methodology
from genfair.methodologies.comparison import HeadlineCounts, PairedCounts
from genfair.methodologies.intervals import unit_counts
from genfair.models.base import derive_seed
from genfair.models.cache import ResponseCache
from genfair.names import pair_key
from genfair.study import runs
from genfair.study.compare import CONFIDENCE, DRAWN, Unit, paired_rows
from genfair.study.context import configured, model_info, models_for
from genfair.study.layout import Layout
from genfair.study.plan import plan
from genfair.study.steps import read_study
from genfair.study_params import StudyParams

log = logging.getLogger(__name__)

#: replicates per forecast (the half-width's Monte Carlo error: about 7% of it)
RESAMPLES = 100
#: a headline whose pilot bootstrap bias passes this many SDs is not forecast (unless both
#: bias and SD are within :data:`BIAS_SHARE` of its value)
BIAS_LIMIT = 0.25
#: a headline whose value the pilot knows within this share of itself (its SD) and biases by
#: less moves its level, and so a smooth headline's spread, too little to miss the forecasts'
#: tolerance, even where the bias passes :data:`BIAS_LIMIT` SDs
BIAS_SHARE = 0.1
#: a headline whose forecast from half the pilot misses the pilot's own half-width by more
#: than this share is not forecast
SCALE_LIMIT = 0.25
#: random splits of the pilot's units into two halves for the half-pilot checks
SPLITS = 3
#: a headline whose pilot's or half-pilot's replicates put more than this share of
#: themselves on one value is not forecast
ATOM_LIMIT = 0.25
#: the power a minimum detectable difference is detected with
POWER = 0.8
NO_PILOT = "no pilot"


@dataclass
class HalfWidth:
    """One headline of one model's run: the pilot's number and interval half-width, and the
    forecast half-width at the planned number of units (None: ``note`` says why)."""

    methodology: str
    model: str
    simulated: bool
    headline: str
    pilot_units: int = 0
    units: int | None = None
    value: float | None = None
    pilot_half_width: float | None = None
    half_width: float | None = None
    note: str = ""


@dataclass
class Detectable:
    """One comparison the study would make: the forecast minimum detectable difference."""

    methodology: str
    headline: str
    model_a: str
    model_b: str
    simulated: bool
    pilot_units: int = 0
    units: int | None = None
    sd: float | None = None
    mdd: float | None = None
    note: str = ""


@dataclass
class Forecast:
    half_widths: list[HalfWidth]
    detectable: list[Detectable]
    #: the comparisons Holm adjusts over (``m``) and the level of its first step
    comparisons: int
    level: float

    def to_json(self) -> dict[str, Any]:
        return {
            "confidence": CONFIDENCE,
            "power": POWER,
            "comparisons": self.comparisons,
            "holm_level": self.level,
            "half_widths": [json_safe(asdict(h)) for h in self.half_widths],
            "detectable": [json_safe(asdict(d)) for d in self.detectable],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Forecast:
        """The forecast :meth:`to_json` wrote (``data/precision.json``)."""
        return cls(
            [HalfWidth(**h) for h in data["half_widths"]],
            [Detectable(**d) for d in data["detectable"]],
            int(data["comparisons"]),
            float(data["holm_level"]),
        )


def json_safe(row: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


# ---- the engine: replicates of a headline function at n units drawn from a pilot's


Scorer = Callable[[np.ndarray], np.ndarray]


def scorer(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    labels: pd.DataFrame,
    rows: list,
    names: Sequence[str],
) -> Scorer:
    """``score(draws)``: from a (replicates x n) array of unit positions (into ``rows``, each
    unit's row positions in ``labels``), a (replicates x names) array of the headlines. A
    :class:`HeadlineCounts` is scored from each unit's counts weighted by how often a draw
    took it (as :mod:`genfair.study.compare` does); any other function on the drawn rows,
    a unit drawn k times present k times with its index (its copies told apart by it)."""
    if isinstance(headlines, HeadlineCounts):
        counts = unit_counts(headlines, labels, rows).T.tocsr()
        m = len(rows)

        def counted(draws: np.ndarray) -> np.ndarray:
            offsets = (np.arange(len(draws)) * m)[:, None]
            weights = np.bincount((draws + offsets).ravel(), minlength=len(draws) * m)
            weights = weights.reshape(len(draws), m).T.astype(float)
            scored = headlines.score(np.asarray(counts @ weights).T)
            return np.column_stack([np.asarray(scored[n], dtype=float) for n in names])

        return counted

    def recomputed(draws: np.ndarray) -> np.ndarray:
        out = np.full((len(draws), len(names)), np.nan)
        for i, draw in enumerate(draws):
            found = headlines(labels.iloc[np.concatenate([rows[p] for p in draw])])
            out[i] = [found.get(n, np.nan) for n in names]
        return out

    return recomputed


def replicates(
    score: Scorer, units: int, n: int, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """(resamples x headlines): ``score`` of ``resamples`` draws of ``n`` of ``units`` units
    with replacement, drawn at most :data:`~genfair.study.compare.DRAWN` positions at once."""
    batch = max(1, DRAWN // max(n, 1))
    parts = []
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        parts.append(score(rng.integers(0, units, size=(size, n))))
    return np.vstack(parts)


def half_width(values: np.ndarray) -> np.ndarray:
    """Each column's ``z_{(1 + CONFIDENCE)/2} x SD`` of its finite replicates: a
    :data:`CONFIDENCE` interval's half-width for a headline whose replicates are near normal
    (the only ones forecast), steadier from :data:`RESAMPLES` replicates than their
    percentiles."""
    from scipy.stats import norm

    z = norm.ppf((1 + CONFIDENCE) / 2)
    out = []
    for column in np.atleast_2d(values.T):
        finite = column[np.isfinite(column)]
        out.append(z * finite.std(ddof=1) if finite.size > 1 else np.nan)
    return np.array(out)


def atom(column: np.ndarray) -> float:
    """The share of a column's finite replicates on its most common value (to 12 decimals;
    1.0 with fewer than two)."""
    finite = column[np.isfinite(column)]
    if finite.size < 2:
        return 1.0
    return float(np.unique(np.round(finite, 12), return_counts=True)[1].max() / finite.size)


def unforecastable(
    observed: float, pilot: np.ndarray, halves: Sequence[float], halved: Sequence[np.ndarray]
) -> str:
    """Why a headline is not forecast (``""``: it is), from the pilot's own replicates, its
    values on the halves of :data:`SPLITS` random splits of the pilot's units (``halves``,
    each split's two in turn) and those halves' replicates drawn up to the pilot's size
    (``halved``): no value, no spread, replicates with more than :data:`ATOM_LIMIT` on one
    value, a bias over :data:`BIAS_LIMIT` of its SD (unless bias and SD are both within
    :data:`BIAS_SHARE` of the value; the bootstrap's, or the half-sampling one: the halves'
    mean less the pilot's), or a half of the first split whose forecast half-width misses the
    pilot's own by more than :data:`SCALE_LIMIT`."""
    finite = pilot[np.isfinite(pilot)]
    if not math.isfinite(observed) or finite.size < 2:
        return "not forecast: no value in the pilot"
    sd = float(finite.std(ddof=1))
    if sd == 0:
        return "not forecast: no spread in the pilot"
    biases = (float(finite.mean()) - observed, float(np.mean(halves)) - observed)
    if not all(math.isfinite(b) for b in biases):
        return "not forecast: a half of the pilot has no value (too few units)"
    share, where = atom(pilot), "the pilot's"
    if share <= ATOM_LIMIT:
        share, where = max(atom(h) for h in halved), "a half's"
    if share > ATOM_LIMIT:
        return (
            f"not forecast: {share:.0%} of {where} replicates on one value (too few units: "
            "not near normal, its spread will not shrink as 1/sqrt(n))"
        )
    bias = max(biases, key=abs)
    if not (abs(bias) <= BIAS_LIMIT * sd or max(abs(bias), sd) <= BIAS_SHARE * abs(observed)):
        return (
            f"not forecast: biased at the pilot's size ({bias / sd:+.2f} SD; "
            "a maximum, an absolute gap, a divergence of sparse counts)"
        )
    own, *forecasts = half_width(np.column_stack([pilot, *halved[:2]]))
    worst = max(forecasts, key=lambda f: abs(f / own - 1)) if own > 0 else math.nan
    if not abs(worst / own - 1) <= SCALE_LIMIT:
        return (
            f"not forecast: half the pilot forecasts its half-width {worst / own - 1:+.0%} "
            "off (too few units, or it does not shrink as its units grow)"
        )
    return ""


def _spread(
    score: Scorer,
    m: int,
    n: int,
    observed: Sequence[float],
    resamples: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Replicates of ``m`` pilot units at their own size and at ``n``, and each column's
    :func:`unforecastable` note (its half-pilot checks: :data:`SPLITS` random splits into
    two complementary halves, each scored as it is and drawn up to ``m``)."""
    pilot = replicates(score, m, m, resamples, rng)
    halves = []
    for _ in range(SPLITS):
        order = rng.permutation(m)
        halves += [order[: m // 2], order[m // 2 :]]
    values = np.vstack([score(h[None, :]) for h in halves])
    halved = [replicates(lambda d, h=h: score(h[d]), len(h), m, resamples, rng) for h in halves]
    planned = replicates(score, m, n, resamples, rng)  # last: the checks do not depend on n
    notes = [
        unforecastable(float(observed[i]), pilot[:, i], values[:, i], [h[:, i] for h in halved])
        for i in range(pilot.shape[1])
    ]
    return pilot, planned, notes


def _limited(
    names: Sequence[str], notes: Sequence[str], limits: Mapping[str, str] | None
) -> list[str]:
    """Each headline's note: the methodology's own limit where it has one, else the checks'."""
    return [(limits or {}).get(name) or note for name, note in zip(names, notes, strict=True)]


def forecast_model(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    labels: pd.DataFrame,
    unit: Unit,
    units: int | None,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    limits: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, dict[str, Any]]]:
    """The pilot's unit count and, per headline: ``value``, ``pilot_half_width`` (its own
    bootstrap), ``half_width`` at ``units`` units (None: not forecast) and ``note`` (the
    methodology's own ``limits`` first: :meth:`~genfair.methodologies.comparison.Comparison.
    pilot_limits`)."""
    labels = labels.reset_index(drop=True)
    if isinstance(headlines, PairedCounts):
        headlines = headlines.counts(labels)
    pair = paired_rows(labels, labels, unit)
    if pair is None:
        return 0, {}
    rows = pair[0]
    observed = headlines(labels.iloc[np.concatenate(rows)])
    names = sorted(observed)
    if not names:
        return len(rows), {}
    score = scorer(headlines, labels, rows, names)
    values = [observed[n] for n in names]
    rng = np.random.default_rng(seed)
    pilot, planned, notes = _spread(score, len(rows), units or len(rows), values, resamples, rng)
    notes = _limited(names, notes, limits)
    pilot_hw, planned_hw = half_width(pilot), half_width(planned)
    out = {}
    for i, (name, note) in enumerate(zip(names, notes, strict=True)):
        out[name] = {
            "value": float(observed[name]),
            "pilot_half_width": float(pilot_hw[i]),
            "half_width": None if note else float(planned_hw[i]),
            "note": note,
        }
    return len(rows), out


def forecast_pair(
    headlines: Callable[[pd.DataFrame], dict[str, float]],
    a: pd.DataFrame,
    b: pd.DataFrame,
    unit: Unit,
    units: int | None,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    limits: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, dict[str, Any]]]:
    """The units both pilots answered and, per headline both have a number for, ``sd``: the
    SD of A - B at ``units`` paired units (None: not forecast), and ``note`` (``limits``
    first: either pilot's, as :func:`forecast_model`)."""
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    if isinstance(headlines, PairedCounts):
        headlines = headlines.counts(a, b)
    pair = paired_rows(a, b, unit)
    if pair is None:
        return 0, {}
    ha, hb = (headlines(x.iloc[np.concatenate(r)]) for x, r in zip((a, b), pair, strict=True))
    names = sorted(n for n in set(ha) & set(hb) if np.isfinite(ha[n]) and np.isfinite(hb[n]))
    if not names:
        return len(pair[0]), {}
    sa, sb = (scorer(headlines, x, r, names) for x, r in zip((a, b), pair, strict=True))

    def difference(draws: np.ndarray) -> np.ndarray:
        return sa(draws) - sb(draws)

    m = len(pair[0])
    values = [ha[n] - hb[n] for n in names]
    rng = np.random.default_rng(seed)
    _, planned, notes = _spread(difference, m, units or m, values, resamples, rng)
    notes = _limited(names, notes, limits)
    out = {}
    for i, (name, note) in enumerate(zip(names, notes, strict=True)):
        finite = planned[:, i][np.isfinite(planned[:, i])]
        sd = float(finite.std(ddof=1)) if finite.size > 1 else math.nan
        out[name] = {"sd": None if note else sd, "note": note}
    return m, out


def detectable(sd: float, comparisons: int) -> float:
    """``(z_{1 - alpha/(2m)} + z_{POWER}) x sd``: the difference a two-sided test at Holm's
    first level ``alpha / m`` finds with :data:`POWER` (``alpha = 1 - CONFIDENCE``)."""
    from scipy.stats import norm

    alpha = (1 - CONFIDENCE) / max(comparisons, 1)
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(POWER)) * sd)


# ---- the study: every run's pilot, at the plan's sizes


@dataclass
class Pilot:
    labels: pd.DataFrame
    #: the calls of the run that made it (None: its usage.json is missing)
    calls: int | None


def read_pilot(layout: Layout, model: str, methodology: str) -> Pilot | None:
    """The model's labels for the methodology from its last run (None: no pilot)."""
    path = layout.labels(model, methodology)
    if not path.exists():
        return None
    usage = layout.usage(model, methodology)
    calls = read_json(usage).get("calls") if usage.exists() else None
    return Pilot(read_parquet(path), int(calls) if calls else None)


def _scaled(units: int, pilot: Pilot, planned_calls: int | None) -> int:
    """The planned units: the pilot's times planned calls over the pilot's calls."""
    if not planned_calls or not pilot.calls:
        return units
    return max(2, round(units * planned_calls / pilot.calls))


#: planned units this share below what the calls scale to: the units grow bigger, not more
BIGGER = 0.9
BIGGER_NOTE = (
    "not forecast: its planned sizes make its units bigger (more answers each), not more: "
    "a pilot's resamples cannot add answers to a unit"
)


def _capped(scaled: int, units: int | None) -> tuple[int, bool]:
    """The planned units (the pilot's scaled by the calls) capped at the run's own units
    (:func:`run_units`) where those are fewer; ``True``: capped, a run whose larger sizes ask
    more of each unit (more images per occupation), which resampling the pilot's units cannot
    forecast: as if they were more, IRIS's RFS-Gen score forecast 0.36 of the observed
    half-width in a planted world, and at their number, its IFS-Gen score 0.24-0.55 (its level,
    and spread, grow with the answers a unit; docs/methodology.md)."""
    if units is None or units >= BIGGER * scaled:
        return scaled, False
    return max(2, units), True


def planned_units(params: StudyParams, rows: Sequence[Any]) -> dict[tuple[str, str], int | None]:
    """``(model, methodology) -> ``:func:`run_units` of the plan's rows that could be planned
    (once per methodology and modality: a run's probes are its methodology's for that
    modality)."""
    out: dict[tuple[str, str], int | None] = {}
    seen: dict[tuple[str, str], int | None] = {}
    for r in rows:
        if not r.planned:
            continue
        kind = (r.methodology, model_info(params, r.model).modality)
        if kind not in seen:
            seen[kind] = run_units(params, r.methodology, r.model)
        out[(r.model, r.methodology)] = seen[kind]
    return out


def run_units(params: StudyParams, methodology: str, model: str) -> int | None:
    """The distinct resampling units (:meth:`~genfair.methodologies.comparison.Comparison.
    paired_units`) of the run's probes at ``params``' sizes: what a run there resamples.
    None where the probes do not carry the unit (it is a column of the labels, e.g. news
    bias's article pair) or cannot be built here."""
    method, config = configured(params, methodology)
    if method.comparison.paired_unit is None:
        return None
    modality = model_info(params, model).modality
    with _held():
        try:
            probes = method.probes_for(method.build_probes(config, params.seed), modality)
            found = method.comparison.paired_units(probes).dropna().nunique()
        except (KeyError, *EXPECTED):
            return None
    return int(found) or None


def forecast(
    params: StudyParams,
    planned_calls: Mapping[tuple[str, str], int],
    layout: Layout = Layout(),
    *,
    resamples: int = RESAMPLES,
    methodologies: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    ratios: Mapping[tuple[str, str], float] | None = None,
    units: Mapping[tuple[str, str], int | None] | None = None,
) -> Forecast:
    """The study's forecast: every selected run's headlines at its planned size
    (``planned_calls[(model, methodology)]``: the plan's calls; missing: the pilot's own
    size; ``ratios``: instead, the planned size as a multiple of the pilot's), and every
    comparison's minimum detectable difference. ``units``: the planned run's resampling
    units (:func:`run_units`, None: unknown); where they grow less than its calls (bigger
    units, not more), its headlines are not forecast (:data:`BIGGER_NOTE`)."""
    if ratios is not None:
        planned_calls = {
            run: round(ratio * pilot.calls)
            for run, ratio in ratios.items()
            if (pilot := read_pilot(layout, *run)) is not None and pilot.calls
        }
    widths: list[HalfWidth] = []
    pairs: list[tuple[Detectable, float | None]] = []
    for name in methodologies or params.methodologies:
        method, config = configured(params, name)
        study = functools.cache(functools.partial(read_study, name, layout))
        infos = [
            model_info(params, m) for m in models_for(params, name) if models is None or m in models
        ]
        pilots = {i.name: read_pilot(layout, i.name, name) for i in infos}
        limits: dict[str, dict[str, str]] = {}  # each pilot's own, once (its pairs reuse them)

        for info in infos:
            pilot = pilots[info.name]
            headlines = (
                method.comparison.paired_headline_function(config, info.modality, study())
                if method.comparison.paired_unit is not None
                else None
            )
            if pilot is None or headlines is None:
                note = NO_PILOT if pilot is None else "not forecast: no resampling unit"
                widths.append(HalfWidth(name, info.name, info.simulated, "-", note=note))
                continue
            n0 = paired_rows(pilot.labels, pilot.labels, method.comparison.paired_units)
            count = len(n0[0]) if n0 else 0
            planned = _scaled(count, pilot, planned_calls.get((info.name, name)))
            planned, bigger = _capped(planned, (units or {}).get((info.name, name)))
            seed = derive_seed(params.seed, "precision", name, info.name)
            try:
                n0, found = forecast_model(
                    headlines, pilot.labels, method.comparison.paired_units, planned,
                    resamples=resamples, seed=seed,
                    limits=_limits(method, config, info, pilot, limits),
                )  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - a forecast is advice: it never stops a stage
                note = _failed(name, info.name, exc)
                widths.append(HalfWidth(name, info.name, info.simulated, "-", count, note=note))
                continue
            if bigger:  # the rows it would forecast; the others keep their own reason
                found = {
                    h: {**v, "half_width": None, "note": BIGGER_NOTE}
                    if v["half_width"] is not None
                    else v
                    for h, v in found.items()
                }
            widths.extend(
                HalfWidth(name, info.name, info.simulated, headline, n0, planned, **values)
                for headline, values in found.items()
            )
            if not found:
                note = "not forecast: fewer than two units, or no headline, in the pilot"
                widths.append(HalfWidth(name, info.name, info.simulated, "-", n0, note=note))
        for a, b in itertools.combinations(infos, 2):
            if (a.modality, a.simulated) != (b.modality, b.simulated):
                continue  # the comparisons' rule (genfair.study.compare)
            pa, pb = pilots[a.name], pilots[b.name]
            headlines = (
                method.comparison.paired_headline_function(config, a.modality, study())
                if method.comparison.paired_unit is not None
                else None
            )
            if headlines is None or pa is None or pb is None:
                continue
            seed = derive_seed(params.seed, "precision", name, a.name, b.name)
            common = paired_rows(pa.labels, pb.labels, method.comparison.paired_units)
            m = len(common[0]) if common else 0
            capped = [
                _capped(_scaled(m, p, planned_calls.get(run)), (units or {}).get(run))
                for p, run in ((pa, (a.name, name)), (pb, (b.name, name)))
            ]
            planned, bigger = min(n for n, _ in capped), any(big for _, big in capped)
            try:
                m, found = forecast_pair(
                    headlines, pa.labels, pb.labels, method.comparison.paired_units, planned,
                    resamples=resamples, seed=seed, limits={
                        **_limits(method, config, b, pb, limits),
                        **_limits(method, config, a, pa, limits),
                    },
                )  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - a forecast is advice: it never stops a stage
                _failed(name, f"{a.name} vs {b.name}", exc)
                continue
            for headline, values in found.items():
                row = Detectable(name, headline, a.name, b.name, a.simulated, m, planned)
                row.sd, row.note = values["sd"], values["note"]
                if bigger and row.sd is not None:
                    row.sd, row.note = None, BIGGER_NOTE
                pairs.append((row, row.sd))
    comparisons = len(pairs)
    for row, sd in pairs:
        row.mdd = None if sd is None else detectable(sd, comparisons)
    level = (1 - CONFIDENCE) / max(comparisons, 1)
    return Forecast(widths, [row for row, _ in pairs], comparisons, level)


def _limits(
    method: Methodology, config: Any, info: Any, pilot: Pilot, seen: dict[str, dict[str, str]]
) -> dict[str, str]:
    """The methodology's own limits of a model's pilot
    (:meth:`~genfair.methodologies.comparison.Comparison.pilot_limits`), computed once per
    model in ``seen`` (its comparisons reuse them)."""
    if info.name not in seen:
        seen[info.name] = method.comparison.pilot_limits(config, info.modality, pilot.labels)
    return seen[info.name]


def _failed(methodology: str, model: str, exc: Exception) -> str:
    """The note of a forecast whose headline function raised on a pilot resample (e.g. a draw
    of only invalid answers), logged once; the message names the exception's type only (its
    text may quote a model's answer)."""
    note = f"not forecast: the headline function raised {type(exc).__name__} on a pilot resample"
    log.warning("%s · %s: %s", methodology, model, note)
    return note


# ---- the table


def short(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3g}"


def table(result: Forecast) -> str:
    """The forecast as text: half-widths per run and headline, then detectable differences."""
    head = ("methodology", "model", "headline", "pilot n", "value", "± now", "planned n", "± plan")
    body = [
        (
            h.methodology,
            h.model + (" [SIMULATED]" if h.simulated else ""),
            h.headline,
            str(h.pilot_units or "-"),
            short(h.value),
            short(h.pilot_half_width),
            str(h.units or "-"),
            short(h.half_width) if h.half_width is not None else (h.note or "-"),
        )
        for h in result.half_widths
    ]
    lines = text_columns(head, body)
    if result.detectable:
        head2 = ("methodology", "headline", "A vs B", "pairs n", "planned n", "MDD (80%)")
        body2 = [
            (
                d.methodology,
                d.headline,
                f"{d.model_a} vs {d.model_b}" + (" [SIMULATED]" if d.simulated else ""),
                str(d.pilot_units),
                str(d.units or "-"),
                short(d.mdd) if d.mdd is not None else (d.note or "-"),
            )
            for d in result.detectable
        ]
        lines += ["", *text_columns(head2, body2)]
    return "\n".join(
        [
            *lines,
            "",
            f"± now: the pilot's 95% half-width at its n units; ± plan: forecast at the planned n "
            f"(the pilot's units resampled, {RESAMPLES} replicates)",
            f"MDD: the difference found with {POWER:.0%} power at Holm's first level "
            f"{result.level:.3g} over the study's {result.comparisons} comparisons",
            "no pilot: no labels of the model for the methodology yet (run it at any size, "
            "e.g. `dvc repro` at scale=smoke); not forecast: see docs/methodology.md",
        ]
    )


def text_columns(head: tuple[str, ...], body: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (head, *body)
    ]


# ---- at the paper's size (the precision stage; the report and MLflow read it)


def paper_ratio(params: StudyParams, methodology: str, model: str) -> float | None:
    """How many times the study's calls of ``model``'s ``methodology`` run its paper sizes
    make: the plan's calls (:func:`genfair.study.plan.plan`, what ``genfair plan -o
    scale=paper`` counts) with ``conf/sizes/<methodology>/paper.yaml`` merged over the study's
    block, over its calls at the study's sizes (:func:`first_asks`). None: no paper sizes, or
    a size cannot be planned here."""
    paper = at_paper(params, methodology)
    if paper is None:
        return None
    counts: list[int | None] = []
    with tempfile.TemporaryDirectory(prefix="genfair-paper-") as scratch, _held() as held:
        empty = Path(scratch) / "responses.sqlite"
        for changed in (params, paper):
            counts.append(first_asks(changed, methodology, model, lambda: ResponseCache(empty)))
            if counts[-1] is None:
                break
    if None in counts:
        why = [r.getMessage() for r in held if r.levelno >= logging.ERROR]  # the plan's reason
        log.warning(
            "%s · %s: its paper sizes cannot be planned here%s: its precision is forecast at "
            "the run's own size",
            model,
            methodology,
            f" ({why[-1]})" if why else "",
        )
        return None
    current, paper_calls = counts
    return paper_calls / current if current else None


def at_paper(params: StudyParams, methodology: str) -> StudyParams | None:
    """The study with ``conf/sizes/<methodology>/paper.yaml`` merged over the methodology's
    block (None: it has no paper sizes)."""
    path = runs.SIZES / methodology / "paper.yaml"
    if not path.is_file():
        return None
    block = params.methodologies[methodology]
    paper = _merged(block, yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    return params.model_copy(update={"methodologies": {**params.methodologies, methodology: paper}})


@contextmanager
def _held(name: str = "genfair") -> Iterator[list[logging.LogRecord]]:
    """The warnings and errors genfair's code logs in the block, held instead of printed. The
    paper ratio's plan is a sizing exercise against an empty scratch cache: what it would
    log about the run (a methodology's "no labelled image" from that empty cache, a warning
    about its inputs at the paper's scale, the plan's "not planned") is not about the user's
    run, so it is kept from the log; :func:`paper_ratio` says in its own words when the plan
    fails."""
    held: list[logging.LogRecord] = []

    class Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    logger = logging.getLogger(name)
    handler, propagate, level = Hold(logging.WARNING), logger.propagate, logger.level
    logger.addHandler(handler)
    # stop the records here, and below WARNING (progress, planned calls) log none at all
    logger.propagate = False
    logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))
    try:
        yield held
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(level)  # setLevel, not an assignment: it clears the loggers' caches


def first_asks(
    params: StudyParams, methodology: str, model: str, open_cache: Callable[[], Any]
) -> int | None:
    """The run's calls as a fresh clone's plan counts them: against an empty response cache
    (``open_cache``; so they follow from the configuration, not from what a cache holds; a
    run whose later calls depend on answers, its first step), without the re-asks planned
    at their maximum (the units are first asks) and without counting tokens. A methodology
    on the default ``generate`` sends its :meth:`~genfair.methodologies.base.Methodology.calls`
    and nothing else then: counted without walking them (the same number, faster). None:
    the run cannot be planned here."""
    method, config = configured(params, methodology)
    if type(method).generate is Methodology.generate:
        modality = model_info(params, model).modality
        try:
            probes = method.probes_for(method.build_probes(config, params.seed), modality)
            return len(method.calls(probes, config, modality))
        except EXPECTED as exc:
            log.error("%s · %s: not planned: %s", model, methodology, str(exc).splitlines()[0])
            return None
    (row,) = plan(params, [model], [methodology], open_cache=open_cache, tokens=False)
    return row.calls - row.reasks_max if row.planned else None


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        mine = out.get(key)
        both = isinstance(value, Mapping) and isinstance(mine, Mapping)
        out[key] = _merged(mine, value) if both else value
    return out


def at_paper_size(params: StudyParams, layout: Layout = Layout()) -> Forecast:
    """Every run's headlines at its paper size (:func:`paper_ratio`, for runs with a pilot;
    none: its own size). The ratio is planned once per methodology and modality (for its
    first model with a pilot): without re-asks, a run's calls are its methodology's for
    that modality, whichever model answers them."""
    ratios: dict[tuple[str, str], float] = {}
    units: dict[tuple[str, str], int | None] = {}
    planned: dict[tuple[str, str], tuple[float | None, int | None]] = {}
    for name in params.methodologies:
        for model in models_for(params, name):
            if not layout.labels(model, name).exists():
                continue
            kind = (name, model_info(params, model).modality)
            if kind not in planned:
                paper = at_paper(params, name)
                planned[kind] = (
                    paper_ratio(params, name, model),
                    None if paper is None else run_units(paper, name, model),
                )
            ratio, units[(model, name)] = planned[kind]
            if ratio is not None:
                ratios[(model, name)] = ratio
    return forecast(params, {}, layout, ratios=ratios, units=units)


def write_at_paper_size(params: StudyParams, layout: Layout = Layout()) -> Path:
    """The ``precision`` stage: :func:`at_paper_size`, computed once per ``dvc repro`` for the
    report and MLflow, as ``data/precision.json`` (:meth:`Forecast.to_json`, floats rounded by
    :func:`genfair.io.write_json`: the same bytes on any CPU)."""
    result = at_paper_size(params, layout)
    forecast_rows = [h for h in result.half_widths if h.half_width is not None]
    log.info(
        "%d of %d headlines forecast at the paper sizes, %d comparisons",
        len(forecast_rows),
        len(result.half_widths),
        result.comparisons,
    )
    return write_json(result.to_json(), layout.precision)


def read_forecast(path: Path) -> Forecast | None:
    """The forecast the ``precision`` stage wrote (None: no such file, e.g. outside a
    ``dvc repro``)."""
    return Forecast.from_json(read_json(path)) if path.is_file() else None


def half_width_metrics(result: Forecast) -> dict[str, float]:
    """MLflow metrics of a forecast: ``precision.<methodology>.<model>.<headline>.half_width``
    (the pilot's own) and ``.half_width_forecast`` (at the forecast's size), and each
    comparison's ``precision.<methodology>.<A>_vs_<B>.<headline>.mdd``."""

    out = {}
    for h in result.half_widths:
        key = f"precision.{h.methodology}.{h.model}.{h.headline}"
        for name, value in (
            ("half_width", h.pilot_half_width),
            ("half_width_forecast", h.half_width),
        ):
            if value is not None and math.isfinite(value):
                out[f"{key}.{name}"] = value
    for d in result.detectable:
        if d.mdd is not None and math.isfinite(d.mdd):
            key = f"precision.{d.methodology}.{pair_key(d.model_a, d.model_b)}.{d.headline}"
            out[f"{key}.mdd"] = d.mdd
    return out


# ---- the plan's sizes


def planned(rows: Sequence[Any]) -> dict[tuple[str, str], int]:
    """``(model, methodology) -> calls`` of the plan's rows that could be planned: their first
    asks and the re-asks the cache's observed rate expects (not the re-asks' maximum, which
    bounds the bill: a re-ask replaces an answer, it adds no unit)."""
    sizes = {
        (r.model, r.methodology): r.calls - r.reasks_max + (r.reasks_expected or 0)
        for r in rows
        if r.planned and r.calls
    }
    return {key: calls for key, calls in sizes.items() if calls > 0}
