"""The model interface every backend implements, and the records that cross it.

A backend turns :class:`Request` objects into :class:`Completion` objects. It never
decides whether an answer is *valid* for a methodology (that is the instruments' job);
it only reports what the model said, or that the call failed after its own transport
retries. Everything that crosses this boundary is a plain dataclass so that it can be
cached as JSON and stored in parquet.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from genfair.io import stable_hash
from genfair.models.config import DecodingOverride, SamplingParams

#: What a single call produced. ``refused`` is a refusal reported by the endpoint itself
#: (e.g. ``finish_reason == "content_filter"``); refusals written as text are detected
#: later by instruments. ``error`` is a transport failure left after all retries.
CompletionStatus = Literal["ok", "refused", "error"]


@dataclass(frozen=True, kw_only=True)
class PerCall:
    """What a methodology's :class:`~genfair.models.runner.Call` hands on to each of its
    :class:`Request`: ``meta``, probe columns that a simulator may read (*not* part of the
    cache key; real backends ignore it), and per-request decoding, each ``None`` unless a
    methodology sets it (:meth:`Request.sampling`):

    - ``max_tokens`` overrides the model's ``sampling.max_tokens`` (a methodology's answer
      length, e.g. a news article); ``temperature`` and ``top_p`` its sampling (0: greedy).
      Backends that generate text honour them; simulators, t2i backends and CLIP have no
      text sampling and ignore them.
    - ``json_schema``: the answer must be JSON matching this schema (constrained decoding).
      Only backends with ``supports_json_schema`` honour it, and the runner refuses to send
      it to any other (:func:`genfair.models.runner.ask`), so an answer is never taken for
      constrained when it was not.

    Each enters the cache key only when set, so keys written before it existed stay valid
    (an override equal to the model's own value still makes a new key).
    """

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    json_schema: dict[str, Any] | None = field(default=None, hash=False)
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        check_decoding(
            self.temperature, self.top_p, self.json_schema
        )  # fail where the call is made

    def per_call(self) -> dict[str, Any]:
        """These fields by name (a call's, for its requests)."""
        return {f.name: getattr(self, f.name) for f in fields(PerCall)}


@dataclass(frozen=True)
class Request(PerCall):
    """One sample of one probe row sent to a model.

    ``messages`` is the full chat input (OpenAI message format). ``sample_index`` and
    ``attempt`` make repeated samples and re-asks distinct cache entries. ``seed`` is the
    per-request seed derived from the study seed. Decoding and ``meta``: :class:`PerCall`.
    """

    messages: tuple[dict[str, str], ...]
    sample_index: int = 0
    attempt: int = 0
    seed: int = 0

    def key_payload(self) -> dict[str, Any]:
        """The request's part of the cache key (everything but ``meta``)."""
        payload: dict[str, Any] = {
            "messages": [_key_message(m) for m in self.messages],
            "sample_index": self.sample_index,
            "attempt": self.attempt,
            "seed": self.seed,
        }
        # only when set, so that keys written before the overrides existed stay valid
        for name in ("max_tokens", "temperature", "top_p", "json_schema"):
            if getattr(self, name) is not None:
                payload[name] = getattr(self, name)
        return payload

    def token_limit(self, default: int) -> int:
        """How many tokens this request may generate: its own limit or the model's."""
        return self.max_tokens if self.max_tokens is not None else default

    def sampling(self, model: SamplingParams) -> SamplingParams:
        """The decoding this request runs with: the model's ``sampling`` with this
        request's overrides."""
        overrides = {
            name: getattr(self, name)
            for name in ("temperature", "top_p", "max_tokens")
            if getattr(self, name) is not None
        }
        return model.model_copy(update=overrides) if overrides else model


def check_decoding(
    temperature: float | None, top_p: float | None, json_schema: dict[str, Any] | None
) -> None:
    """``ValueError`` naming a decoding override out of range (the ranges of a model's
    ``sampling``) or a schema that is not a JSON object."""
    if temperature is not None or top_p is not None:
        DecodingOverride(
            temperature=temperature, top_p=top_p
        )  # pydantic's ValidationError is a ValueError
    if json_schema is not None and not isinstance(json_schema, dict):
        raise ValueError(
            f"json_schema must be a JSON schema object (a dict), got {type(json_schema).__name__}"
        )


@dataclass
class Completion:
    """What one call returned."""

    status: CompletionStatus
    text: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    latency_s: float = 0.0
    #: transport-level tries the backend made (1 = first call succeeded)
    tries: int = 1
    usage: dict[str, int] = field(default_factory=dict)
    #: t2i: SHA-256 of the PNG in the image store (:mod:`genfair.models.images`)
    image: str | None = None
    #: t2i simulators: the demographic attributes drawn for the image (the planted truth)
    true_attributes: dict[str, str] | None = None
    #: t2i: the PNG bytes on their way from the backend to the image store; never cached
    png: bytes | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["png"]
        # left out when unset, so that text completions keep the cached JSON they had
        for name in ("image", "true_attributes"):
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Completion:
        return cls(**data)

    def problem(self) -> str | None:
        """Why this completion must not be stored or used as an answer, or ``None``.

        The runner checks every completion with it before caching (a malformed one would
        otherwise be replayed from the cache and crash every later run): statuses are known,
        texts are strings that UTF-8 can encode (no lone surrogates, which parquet rejects),
        and an ``ok`` completion carries a text or an image.
        """
        if self.status not in ("ok", "refused", "error"):
            return f"unknown status {self.status!r}"
        for name in ("text", "error", "finish_reason", "image"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str):
                return f"{name} is not a string ({type(value).__name__})"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return f"{name} is not valid Unicode (it holds a lone surrogate)"
        if self.status == "ok" and self.text is None and self.image is None:
            return "an ok completion without text or image"
        if not isinstance(self.usage, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in self.usage.items()
        ):
            return "usage is not a mapping of counts"
        if self.true_attributes is not None and not (
            isinstance(self.true_attributes, dict)
            and all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.true_attributes.items()
            )
        ):
            return "true_attributes is not a mapping of strings"
        return None


OnDone = Callable[[Request, Completion], None]


class LLMBackend(ABC):
    """Text in, text out. Subclasses: hf, embedded, openai, simulated."""

    #: what the backend maps: ``llm`` (text -> text), ``t2i`` (text -> image), ``vlm``
    modality: str = "llm"

    #: ``True`` when the same request always gives the same text (greedy local decoding),
    #: so re-asking after an invalid answer is pointless. Per request: :meth:`repeats`.
    deterministic: bool = False
    #: ``True`` when the backend honours a request's ``json_schema`` (constrained decoding);
    #: the runner refuses to send one to any other backend.
    supports_json_schema: bool = False
    #: ``True`` for planted-bias simulators: their results are labelled everywhere.
    simulated: bool = False
    #: the validated model config it was built from (set by :func:`genfair.models.build_backend`;
    #: ``None`` for a backend built in code): how an executor rebuilds it on another machine
    model_config: Any = None

    @property
    @abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """Identity of the model for cache keys: backend, model id, revision, sampling."""

    @property
    def runtime(self) -> dict[str, Any]:
        """How a local backend runs on this machine (engine, dtype, batch size: chosen at run
        time from the CPU, :mod:`genfair.models.cpu`), recorded in the run's params; none
        for the others."""
        return {}

    @abstractmethod
    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        """Answer every request, calling ``on_done`` as soon as each one is finished.

        Implementations must call ``on_done`` exactly once per request, with an
        ``error`` completion rather than raising when a call fails, so that the caller
        can persist each result the moment it exists.
        """

    def request_fingerprint(self, request: Request) -> dict[str, Any]:
        """The model's part of ``request``'s cache key: :attr:`fingerprint`, unless the
        request itself carries what the model does with it (a simulator's planted policy)."""
        return self.fingerprint

    def repeats(self, request: Request) -> bool:
        """Whether asking ``request`` again (a new attempt, so a new seed) would give the same
        answer, so re-asking after an invalid one is pointless. Backends whose decoding a
        request can change (its ``temperature``) override it."""
        return self.deterministic

    def prompt_tokens(self, request: Request) -> int | None:
        """How many tokens ``request``'s input is for this model, counted with its own
        tokenizer (chat template included); ``None`` when the backend has no tokenizer here
        (an HTTP endpoint, a simulator): :func:`estimated_tokens` then stands in."""
        return None

    def text_tokens(self, text: str) -> int | None:
        """How many tokens ``text`` is for this model's tokenizer; ``None`` without one."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, GPU memory)."""


class T2IBackend(LLMBackend):
    """Text in, image out. ``complete`` reports each image as an ``ok`` completion whose
    ``png`` holds the PNG bytes (``text`` may hold a revised prompt); the t2i runner
    (:func:`genfair.models.t2i.generate_images`) moves them into the image store before the
    completion is cached. Subclasses: diffusers, openai, simulated."""

    modality = "t2i"


class VLMBackend(LLMBackend):
    """Image and text in, text out: requests carry image content parts
    (:func:`genfair.models.images.image_part`) in their messages. Subclasses: hf, openai,
    simulated."""

    modality = "vlm"


class ReplicaDevice:
    """The one device of a simulated replica (:class:`~genfair.models.config.ReplicaService`)
    in this process: it serves one batch at a time, whichever simulator and thread sends it."""

    lock = threading.Lock()
    #: batches served in this process, and their requests (benchmarks read them)
    batches = 0
    requests = 0

    @classmethod
    def serve(
        cls, batch: Sequence[Request], respond: Callable[[Request], Completion], service_s: float
    ) -> list[Completion]:
        """``batch`` answered in ``service_s`` (the answers' own computing included): the
        device is held for the batch's whole service time, as a GPU's forward pass is."""
        with cls.lock:
            began = time.perf_counter()
            answers = [respond(request) for request in batch]
            time.sleep(max(0.0, service_s - (time.perf_counter() - began)))
            cls.batches += 1
            cls.requests += len(batch)
        return answers


class Simulator(LLMBackend):
    """The skeleton every SIMULATOR shares (planted-bias models, labelled ``simulated`` in
    every output): a config with named policies, a fingerprint built from it, one
    :meth:`respond` per request, a new random draw per attempt."""

    simulated = True
    deterministic = False  # a new attempt has a new seed, so a new draw
    #: how errors name it
    kind: str = "simulated model"

    def __init__(self, config: Any):
        self.config = config

    def _fingerprint(
        self, tables: Mapping[str, Mapping[str, Any]] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """``backend``, the modality (not for text: its cache keys predate modalities),
        ``model_id``, ``revision``, the backend's own ``fields``, then its policy ``tables``
        (name -> {probe kind: pydantic policy}), each policy dumped, in kind order. An empty
        table is left out, so that the cache keys of simulators configured before the table
        existed stay valid."""
        modality = {} if self.modality == "llm" else {"modality": self.modality}
        dumped = {
            name: {kind: policy.model_dump() for kind, policy in sorted(table.items())}
            for name, table in (tables or {}).items()
            if table
        }
        return {
            "backend": "simulated",
            **modality,
            "model_id": self.config.model_id,
            "revision": self.config.revision,
            **fields,
            **dumped,
        }

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        replica = getattr(self.config, "replica", None)
        if replica is None:
            for request in requests:
                on_done(request, self.respond(request))
            return
        # a simulated replica: batches paced as one GPU serves them, one at a time per process
        for batch in chunks(requests, replica.batch_size):
            answers = ReplicaDevice.serve(batch, self.respond, replica.service_time_s)
            for request, completion in zip(batch, answers, strict=True):
                on_done(request, completion)

    @abstractmethod
    def respond(self, request: Request) -> Completion:
        """The planted answer to one request."""

    @abstractmethod
    def question(self, request: Request) -> Any:
        """The request's typed question (:mod:`genfair.models.questions`)."""

    def call_seed(self, seed: int) -> int:
        """The seed its calls' seeds derive from (:func:`genfair.models.runner.ask`): the study
        ``seed`` with the model's key in the study, so two simulators of one config and plant
        are independent draws (and cached apart: a request's seed is in its key); ``seed``
        itself for a simulator built outside a study (no key)."""
        key = getattr(self.config, "_study_key", None)
        return seed if key is None else derive_seed(seed, "simulator", key)

    def settings(self) -> dict[str, Any]:
        """The model-level settings in every cache key besides backend, id and revision
        (an image's size, where the group is): none by default."""
        return {}

    def plant_key(self, plant: Any) -> dict[str, Any]:
        """A question's planted policy as it enters the cache key."""
        return plant.model_dump()

    def request_fingerprint(self, request: Request) -> dict[str, Any]:
        """A call carrying its methodology's planted policy (its question's ``plant``) is
        keyed by the model-level settings and that policy alone: editing another
        methodology's plants leaves its answers cached. Any other call: :attr:`fingerprint`
        (which covers the model config's named policies)."""
        plant = self.question(request).plant
        return (
            self.fingerprint
            if plant is None
            else self._fingerprint(**self.settings(), plant=self.plant_key(plant))
        )

    def planted(self, question: Any, meta: dict[str, Any], policies: dict[str, Any]) -> Any:
        """The policy answering ``question``: its ``plant``, else the one of ``policies`` (the
        model config's) that its ``policy`` names (:meth:`policy_name`)."""
        return (
            question.plant
            if question.plant is not None
            else policies[self.policy_name(meta, policies)]
        )

    def policy_name(self, meta: dict[str, Any], policies: dict[str, Any]) -> str:
        """The request's ``meta["policy"]`` (or its ``fallback_policy``), which ``policies``
        must configure."""
        name = meta.get("policy")
        if name not in policies:  # e.g. news_biased -> news when not configured
            name = meta.get("fallback_policy", name)
        if name not in policies:
            raise KeyError(
                f"{self.kind}: the call of probe kind {name!r} carries no planted policy "
                "(its question's plant, from the methodology's `simulated` config) and "
                f"the model configures none of that name (configured: {sorted(policies)})"
            )
        return name


def _key_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message as it enters the cache key: image parts by hash, without their path (so
    moving a data folder keeps the keys). Text messages are unchanged."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = [
        {k: v for k, v in part.items() if k != "path"}
        if isinstance(part, dict) and part.get("type") == "image"
        else part
        for part in content
    ]
    return {**message, "content": parts}


#: how :func:`estimated_tokens` counts where no tokenizer is at hand (stated in every output)
ESTIMATE_RULE = "estimate: characters / 4"


def estimated_tokens(text: str) -> int:
    """A token count without a tokenizer: one token per 4 characters, rounded up (the common
    rule of thumb for English with BPE tokenizers); labelled :data:`ESTIMATE_RULE`."""
    return -(-len(text) // 4)


def message_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of chat ``messages`` (their text parts; images are counted apart)."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(
                str(p.get("text", ""))
                for p in content
                if isinstance(p, dict) and p.get("type") == "text"
            )
    return "\n".join(parts)


def derive_seed(*parts: Any) -> int:
    """A deterministic 31-bit seed from any JSON-able parts (study seed, ids, indices)."""
    return int(stable_hash(list(parts), 8), 16) & 0x7FFFFFFF


def complete_in_batches(
    batches: Iterable[Sequence[Request]],
    run: Callable[[Sequence[Request]], list[Completion]],
    on_done: OnDone,
    what: str = "generation",
) -> None:
    """Local batched backends' ``complete``: ``run`` each batch and report every request.

    A batch that raises is data, not a crash: each of its requests gets an ``error``
    completion (logged with its traceback). Latency is the batch's time split evenly.
    """
    for batch in batches:
        began = time.perf_counter()
        try:
            completions = run(batch)
        except Exception as exc:
            logging.getLogger(__name__).exception("%s failed for a batch of %d", what, len(batch))
            completions = [
                Completion(status="error", error=f"{type(exc).__name__}: {exc}") for _ in batch
            ]
        else:
            latency = (time.perf_counter() - began) / len(batch)
            for completion in completions:
                completion.latency_s = latency
        for request, completion in zip(batch, completions, strict=True):
            on_done(request, completion)


def chunks(requests: Sequence[Request], size: int) -> list[Sequence[Request]]:
    """``requests`` in consecutive batches of at most ``size``."""
    return [requests[start : start + size] for start in range(0, len(requests), size)]


def grouped_chunks(
    requests: Sequence[Request], key: Callable[[Request], Hashable], size: int
) -> list[Sequence[Request]]:
    """Batches of at most ``size`` requests sharing ``key(request)`` (one batch generates
    with one setting), groups in the order their first request comes."""
    groups: dict[Hashable, list[Request]] = {}
    for request in requests:
        groups.setdefault(key(request), []).append(request)
    return [batch for group in groups.values() for batch in chunks(group, size)]
