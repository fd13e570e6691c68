"""``genfair plan``: what the study would send, and what that would cost, before any call.

Each selected run (model x methodology of ``runs``) builds its probes in memory as its
``probes`` stage would and runs the methodology's own ``generate`` through the study's
response cache, with two stand-ins: a read-only view of the cache (lookups are the real
ones, with the runner's own key computation, so "already cached" is exact; no claim is
taken and nothing is stored) and an executor that sends nothing. Each call the runner would
send is counted (its prompt tokens with the model's own tokenizer where one can be had:
a local model's, or an endpoint model's ``tokenizer``, :mod:`genfair.models.endpoint_tokens`;
else :func:`~genfair.models.base.estimated_tokens`, marked ``~`` in the table; its token
limit, an image for a text-to-image model) and answered ``refused``, never cached: the one
answer the runner asks every call again after, by its own rule (while the call's and the
model's ``max_attempts`` allow, unless the model repeats itself: ``deterministic``), so the
re-asks it could make are planned at their maximum, within the calls to send, the cost and
the time (issue 45.1). Where the cache holds answers of the run, the re-asks they needed per
first ask give an expected count beside the maximum. A methodology
whose later calls depend on earlier answers (proposals, then images, then questions about
them; it says so: :attr:`~genfair.methodologies.base.Methodology.dependent_calls`) plans its
first uncached step only: its row is a lower bound and says so.

Completion tokens are the calls' ``max_tokens`` (an upper bound) and, where the cache holds
answers of that model, their observed mean length (``usage`` where the endpoint reported
it, else counted like prompts) times the calls to send. Cost comes from each model's
``price`` (outside every hash and cache key); time from the model's observed seconds per
call (``latency_s`` of its cached answers; divided by a configured ``concurrency``).
A text-to-image run also gets the bytes its new images will take and the instrument
CPU its methodology spends measuring them (:mod:`genfair.study.sizing`).

``generation.max_calls`` / ``max_cost`` / ``max_disk_gb`` make every ``generate`` stage
check the whole study's plan first (:func:`check_budget`), so a ``dvc repro`` that would
exceed them, or whose cost the plan cannot bound, stops before its first call. The stage then
holds its own sends to the limits less what the plan's other runs send
(:class:`~genfair.models.usage.Budget`): a run planned only as a lower bound stops at the
budget instead of passing it.
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from genfair.errors import EXPECTED
from genfair.instruments.readings import InstrumentSpec, code_identity, reading_key
from genfair.methodologies.base import Methodology
from genfair.models.base import ESTIMATE_RULE, Completion, LLMBackend, Request
from genfair.models.cache import ResponseCache
from genfair.models.executor import FollowUps, OnResult, executing
from genfair.models.images import ImageStore
from genfair.models.usage import Budget, completion_tokens, cost, prompt_tokens
from genfair.study.answers import answer, cache_opener
from genfair.study.context import configured, instrument_for
from genfair.study.fill import select_runs
from genfair.study.layout import Layout
from genfair.study.sizing import (
    OBSERVED_IMAGES,
    bytes_per_image,
    instrument_seconds,
    stored_bytes,
)
from genfair.study_params import ConfigError, StudyParams, instrument_class

log = logging.getLogger(__name__)

#: the error a planned call is answered with (never cached: nothing was sent)
PLANNED = "planned, not sent (genfair plan)"
#: how a row that is only a lower bound begins its note
LOWER_BOUND = "lower bound"
#: how many of a model's latest cached answers give its observed length and speed
OBSERVED_ANSWERS = 1000
#: ``generation.max_disk_gb`` and the plan's table count decimal gigabytes
GB = 1e9


@dataclass
class Observed:
    """A model's cached answers: mean completion tokens and seconds per call (None: none)."""

    answers: int = 0
    completion_tokens: float | None = None
    seconds: float | None = None
    rule: str = ""
    #: the stored bytes of its latest cached images (text-to-image models)
    image_sizes: list[int] = field(default_factory=list)


