"""OpenAI-compatible chat-completions backend (OpenAI, vLLM, TGI, Ollama...).

Requests go out concurrently from ``config.concurrency`` workers in an asyncio loop that
:meth:`OpenAIChatBackend.complete` runs itself, since its caller is synchronous.
Transient failures (429, 408, 409, 5xx, timeouts, dropped connections, a 200 without a
usable body) are retried with exponential backoff and full jitter, honouring
``Retry-After``; any other 4xx is final. A call that still fails becomes an ``error``
completion, never an exception, so the caller can record it and move on.

A 200 is usable only when it has the documented shape: a non-empty ``choices`` list whose
message ``content`` is a string (or a string ``refusal``), valid UTF-8 JSON. Anything else
(a number, list or null content, no choices, bytes that are not UTF-8) is a malformed
response, retried like a 5xx and, if it persists, an ``error`` (never cached).

``timeout_s`` is a total deadline per HTTP request: connecting, sending, waiting and
reading the whole body must fit in it, so a server that trickles a byte at a time cannot
hold a call longer (httpx's own timeouts are per read). Each retry gets a fresh deadline.
A body larger than ``max_response_mb`` is cut off unread and the call is an ``error``; the
limit counts decoded bytes, inflated a bounded step at a time, and a body with more than one
``Content-Encoding`` (``gzip, gzip``) is an ``error`` unread
(:class:`genfair.curation.web_guard.Inflater`).

A request's decoding overrides (``temperature``, ``top_p``, ``max_tokens``) replace the
model's ``sampling`` in the body; its ``json_schema`` becomes a structured-output
``response_format`` (:func:`response_format`; OpenAI and vLLM accept it), which
``extra_body`` may still override.

The API key is read from the environment variable named in the config and is sent only
in the ``Authorization`` header: it is never part of the fingerprint, repr, logs or
error messages, and any value of a configured key variable that an answer echoes is
masked before it is stored (:mod:`genfair.models.redaction`).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import math
import os
import ssl
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

from genfair.curation.web_guard import ACCEPT_ENCODING, Inflater, Refused
from genfair.errors import ConfigError
from genfair.logs import printable
from genfair.models.base import Completion, LLMBackend, OnDone, Request
from genfair.models.config import OpenAIModelConfig
from genfair.models.endpoint_tokens import TokenCounter
from genfair.models.rate_limit import LocalWindow, Window, parse_rate, rate_name
from genfair.models.redaction import key_env_refusal, redact, register_key_env
from genfair.models.usage import valid_count

log = logging.getLogger(__name__)

#: statuses worth another try besides 5xx (the set the official OpenAI client retries)
_RETRY_STATUS = frozenset({408, 409, 429})
#: transport failures worth another try; the rest (bad URL, unsupported scheme) are final
_RETRY_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
_DETAIL_CHARS = 300


class _Transient(Exception):
    """A failed attempt worth retrying; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class Rejected(Exception):
    """A failed attempt that retrying cannot fix (a 4xx such as 400, 401, 404)."""


