"""Every parser of model text grows linearly with the answer (issue 44, point 5): the time to
read 1 MB of each hostile answer (tests/support/hostile_answers.py) over the time to read
100 kB stays near 10 (goal: at most 30, room for a shared machine; a quadratic parser gives
~100), for every parser and news_bias's sentence splitter. Measured (full mode, 2 shared
cores): all 13 within the goal, the worst 1 MB read in 0.2 s of CPU (the splitter: 0.9 s,
14x to 23x its 100 kB time).

Quick mode (benchmarks/conftest.py): 10 kB vs 100 kB, the ratio printed, not asserted (at
such sizes a call is a few milliseconds and the ratio is mostly noise of a shared machine).
Run: pytest benchmarks/test_parsers_linear.py --benchmark-only -s
"""

from __future__ import annotations

import time

import pytest

from tests.support.hostile_answers import UNITS, hostile, parsers_and_splitter

MAX_RATIO = 30.0


def _cpu_seconds(parse, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        parse(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("name", sorted(parsers_and_splitter()))
def test_parsing_grows_linearly(benchmark, mode, name: str) -> None:
    parse = parsers_and_splitter()[name]
    small, large = mode.size((100_000, 1_000_000), (10_000, 100_000))
    texts = {unit: hostile(unit, large) for unit in UNITS}
    benchmark.pedantic(lambda: [parse(t) for t in texts.values()], rounds=1, iterations=1)
    for unit in UNITS:
        ratio = _cpu_seconds(parse, hostile(unit, large)) / max(
            _cpu_seconds(parse, hostile(unit, small)), 1e-3
        )
        mode.goal(
            ratio <= MAX_RATIO,
            f"{name}, {unit!r}: {large:,} characters took {ratio:.1f}x the time of {small:,}",
            "quick sizes take milliseconds; the ratio is noise",
        )