@dataclass
class Part:
    """The calls one run would send to one model (a run may drive several)."""

    backend: LLMBackend
    to_send: int = 0
    #: of ``to_send``: re-asks of planned answers, at their maximum
    reasks: int = 0
    #: of ``to_send``: first asks (attempt 0), whose re-asks the cache's rate predicts
    first: int = 0
    images: int = 0
    prompt_tokens: int = 0
    completion_max: int = 0
    #: of ``prompt_tokens`` and ``completion_max``: the re-asks'
    reask_prompt_tokens: int = 0
    reask_completion_max: int = 0
    rules: set[str] = field(default_factory=set)

    @property
    def config(self) -> Any:
        return self.backend.model_config


@dataclass
class PlanRow:
    """One run's plan (``genfair plan``'s table and ``--json``)."""

    model: str
    methodology: str
    simulated: bool
    calls: int = 0
    cached: int = 0
    to_send: int = 0
    #: of ``to_send``: re-asks at their maximum (max_attempts - 1 per call not answered ok)
    reasks_max: int = 0
    #: the re-asks expected at the rate the run's cached answers needed them (None: no
    #: cached answer of the run to observe; 0 where none can be made)
    reasks_expected: int | None = None
    reask_rule: str = ""
    images: int = 0
    prompt_tokens: int = 0
    completion_tokens_max: int = 0
    #: the observed mean answer length times the calls to send (None: no answer observed)
    completion_tokens_expected: int | None = None
    token_rule: str = ""
    #: from the models' ``price`` (None: a model with calls to send has none), re-asks at
    #: their maximum
    cost: float | None = None
    #: the same with the re-asks at their expected count (None: not priced, or no rate
    #: observed)
    cost_expected: float | None = None
    #: observed seconds per call times the calls to send (None: a model never observed)
    seconds: float | None = None
    #: the images still to draw times bytes per image (each image stored once)
    image_bytes: int | None = None
    image_bytes_rule: str = ""
    #: images its methodology's instruments measure: every image of the run, cached or not
    instrument_images: int = 0
    #: of those, images whose readings the readings cache already holds (they cost nothing;
    #: the fewest of its model-mode instruments); None: every instrument is in oracle mode
    instrument_cached: int | None = None
    #: CPU-seconds to measure the others (None: an instrument without a CPU figure)
    instrument_seconds: float | None = None
    instrument_rule: str = ""
    note: str = ""
    #: False: the run could not be planned (``note`` says why) and its counts are unknown
    planned: bool = True

    @property
    def lower_bound(self) -> bool:
        return self.note.startswith(LOWER_BOUND)

    def to_dict(self) -> dict[str, Any]:
        return {k: _finite(v) for k, v in asdict(self).items()}


