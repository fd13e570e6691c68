"""A local OpenAI-compatible chat-completions server for tests and benchmarks.

``MockOpenAI`` listens on 127.0.0.1 on an ephemeral port, in a background thread, and
answers ``POST /v1/chat/completions`` after ``latency_s``. By default it echoes the last
user message (``"echo: <message>"``) so a test can check which answer went to which
request. Faults are scripted per call number (``faults={0: Fault.rate_limit(0.2)}``) or
per prompt (``prompt_faults={"q1": [Fault.server_error(), Fault.malformed()]}``: the
first two calls carrying "q1" fail, later ones are answered). It records every request
(headers and body) and the largest number it ever served at once (``max_in_flight``,
which counts a hung request until its delay ends, even after the client gave up).

``Fault.trickle(interval_s, n)`` sends the answer's status line and headers at once, then
``n`` bytes of leading JSON whitespace one every ``interval_s`` before the body (a server
that keeps a connection busy without answering); ``Fault.content(value)`` answers with any
JSON value as the message content (a number, a list, null); ``Fault.empty_choices()``,
``Fault.huge(n)`` and ``Fault.not_utf8()`` script the other malformed 200s.

``POST /v1/images/generations`` answers with a small PNG (base64) whose colour is derived
from the prompt, and ``revised_prompt = "revised: <prompt>"``; ``Fault.content_policy()``
and ``Fault.moderation_blocked()`` script OpenAI's content-policy refusals. A chat message
whose content is a list (vision input) is keyed by its text parts, and every image URL it
carries is recorded in ``image_urls``.

With ``tokenize=True`` it also serves vLLM's ``POST /tokenize`` (at its root, beside
``/v1``): ``{"count": n, "tokens": [...]}``, counting a word a token plus
:data:`TEMPLATE_TOKENS` per chat message (its chat template); without, that route is a 404, as
on ``transformers serve`` or a hosted API.

With ``serial=True`` it answers one request at a time, as ``transformers serve`` without
continuous batching does: the others wait their turn.

It is bounded: delays end early when the server stops, at most ``max_recorded`` requests
are kept, and it stops itself after ``lifetime_s`` if nobody stopped it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PATH = "/v1/chat/completions"
IMAGES_PATH = "/v1/images/generations"
TOKENIZE_PATH = "/tokenize"
#: the tokens the mock's chat template adds per message (its role and an end token)
TEMPLATE_TOKENS = 2


@dataclass(frozen=True)
class Fault:
    """What the server does instead of (or before) a normal answer to one call."""

    status: int = 200
    #: extra wait before answering; longer than the client's timeout it is a hang
    delay_s: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    #: raw response body sent instead of the normal answer or error
    body: str | bytes | None = None
    #: with ``has_content``, the message content sent instead of the echo (any JSON value)
    message_content: Any = None
    has_content: bool = False
    #: seconds between the trickled leading bytes of the body, and how many there are
    trickle_s: float = 0.0
    trickle_bytes: int = 0
    #: send the body with ``Transfer-Encoding: chunked`` (no Content-Length)
    chunked: bool = False
    finish_reason: str = "stop"
    #: completion tokens its ``usage`` counts beyond the text's words (an end token)
    unseen_tokens: int = 0
    refusal: str | None = None
    #: ``error.code`` of an error response (e.g. ``content_policy_violation``)
    error_code: str | None = None
    #: wait (after the latency) until :meth:`MockOpenAI.release`: set by :meth:`MockOpenAI.hold`
    held: bool = False

    @classmethod
    def rate_limit(cls, retry_after: float | str | None = None) -> Fault:
        headers = () if retry_after is None else (("Retry-After", str(retry_after)),)
        return cls(status=429, headers=headers)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls(status=status)

    @classmethod
    def unauthorized(cls) -> Fault:
        return cls(status=401)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        return cls(delay_s=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        return cls(body='{"choices": [')

    @classmethod
    def missing_choices(cls) -> Fault:
        return cls(body='{"id": "chatcmpl-mock", "object": "chat.completion"}')

    @classmethod
    def content(cls, value: Any) -> Fault:
        """A 200 whose message content is ``value`` as is (a number, list, null...)."""
        return cls(message_content=value, has_content=True)

    @classmethod
    def empty_choices(cls) -> Fault:
        return cls(
            body=json.dumps({"id": "chatcmpl-mock", "object": "chat.completion", "choices": []})
        )

    @classmethod
    def huge(cls, n_bytes: int, chunked: bool = False) -> Fault:
        """A 200 whose content is ``n_bytes`` of text (a runaway completion), with its size
        declared or (``chunked``) not."""
        return cls(message_content="x" * n_bytes, has_content=True, chunked=chunked)

    @classmethod
    def not_utf8(cls) -> Fault:
        """A 200 whose body is Latin-1 bytes that are not valid UTF-8."""
        answer = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "caf\u00e9"},
                    "finish_reason": "stop",
                }
            ]
        }
        return cls(body=json.dumps(answer, ensure_ascii=False).encode("latin-1"))

    @classmethod
    def trickle(cls, interval_s: float, n_bytes: int) -> Fault:
        """The answer after ``n_bytes`` leading spaces sent one every ``interval_s``."""
        return cls(trickle_s=interval_s, trickle_bytes=n_bytes)

    @classmethod
    def content_filter(cls) -> Fault:
        return cls(finish_reason="content_filter")

    @classmethod
    def refused(cls, refusal: str = "I can't help with that.") -> Fault:
        return cls(refusal=refusal)

    @classmethod
    def content_policy(cls) -> Fault:
        """dall-e's refusal: a 400 with ``code: content_policy_violation``."""
        return cls(status=400, error_code="content_policy_violation")

    @classmethod
    def moderation_blocked(cls) -> Fault:
        """gpt-image's refusal: a 400 with ``code: moderation_blocked``."""
        return cls(status=400, error_code="moderation_blocked")

    @classmethod
    def image_without_data(cls) -> Fault:
        """A 200 whose image has no bytes (how some servers report a filtered image)."""
        return cls(body=json.dumps({"created": 0, "data": [{"revised_prompt": "filtered"}]}))


