"""Time of a no-op `dvc repro` on the study's pipeline, against `dvc status` in the same run
(issue 25 point 4), both timed in alternating pairs so the machine's load hits both alike.

Full mode (`make benchmark`): the benchmark builds a study of its own (minutes): the smoke
study without SmolLM2 (``LIGHT_SMOKE``), whose always-running stages are the default study's
(`always/dvc.yaml`; no `external_input@` stage: the default study's inputs are all inside the
repository or its packages), then times 9 pairs. Asserted: the median of the pairs' wall-clock
ratios is at most :data:`MAX_RATIO`, 2.5x. Issue 25's goal, 1.5x, is printed beside it, met or
not, and not asserted: DVC's own work in a no-op repro exceeds it on this machine
(docs/architecture.md, "No-op repro"): `dvc repro` rewrites `.dvc/tmp/rwlock` four times per
stage where `dvc status` does once (1.3-3.9 ms a rewrite on this ext4 disk) and parses
`dvc.yaml`/`dvc.lock` a second time; with no stage running at all a copy of the study still
measured 1.51x, 1.58x and 1.82x. Why 2.5x and not 2.0x: medians measured here were 1.37x,
1.64x and 1.71x (6-9 pairs, load average 3-6, docs/architecture.md), 1.78x (6 pairs on a copy
of the smoke study, load 3.9) and, in this benchmark's full mode, 1.88x with pairs from 1.54x
to 2.20x (9 pairs, load 2.9): 2.0x would fail on a busier day. 2.5x is above every pair
measured and still catches a regression in genfair's part: `dvc status` takes about 2.3 s,
so the median crosses 2.5x once a no-op repro costs about 1.5 s more than today (the two
always-running stages take 0.45-0.75 s together on their fast paths).

Quick mode (benchmarks/conftest.py; `make test`): no study of its own. A copy of the test
suite's shared smoke study (tests/support/studies.py: built once per session under a file
lock by whichever test asks first, SmolLM2 included; a no-op does not run it), then 2 pairs
(no warm-up: the copy's first `dvc status` measured no slower than its next ones); both goals
printed, not asserted (2 pairs beside the rest of the suite say little about a median). A
quick run costs about 16 s (`dvc status` 2.7 s, `dvc repro` 5.5 s on that study).

Asserted in both modes: every no-op repro runs exactly the always-running stages (nothing
else reruns) and the study has no external inputs (the default study's always-running stages).
The CPU ratio (the commands and their children) is printed beside the wall-clock one, with
the pairs' range and the load average.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import time
from pathlib import Path

import pytest
import yaml

from tests.support.conf import ROOT
from tests.support.project import LIGHT_SMOKE, always_changed, copy_study, run, study_env
from tests.support.studies import Study, shared_study, study_copy

# quick mode reads the shared smoke study (full mode builds its own: not a shared build)
pytestmark = pytest.mark.builds("smoke")

#: full mode asserts at most this paired median (see the module's docstring)
MAX_RATIO = 2.5
#: issue 25's goal: printed, not asserted (DVC's own lock rewrites exceed it on this machine)
ISSUE_RATIO = 1.5
#: pairs of (dvc status, dvc repro): full mode, quick mode
PAIRS = {"full": 9, "quick": 2}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture
def study(request: pytest.FixtureRequest, mode, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    """Quick: a copy of the session's shared smoke study. Full: a study built here."""
    if mode.quick:
        return study_copy(shared_study(request, "smoke"), tmp_path / "study")
    work = tmp_path / "study"
    work.mkdir()
    env = study_env(work)
    copy_study(work, env, *LIGHT_SMOKE)
    return Study(work, env, run(["dvc", "repro"], work, env))


def test_noop_dvc_repro(benchmark, mode, study: Study) -> None:  # type: ignore[no-untyped-def]
    work, env = study.work, study.env
    default = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params = yaml.safe_load((work / "params.yaml").read_text(encoding="utf-8"))
    assert params["external_inputs"] == default["external_inputs"] == {}, (
        "not the default study's always-running stages"
    )
    always = always_changed(work)

    def ran(output: str) -> set[str]:
        return set(re.findall(r"Running stage '([^']+)'", output))

    if not mode.quick:  # after the build, the always-running stages' first fast run
        warm = run(["dvc", "repro"], work, env)
        assert ran(warm) == always, warm
    wall: dict[str, list[float]] = {"status": [], "repro": []}
    cpu: dict[str, list[float]] = {"status": [], "repro": []}
    outputs: list[str] = []

    def paired() -> None:  # status then repro, alternating, so the machine's load hits both alike
        for command in wall:
            start, used = time.perf_counter(), _children_cpu()
            out = run(["dvc", command], work, env)
            wall[command].append(time.perf_counter() - start)
            cpu[command].append(_children_cpu() - used)
        outputs.append(out)

    pairs = PAIRS[mode.size("full", "quick")]
    if mode.quick:  # pytest-benchmark is off: it would call paired() once
        benchmark(lambda: [paired() for _ in range(pairs)])
    else:
        benchmark.pedantic(paired, rounds=pairs, iterations=1)
    load = os.getloadavg()[0]
    # only the stages that always run (the curation input fingerprints, the MLflow store) run again
    assert len(outputs) == pairs
    for output in outputs:
        assert ran(output) == always, output
    ratios = [r / s for r, s in zip(wall["repro"], wall["status"], strict=True)]
    cpu_ratios = [r / s for r, s in zip(cpu["repro"], cpu["status"], strict=True)]
    ratio, cpu_ratio = statistics.median(ratios), statistics.median(cpu_ratios)
    repro, status = statistics.median(wall["repro"]), statistics.median(wall["status"])
    benchmark.extra_info.update(
        repro_s=round(repro, 3),
        status_s=round(status, 3),
        ratio_median=round(ratio, 2),
        ratio_min=round(min(ratios), 2),
        ratio_max=round(max(ratios), 2),
        cpu_ratio_median=round(cpu_ratio, 2),
        load_average=round(load, 2),
    )
    print(
        f"\nno-op dvc repro {repro:.2f} s, dvc status {status:.2f} s (medians of {pairs} pairs); "
        f"wall ratio median {ratio:.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f}); CPU ratio "
        f"median {cpu_ratio:.2f} (pairs {min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}); load "
        f"average {load:.2f}"
    )
    print(
        f"issue 25's goal, at most {ISSUE_RATIO}x: {'met' if ratio <= ISSUE_RATIO else 'NOT met'} "
        f"(not asserted: DVC's own per-stage lock rewrites and second parse of dvc.yaml and "
        f"dvc.lock exceed it on this machine; docs/architecture.md, 'No-op repro')"
    )
    mode.goal(
        ratio <= MAX_RATIO,
        f"no-op dvc repro costs {ratio:.2f}x dvc status (at most {MAX_RATIO}x)",
        f"{pairs} pairs on a copy of the shared smoke study, beside the rest of the suite",
    )