def _finite(value: Any) -> Any:
    """``value``, or None for a float that is no finite number (JSON has no NaN)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


class _PlanCache:
    """The response cache, read-only: lookups are real (and counted), claims are granted
    without being taken, nothing is stored."""

    def __init__(self, cache: ResponseCache) -> None:
        self._cache = cache
        self.hits = 0
        self.image_hits = 0
        #: the sha256 of every cached image the run's lookups found (their readings may be
        #: cached too)
        self.image_shas: set[str] = set()

        #: per key looked up: its model and attempt (the runner computes every key here)
        self.asked: dict[str, tuple[str, int]] = {}
        #: per model: cached first asks, and re-asks looked up after cached answers
        self.firsts: dict[str, set[str]] = {}
        self.reasked: dict[str, set[str]] = {}

    def key(self, fingerprint: dict[str, Any], request: Request) -> str:
        key = ResponseCache.key(fingerprint, request)
        model = f"{fingerprint.get('backend')}:{fingerprint.get('model_id')}"
        self.asked[key] = (model, request.attempt)
        return key

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found = self._cache.get_many(keys)
        self.hits += len(found)
        for key in keys:  # a re-ask is looked up only after a cached answer not ok
            model, attempt = self.asked.get(key, ("", 0))
            if attempt:
                self.reasked.setdefault(model, set()).add(key)
            elif key in found:
                self.firsts.setdefault(model, set()).add(key)
        self.image_hits += sum(1 for c in found.values() if c.image)
        self.image_shas.update(c.image for c in found.values() if c.image)
        return found

    def claim(self, keys: list[str], ttl_s: float = 0.0) -> set[str]:
        return set(keys)

    @contextmanager
    def holding(self, keys: list[str], ttl_s: float = 0.0) -> Iterator[None]:
        yield

    def put(self, key: str, model: str, completion: Completion) -> bool:
        raise RuntimeError("genfair plan stores nothing in the response cache")

    def put_readings(self, entries: Any) -> int:
        return 0  # readings a plan measures (IRIS's cached IFS-Gen images) are not kept either

    def __enter__(self) -> _PlanCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self._cache.close()


class _Planner:
    """Opens the read-only cache and stands in for the executor: every call the runner
    would send is counted per model and answered with :data:`PLANNED`."""

    def __init__(self, open_cache: Callable[[], ResponseCache], tokens: bool = True) -> None:
        self._open = open_cache
        self._tokens = tokens
        self.cache: _PlanCache | None = None
        self.parts: dict[str, Part] = {}

    def open(self) -> _PlanCache:
        self.cache = _PlanCache(self._open())
        return self.cache

    def concurrent(self, backend: LLMBackend) -> bool:
        return False  # nothing sent ahead: each call counted once, where its step asks it

    def send(
        self,
        backend: LLMBackend,
        requests: Sequence[Request],
        keys: Sequence[str],
        model_key: str,
        on_result: OnResult,
        follow: FollowUps,
    ) -> bool:
        part = self.parts.setdefault(model_key, Part(backend))
        config = backend.model_config
        image = getattr(config, "modality", backend.modality) == "t2i"
        limit = getattr(getattr(config, "sampling", None), "max_tokens", None)
        # the requests handed over are sent for sure (first asks, re-asks of cached answers
        # not ok); follow() gives the re-asks of the planned answers, at their maximum
        position, batch, reasking = 0, list(requests), False
        while batch:
            for request in batch:
                part.to_send += 1
                part.reasks += reasking
                part.first += not reasking and request.attempt == 0
                if self._tokens:
                    tokens, rule = prompt_tokens(backend, request)
                    part.prompt_tokens += tokens
                    part.reask_prompt_tokens += tokens * reasking
                    part.rules.add(rule)
                if image:  # a call draws one image at most, whatever its refused attempts
                    part.images += not reasking
                elif limit is not None:
                    part.completion_max += request.token_limit(limit)
                    part.reask_completion_max += request.token_limit(limit) * reasking
                on_result(position, Completion(status="refused", error=PLANNED))
                position += 1
            batch, reasking = [request for request, _ in follow()], True
        return True


def observe(cache: ResponseCache, model_key: str, backend: LLMBackend) -> Observed:
    """``model_key``'s latest cached answers: mean completion tokens (``usage`` where the
    endpoint reported it, else counted from the text) and mean seconds per call."""
    answers = [c for c in cache.recent(model_key, OBSERVED_ANSWERS) if c.status == "ok"]
    if not answers:
        return Observed()
    counted = [completion_tokens(backend, c) for c in answers if c.text is not None]
    tokens = [n for n, _ in counted]
    rules = {rule for _, rule in counted}
    seconds = [c.latency_s for c in answers if 0 < c.latency_s < math.inf]
    images = [c.image for c in answers if c.image][:OBSERVED_IMAGES]
    return Observed(
        answers=len(answers),
        completion_tokens=sum(tokens) / len(tokens) if tokens else None,
        seconds=sum(seconds) / len(seconds) if seconds else None,
        rule=", ".join(sorted(rules)),
        image_sizes=stored_bytes(ImageStore.beside(cache), images) if images else [],
    )


def _cost(part: Part, completion: float, reasks: float | None = None) -> float | None:
    """``part``'s cost at its model's price, with ``completion`` tokens; ``reasks``: with
    that many of its re-asks rather than all (their prompt tokens in proportion)."""
    price = getattr(part.config, "price", None)
    if price is None:
        return 0.0 if part.backend.simulated else None
    unsent = 1 - reasks / part.reasks if reasks is not None and part.reasks else 0.0
    prompt = part.prompt_tokens - unsent * part.reask_prompt_tokens
    return cost(price, prompt, completion, part.images)


def _part_cost(
    part: Part, seen: Observed, reasks: int | None
) -> tuple[float, float | None, float | None]:
    """``part``'s completion tokens (observed mean length times the calls, else the token
    limit: an upper bound) and cost, re-asks at their maximum, and its cost with
    ``reasks`` re-asks expected (None: unknown)."""
    if seen.completion_tokens is None:
        answers = float(part.completion_max)
        unsent = 1 - reasks / part.reasks if reasks is not None and part.reasks else 0.0
        expected = part.completion_max - unsent * part.reask_completion_max
    else:
        answers = seen.completion_tokens * part.to_send
        calls = part.to_send - part.reasks + (part.reasks if reasks is None else reasks)
        expected = seen.completion_tokens * calls
    bound = _cost(part, answers)
    if bound == 0 or reasks is None:  # nothing to pay is nothing whatever the re-asks
        return answers, bound, bound if bound == 0 else None
    return answers, bound, _cost(part, expected, reasks)


def _plan_run(
    params: StudyParams,
    model: str,
    methodology: str,
    open_cache: Callable[[], ResponseCache],
    layout: Layout,
    observed: dict[str, Observed],
    tokens: bool = True,
) -> PlanRow:
    method, config = configured(params, methodology)
    row = PlanRow(model, methodology, params.model(model).backend == "simulated")
    probes = method.build_probes(config, params.seed)
    planner = _Planner(open_cache, tokens)
    with executing(planner), _quiet("genfair.models"):
        answer(params, model, methodology, probes, layout, planner.open)
    assert planner.cache is not None
    row.cached = planner.cache.hits
    parts = planner.parts.values()
    row.to_send = sum(p.to_send for p in parts)
    row.calls = row.cached + row.to_send
    reasks = _plan_reasks(row, planner.parts, planner.cache)
    row.images = sum(p.images for p in parts)
    row.prompt_tokens = sum(p.prompt_tokens for p in parts)
    row.completion_tokens_max = sum(p.completion_max for p in parts)
    row.token_rule = ", ".join(sorted({r for p in parts for r in p.rules}))
    expected, costs, likely, seconds = 0.0, [], [], []
    known = True
    with open_cache() as cache:
        for key, part in planner.parts.items():
            if key not in observed:
                observed[key] = observe(cache, key, part.backend)
            seen = observed[key]
            text = part.completion_max > 0 and part.images == 0
            if text and seen.completion_tokens is None:
                known = False
            answers, bound, cost_expected = _part_cost(part, seen, reasks[key])
            expected += answers if text else 0.0
            costs.append(bound)
            likely.append(cost_expected)
            concurrency = getattr(part.config, "concurrency", 1) or 1
            seconds.append(
                None if seen.seconds is None else seen.seconds * part.to_send / concurrency
            )
    row.completion_tokens_expected = round(expected) if known else None
    row.cost = None if None in costs else sum(c for c in costs if c is not None)
    row.cost_expected = None if None in likely else sum(c for c in likely if c is not None)
    row.seconds = None if None in seconds else sum(s for s in seconds if s is not None)
    if row.to_send and params.model(model).modality in method.dependent_calls:
        row.note = f"{LOWER_BOUND}: later calls depend on answers still to send"
    measured = [seen.image_sizes for key, seen in observed.items() if key in planner.parts]
    _plan_images(
        params,
        row,
        method,
        planner.cache.image_hits,
        [n for s in measured for n in s],
        _readings_counter(params, row.model, planner.cache),
    )
    return row


def _plan_reasks(row: PlanRow, parts: dict[str, Part], cache: _PlanCache) -> dict[str, int | None]:
    """``row``'s re-asks: their maximum, and the count expected at the rate the run's cached
    answers of each model needed them (re-asks looked up per cached first ask); per model,
    its expected re-asks (None: no rate observed)."""
    row.reasks_max = sum(p.reasks for p in parts.values())
    per_part: dict[str, int | None] = {}
    rules = []
    for key, part in parts.items():
        firsts, reasked = len(cache.firsts.get(key, ())), len(cache.reasked.get(key, ()))
        per_part[key] = 0
        if not part.reasks:
            continue
        if not firsts:
            per_part[key] = None
            continue
        per_part[key] = min(part.reasks, round(part.first * reasked / firsts))
        rules.append(f"{reasked:,} re-asks per {firsts:,} cached first asks")
    found = list(per_part.values())
    expected = None if None in found else sum(n for n in found if n is not None)
    row.reasks_expected = expected
    if row.reasks_max:
        row.reask_rule = f"at most {row.reasks_max:,} (max_attempts - 1 per call not answered ok)"
        if expected is not None:
            row.reask_rule += f"; expected {expected:,}: the cache's {', '.join(rules)}"
    return per_part


def _readings_counter(params: StudyParams, model: str, cache: _PlanCache) -> Callable[[str], int]:
    """How many of the run's cached images instrument ``name`` (as it measures ``model``'s
    images) already has a reading of in the readings cache (:mod:`genfair.instruments.readings`:
    the same keys, so exact); the instrument is built only when there are cached images."""

    def count(name: str) -> int:
        if not cache.image_shas:
            return 0

        instrument = instrument_class(name)(instrument_for(params, model, name))
        spec = InstrumentSpec.of(name, instrument)
        code = code_identity(instrument)
        keys = [reading_key(sha, spec, code) for sha in sorted(cache.image_shas)]
        return len(cache.get_readings(keys))

    return count


def _plan_images(
    params: StudyParams,
    row: PlanRow,
    method: Methodology,
    cached: int,
    measured: list[int],
    readings: Callable[[str], int] = lambda name: 0,
) -> None:
    """A text-to-image run's bytes to store and instrument CPU (:mod:`genfair.study.sizing`):
    every image of the run less those whose readings are cached (``readings(instrument)``)."""
    config = params.model(row.model)
    if getattr(config, "modality", None) != "t2i":
        return
    per_image, row.image_bytes_rule = bytes_per_image(config, measured)
    row.image_bytes = round(row.images * per_image)
    if not method.measures:
        row.instrument_seconds, row.instrument_rule = 0.0, "no instrument measures its images"
        return
    row.instrument_images = cached + row.images
    costs, rules, held = [], [], []
    for name in method.measures:
        mode = getattr(instrument_for(params, row.model, name), "mode", None)
        per, rule = instrument_seconds(name, mode, config)
        have = 0 if mode == "oracle" else min(readings(name), row.instrument_images)
        if mode != "oracle":
            held.append(have)
        costs.append(None if per is None else per * (row.instrument_images - have))
        rules.append(rule)
    row.instrument_rule = "; ".join(rules)
    row.instrument_cached = min(held) if held else None
    if None not in costs:
        row.instrument_seconds = sum(c for c in costs if c is not None)


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """The runner's logs say calls were "sent" and "failed": not while planning."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def plan(
    params: StudyParams,
    models: list[str] | None = None,
    methodologies: list[str] | None = None,
    *,
    open_cache: Callable[[], ResponseCache] | None = None,
    tokens: bool = True,
) -> list[PlanRow]:
    """Every selected run's plan (a run that cannot be planned, e.g. its probes need a
    curation stage not yet run, has its reason in ``note`` and no counts); ``open_cache``:
    another response cache than the study's (e.g. an empty one: a fresh clone's plan);
    ``tokens=False``: its calls counted, their prompt tokens not (0: faster)."""
    runs = select_runs(params, models, methodologies)
    open_cache = open_cache or cache_opener(params)
    observed: dict[str, Observed] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="genfair-plan-") as scratch:
        layout = Layout(Path(scratch))  # images a run exports go here, not to data/
        for run in runs:
            model, methodology = run["model"], run["methodology"]
            try:
                rows.append(
                    _plan_run(params, model, methodology, open_cache, layout, observed, tokens)
                )
            except EXPECTED as exc:
                log.error("%s · %s: not planned: %s", model, methodology, exc)
                rows.append(
                    PlanRow(
                        model,
                        methodology,
                        params.model(model).backend == "simulated",
                        note=f"not planned: {str(exc).splitlines()[0]}",
                        planned=False,
                    )
                )
    return rows