class OpenAIChatBackend(LLMBackend):
    """Concurrent chat completions against any OpenAI-compatible endpoint.

    The transport (workers, retries, backoff, key handling, redaction) is shared with the
    image and vision backends, which override :attr:`_path`, :meth:`_body`, :meth:`_parse`
    and :meth:`_refusal` (:mod:`genfair.models.openai_images`, :mod:`genfair.models.vlm`).
    """

    #: endpoint path under ``base_url``
    _path = "/chat/completions"
    supports_json_schema = True

    def __init__(self, config: OpenAIModelConfig):
        self.config = config
        self._url = config.base_url.rstrip("/") + self._path
        self._api_key: str | None = None
        if config.api_key_env is not None:
            refusal = key_env_refusal(config.api_key_env)
            if refusal:  # this machine's allow-list may differ from the composing one's
                raise ConfigError(f"model {config.model_id!r}: api_key_env: {refusal}")
            register_key_env(config.api_key_env)
            self._api_key = os.environ.get(config.api_key_env) or None
            if self._api_key is None:
                raise RuntimeError(
                    f"model {config.model_id!r} reads its API key from the environment "
                    f"variable {config.api_key_env}, which is not set. Set it before running "
                    f"(export {config.api_key_env}=...), or set api_key_env: null in the model "
                    "config for an endpoint without authentication (e.g. a local vLLM)."
                )
        #: where this backend's requests count against its ``rate_limit`` (``None``: no limit);
        #: a Dask worker swaps in the cluster-wide window
        self.window: Window | None = None
        if config.rate_limit is not None:
            self.window = LocalWindow(parse_rate(config.rate_limit), rate_name(config))
        self._backoff = wait_random_exponential(
            multiplier=config.backoff_initial_s, max=config.backoff_max_s
        )
        #: the chat model's own tokenizer where one can be had (None: tokens are estimated)
        self._tokens = (
            TokenCounter.of(config, self._auth()) if isinstance(config, OpenAIModelConfig) else None
        )

    def __repr__(self) -> str:
        config = self.config
        return f"{type(self).__name__}(model_id={config.model_id!r}, base_url={config.base_url!r})"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "model_id": self.config.model_id,
            "revision": self.config.revision,
            "base_url": self.config.base_url,
            "sampling": self.config.sampling.model_dump(),
            "system_prompt": self.config.system_prompt,
        }

    def repeats(self, request: Request) -> bool:
        """A model declared ``deterministic`` repeats itself at the request's effective
        temperature 0; genfair cannot tell otherwise (an endpoint's decoding is unseen)."""
        return getattr(self.config, "deterministic", False) and (
            request.sampling(self.config.sampling).temperature == 0
        )

    def prompt_tokens(self, request: Request) -> int | None:
        """The prompt's tokens by the model's tokenizer (:mod:`genfair.models.endpoint_tokens`)."""
        return None if self._tokens is None else self._tokens.prompt(request.messages)

    def text_tokens(self, text: str) -> int | None:
        return None if self._tokens is None else self._tokens.text(text)

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        if requests:
            asyncio.run(self._complete_all(requests, on_done))

    async def _complete_all(self, requests: Sequence[Request], on_done: OnDone) -> None:
        pending = iter(requests)  # shared by the workers: next() never yields to the loop
        tls = httpx.create_ssl_context()  # built once: loading the CA bundle takes ~20 ms
        workers = min(self.config.concurrency, len(requests))
        await asyncio.gather(*(self._worker(pending, on_done, tls) for _ in range(workers)))

    async def _worker(
        self, pending: Iterator[Request], on_done: OnDone, tls: ssl.SSLContext
    ) -> None:
        """Answer requests one after another over one connection of its own.

        A client per worker rather than one shared pool: httpcore 1.0's pool rescans every
        connection on each request (encode/httpcore#1035), which at 32 connections costs
        more CPU than the request itself. A worker keeps its slot through backoff sleeps,
        so a rate-limited endpoint sees fewer requests, not the same number.
        """
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **self._auth()}  # what Inflater decodes
        async with httpx.AsyncClient(
            headers=headers,
            timeout=self.config.timeout_s,
            verify=tls,
            limits=httpx.Limits(max_connections=1),
        ) as client:
            for request in pending:
                on_done(request, await self._call(client, request))

    async def _call(self, client: httpx.AsyncClient, request: Request) -> Completion:
        """One request with its retries; every failure becomes an ``error`` completion."""
        # a fresh controller per request: tenacity keeps per-call state on the instance
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(_Transient),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            completion = await retrying(self._attempt, client, self._body(request))
        except Exception as exc:  # a failed call is data, not a crash
            error = str(exc) if isinstance(exc, _Transient | Rejected) else _describe(exc)
            completion = Completion(status="error", error=self._redact(error))
        # 0 when the request could not even be built (e.g. an unreadable input image)
        completion.tries = retrying.statistics.get("attempt_number", 0)
        if completion.status == "error":
            log.warning("request failed after %d tries: %s", completion.tries, completion.error)
        return completion

    def _body(self, request: Request) -> dict[str, Any]:
        messages = list(request.messages)
        if self.config.system_prompt:
            messages.insert(0, {"role": "system", "content": self.config.system_prompt})
        sampling = request.sampling(self.config.sampling)
        body: dict[str, Any] = {
            "model": self.config.model_id,
            "messages": messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if self.config.send_seed:
            body["seed"] = request.seed
        if request.json_schema is not None:
            body["response_format"] = response_format(request.json_schema)
        return {**body, **self.config.extra_body}

    async def _attempt(self, client: httpx.AsyncClient, body: dict[str, Any]) -> Completion:
        # every HTTP request counts against the rate limit, retries too (waiting is outside its
        # deadline)
        async with self.window.slot() if self.window is not None else contextlib.nullcontext():
            return await self._exchange(client, body)

    async def _exchange(self, client: httpx.AsyncClient, body: dict[str, Any]) -> Completion:
        began = time.perf_counter()
        timeout = self.config.timeout_s
        try:
            async with asyncio.timeout(timeout):  # the whole exchange, not each read
                response = await self._post(client, body)
        except TimeoutError as exc:
            raise _Transient(f"no complete answer within timeout_s = {timeout:g} s") from exc
        except _RETRY_ERRORS as exc:
            raise _Transient(_describe(exc)) from exc
        latency = time.perf_counter() - began

        status = response.status_code
        if status in _RETRY_STATUS or status >= 500:
            hint = _retry_after_s(response.headers)
            raise _Transient(f"HTTP {status}: {error_detail(response)}", hint)
        if status != 200:
            refused = self._refusal(response)
            if refused is not None:
                refused.latency_s = latency
                return refused
            raise Rejected(f"HTTP {status}: {error_detail(response)}")
        try:
            completion = self._parse(response_json(response), latency)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:  # a server hiccup
            raise _Transient(f"malformed response: {_describe(exc)}"[:_DETAIL_CHARS]) from exc
        return await self._finished(completion, body.get("max_tokens"))

    async def _finished(self, completion: Completion, limit: Any) -> Completion:
        """``completion`` with genfair's ``finish_reason`` (docs/methodology.md, "Article
        length"): ``length`` only where the limit cut an answer the model had not ended. A
        server that says ``length`` for every answer of ``max_tokens`` tokens, its end token
        counted (``transformers serve``), is told apart with the model's tokenizer
        (``tokenizer``): an answer that ended on its last allowed token is one token longer in
        its ``usage`` than its text, which holds no end token. Without a tokenizer (or
        ``usage``), the server's word is kept."""
        if (
            self._tokens is None
            or completion.finish_reason != "length"
            or not isinstance(limit, int)
            or completion.usage.get("completion_tokens") != limit
            or not completion.text
        ):
            return completion
        counted = await asyncio.to_thread(self._tokens.text, completion.text)
        return replace(completion, finish_reason="stop") if counted == limit - 1 else completion

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
        """POST ``body`` and read the answer, refusing one larger than ``max_response_mb``
        before it fills memory."""
        limit = int(self.config.max_response_mb * 2**20)
        too_big = Rejected(
            f"response larger than max_response_mb = {self.config.max_response_mb:g} MiB, not "
            "read; raise max_response_mb in the model config if answers this large are expected"
        )
        async with client.stream("POST", self._url, json=body) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise too_big
            if (
                declared.isdigit()
                and response.headers.get("content-encoding", "identity") == "identity"
            ):
                await response.aread()  # the usual case: its size is known and within the cap
                return response
            try:  # decoded here, bounded per step: a gzip bomb counts in full, stacked ones
                inflater = Inflater(response.headers.get("content-encoding", ""), limit)
                async for part in response.aiter_raw():
                    inflater.feed(part)
            except Refused as exc:
                raise (too_big if exc.reason == "too_large" else Rejected(str(exc))) from None
        # the body is decoded already: drop the headers that describe its wire form
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=bytes(inflater.body),
            request=response.request,
        )

    def _refusal(self, response: httpx.Response) -> Completion | None:
        """A non-200 answer that is a content-policy refusal rather than a failure; the
        chat endpoint reports refusals inside a 200, so here there are none."""
        return None

    def _parse(self, data: Any, latency: float) -> Completion:
        """The completion in a 200 body; a lookup, type or value error means a malformed
        body (retried, never cached)."""
        choices = json_field(data, "choices", list)
        if not choices:
            raise ValueError("the answer has an empty choices list")
        choice = json_field(choices, 0, dict)
        message = json_field(choice, "message", dict)
        refusal = json_field(message, "refusal", str, optional=True)
        # a refusal may come without content; an answer must have a string content
        text = json_field(message, "content", str, optional=bool(refusal))
        finish_reason = json_field(choice, "finish_reason", str, optional=True)
        refused = bool(refusal) or finish_reason == "content_filter"
        return Completion(
            status="refused" if refused else "ok",
            text=self._redact(refusal or text),
            finish_reason=finish_reason,
            latency_s=latency,
            usage=token_usage(data),
        )

    def _wait(self, state: RetryCallState) -> float:
        """Full-jitter backoff, but never sooner than the server's ``Retry-After``."""
        wait = self._backoff(state)
        exc = state.outcome.exception() if state.outcome else None
        hint = getattr(exc, "retry_after", None)
        if hint is not None:
            wait = max(wait, min(hint, self.config.backoff_max_s))
        return wait

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.info(
            "%s; retry %d of %d in %.2fs",
            self._redact(str(exc)),
            state.attempt_number,
            self.config.max_retries,
            wait,
        )

    def _redact(self, text: str) -> str:
        """Remove the key, and any other configured key, from server-provided text (some
        servers echo it back; a model may repeat it)."""
        if not isinstance(text, str):
            return text
        text = text.replace(self._api_key, "[redacted]") if self._api_key else text
        return redact(text)


