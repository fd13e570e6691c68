"""The budget check of each ``generate`` stage, planned once per params and cache state.

Planning the whole study (:func:`genfair.study.plan.check_budget`) costs seconds per run at
paper size, and a ``dvc repro`` has a ``generate`` stage per run: planned at every stage, the
check would grow with the square of the study. So the first budgeted stage plans the study,
checks it and saves the plan beside the cache's usage ledger (``budget-plan.json`` in the
cache folder, local state under ``.genfair/`` by default) with the params' digest, the
cache's entry count and the ledger's size at that moment. A later stage reuses it while
both hold: the params are the same, and the cache grew only by the calls the ledger records
as sent since (each ``generate`` appends its sends, :mod:`genfair.models.usage`). Any other
change (new params, a cache cleared, filled by hand or by another machine, a stage killed
before it wrote its ledger line) plans the study again.

A run that could not be planned with the study (its curated inputs were not built yet) is
planned alone when its own stage comes, and refused as a fresh plan would be.

With a reused plan, a stage may send the limits less what was sent since the plan (the
ledger's calls, and their cost at each model's ``price``) less what the plan's runs that
have not run since would send: the same allowance a fresh plan gives, without planning.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from genfair.frame import cache_dir, usage_ledger
from genfair.io import write_json
from genfair.models.usage import Budget, Counts, cost, read_ledger
from genfair.study.answers import cache_opener
from genfair.study.plan import PlanRow, allowance, plan, refuse_over
from genfair.study_params import StudyParams

log = logging.getLogger(__name__)

#: the plan a budgeted ``generate`` saved, in the cache folder
PLAN_FILE = "budget-plan.json"
#: how the saved plan counts (2: re-asks at their maximum, issue 45.1): another is planned again
PLAN_VERSION = 2


def stage_budget(params: StudyParams, model: str, methodology: str) -> Budget | None:
    """The :class:`~genfair.models.usage.Budget` of ``generate@<model>-<methodology>``
    (None: no ``generation.max_calls`` / ``max_cost`` / ``max_disk_gb``); refuses
    (``ConfigError``) before any call when the study's plan exceeds the limits or cannot bound
    them."""
    limits = params.generation
    if limits.max_calls is None and limits.max_cost is None and limits.max_disk_gb is None:
        return None
    run = (model, methodology)
    saved_at = cache_dir(params.cache.dir) / PLAN_FILE
    ledger = usage_ledger(params.cache)
    digest = params_digest(params)
    entries = _entries(params)
    saved = _read(saved_at)
    if saved is not None and saved["params"] == digest:
        since = read_ledger(ledger, int(saved["ledger_bytes"])) if ledger.is_file() else []
        sent = sum(e["sent"].calls for e in since)
        if _size(ledger) >= saved["ledger_bytes"] and saved["entries"] + sent == entries:
            done = frozenset((str(e["model"]), str(e["methodology"])) for e in since)
            log.info(
                "budget: the study's plan reused (%s: same params; the cache grew only by the "
                "%s calls sent since)",
                saved_at,
                f"{sent:,}",
            )
            spent = (sent, _spent(params, since))
            rows = saved["rows"]
            if any((r.model, r.methodology) == run and not r.planned for r in rows):
                rows = _planned_now(params, limits, rows, run, spent, done)
            return allowance(limits, rows, run, spent, done)
    ledger_bytes = _size(ledger)  # before planning: a send meanwhile makes the next stage plan
    rows = plan(params)
    refuse_over(limits, rows)
    state = {
        "version": PLAN_VERSION,
        "params": digest,
        "entries": entries,
        "ledger_bytes": ledger_bytes,
        "rows": [r.to_dict() for r in rows],
    }
    try:
        write_json(state, saved_at)
    except OSError as exc:  # local state, not an output: the next stage plans again
        log.warning(
            "%s: the study's plan was not saved (%s); the next stage plans again", saved_at, exc
        )
    return allowance(limits, rows, run)


def _planned_now(
    params: StudyParams,
    limits: Any,
    rows: list[PlanRow],
    run: tuple[str, str],
    spent: tuple[int, float],
    done: frozenset[tuple[str, str]],
) -> list[PlanRow]:
    """``rows`` with ``run``'s planned now (it could not be when the study was: its curated
    inputs were not built yet), refused as a fresh plan would be when what was sent since, it
    and the runs still to run exceed the limits."""
    (own,) = plan(params, [run[0]], [run[1]])
    pending = [r for r in rows if (r.model, r.methodology) not in {run, *done}]
    sent = PlanRow("(sent since the plan)", "-", False, to_send=spent[0], cost=spent[1])
    refuse_over(limits, [sent, own, *pending])
    return [own if (r.model, r.methodology) == run else r for r in rows]


def params_digest(params: StudyParams) -> str:
    """The sha256 of the validated params (every block, the limits included)."""
    text = json.dumps(params.model_dump(mode="json"), sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _entries(params: StudyParams) -> int:
    with cache_opener(params)() as cache:
        return len(cache)


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def _read(path: Path) -> dict[str, Any] | None:
    """The saved plan, its rows as :class:`PlanRow`; None: none, or damaged (planned again)."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved["version"] != PLAN_VERSION:
            return None
        return {
            "params": str(saved["params"]),
            "entries": int(saved["entries"]),
            "ledger_bytes": int(saved["ledger_bytes"]),
            "rows": [PlanRow(**row) for row in saved["rows"]],
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _spent(params: StudyParams, entries: list[dict[str, Any]]) -> float:
    """What the ledger's sends cost at each model's ``price`` (an unpriced or unknown model:
    nothing, as the plan refused it with calls to send)."""
    total = 0.0
    for entry in entries:
        model = str(entry["model"])
        price = getattr(params.model(model), "price", None) if model in params.models else None
        sent: Counts = entry["sent"]
        if price is not None:
            total += cost(price, sent.prompt_tokens, sent.completion_tokens, sent.images)
    return total
