"""Token and image usage of a block of calls, answered from the cache and sent counted apart.

The runner reports every answer it uses to the active ledger (:func:`recording`; none: not
counted). Each answer counts, in order of preference:

- prompt and completion tokens from the endpoint's ``usage`` (OpenAI-compatible backends
  store it with the answer);
- else the model's own tokenizer (local models: the prompt as the backend builds it, chat
  template included, and the answer's text re-encoded);
- else :func:`~genfair.models.base.estimated_tokens` of the prompt's and answer's text (one
  token per 4 characters), e.g. a simulator's made-up text; the rule is recorded.

An image drawn by a text-to-image model counts as one image. Failed calls count nothing.
A count is a whole number in ``[0, MAX_COUNT]`` wherever it enters (an endpoint's ``usage``, a
cached answer, a ledger line): anything else (negative, NaN, ``Infinity``, 10^4000) is unknown,
never a number a budget adds up.

A generate stage under ``generation.max_calls`` / ``max_cost`` runs in a :func:`budgeted`
block: the runner asks :func:`admit` before each send, so the stage stops at its share of the
budget even where the plan was only a lower bound (:mod:`genfair.study.budget`).

A generate's cache/sent split goes to a ledger beside the cache when it ends; each sent
answer is journaled as it is counted (:func:`start_journal`), so a run killed where nothing
runs on the way out (SIGKILL) still counts its paid calls as sent (:func:`fold_journals`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from genfair.models.base import (
    ESTIMATE_RULE,
    Completion,
    LLMBackend,
    Request,
    estimated_tokens,
    message_text,
)

log = logging.getLogger(__name__)

#: how a count was made, as outputs state it
USAGE_RULE = "the endpoint's usage"
TOKENIZER_RULE = "the model's tokenizer"

Source = Literal["cached", "sent"]


@dataclass
class Counts:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    images: int = 0

    def add(self, other: Counts) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class Usage:
    """What a block of calls used: answers read from the cache and answers sent, apart."""

    cached: Counts = field(default_factory=Counts)
    sent: Counts = field(default_factory=Counts)
    rules: set[str] = field(default_factory=set)
    #: cache keys sent ahead of their step's own ask (:mod:`genfair.models.ahead`): counted
    #: when sent, not again when the step reads them from the cache
    ahead: set[str] = field(default_factory=set)
    #: where each sent answer is journaled as it is counted (:func:`start_journal`): what a
    #: killed run sent reaches the ledger all the same (:func:`fold_journals`)
    journal: Path | None = None

    def total(self) -> Counts:
        both = Counts()
        both.add(self.cached)
        both.add(self.sent)
        return both

    def to_dict(self) -> dict[str, Any]:
        return {
            "cached": asdict(self.cached),
            "sent": asdict(self.sent),
            "rules": sorted(self.rules),
        }


#: the most tokens or images one count may hold (a whole study's, with room): a larger one is
#: no count but an endpoint's or a file's error
MAX_COUNT = 10**15


def valid_count(value: object) -> bool:
    """Whether ``value`` is a count: an int (not a bool) in ``[0, MAX_COUNT]``."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _ledger_count(value: object) -> int:
    """A ledger line's count (a whole float such as ``3.0`` too); ``ValueError`` otherwise."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not valid_count(value):
        raise ValueError(f"not a count in [0, {MAX_COUNT:.0e}]")
    return value  # type: ignore[return-value]  # valid_count: an int


_ledger: ContextVar[Usage | None] = ContextVar("genfair_usage", default=None)
#: set in the threads that send follow-ups ahead (:func:`sent_ahead`)
_ahead: ContextVar[bool] = ContextVar("genfair_usage_ahead", default=False)
#: follow-ups sent ahead record from their own threads
_adding = threading.Lock()


@contextmanager
def recording(journal: Path | None = None) -> Iterator[Usage]:
    """Count every answer the runner uses in this block (each sent one journaled too)."""
    usage = Usage(journal=journal)
    token = _ledger.set(usage)
    try:
        yield usage
    finally:
        _ledger.reset(token)


def prompt_tokens(
    backend: LLMBackend, request: Request, completion: Completion | None = None
) -> tuple[int, str]:
    """``request``'s prompt tokens and the rule that counted them (the answer's ``usage``
    when it has one)."""
    if completion is not None and valid_count(completion.usage.get("prompt_tokens")):
        return completion.usage["prompt_tokens"], USAGE_RULE
    counted = backend.prompt_tokens(request)
    if counted is not None:
        return counted, TOKENIZER_RULE
    return estimated_tokens(message_text(request.messages)), ESTIMATE_RULE


def completion_tokens(backend: LLMBackend, completion: Completion) -> tuple[int, str]:
    """The answer's tokens and the rule that counted them."""
    if valid_count(completion.usage.get("completion_tokens")):  # an old cache's bad usage: unknown
        return completion.usage["completion_tokens"], USAGE_RULE
    text = completion.text or ""
    counted = backend.text_tokens(text) if text else None
    if counted is not None:
        return counted, TOKENIZER_RULE
    return estimated_tokens(text), ESTIMATE_RULE


