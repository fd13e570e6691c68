"""The response cache on SQLite and on PostgreSQL (issue 23.8).

1. ``put`` and ``get`` throughput (committed single-entry operations, as the runner makes
   them) from 1 and from 4 processes sharing one store.
2. The cost of a team's PostgreSQL cache on a study: the toy quiz's generate step against
   the mock endpoint at a fixed latency (4 calls at once), so the step's time is mostly the
   endpoint's, as against a real model; cold cache. Paired: each pair runs the step once on
   SQLite and once on PostgreSQL, back to back (in ABBA order, so neither store always goes
   first), and the overhead is the median over pairs of ``postgresql_s / sqlite_s - 1``: the
   machine's load varies between pairs far more than within one. The goal is under 5%.

Quick mode (benchmarks/conftest.py): 50 operations of each kind per process, and 2 processes
where full mode starts 4 (the ``-4`` cases: still several writers on one store, for half the
processes to spawn); one pair of 12-call steps (every call still paid and counted), the 5%
goal printed, not asserted.

    PYTHONPATH=src pytest benchmarks/test_cache_throughput.py --benchmark-only -q -s

The figures are recorded in docs/scale-out.md.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from pathlib import Path

import pytest

from genfair.models.base import Completion
from genfair.models.cache import ResponseCache
from tests.support.servers import PostgresServer, postgres, postgres_db  # noqa: F401 - fixtures

#: operations of each kind per process, questions of the toy quiz, pairs of steps: full mode,
#: quick mode (full: ideal step 120 / 4 * 0.2 = 6 s: the endpoint's latency dominates)
SIZES = {"full": (400, 120, 7), "quick": (50, 12, 1)}
LATENCY_S = 0.2
MAX_OVERHEAD = 0.05


def _worker(url: str, tag: str, n: int, start, out) -> None:  # noqa: ANN001 - multiprocessing
    with ResponseCache(url) as cache:
        keys = [f"{tag}-{i:05d}" for i in range(n)]
        completion = Completion(status="ok", text="x" * 200, finish_reason="stop", latency_s=0.1)
        start.wait()
        began = time.perf_counter()
        for key in keys:
            cache.put(key, "bench:model", completion)
        put_s = time.perf_counter() - began
        began = time.perf_counter()
        for key in keys:
            assert cache.get(key) is not None
        out.put((put_s, time.perf_counter() - began))


def _throughput(url: str, processes: int, n: int) -> tuple[float, float]:
    """Aggregate puts/s and gets/s of ``processes`` processes working at once."""
    ResponseCache(url).close()
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(url, f"p{i}-{time.time_ns()}", n, start, out))
        for i in range(processes)
    ]
    for proc in procs:
        proc.start()
    start.set()
    times = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    # every process did n of each: the wall time is the slowest one's
    return processes * n / max(t[0] for t in times), processes * n / max(t[1] for t in times)


@pytest.mark.parametrize("processes", [1, 4])
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_cache_get_put_throughput(
    benchmark,
    mode,
    store: str,
    processes: int,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if store == "sqlite":
        url = f"sqlite:///{tmp_path / 'responses.sqlite'}"
    else:
        server: PostgresServer = request.getfixturevalue("postgres")
        monkeypatch.setenv("PGPASSWORD", server.password)
        url = request.getfixturevalue("postgres_db")
    figures: list[tuple[float, float]] = []
    n, _, _ = SIZES[mode.size("full", "quick")]
    processes = mode.size(processes, min(processes, 2))
    benchmark.pedantic(
        lambda: figures.append(_throughput(url, processes, n)), rounds=1, iterations=1
    )
    puts, gets = figures[0]
    benchmark.extra_info.update(puts_per_s=round(puts), gets_per_s=round(gets))
    print(f"\n{store}, {processes} process(es): {puts:,.0f} puts/s, {gets:,.0f} gets/s")
    assert puts > 0 and gets > 0


def test_postgresql_cache_overhead_on_a_study(  # type: ignore[no-untyped-def]
    benchmark,
    mode,
    postgres: PostgresServer,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from genfair.methodologies import register
    from genfair.study.layout import Layout
    from genfair.study.steps import generate, make_probes
    from genfair.study_params import StudyParams
    from tests.study.toy_methodology import Quiz
    from tests.support.endpoint_study import endpoint_params
    from tests.support.mock_openai import MockOpenAI

    register(Quiz)
    _, questions, pairs_n = SIZES[mode.size("full", "quick")]
    monkeypatch.setenv("PGPASSWORD", postgres.password)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "local"))
    seconds: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    # lifetime: 2 x pairs_n runs of ~8 s, several times that on a loaded machine
    with MockOpenAI(latency_s=LATENCY_S, lifetime_s=1800) as server:  # noqa: SIM117
        params = StudyParams.model_validate(endpoint_params(tmp_path, server.url, questions))

        def study(store: str, i: int) -> None:
            url = (
                f"sqlite:///{tmp_path / f'sqlite{i}' / 'responses.sqlite'}"
                if store == "sqlite"
                else postgres.url(postgres.create_database())
            )
            monkeypatch.setenv("GENFAIR_CACHE_URL", url)
            layout = Layout(tmp_path / f"{store}{i}")
            make_probes(params, "toy_quiz", layout)
            began = time.perf_counter()
            generate(params, "endpoint", "toy_quiz", layout)
            seconds[store].append(time.perf_counter() - began)

        def pairs() -> None:
            for i in range(pairs_n):
                for store in ("sqlite", "postgresql")[:: 1 if i % 2 == 0 else -1]:
                    study(store, i)

        load_before = os.getloadavg()[0]
        benchmark.pedantic(pairs, rounds=1, iterations=1)
    ratios = [pg / lite for lite, pg in zip(seconds["sqlite"], seconds["postgresql"], strict=True)]
    overhead = statistics.median(ratios) - 1
    sqlite_s, pg_s = statistics.median(seconds["sqlite"]), statistics.median(seconds["postgresql"])
    ideal = questions * LATENCY_S / 4
    load = f"{load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    benchmark.extra_info.update(
        sqlite_s=round(sqlite_s, 3),
        postgresql_s=round(pg_s, 3),
        overhead=round(overhead, 4),
        pair_ratios=[round(r, 4) for r in ratios],
        load_average=load,
    )
    print(
        f"\n{questions} calls at {LATENCY_S * 1000:.0f} ms, 4 at once (ideal {ideal:.1f} s), "
        f"{pairs_n} pairs, load average {load}: SQLite cache {sqlite_s:.2f} s, PostgreSQL cache "
        f"{pg_s:.2f} s (medians); per-pair PostgreSQL/SQLite "
        f"{', '.join(f'{r:.3f}' for r in ratios)}: overhead {overhead:+.1%} (median)"
    )
    assert server.calls == 2 * pairs_n * questions  # every run paid its calls (cold caches)
    mode.goal(
        overhead < MAX_OVERHEAD,
        f"the PostgreSQL cache costs {overhead:+.1%} of the generate step (under "
        f"{MAX_OVERHEAD:.0%})",
        "one pair of 0.6 s steps: the machine's load moves a single ratio by more than 5%",
    )
