"""A paper-scale rehearsal of the image audits (issue 43, point 3): IRIS and FACT-OR-FAIR's T2I
part on the realistic-pixel SIMULATOR (conf/model/simulated_t2i_realistic.yaml: 1024-px
compositions of shipped photos, measured by the REAL demographic instrument, not the oracle),
through every stage of `dvc repro`, each stage measured on its own.

The study: the two methodologies on that one model (no LLM, no VLM: their parts of these
methodologies are not images), composed with ``scale=paper`` and the image counts cut to 1/20
of the paper's (conf/sizes/<methodology>/paper.yaml): IRIS IFS-Gen 8 images per occupation on
all 52 (paper 160), BIS-Gen 5 per prompt for the top 10 stereotypes (paper 100), FACT-OR-FAIR 1
per query on all 76 T2I queries (paper 20): 792 of the paper's 15,840 images per model
(docs/benchmarks.md, "Paper-scale rehearsal (images)"). ``REHEARSAL_FRACTION=40`` draws 1/40
instead (4, 2 and 1), for a machine with less time.
Quick mode (`make test`): no study of its own (a build of its own cost 50-60 CPU-s and
2-7 minutes under the suite's load, mostly DVC's and 25 stages' start-up). A copy of the
session's shared smoke study has its simulated T2I model swapped for the realistic one at
256 px, and that model's four image stages (`generate` and `label` of IRIS and FACT-OR-FAIR)
run one by one, measured the same way, on 2 local readings workers: the same code paths, the
fan-out included, on the smoke scale's few dozen images. The other cases run in full mode.

Each stage runs as ``dvc repro --single-item <stage>`` under ``/usr/bin/time -v``, in the
pipeline's order: its wall time, CPU (user + system of DVC and the stage's processes) and
peak RSS (the largest process of the tree), then the bytes on disk of ``data/``, the response
cache (its image store included) and DVC's cache after it. Each figure includes DVC's own
start-up and lock work (about 2 s a stage here). In the Dask case the scheduler and workers,
which draw the images and read them there, are not in that process tree: their CPU and peak
RSS are read apart, stage by stage (:func:`cluster_usage`).

Cases (:data:`CASES`): where the instrument's readings run, one override string each: the
stage's own process (the default), 2 local worker processes
(``generation.instrument_workers=2``), 2 Dask workers (``generation.executor=dask``: a real
scheduler and 2 one-thread workers on 127.0.0.1, started and stopped here; they draw the
images too, as they make every model call). Each case's load average before and after, and
each stage's after, are recorded: the machine's cores may be shared, and then the wall times
are the share a case got.

Asserted in both modes: every stage ran, the images are the configured size and distinct
files (one file in the content-addressed store per image drawn), and the label stages measured
them with the real instrument (FACT-OR-FAIR's ``source = model``; IRIS's labels differ from
some planted genders, which an oracle's never do).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from genfair.frame import GenerationConfig
from tests.support.project import copy_study, run, study_env
from tests.support.studies import Study, shared_study, study_copy

# quick mode reads the shared smoke study; full mode builds a study of its own, as
# test_dvc_noop.py's does (a benchmark's full run is not a suite build)
pytestmark = pytest.mark.builds("smoke")

#: the study: IRIS and FACT-OR-FAIR on the realistic-pixel simulator alone
STUDY = (
    "~methodology@methodologies.news_bias",
    "~methodology@methodologies.lvlm_facet",
    "~methodology@methodologies.open_bias",
    "~model@models.smollm2",
    "~model@models.simulated_llm",
    "~model@models.simulated_vlm",
    "model@models.simulated_t2i=simulated_t2i_realistic",
)
#: the paper's image counts (conf/sizes/<methodology>/paper.yaml), of which full mode draws
#: 1/``FRACTION`` (at least one): 1/20 unless ``REHEARSAL_FRACTION`` says otherwise (e.g. 40)
PAPER = {
    "methodologies.iris.ifs_gen.images_per_occupation": 160,
    "methodologies.iris.bis_gen.images_per_prompt": 100,
    "methodologies.fact_or_fair.t2i.images_per_query": 20,
}
FRACTION = int(os.environ.get("REHEARSAL_FRACTION", "20"))
FULL = ("scale=paper", *(f"{k}={max(1, n // FRACTION)}" for k, n in PAPER.items()))
#: quick mode: the shared smoke study's simulated T2I model made the realistic one, smaller
QUICK = ("model@models.simulated_t2i=simulated_t2i_realistic", "models.simulated_t2i.size=256")
#: the case quick mode runs (the readings fan-out through DVC); the others run in full mode
QUICK_CASE = "local-2"
#: the stages quick mode measures: the realistic model's image stages
QUICK_STAGES = tuple(
    f"{step}@simulated_t2i-{m}" for m in ("fact_or_fair", "iris") for step in ("generate", "label")
)
#: where the readings run: (override, the generation setting it needs, Dask workers to start)
CASES: dict[str, tuple[str | None, str | None, int]] = {
    "local-1": (None, None, 0),
    "local-2": ("generation.instrument_workers=2", "instrument_workers", 0),
    "dask-2": ("generation.executor=dask", "instrument_workers", 2),
}
_TIME = {
    "wall_s": r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)",
    "user_s": r"User time \(seconds\): (\S+)",
    "system_s": r"System time \(seconds\): (\S+)",
    "peak_rss_kb": r"Maximum resident set size \(kbytes\): (\d+)",
}


#: runs a command as the subreaper of its process tree (Linux's PR_SET_CHILD_SUBREAPER) and
#: waits for every descendant: the readings' local workers are forked by a forkserver that
#: outlives the stage and that no process waits for, so their CPU would escape ``time``
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
code = subprocess.call(sys.argv[1:])
while True:
    try:
        os.wait()
    except ChildProcessError:
        sys.exit(code)
"""