def totals(rows: Sequence[PlanRow]) -> dict[str, Any]:
    """The plan's sums (cost, time, bytes and instrument CPU: None when a row's is unknown)."""
    out: dict[str, Any] = {
        name: sum(getattr(r, name) for r in rows)
        for name in (
            "calls",
            "cached",
            "to_send",
            "reasks_max",
            "images",
            "prompt_tokens",
            "instrument_images",
        )
    }
    for name in ("cost", "cost_expected", "seconds"):
        values = [getattr(r, name) for r in rows if r.to_send]
        out[name] = None if None in values else _finite(float(sum(values)))
    for name in ("image_bytes", "instrument_seconds"):
        values = [getattr(r, name) for r in rows if r.instrument_images or r.images]
        out[name] = None if None in values else sum(values)
    return out


def check_budget(params: StudyParams, run: tuple[str, str] | None = None) -> Budget | None:
    """Refuse (:class:`ConfigError`) when the study's plan exceeds ``generation.max_calls``,
    ``max_cost`` or ``max_disk_gb``, or cannot bound them (an unpriced model, a cost that is no
    finite number), naming the plan's runs; None when none is set.

    Else the :class:`~genfair.models.usage.Budget` of ``run`` (model, methodology): the
    limits less what the plan's other runs send, which its ``generate`` holds its calls to as
    they go out; a run planned only as a lower bound is thus stopped at the budget."""
    limits = params.generation
    if limits.max_calls is None and limits.max_cost is None and limits.max_disk_gb is None:
        return None
    rows = plan(params)
    refuse_over(limits, rows)
    return allowance(limits, rows, run)


