"""Scale-out on simulated GPU replicas: the default study's FACT-OR-FAIR and IRIS calls for
two SIMULATED replicas (the study's simulated LLM and text-to-image model, each paced as one
model on one GPU: ``replica`` in the model config, :class:`genfair.models.config.ReplicaService`),
filled through ``genfair fill`` on the local executor and on a real local Dask cluster of 1, 2,
4 and 8 one-thread workers (docs/scale-out.md, "Measured on simulated replicas"). Run with::

    PYTHONPATH=src pytest benchmarks/test_dask_scaling.py --benchmark-only -q -s

A replica's batch of up to ``BATCH`` calls costs ``SERVICE_S`` of waiting (a sleep, no CPU)
and a process serves one batch at a time, so a worker's CPU does almost nothing and eight
workers fit on two cores: what the figures show is the engine (scheduling, shards, rounds),
not the machine. FACT-OR-FAIR's invalid answers are planted at ``RETRY_RATE`` (SmolLM2's rate
on the smoke study), so a third of its calls are asked again. Every configuration starts
from an empty cache (every call sent) and must answer the same calls: the cache holds the
same keys after each, and the replicas served each call once (their request counts).

Goals (asserted in full mode): throughput at N workers at least ``SCALE_GOAL`` x N of one
worker, and one worker at least ``LOCAL_GOAL`` of the local executor (one process, one
device: the same service model). Where the time goes is printed per configuration: the
replicas' busy share (served batches x service time over workers x wall time), batches and
their mean fill, shards (Dask tasks), the CPU seconds of the client, the
scheduler and all workers (on 2 shared cores, what limits at 8 workers), and the load average.

Quick mode (benchmarks/conftest.py): the smoke scale's FACT-OR-FAIR on the simulated LLM, 20 ms
batches, 1 and 2 workers; the goals are printed, not asserted.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from genfair.cli import compose
from genfair.study.fill import fill
from genfair.study.layout import Layout
from genfair.study_params import StudyParams, load_params
from tests.support.conf import with_runs
from tests.support.dask_cluster import Cluster

pytestmark = pytest.mark.dask

#: scale, seconds a batch, worker counts, models, methodologies: full mode, then quick mode
#: (the smoke scale's FACT-OR-FAIR on the LLM alone, 20 ms a batch, 1 and 2 workers)
SIZES = {
    "full": (
        "default",
        0.2,
        (1, 2, 4, 8),
        ("simulated_llm", "simulated_t2i"),
        ("fact_or_fair", "iris"),
    ),
    "quick": ("smoke", 0.02, (1, 2), ("simulated_llm",), ("fact_or_fair",)),
}
BATCH = 8
RETRY_RATE = 0.3
SCALE_GOAL, LOCAL_GOAL = 0.85, 0.9
QUICK_WHY = "quick mode: a few batches a worker, so start-up and the tail weigh"


def _params(
    root: Path,
    scale: str,
    service_s: float,
    models: tuple[str, ...],
    methodologies: tuple[str, ...],
) -> dict[str, Any]:
    """The study at ``scale`` restricted to simulated ``models``, as replicas, and
    ``methodologies``; FACT-OR-FAIR's re-asks planted at RETRY_RATE; images labelled by the
    simulator's recorded truth (the oracle instrument: no CPU-bound face model in the client)."""
    raw = load_params(compose([f"scale={scale}"], root / "params.yaml")).model_dump(mode="json")
    raw["models"] = {m: raw["models"][m] for m in models}
    for model in raw["models"].values():
        model["replica"] = {"service_time_s": service_s, "batch_size": BATCH}
    raw["methodologies"] = {m: raw["methodologies"][m] for m in methodologies}
    for policy in raw["methodologies"]["fact_or_fair"]["simulated"]["llm"].values():
        policy["invalid_rate"] = RETRY_RATE - policy["refusal_rate"]  # refusals are re-asked too
    if "iris" in methodologies:
        iris = raw["methodologies"]["iris"]
        iris["occupations_table"] = str(root / iris["occupations_table"])
        iris["ifs_und"]["persons"] = iris["bis_und"]["dataset"] = None  # VLM sectors: not here
    raw["instruments"]["face_demographics"]["mode"] = "oracle"
    return raw


def _study(raw: dict[str, Any], cache: Path, scheduler: str | None) -> StudyParams:
    raw = {
        **raw,
        "cache": {**raw["cache"], "dir": str(cache)},
        "generation": {
            **raw["generation"],
            "executor": "local" if scheduler is None else "dask",
            "scheduler": scheduler,
        },
    }
    return StudyParams.model_validate(with_runs(raw))


def _device() -> dict[str, int]:
    """This process's replica counters (on a worker through ``client.run``)."""
    from genfair.models.base import ReplicaDevice

    return {"batches": ReplicaDevice.batches, "requests": ReplicaDevice.requests}


def _warm() -> None:
    """What a task imports, imported before the clock starts."""
    import genfair.models.dask_executor  # noqa: F401
    import genfair.models.simulated  # noqa: F401
    import genfair.models.simulated_images  # noqa: F401
    import genfair.models.t2i  # noqa: F401