def _seconds(clock: str) -> float:
    parts = [float(p) for p in clock.split(":")]
    return sum(p * 60**i for i, p in enumerate(reversed(parts)))


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """``args`` under ``/usr/bin/time -v``: wall, CPU (user + system, the whole process tree,
    the forkserver's workers included: :data:`REAPER`) and the peak RSS of its largest
    process."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-c", REAPER, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{(done.stdout + done.stderr)[-4000:]}"
    found = {k: re.search(p, done.stderr) for k, p in _TIME.items()}
    assert all(found.values()), done.stderr[-2000:]
    wall = _seconds(found["wall_s"].group(1))
    cpu = float(found["user_s"].group(1)) + float(found["system_s"].group(1))
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": int(found["peak_rss_kb"].group(1)) / 1024}


def disk_bytes(*folders: Path) -> int:
    """Bytes of the files under ``folders``, each inode once (the cache, ``data/`` and DVC's
    cache link one image file)."""
    seen, total = set(), 0
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                st = os.lstat(os.path.join(root, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
    return total


def load_average() -> list[float]:
    """The machine's 1-, 5- and 15-minute load averages: its 2 cores are shared."""
    return [round(x, 2) for x in os.getloadavg()]


def cluster_usage(cluster: Any) -> tuple[float, float]:
    """CPU seconds (user + system) the Dask scheduler and workers have used, and the largest
    one's peak RSS in MiB: they run outside the stage's process tree, which
    ``/usr/bin/time`` measures, and do the Dask case's model calls and readings."""
    import psutil

    cpu, peak_kb = 0.0, 0
    for process in [cluster.scheduler, *cluster.workers]:
        times = psutil.Process(process.pid).cpu_times()
        cpu += times.user + times.system
        status = Path(f"/proc/{process.pid}/status").read_text()
        peak_kb = max(peak_kb, int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)))
    return cpu, peak_kb / 1024


def stages_in_order(work: Path) -> list[str]:
    """The pipeline's stages, each after the stages it depends on."""
    import networkx as nx
    from dvc.repo import Repo

    with contextlib.chdir(work), Repo(".") as repo:  # addresses relative to the study
        return [s.addressing for s in reversed(list(nx.topological_sort(repo.index.graph)))]


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A Dask cluster of the case's workers (none for the local cases); a case whose
    setting genfair does not have yet is skipped before any cluster starts."""
    _, setting, workers = CASES[request.node.callspec.params["case"]]
    if setting is not None and setting not in GenerationConfig.model_fields:
        pytest.skip(f"genfair has no generation.{setting} yet (issue 43 point 2: the fan-out)")
    if not workers:
        yield None
        return
    from tests.support.dask_cluster import Cluster

    (tmp_path / "dask").mkdir()
    started = Cluster(tmp_path / "dask", workers=workers)
    try:
        yield started
    finally:
        started.stop()


def _study(request: pytest.FixtureRequest, mode, case: str, cluster, tmp_path: Path) -> Study:  # type: ignore[no-untyped-def]
    """Full: the rehearsal's study, composed here. Quick: a copy of the shared smoke study with
    the realistic model in the simulated T2I model's place."""
    override = CASES[case][0]
    extra = {"DASK_SCHEDULER_ADDRESS": cluster.address} if cluster is not None else {}
    if mode.quick:
        copy = study_copy(shared_study(request, "smoke"), tmp_path / "study")
        env = study_env(copy.work, **extra)
        words = [x for o in (*QUICK, *([override] if override else [])) for x in ("-o", o)]
        run(["genfair", "compose", *words], copy.work, env)
        return Study(copy.work, env, copy.output)
    work = tmp_path / "study"
    work.mkdir()
    env = study_env(work, **extra)
    copy_study(work, env, *STUDY, *FULL, *([override] if override else []))
    return Study(work, env, "")