def refuse_over(limits: Any, rows: Sequence[PlanRow]) -> None:
    """:func:`check_budget`'s refusal on a plan's ``rows`` (``limits``: ``generation``)."""
    total = totals(rows)
    sending = ", ".join(f"{r.model} · {r.methodology} {r.to_send:,}" for r in rows if r.to_send)
    over = over_budget(limits, rows)
    if over:
        raise ConfigError(
            f"{over} ({sending}): nothing was sent; see `genfair plan`, then raise the limit "
            "in conf/config.yaml's generation block (then `genfair compose`) or fill the cache"
        )
    for row in rows:
        if (row.to_send and row.lower_bound) or not row.planned:
            log.warning(
                "%s · %s: %s; %sthe budget counts its calls as they go out and stops it there",
                row.model,
                row.methodology,
                row.note,
                "" if row.planned else "planned at its own generate stage; ",
            )
    log.info(
        "plan within budget: %s calls to send, cost %s, new images %s GB",
        f"{total['to_send']:,}",
        total["cost"],
        _gb(total["image_bytes"]),
    )


def over_budget(limits: Any, rows: Sequence[PlanRow]) -> str | None:
    """How the plan's ``rows`` exceed ``generation.max_calls`` / ``max_cost`` / ``max_disk_gb``
    (``limits``), or cannot be bounded by them, in words; ``None`` within them."""
    total = totals(rows)
    over = None
    reasks = (
        f" at most ({total['reasks_max']:,} calls of it re-asks, the most the models' "
        "max_attempts allow: a model's `max_attempts` or `deterministic` lowers them)"
        if total["reasks_max"]
        else ""
    )
    if limits.max_calls is not None and total["to_send"] > limits.max_calls:
        over = (
            f"generation.max_calls is {limits.max_calls:,} and the plan sends "
            f"{total['to_send']:,} calls{reasks}"
        )
    elif limits.max_cost is not None and total["to_send"]:
        unpriced = sorted({r.model for r in rows if r.to_send and r.cost is None})
        unbounded = sorted({r.model for r in rows if r.to_send and not _bounded(r.cost)})
        if unpriced:
            over = (
                f"generation.max_cost is set and {', '.join(unpriced)} has calls to send but no "
                "`price` (give it one; `price: {}` for a free local model)"
            )
        elif unbounded:
            over = (
                f"generation.max_cost is set and the plan cannot bound the cost of "
                f"{', '.join(unbounded)} (its `price` times its tokens is no finite number)"
            )
        elif total["cost"] > limits.max_cost:
            over = (
                f"generation.max_cost is {limits.max_cost:g} and the plan costs "
                f"{total['cost']:.4g}{reasks}"
            )
            if reasks and total["cost_expected"] is not None:
                over += f"; {total['cost_expected']:.4g} expected at the cache's re-ask rate"
    if over is None and limits.max_disk_gb is not None:
        over = _over_disk(rows, limits.max_disk_gb)
    return over