NO_FAULT = Fault()


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any] | None
    received_at: float  # time.perf_counter()


class MockOpenAI:
    """The fake endpoint; use as a context manager or via the ``mock_openai`` fixture."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        reply: str | None = None,
        faults: Mapping[int, Fault] | None = None,
        prompt_faults: Mapping[str, Sequence[Fault]] | None = None,
        lifetime_s: float = 120.0,
        max_recorded: int = 10_000,
        tokenize: bool = False,
        serial: bool = False,
    ):
        self.latency_s = latency_s
        self.tokenize = tokenize
        #: held while a request is answered, when the server answers one at a time
        self._serving: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if serial else contextlib.nullcontext()
        )
        #: fixed answer text; ``None`` echoes the last user message
        self.reply = reply
        self._faults = dict(faults or {})
        self._prompt_faults = {k: deque(v) for k, v in (prompt_faults or {}).items()}
        self._lifetime_s = lifetime_s
        self.requests: deque[Recorded] = deque(maxlen=max_recorded)
        #: every ``image_url.url`` received in chat messages (vision requests), in order
        self.image_urls: deque[str] = deque(maxlen=max_recorded)
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        #: calls numbered from this one on wait for :meth:`release` (``None``: none wait)
        self._hold_from: int | None = None
        #: only calls with this ``Authorization`` header are held (``None``: any call)
        self._hold_auth: str | None = None
        self._released = threading.Event()
        #: requests waiting in a hold now: a test's signal that a client is mid-call
        self.held = 0
        self._server: _Server | None = None
        self._timer: threading.Timer | None = None

    @property
    def url(self) -> str:
        """The ``base_url`` to configure a client with."""
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> MockOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.mock = self
        self._server = server
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        self._timer = threading.Timer(self._lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes handlers sleeping in a latency or a hang
        server.shutdown()
        server.server_close()
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()

    def most_started_within(self, window_s: float) -> int:
        """The most requests this server received in any ``window_s`` seconds: what a
        client-side rate limit bounds (receipt times, so allow for transit jitter)."""
        times = sorted(r.received_at for r in self.requests)
        first, most = 0, 0
        for last, t in enumerate(times):
            while t - times[first] >= window_s:
                first += 1
            most = max(most, last - first + 1)
        return most

    def hold(self, from_call: int, authorization: str | None = None) -> None:
        """Answer calls numbered ``from_call`` and later (0-based, counted over the server's
        life) only after :meth:`release`: a test waits for ``held`` to be positive, and so
        interrupts a client at a known moment, however fast or loaded the machine. With
        ``authorization``, only calls sending that header are held: a client of its own (an
        API key of its own), so a late request of a killed earlier client is never the one."""
        with self._lock:
            self._released.clear()
            self._hold_from, self._hold_auth = from_call, authorization

    def release(self) -> None:
        with self._lock:
            self._hold_from = self._hold_auth = None
            self._released.set()

    def __enter__(self) -> MockOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- called from handler threads -------------------------------------------------

    def _begin(self, path: str, headers: dict[str, str], body: dict[str, Any] | None) -> Fault:
        """Record a request and pick its fault."""
        prompt = _last_user_message(body)
        with self._lock:
            self.requests.append(Recorded(path, headers, body, time.perf_counter()))
            self.image_urls.extend(_image_urls(body))
            fault = self._faults.get(self.calls, NO_FAULT)
            scripted = self._prompt_faults.get(prompt)
            if scripted:
                fault = scripted.popleft()
            if (
                self._hold_from is not None
                and self.calls >= self._hold_from
                and self._hold_auth in (None, headers.get("authorization"))
            ):
                fault = replace(fault, held=True)
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return fault

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _answer(
        self, fault: Fault, body: dict[str, Any], path: str = PATH
    ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body of the response to one request."""
        self._stopping.wait(self.latency_s + fault.delay_s)
        if fault.held:
            with self._lock:
                self.held += 1
            while not (self._released.wait(0.05) or self._stopping.is_set()):
                pass
            with self._lock:
                self.held -= 1
        headers = {"Content-Type": "application/json", **dict(fault.headers)}
        if fault.body is not None:
            body_bytes = fault.body.encode() if isinstance(fault.body, str) else fault.body
            return fault.status, headers, body_bytes
        if fault.status != 200:
            error = {"message": f"mock error {fault.status}", "type": "mock", "code": fault.status}
            if fault.error_code is not None:
                error.update(code=fault.error_code, type="invalid_request_error")
            return fault.status, headers, json.dumps({"error": error}).encode()
        prompt = _last_user_message(body)
        if path == IMAGES_PATH:
            image = {"b64_json": _png_b64(prompt), "revised_prompt": f"revised: {prompt}"}
            return 200, headers, json.dumps({"created": int(time.time()), "data": [image]}).encode()
        content = self.reply if self.reply is not None else f"echo: {prompt}"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if fault.has_content:
            message["content"] = fault.message_content
            content = json.dumps(fault.message_content)
        if fault.refusal:  # as OpenAI sends structured refusals: no content, a refusal
            message.update(content=None, refusal=fault.refusal)
        answer = {
            "id": f"chatcmpl-mock-{self.calls}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "mock"),
            "choices": [{"index": 0, "message": message, "finish_reason": fault.finish_reason}],
            "usage": {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": len(content.split()) + fault.unseen_tokens,
                "total_tokens": len(prompt.split()) + len(content.split()) + fault.unseen_tokens,
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        }
        return 200, headers, json.dumps(answer).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck in a hang must not keep the process alive
    request_queue_size = 512  # listen backlog: a burst of new connections must not be refused
    mock: MockOpenAI


class _Handler(BaseHTTPRequestHandler):
    # keep-alive, as a real API: one connection per client slot instead of one per call
    protocol_version = "HTTP/1.1"
    # headers and body are separate writes; without this, Nagle holds the body back
    disable_nagle_algorithm = True

    server: _Server

    def do_POST(self) -> None:
        mock = self.server.mock
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault = mock._begin(self.path, headers, body)
        try:
            known = self.path in (PATH, IMAGES_PATH) or (
                self.path == TOKENIZE_PATH and mock.tokenize
            )
            if known and body is not None and self.path == TOKENIZE_PATH:
                status, out_headers, out = 200, {}, json.dumps(_tokenized(body)).encode()
            elif not known or body is None:
                status = 404 if not known else 400
                out_headers, out = {}, json.dumps({"error": {"message": "bad request"}}).encode()
            else:
                with mock._serving:
                    status, out_headers, out = mock._answer(fault, body, self.path)
            lead = b" " * fault.trickle_bytes  # JSON allows leading whitespace
            self.send_response(status)
            for name, value in out_headers.items():
                self.send_header(name, value)
            if fault.chunked:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for start in range(0, len(out), 65536):
                    part = out[start : start + 65536]
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_header("Content-Length", str(len(lead) + len(out)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(lead)):
                self.wfile.write(lead[i : i + 1])
                self.wfile.flush()
                if mock._stopping.wait(fault.trickle_s):
                    return
            self.wfile.write(out)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True
        finally:
            mock._end()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the per-request stderr line."""


def _last_user_message(body: dict[str, Any] | None) -> str:
    """The prompt a request is keyed by: the last user message (its text parts, for vision
    input), or an image request's ``prompt``."""
    if body and "prompt" in body and "messages" not in body:
        return str(body["prompt"])
    for message in reversed((body or {}).get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content", "")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
            return str(content)
    return ""


def _tokenized(body: dict[str, Any]) -> dict[str, Any]:
    """vLLM's tokenize answer: a word a token, :data:`TEMPLATE_TOKENS` more per message."""
    if "messages" in body:
        count = sum(
            len(str(m.get("content", "")).split()) + TEMPLATE_TOKENS for m in body["messages"]
        )
    else:
        count = len(str(body.get("prompt", "")).split())
    return {"count": count, "max_model_len": 2048, "tokens": list(range(count))}


def _image_urls(body: dict[str, Any] | None) -> list[str]:
    urls = []
    for message in (body or {}).get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            urls += [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    return urls


def _png_b64(prompt: str) -> str:
    """An 8x8 PNG of one colour derived from the prompt, base64-encoded."""
    import base64
    import hashlib
    import io

    from PIL import Image

    colour = tuple(hashlib.sha256(prompt.encode()).digest()[:3])
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@pytest.fixture
def mock_openai() -> Iterator[Callable[..., MockOpenAI]]:
    """A factory of started servers (``MockOpenAI`` arguments), all stopped at teardown."""
    servers: list[MockOpenAI] = []

    def start(**kwargs: Any) -> MockOpenAI:
        servers.append(MockOpenAI(**kwargs).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()