def response_format(
    schema: dict[str, Any], name: str = "response", strict: bool = False
) -> dict[str, Any]:
    """``schema`` as an OpenAI-compatible structured-output ``response_format`` (vLLM accepts
    it too). ``strict: false``: OpenAI's strict mode refuses some keywords (minLength,
    minItems) on some models; the answer is validated by its caller either way."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": strict},
    }


def _describe(exc: BaseException) -> str:
    """``Type: message``, or just the type for exceptions without a message (timeouts)."""
    return f"{type(exc).__name__}: {printable(exc)}" if str(exc) else type(exc).__name__


_KINDS = {str: "a string", list: "a list", dict: "an object"}


def json_field(container: Any, key: str | int, kind: type, optional: bool = False) -> Any:
    """``container[key]`` checked to be a ``kind`` (``None`` allowed when ``optional``);
    ``ValueError`` naming the field and what it held otherwise."""
    if isinstance(key, int):
        value = container[key] if isinstance(container, list) and len(container) > key else None
    elif isinstance(container, dict):
        value = container.get(key)
    else:
        raise ValueError(f"expected a JSON object holding {key!r}, got {_kind(container)}")
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{key!r} is {_kind(value)}, not {_KINDS.get(kind, kind.__name__)}")
    if isinstance(value, str):
        try:  # JSON may escape a lone surrogate, which no UTF-8 file (parquet, cache) can hold
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{key!r} is not valid Unicode (a lone surrogate)") from None
    return value


def _kind(value: Any) -> str:
    """What a JSON value is, for error messages (never the value itself: it may be huge)."""
    if value is None:
        return "missing or null"
    names = {bool: "a boolean", int: "a number", float: "a number", **_KINDS}
    return names.get(type(value), type(value).__name__)


def token_usage(data: dict[str, Any]) -> dict[str, int]:
    """Token counts only: nested details such as ``completion_tokens_details`` dropped, and a
    count that is none (negative, NaN, ``Infinity``, 10^4000: :func:`valid_count`) left out,
    so the answer's tokens are counted as without ``usage`` and no budget adds it up."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return {}
    bad = sorted(
        str(k)
        for k, v in usage.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and not valid_count(v)
    )
    if bad:
        log.warning("the endpoint's usage of %s is no count; counted as unknown", ", ".join(bad))
    return {str(k): v for k, v in usage.items() if valid_count(v)}