def count(backend: LLMBackend, request: Request, completion: Completion) -> tuple[Counts, set[str]]:
    """One answer's counts and the rules they were made by."""
    prompt, prompt_rule = prompt_tokens(backend, request, completion)
    made, made_rule = completion_tokens(backend, completion)
    return Counts(1, prompt, made, int(completion.image is not None)), {prompt_rule, made_rule}


def record(
    backend: LLMBackend, request: Request, completion: Completion, source: Source, key: str
) -> None:
    """Add one answer (cache ``key``) to the active ledger (nothing without one; failed calls
    count nothing). An answer sent ahead counts once: as sent, not when its step reads it."""
    budget = _budget.get()
    if budget is not None and source == "sent":
        budget.spend(backend, request, completion)
    usage = _ledger.get()
    if usage is None or completion.status == "error":
        return
    counts, rules = count(backend, request, completion)
    with _adding:
        if source == "sent" and _ahead.get():
            usage.ahead.add(key)
        elif source == "cached" and key in usage.ahead:
            usage.ahead.discard(key)
            return
        getattr(usage, source).add(counts)
        usage.rules |= rules
        if source == "sent" and usage.journal is not None:
            try:  # before the answer is used: a kill from here on loses no paid call
                append_entry(usage.journal, {"sent": asdict(counts), "rules": sorted(rules)})
            except OSError as exc:
                log.warning("%s: not journaled (%s); counted at the end", usage.journal, exc)
                usage.journal = None


#: the error of a call the budget stopped (never cached: asked again when the budget allows)
OVER_BUDGET = (
    "not sent: the study's budget (generation.max_calls / max_cost) is reached; raise it in "
    "conf/config.yaml and run `genfair compose`, or see `genfair plan`"
)


def cost(price: Any, prompt: float, completion: float, images: float) -> float:
    """What ``prompt`` and ``completion`` tokens and ``images`` cost at a model's ``price``
    (:class:`~genfair.models.config.Price`)."""
    return (
        prompt * price.input_per_million / 1e6
        + completion * price.output_per_million / 1e6
        + images * price.per_image
    )


@dataclass
class Budget:
    """What one generate stage may still send: ``calls`` and ``cost`` (None: no limit).
    Calls are counted as they are admitted (sent, whatever their answer); cost as their
    answers arrive, at each model's ``price`` (an unpriced model costs nothing here: the plan
    refused it). With ``per_call``, the plan's estimated cost of one call, a call goes out only
    while the cost spent and estimated in flight leaves room for it; without one, while the
    cost spent is under the limit (the calls already in flight then finish past it)."""

    calls: int | None = None
    cost: float | None = None
    per_call: float | None = None
    sent: int = 0
    #: sent calls whose answers arrived (failed ones too)
    answered: int = 0
    spent: float = 0.0
    #: calls not sent because the budget was reached
    stopped: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def admit(self, wanted: int) -> int:
        """How many of ``wanted`` calls may go out now (counted as sent)."""
        with self._lock:
            allowed = wanted
            if self.calls is not None:
                allowed = min(allowed, max(0, self.calls - self.sent))
            if self.cost is not None:
                room = self.cost - self.spent
                if self.per_call:
                    room -= (self.sent - self.answered) * self.per_call
                    allowed = min(allowed, max(0, math.floor(room / self.per_call)))
                elif room <= 0:
                    allowed = 0
            self.sent += allowed
            self.stopped += wanted - allowed
            return allowed

    def spend(self, backend: LLMBackend, request: Request, completion: Completion) -> None:
        """Count one sent call's answer, and its cost at its model's ``price``."""
        price = getattr(getattr(backend, "model_config", None), "price", None)
        counts = None
        if price is not None and completion.status != "error":
            counts, _ = count(backend, request, completion)
        with self._lock:
            self.answered += 1
            if counts is not None:
                self.spent += cost(
                    price, counts.prompt_tokens, counts.completion_tokens, counts.images
                )


_budget: ContextVar[Budget | None] = ContextVar("genfair_budget", default=None)


@contextmanager
def budgeted(budget: Budget | None) -> Iterator[Budget | None]:
    """Hold every call the runner sends in this block to ``budget`` (None: no limit)."""
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


def admit(wanted: int) -> int:
    """How many of ``wanted`` calls the active budget lets go out now (all without one)."""
    budget = _budget.get()
    return wanted if budget is None else budget.admit(wanted)


def sent_ahead() -> None:
    """Mark this context's sends as ahead of their step's own ask (in a copied context)."""
    _ahead.set(True)


# The ledger of splits: outputs hold only totals (the same bytes whether the cache answered or
# not), so each generate's cache/sent split is appended to a ledger in the cache folder
# (:func:`genfair.frame.usage_ledger`).

#: the most of the ledger read (its tail): one line (about 500 bytes) per generate, so 4 MiB
#: holds the latest ~8,000 runs
LEDGER_READ_BYTES = 4 << 20


