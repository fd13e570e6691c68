"""Generate images through the response cache, re-asking refusals as paper 000 §4.1 says.

A t2i probe row asks for ``n`` images of one prompt: one :class:`~genfair.models.runner.Call`
per image (``sample_index`` 0..n-1). A refused call is asked again with a new attempt
index (so a new cache entry and seed) until it yields an image or reaches the call's
``max_attempts`` ("if a query is rejected by the model, the process will repeat until the
required number of samples are obtained", §4.1; the cap keeps a model that refuses a
prompt outright from looping forever, and what is left is recorded as ``refused``).

Each image is written to the image store (atomically) and then its cache row committed,
the moment the backend reports it, so an interrupted run resumes with every finished image
and never draws one twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from genfair.models.base import Completion, LLMBackend, OnDone, Request
from genfair.models.images import ImageStore, check_png
from genfair.models.questions import ImageQuestion, OpenSetImageQuestion
from genfair.models.runner import Call, Finals, OnRows, ask

if TYPE_CHECKING:  # the cache needs SQLAlchemy: loaded by whoever opens one
    from genfair.models.cache import ResponseCache

log = logging.getLogger(__name__)

#: columns of every t2i responses table, in order. ``text`` is the prompt the endpoint says
#: it drew (OpenAI's ``revised_prompt``), ``true_attributes`` the simulator's planted truth
#: as JSON (None for real models).
IMAGE_RESPONSE_COLUMNS = [
    "probe_id",
    "sample_index",
    "status",
    "attempts",
    "image",
    "width",
    "height",
    "text",
    "finish_reason",
    "error",
    "tries",
    "true_attributes",
]


class Storing(LLMBackend):
    """A t2i backend whose PNG bytes go to the image store before the caller sees them."""

    def __init__(self, backend: LLMBackend, store: ImageStore):
        self.inner = backend
        self.store = store
        self.model_config = (
            backend.model_config
        )  # an executor rebuilds it, with this store, elsewhere
        self.deterministic = backend.deterministic
        self.simulated = backend.simulated

    @property
    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint

    def request_fingerprint(self, request: Request) -> dict[str, Any]:
        return self.inner.request_fingerprint(request)

    def repeats(self, request: Request) -> bool:
        return self.inner.repeats(request)

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        self.inner.complete(requests, lambda r, c: on_done(r, stored(self.store, r, c)))


def stored(store: ImageStore, request: Request, completion: Completion) -> Completion:
    """``completion`` with its PNG bytes moved into ``store`` (``image``: their hash); a
    broken image, or an ``ok`` without bytes, is a failed call, not a crash."""
    if completion.png is not None:
        try:
            check_png(completion.png, f"image for seed {request.seed}")
            completion.image = store.put(completion.png)
        except ValueError as exc:
            completion = Completion(status="error", error=str(exc))
        completion.png = None
    elif completion.status == "ok":
        completion = Completion(status="error", error="backend reported an image without bytes")
    return completion


def generate_images(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    *,
    seed: int,
    store: ImageStore | None = None,
    desc: str = "",
    chunk_size: int = 64,
    on_rows: OnRows | None = None,
) -> pd.DataFrame:
    """One image per call (re-asking refusals up to ``call.max_attempts``); one row per call,
    each also handed to ``on_rows`` the moment it exists (with the others of its group), with
    ``path``: its image's file in the store (``None`` without an image).

    ``status`` is ``ok`` (``image`` holds its hash in ``store``, default the store beside
    ``cache``), ``refused`` (every attempt refused) or ``error`` (a failure after the
    backend's own retries; not cached, so the next run asks again).
    """
    if getattr(backend, "modality", "llm") != "t2i":
        raise TypeError(f"{type(backend).__name__} is not a text-to-image backend")
    store = store or ImageStore.beside(cache)

    def verdict(i: int, completion: Completion) -> str:
        if completion.status == "ok" and completion.image not in store:
            store.read(completion.image or "0" * 64)  # raises: cache and store disagree
        return completion.status

    def final(finals: Finals) -> None:
        rows = []
        for i, completion, _, attempts in finals:
            row = _row(calls[i], completion, attempts, store)
            row["path"] = None if completion.image is None else str(store.path(completion.image))
            rows.append(row)
        on_rows(rows)  # type: ignore[misc]  # only passed on when given

    answers = ask(
        Storing(backend, store),
        cache,
        calls,
        verdict,
        seed=seed,
        desc=desc or "draw",
        chunk_size=chunk_size,
        unit="image",
        on_final=None if on_rows is None else final,
    )
    rows = [
        _row(call, completion, attempts, store)
        for call, (completion, _, attempts) in zip(calls, answers, strict=True)
    ]
    frame = pd.DataFrame(rows, columns=IMAGE_RESPONSE_COLUMNS)
    frame = frame.astype({"width": "Int64", "height": "Int64"})
    for status in ("refused", "error"):
        count = int((frame["status"] == status).sum())
        if count:
            log.warning("%s: %d calls ended %s", desc, count, status)
    return frame


def _row(call: Call, completion: Completion, attempts: int, store: ImageStore) -> dict[str, Any]:
    width = height = None
    if completion.image is not None:
        from PIL import Image

        with Image.open(store.path(completion.image)) as image:
            width, height = image.size
    truth = completion.true_attributes
    return {
        "probe_id": call.probe_id,
        "sample_index": call.sample_index,
        "status": completion.status,
        "attempts": attempts,
        "image": completion.image,
        "width": width,
        "height": height,
        "text": completion.text,
        "finish_reason": completion.finish_reason,
        "error": completion.error,
        "tries": completion.tries,
        "true_attributes": None if truth is None else json.dumps(truth, sort_keys=True),
    }


def prompt_call(
    probe_id: str,
    prompt: str,
    sample_index: int = 0,
    *,
    max_attempts: int = 1,
    question: ImageQuestion | OpenSetImageQuestion | None = None,
) -> Call:
    """A t2i call: the prompt as one user message (the cache key), ``question`` for simulators."""
    meta = question.meta() if question is not None else {}
    return Call.text(
        probe_id, prompt, sample_index=sample_index, max_attempts=max_attempts, meta=meta
    )


def prompt_of(request: Request) -> str:
    """The text prompt of a t2i request (its last user message)."""
    for message in reversed(request.messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    raise ValueError("a t2i request needs a user message with the prompt as its text content")