def response_json(response: httpx.Response) -> Any:
    """The body as JSON; ``ValueError`` (a malformed answer, retried) also for nesting deeper
    than Python's parser follows, where ``json`` raises ``RecursionError``."""
    try:
        return response.json()
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def error_detail(response: httpx.Response) -> str:
    """The server's error message (OpenAI's ``error.message`` when present), truncated."""
    try:
        message = response_json(response)["error"]["message"]
    except (ValueError, LookupError, TypeError):
        message = response.text
    return printable(str(message)[:_DETAIL_CHARS])  # an endpoint's text: one line, no escapes


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The server's wait hint in seconds: OpenAI's ``retry-after-ms``, else ``Retry-After``
    (delta-seconds or HTTP-date). Never raises: a hint no clock can hold (the year
    99999999999) is ``inf`` and one that is no number (``nan``, ``soon``) is ``None``; the
    caller caps the wait at ``backoff_max_s``."""
    if (ms := headers.get("retry-after-ms")) is not None:
        with contextlib.suppress(ValueError):
            return _seconds(float(ms) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return _seconds(float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except OverflowError:  # a year past datetime's range: "wait forever", capped by the caller
        return math.inf
    except (TypeError, ValueError, IndexError):
        return None
    return _seconds(when.timestamp() - time.time())


def _seconds(value: float) -> float | None:
    return None if math.isnan(value) else max(0.0, value)