@pytest.mark.parametrize("case", list(CASES))
def test_rehearsal(benchmark, mode, case: str, cluster, request, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if mode.quick and case != QUICK_CASE:
        pytest.skip(f"quick mode runs the {QUICK_CASE} case; this one runs in `make benchmark`")
    study = _study(request, mode, case, cluster, tmp_path)
    work, env = study.work, study.env
    stages = stages_in_order(work)
    if mode.quick:
        stages = [s for s in stages if s in QUICK_STAGES]
    folders = {"data": work / "data", "cache": work / ".genfair-cache", "dvc": work / ".dvc/cache"}
    rows: list[dict[str, Any]] = []

    def rehearse() -> None:
        used = cluster_usage(cluster) if cluster is not None else None
        for stage in stages:
            figures = timed(["dvc", "repro", "--single-item", stage], work, env)
            if used is not None:  # the Dask processes' share, beside the stage's own
                before, used = used, cluster_usage(cluster)
                figures |= {"cluster_cpu_s": used[0] - before[0], "cluster_peak_rss_mb": used[1]}
            there = [v for v in folders.values() if v.exists()]
            disk = {f"{k}_mb": disk_bytes(v) / 2**20 for k, v in folders.items() if v.exists()}
            disk["disk_mb"] = disk_bytes(*there) / 2**20  # all three, each file once
            rows.append({"stage": stage, **figures, **disk, "load_1m": os.getloadavg()[0]})
            print(f"[{case}] {json.dumps(rows[-1])}", flush=True)  # a long run's progress

    load_before = load_average()
    if mode.quick:
        benchmark(rehearse)
    else:
        benchmark.pedantic(rehearse, rounds=1, iterations=1)
    assert [r["stage"] for r in rows] == stages
    images = _check_images(work, size=mode.size(1024, 256))
    total = {k: sum(r.get(k, 0.0) for r in rows) for k in ("wall_s", "cpu_s", "cluster_cpu_s")}
    last = rows[-1]
    summary = {
        "case": case,
        "sizes": mode.size(f"1/{FRACTION} of paper", "quick"),
        "images": images,
        **{k: round(v, 1) for k, v in total.items()},
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in rows), 1),
        "cluster_peak_rss_mb": round(max(r.get("cluster_peak_rss_mb", 0.0) for r in rows), 1),
        **{k: round(last.get(f"{k}_mb", 0.0), 1) for k in (*folders, "disk")},
        "load_before": load_before,
        "load_after": load_average(),
    }
    benchmark.extra_info.update(summary)
    (tmp_path / "rehearsal.json").write_text(json.dumps({"summary": summary, "stages": rows}))
    print(f"\nrehearsal [{case}] SIMULATED images (realistic pixels), measured by the real "
          f"instrument: {json.dumps(summary)}")  # fmt: skip
    print("| stage | wall s | CPU s | peak RSS MiB | data MiB | cache MiB | DVC MiB | disk MiB |")
    for r in rows:
        print(
            f"| {r['stage']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} | "
            f"{r.get('data_mb', 0):.1f} | {r.get('cache_mb', 0):.1f} | {r.get('dvc_mb', 0):.1f} | "
            f"{r['disk_mb']:.1f} |"
            + (f" Dask {r['cluster_cpu_s']:.1f} CPU s |" if "cluster_cpu_s" in r else "")
        )


def _check_images(work: Path, size: int) -> int:
    """The image store holds distinct PNGs of ``size`` px, and the label stages read them
    with the real instrument (``source = model``): the number of images."""
    import pandas as pd
    from PIL import Image

    answers = [
        pd.read_parquet(work / f"data/responses/{m}/simulated_t2i/responses.parquet")
        for m in ("iris", "fact_or_fair")
    ]
    hashes = [h for t in answers for h in t.loc[t["status"] == "ok", "image"]]
    assert hashes, "no image drawn"
    # the store names a file by its content hash: as many files as images drawn, or two were one
    assert len(hashes) == len(set(hashes)), "two drawn images are the same file"
    store = work / ".genfair-cache/images"
    pngs = [store / h[:2] / f"{h}.png" for h in hashes]
    assert all(p.is_file() for p in pngs), "a drawn image is not in the image store"
    for png in pngs[:: max(1, len(pngs) // 20)]:
        with Image.open(io.BytesIO(png.read_bytes())) as image:
            assert image.size == (size, size)
    fof = pd.read_parquet(work / "data/labels/fact_or_fair/simulated_t2i.parquet")
    assert set(fof["source"]) == {"model"}, "FACT-OR-FAIR's labels are not the instrument's"
    # IRIS's labels name no source: an oracle would read back every planted gender exactly
    iris = pd.read_parquet(work / "data/labels/iris/simulated_t2i.parquet")
    drawn = pd.read_parquet(work / "data/responses/iris/simulated_t2i/responses.parquet")
    truth = drawn.set_index("image")["true_attributes"].map(
        lambda t: json.loads(t) if isinstance(t, str) else {}
    )
    planted = iris["image"].map(lambda i: truth.get(i, {}).get("gender"))
    assert (planted.notna() & (iris["gender"] != planted)).any(), "IRIS read the planted genders"
    return len(pngs)