def _fill(params: StudyParams, cluster: Cluster | None) -> dict[str, Any]:
    """Fill the study's cache; seconds, calls answered (cache entries) and where the time went."""
    from genfair.models.cache import ResponseCache

    before, cluster_cpu = _counters(cluster), _cluster_cpu(cluster)
    began, cpu = time.perf_counter(), time.process_time()
    outcome = fill(params, jobs=len(params.runs))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    cluster_cpu = {k: v - cluster_cpu[k] for k, v in _cluster_cpu(cluster).items()}
    assert set(outcome.values()) == {"ok"}, outcome
    after = _counters(cluster)
    keys: set[str] = set()
    with ResponseCache.configured(params.cache) as cache:
        while page := cache.scan(max(keys, default=""), 10_000):
            keys.update(row[0] for row in page)
    batches = after["batches"] - before["batches"]
    requests = after["requests"] - before["requests"]
    devices = 1 if cluster is None else len(cluster.workers)
    service = next(iter(params.models.values())).replica.service_time_s
    return {
        "seconds": seconds,
        "calls": len(keys),
        "keys": keys,
        "requests": requests,
        "batches": batches,
        "fill": requests / max(1, batches),
        "busy": batches * service / (devices * seconds),
        "ideal_s": math.ceil(requests / BATCH) * service / devices,
        "client_cpu_s": cpu,
        "scheduler_cpu_s": cluster_cpu["scheduler"],
        "workers_cpu_s": cluster_cpu["workers"],
        "shards": after["tasks"] - before["tasks"],
        "load": os.getloadavg()[0],
    }


def _cluster_cpu(cluster: Cluster | None) -> dict[str, float]:
    """CPU seconds (user + system) the scheduler and all workers have used so far."""
    import psutil

    def used(process: Any) -> float:
        times = psutil.Process(process.pid).cpu_times()
        return times.user + times.system

    if cluster is None:
        return {"scheduler": 0.0, "workers": 0.0}
    return {
        "scheduler": used(cluster.scheduler),
        "workers": sum(used(w) for w in cluster.workers),
    }


def _counters(cluster: Cluster | None) -> dict[str, int]:
    if cluster is None:
        return {**_device(), "tasks": 0}
    from genfair.models.dask_executor import worker_stats

    devices = cluster.client.run(_device).values()
    tasks = sum(s["tasks"] for s in cluster.client.run(worker_stats).values())
    return {
        "batches": sum(d["batches"] for d in devices),
        "requests": sum(d["requests"] for d in devices),
        "tasks": tasks,
    }


@pytest.mark.dask
def test_throughput_scales_with_simulated_replicas(benchmark, mode, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from genfair.study.curation_stages import occupations_table

    scale, service_s, counts, models, methodologies = SIZES[mode.size("full", "quick")]
    raw = _params(tmp_path, scale, service_s, models, methodologies)
    if "iris" in methodologies:
        occupations_table(_study(raw, tmp_path / "cache-curation", None), Layout(tmp_path))

    figures: dict[str, dict[str, Any]] = {}
    figures["local"] = _fill(_study(raw, tmp_path / "cache-local", None), None)
    (tmp_path / "dask").mkdir()
    # workers without Dask's statistical profiler (docs/scale-out.md recommends it off for
    # workers that wait on a device or an endpoint): it sampled every task thread, sleeping
    # ones included, every 10 ms, about a third of the workers' CPU here
    env = {"OMP_NUM_THREADS": "1", "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}
    cluster = Cluster(tmp_path / "dask", workers=counts[0], env=env)
    try:
        for n in counts:
            while len(cluster.workers) < n:
                cluster.add_worker()
            cluster.client.wait_for_workers(n, timeout=60)
            cluster.client.run(_warm)
            params = _study(raw, tmp_path / f"cache-{n}", cluster.address)
            if n == counts[-1]:  # pytest-benchmark's own record: the widest cluster, once
                figures[str(n)] = benchmark.pedantic(
                    _fill, args=(params, cluster), rounds=1, iterations=1
                )
            else:
                figures[str(n)] = _fill(params, cluster)
    finally:
        cluster.stop()

    local = figures["local"]
    for name, figure in figures.items():  # the same calls, each sent once, wherever
        assert figure["keys"] == local["keys"], name
        assert figure["requests"] == figure["calls"], name
    rate = {name: f["calls"] / f["seconds"] for name, f in figures.items()}
    print(f"\n{local['calls']} calls ({scale} scale), {service_s * 1000:g} ms a batch of {BATCH}")
    print(
        "executor | s | calls/s | x one worker | ideal s | replicas busy | fill | shards"
        " | CPU s: client, scheduler, workers | load"
    )
    for name, f in figures.items():
        print(
            f"{name} | {f['seconds']:.2f} | {rate[name]:.1f} | {rate[name] / rate['1']:.2f} | "
            f"{f['ideal_s']:.2f} | {f['busy']:.2f} | {f['fill']:.2f} | {f['shards']} | "
            f"{f['client_cpu_s']:.2f}, {f['scheduler_cpu_s']:.2f}, {f['workers_cpu_s']:.2f} | "
            f"{f['load']:.1f}"
        )
    benchmark.extra_info.update({f"{name}_calls_per_s": round(r, 2) for name, r in rate.items()})
    for n in counts[1:]:
        mode.goal(
            rate[str(n)] >= SCALE_GOAL * n * rate["1"],
            f"{n} workers: {rate[str(n)] / rate['1']:.2f} x one worker (goal {SCALE_GOAL * n:.2f})",
            QUICK_WHY,
        )
    mode.goal(
        rate["1"] >= LOCAL_GOAL * rate["local"],
        f"one worker: {rate['1'] / rate['local']:.2f} x local (goal {LOCAL_GOAL})",
        QUICK_WHY,
    )
