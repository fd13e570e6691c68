"""The benchmarks' two modes, so that they cannot rot (issue 31, point 6).

*Full* mode is ``make benchmark`` (``pytest benchmarks --benchmark-only -s``): pytest-benchmark
times each benchmark over its rounds, at the sizes its docstring names, and every goal is
asserted. *Quick* mode is exactly "pytest-benchmark is disabled": ``--benchmark-disable``, or
any run under pytest-xdist (pytest-benchmark disables itself there), as in ``make test``. Then
``benchmark(fn)`` and ``benchmark.pedantic(fn, ...)`` call ``fn`` once, untimed, and
``benchmark.stats`` is None; each benchmark runs at small sizes through the same code paths,
every correctness assertion still on, and a timing goal the machine cannot meet at those
sizes or under that load is printed with the reason instead of asserted.

The fixture ``mode`` (a :class:`Mode`, one per session, so module fixtures can size their
data by it) carries the helpers; ``quick`` is the bare flag.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

# As in every stage (which imports genfair.study_params, hence genfair.models, before torch):
# OpenMP's idle threads sleep instead of spinning (genfair.models.local). A benchmark module
# that imports only an instrument (the answer mapper's MiniLM) would otherwise load torch with
# spinning threads: on this 2-core machine beside another job, one MiniLM encode took 0.48 s
# instead of 0.01 s, and the timings measured the contention, not genfair.
from genfair.models.local import prefer_passive_waiting

prefer_passive_waiting()

T = TypeVar("T")
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Mode:
    """Full (pytest-benchmark on: full sizes, goals asserted) or quick (off: small sizes)."""

    quick: bool

    def size(self, full: T, quick: T) -> T:
        """``full`` in full mode, ``quick`` in quick mode."""
        return quick if self.quick else full

    def goal(self, ok: bool, message: str, why: str) -> None:
        """A timing goal: asserted in full mode; in quick mode printed, met or not, with
        ``why`` it is not asserted there."""
        if not self.quick:
            assert ok, message
        else:
            print(f"\n[quick] goal {'met' if ok else 'NOT met'}: {message} (not asserted: {why})")

    def measure(
        self,
        benchmark: Any,
        target: Callable[..., T],
        *,
        rounds: int = 1,
        warmup_rounds: int = 0,
        setup: Callable[[], Any] | None = None,
        stat: str = "min",
    ) -> tuple[T, float]:
        """``benchmark.pedantic(target, ...)``'s result and seconds: the ``stat`` of its rounds
        in full mode; in quick mode, where the fixture calls ``target`` once and keeps no
        stats, that call's time."""
        seconds: list[float] = []

        def timed(*args: Any, **kwargs: Any) -> T:
            began = time.perf_counter()
            result = target(*args, **kwargs)
            seconds.append(time.perf_counter() - began)
            return result

        result = benchmark.pedantic(
            timed, setup=setup, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1
        )
        if benchmark.stats is None:  # disabled: one call
            return result, seconds[-1]
        return result, float(getattr(benchmark.stats.stats, stat))


def _disabled(config: pytest.Config) -> bool:
    """What pytest-benchmark gives every ``benchmark`` fixture as ``disabled``."""
    session = getattr(config, "_benchmarksession", None)
    return True if session is None else bool(session.disabled)


@pytest.fixture(scope="session")
def mode(pytestconfig: pytest.Config) -> Mode:
    return Mode(quick=_disabled(pytestconfig))


@pytest.fixture
def quick(benchmark: Any, mode: Mode) -> bool:
    """True when pytest-benchmark is disabled (``--benchmark-disable``, or under xdist)."""
    assert benchmark.disabled == mode.quick
    return bool(benchmark.disabled)