def ledger_entry(
    model: str, methodology: str, run: str, usage: Usage, responses: str | None
) -> dict[str, Any]:
    """One generate's split: ``responses`` is the sha256 of the responses it wrote (None: it
    wrote none, e.g. too many errors), which ties the split to the outputs it produced."""
    from datetime import UTC, datetime

    return {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": model,
        "methodology": methodology,
        "run": run,
        "responses": responses,
        **usage.to_dict(),
    }


def append_entry(path: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` as one JSON line in a single ``O_APPEND`` write, so concurrent
    generates never interleave within a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_ledger(path: Path, since: int = 0) -> list[dict[str, Any]]:
    """The ledger's entries, oldest first (its last :data:`LEDGER_READ_BYTES`; those appended
    after byte ``since``); a line that is not an entry (damaged, cut short) is skipped with a
    warning naming it."""
    if not path.is_file():
        return []
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = max(since, size - LEDGER_READ_BYTES, 0)
        fh.seek(start)
        lines = fh.read().split(b"\n")
    if start > since:
        lines = lines[1:]  # the first line read may be cut
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            for source in ("sent", "cached"):
                entry[source] = Counts(**{k: _ledger_count(v) for k, v in entry[source].items()})
            str(entry["model"]), str(entry["methodology"])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning(
                "%s: line %d is not a usage entry (%s); skipped (delete the line to silence this)",
                path,
                number,
                type(exc).__name__,
            )
            continue
        entries.append(entry)
    return entries


def ledger_totals(entries: list[dict[str, Any]]) -> dict[tuple[str, str], Usage]:
    """Per (model, methodology), the sent and cached counts of every generate in the ledger."""
    totals: dict[tuple[str, str], Usage] = {}
    for entry in entries:
        usage = totals.setdefault((str(entry["model"]), str(entry["methodology"])), Usage())
        usage.sent.add(entry["sent"])
        usage.cached.add(entry["cached"])
    return totals


def latest_split(entries: list[dict[str, Any]], responses: str) -> dict[str, Counts] | None:
    """The sent and cached counts of the latest generate that wrote responses of sha256
    ``responses`` (None: none in the ledger)."""
    for entry in reversed(entries):
        if entry.get("responses") == responses:
            return {"sent": entry["sent"], "cached": entry["cached"]}
    return None


# Journals: a generate appends each sent answer's counts to a file of its own beside the
# ledger as the answer is counted, and removes the file once its ledger line is written. A
# run killed where no handler runs (SIGKILL, a lost machine) leaves its journal, which the
# next generate folds into the ledger as that run's line, so its paid calls count as sent.

#: the folder, beside the ledger, of the journals of running (or killed) generates
JOURNALS = "usage.journals"


def start_journal(ledger: Path, model: str, methodology: str, run: str) -> Path | None:
    """A new journal for this process's generate of ``run`` (its first line names it);
    ``None``, with a warning, where none can be written (the split is then counted at the end
    only, as before journals)."""
    from uuid import uuid4

    path = ledger.parent / JOURNALS / f"{os.getpid()}-{uuid4().hex}.jsonl"
    try:
        append_entry(path, {"model": model, "methodology": methodology, "run": run})
    except OSError as exc:
        log.warning("%s: no usage journal (%s); the split is counted at the end", path, exc)
        return None
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def fold_journals(ledger: Path) -> int:
    """Append to ``ledger`` one line per journal a dead process left (its sent counts; no
    responses: it wrote none) and remove the journal; how many were folded. A journal whose
    line is already in the ledger (killed between the two) is only removed."""
    folder = ledger.parent / JOURNALS
    if not folder.is_dir():
        return 0
    dead = [
        path
        for path in sorted(folder.glob("*.jsonl"))
        if (pid := path.name.partition("-")[0]).isdigit() and not _alive(int(pid))
    ]
    if not dead:  # the usual case: the ledger is not read
        return 0
    logged = {entry.get("journal") for entry in read_ledger(ledger)}
    folded = 0
    for path in dead:
        if path.name not in logged:
            entry = _journal_entry(path)
            if entry is not None:
                append_entry(ledger, entry)
                folded += 1
        path.unlink(missing_ok=True)
    return folded


def _journal_entry(path: Path) -> dict[str, Any] | None:
    """The ledger line of a killed run's journal; ``None`` when it journaled no answer, or
    (with a warning) when its first line does not name the run. A line cut by the kill is
    left out."""
    usage = Usage()
    with path.open("rb") as fh:
        try:
            head = json.loads(fh.readline())
            model, methodology, run = str(head["model"]), str(head["methodology"]), head["run"]
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("%s: not a usage journal (%s); removed", path, type(exc).__name__)
            return None
        for line in fh:
            try:
                item = json.loads(line)
                usage.sent.add(Counts(**{k: _ledger_count(v) for k, v in item["sent"].items()}))
                usage.rules |= {str(rule) for rule in item["rules"]}
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
    if not usage.sent.calls:  # killed before its first answer: nothing to count
        return None
    log.info(
        "%s · %s: a killed run's %d sent calls added to the ledger",
        model,
        methodology,
        usage.sent.calls,
    )
    return {**ledger_entry(model, methodology, str(run), usage, None), "journal": path.name}