def _over_disk(rows: Sequence[PlanRow], max_gb: float) -> str | None:
    """Why the plan's new images pass ``generation.max_disk_gb`` (None: they do not)."""
    planned = sum(r.image_bytes or 0 for r in rows)
    if planned <= max_gb * GB:
        return None
    return (
        f"generation.max_disk_gb is {max_gb:g} and the plan's new images take {planned / GB:.3g} GB"
    )


def allowance(
    limits: Any,
    rows: Sequence[PlanRow],
    run: tuple[str, str] | None,
    spent: tuple[int, float] = (0, 0.0),
    done: frozenset[tuple[str, str]] = frozenset(),
) -> Budget:
    """What ``run`` may send: the limits less the calls and cost ``spent`` since the plan
    and what the plan's other runs not ``done`` since would send."""
    others = [r for r in rows if (r.model, r.methodology) not in {run, *done}]
    own = [r for r in rows if (r.model, r.methodology) == run and r.to_send]
    return Budget(
        per_call=own[0].cost / own[0].to_send if own and _bounded(own[0].cost) else None,
        calls=None
        if limits.max_calls is None
        else limits.max_calls - spent[0] - sum(r.to_send for r in others),
        cost=None
        if limits.max_cost is None
        else limits.max_cost - spent[1] - sum(r.cost or 0.0 for r in others if r.to_send),
    )


