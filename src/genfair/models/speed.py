"""How fast an OpenAI-compatible endpoint answers, and whether its ``concurrency`` pays
(``genfair try``, issue 45.7).

A short probe: :data:`SERIAL_CALLS` calls one at a time, then :data:`ROUNDS` times the
model's ``concurrency`` calls at that concurrency, each the same one-line chat prompt with a
number of its own (so no server-side cache answers it) at the model's own ``sampling``. It
reports the mean latency of a call sent alone and the calls per second at each concurrency:
a server that answers one request at a time (``transformers serve`` without continuous
batching) gets nothing from more than 1, and one whose threads fight over the cores gets
less. The probe's calls go to the endpoint directly: not through the response cache, not
in the usage ledger; their count is printed with the result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from genfair.models import build_backend
from genfair.models.base import Completion, Request

#: calls sent one at a time
SERIAL_CALLS = 3
#: rounds of ``concurrency`` calls sent at the model's concurrency
ROUNDS = 2
#: the probe's prompt (``{n}``: the call's number)
PROMPT = "Reply with one word: is {n} an even number?"
#: below this speed-up at the configured concurrency, more concurrency buys nothing
NO_GAIN = 1.5


@dataclass(frozen=True)
class Speed:
    """A probe's result: ``latency_s`` of a call alone, calls per second at 1 and at
    ``concurrency``; ``failed`` calls (``error``: the first one's) make no figure."""

    concurrency: int
    calls: int
    latency_s: float | None = None
    serial_per_s: float | None = None
    concurrent_per_s: float | None = None
    failed: int = 0
    error: str | None = None

    @property
    def gain(self) -> float | None:
        """Calls per second at ``concurrency`` over those at 1."""
        if not self.serial_per_s or self.concurrent_per_s is None:
            return None
        return self.concurrent_per_s / self.serial_per_s

    def summary(self) -> str:
        """The result in words, with what to set."""
        head = f"endpoint speed ({self.calls} probe calls, not cached, not in the usage ledger): "
        if self.failed or self.gain is None:
            return head + f"{self.failed} of {self.calls} calls failed ({self.error}); no figure"
        gain = self.gain
        text = (
            f"{self.latency_s:.3g} s a call alone; {self.serial_per_s:.3g} calls/s at "
            f"concurrency 1, {self.concurrent_per_s:.3g} at {self.concurrency} ({gain:.2f}x)"
        )
        if self.concurrency == 1:
            return head + text
        if gain < 1 / NO_GAIN:
            verdict = (
                "slower than one at a time: set concurrency lower, or the server's threads "
                "(docs/serving.md)"
            )
        elif gain < NO_GAIN:
            verdict = (
                f"concurrency {self.concurrency} buys nothing: the server answers about one "
                "request at a time (docs/serving.md)"
            )
        else:
            verdict = f"concurrency {self.concurrency} pays"
        return head + text + ": " + verdict


def measure(config: Any) -> Speed:
    """Probe the endpoint of ``config`` (an OpenAI-compatible chat model config)."""
    concurrency = config.concurrency
    serial = _timed(build_backend(config.model_copy(update={"concurrency": 1})), SERIAL_CALLS, 0)
    wide = _timed(build_backend(config), ROUNDS * concurrency, SERIAL_CALLS)
    answers = serial[1] + wide[1]
    failed = [c for c in answers if c.status == "error"]
    if failed:
        return Speed(concurrency, len(answers), failed=len(failed), error=failed[0].error)
    return Speed(
        concurrency,
        len(answers),
        latency_s=sum(c.latency_s for c in serial[1]) / SERIAL_CALLS,
        serial_per_s=SERIAL_CALLS / serial[0],
        concurrent_per_s=len(wide[1]) / wide[0],
    )


def _timed(backend: Any, calls: int, first: int) -> tuple[float, Sequence[Completion]]:
    """Seconds the endpoint took to answer ``calls`` probe calls (numbered from ``first``),
    and the answers."""
    requests = [
        Request(messages=({"role": "user", "content": PROMPT.format(n=first + n)},))
        for n in range(calls)
    ]
    answers: list[Completion] = []
    done: list[float] = []

    def on_done(_: Request, completion: Completion) -> None:
        done.append(time.perf_counter())
        answers.append(completion)

    backend.complete(requests, on_done)
    # from the first request's start to the last answer: the client's own start-up (an event
    # loop, a TLS context) is no part of the server's speed
    began = done[0] - answers[0].latency_s if done else 0.0
    return max(done[-1] - began if done else 0.0, 1e-9), answers