def _bounded(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "?"
    return f"{value:,.{digits}f}"


#: the plan table's columns (``genfair plan``)
HEAD = (
    "model",
    "methodology",
    "calls",
    "cached",
    "to send",
    "re-asks",
    "images",
    "prompt tok",
    "compl. tok max",
    "compl. tok exp.",
    "cost",
    "time",
    "image GB",
    "instr. core-h",
)


def table(rows: Sequence[PlanRow], limits: Any = None) -> str:
    """The plan as a text table (``genfair plan``); with ``limits`` (``generation``), a plan
    over its budget is marked in the total row and said under the table."""
    over = None if limits is None else over_budget(limits, rows)
    body = [_cells(r) if r.planned else (*_cells(r)[:2], *["-"] * (len(HEAD) - 2)) for r in rows]
    body.append(_total_cells(rows, over))
    widths = [max(len(str(line[i])) for line in (HEAD, *body)) for i in range(len(HEAD))]
    lines = [
        "  ".join(
            str(c).ljust(w) if i < 2 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in (HEAD, *body)
    ]
    return "\n".join([*lines, "", *_footnotes(rows, over)])


def _cells(r: PlanRow) -> tuple[str, ...]:
    """One run's row of the plan table."""
    return (
        r.model + (" [SIMULATED]" if r.simulated else ""),
        r.methodology,
        _fmt(r.calls),
        _fmt(r.cached),
        _fmt(r.to_send),
        _reasks(r),
        _fmt(r.images),
        ("~" if ESTIMATE_RULE in r.token_rule else "") + _fmt(r.prompt_tokens),
        _fmt(r.completion_tokens_max),
        _fmt(r.completion_tokens_expected),
        _bill(r.cost, r.cost_expected, r.reasks_max),
        _duration(r.seconds),
        _gb(r.image_bytes) if r.image_bytes_rule else "",
        _hours(r.instrument_seconds) if r.instrument_rule else "",
    )


def _total_cells(rows: Sequence[PlanRow], over: str | None) -> tuple[str, ...]:
    """The plan table's total row, marked when the plan is over its budget."""
    total = totals(rows)
    drawn = any(r.image_bytes_rule for r in rows)
    return (
        "total" + (" [OVER BUDGET]" if over else ""),
        "",
        _fmt(total["calls"]),
        _fmt(total["cached"]),
        _fmt(total["to_send"]),
        f"≤{total['reasks_max']:,}" if total["reasks_max"] else "",
        _fmt(total["images"]),
        _fmt(total["prompt_tokens"]),
        "",
        "",
        _bill(total["cost"], total["cost_expected"], total["reasks_max"]),
        _duration(total["seconds"]),
        _gb(total["image_bytes"]) if drawn else "",
        _hours(total["instrument_seconds"]) if drawn else "",
    )


def _footnotes(rows: Sequence[PlanRow], over: str | None) -> list[str]:
    """The lines under the plan table: how tokens, re-asks and images were counted, and each
    run's note (the budget first when it is exceeded)."""
    notes = [f"{r.model} · {r.methodology}: {r.note}" for r in rows if r.note]
    if not all(r.planned for r in rows):
        notes.insert(0, "-: not planned (the total leaves these runs out)")
    if over:
        notes.insert(
            0,
            f"OVER BUDGET: {over}; `dvc repro` would refuse before sending (raise the limit in "
            "conf/config.yaml's generation block, then `genfair compose`, or fill the cache)",
        )
    rules = sorted({r.token_rule for r in rows if r.token_rule})
    reasking = [r for r in rows if r.reasks_max]
    images = [
        f"{r.model} · {r.methodology}: bytes {r.image_bytes_rule}; {r.instrument_rule}"
        + ("" if r.instrument_cached is None else f" ({r.instrument_cached:,} readings cached)")
        for r in rows
        if r.image_bytes_rule
    ]
    estimated = any(ESTIMATE_RULE in r.token_rule for r in rows)
    return [
        f"prompt tokens counted with: {'; '.join(rules) or '-'}"
        + (
            " (~: estimated; the model's `tokenizer` counts them: docs/serving.md)"
            if estimated
            else ""
        ),
        *(
            [
                "re-asks: ≤ the most the runs may make (within to send, cost and time); "
                "exp.: at the rate the cache's answers of the run needed them (cost: the same)",
                *(f"{r.model} · {r.methodology}: re-asks {r.reask_rule}" for r in reasking),
            ]
            if reasking
            else []
        ),
        "?: not known (no price, or no cached answer of the model to measure)",
        *(
            [
                "image GB: new images, each stored once; instr. core-h: CPU to measure every "
                "image of the run",
                *images,
            ]
            if images
            else []
        ),
        *notes,
    ]


def _reasks(row: PlanRow) -> str:
    """A row's re-asks: ``≤`` their maximum, and the expected count where one is known."""
    if not row.reasks_max:
        return "0"
    expected = "" if row.reasks_expected is None else f" exp. {row.reasks_expected:,}"
    return f"≤{row.reasks_max:,}{expected}"


def _bill(bound: float | None, expected: float | None, reasks: int) -> str:
    """A cost: with re-asks, ``≤`` its bound (re-asks at their maximum) and the expected
    cost where a re-ask rate is known, as :func:`_reasks` says the calls."""
    if not reasks or bound is None:
        return _fmt(bound, 4)
    return f"≤{bound:,.4f}" + ("" if expected is None else f" exp. {expected:,.4f}")


def _gb(size: int | None) -> str:
    return "?" if size is None else f"{size / GB:,.2f}"


def _hours(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds / 3600:,.2f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"
