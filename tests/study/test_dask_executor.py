"""Generation on a real local Dask cluster (``generation.executor: dask``, issue 24): the same
outputs as the local executor, each call sent once, a lost worker survived, models loaded
once per worker, and an HTTP model's ``concurrency`` bound across the cluster."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from genfair.cli import compose
from genfair.errors import ConfigError
from genfair.models.dask_executor import config_hash, worker_stats
from genfair.study.fill import fill, select_runs
from genfair.study.layout import Layout
from genfair.study.steps import generate, make_probes
from genfair.study_params import StudyParams, load_params
from tests.support.conf import ROOT, with_runs
from tests.support.dask_cluster import Cluster, dask_cluster  # noqa: F401 - a fixture, found by name

pytestmark = pytest.mark.dask

#: the smoke study's runs whose probes need no curation stage: text, images, and a
#: multi-step methodology (OpenBias: images, then a VQA model's answers about them)
METHODOLOGIES = ("fact_or_fair", "open_bias")


def _compose(tmp_path: Path) -> dict[str, Any]:
    return load_params(
        compose(["scale=smoke", "~model@models.smollm2"], tmp_path / "params.yaml")
    ).model_dump(mode="json")


def _read_curated(raw: dict[str, Any], curated: Path) -> None:
    """Point the methodologies' curated inputs (and the FACET release) at ``curated``'s
    ``data/curated`` instead of the repository's (absolute: workers run elsewhere)."""

    def at(relative: str) -> str:
        assert relative.startswith("data/curated/"), relative
        return str(curated / relative)

    methodologies = raw["methodologies"]
    methodologies["news_bias"]["corpus"] = at(methodologies["news_bias"]["corpus"])
    iris = methodologies["iris"]
    iris["occupations_table"] = at(iris["occupations_table"])
    iris["ifs_und"]["persons"] = at(iris["ifs_und"]["persons"])
    facet = methodologies["lvlm_facet"]
    facet["persons"], facet["images_dir"] = at(facet["persons"]), at(facet["images_dir"])
    raw["curation"]["facet"]["release_dir"] = at(raw["curation"]["facet"]["release_dir"])


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke study's curation outputs, built once in-process as its stages do: the news
    corpus (the smoke config's embedded source), the occupation table, the FACET-format
    fixture and its person crops; a folder whose ``data/curated`` the other methodologies read."""
    from genfair.study.curation_stages import (
        collect_news_corpus,
        curate_facet_crops,
        facet_fixture,
        occupations_table,
    )

    root = tmp_path_factory.mktemp("curated")
    raw = _compose(root)
    _read_curated(raw, root)
    params = StudyParams.model_validate(with_runs(raw))
    layout = Layout(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GENFAIR_CACHE_DIR", str(root / "cache"))
        collect_news_corpus(params, layout)
        occupations_table(params, layout)
        facet_fixture(params, layout)
        curate_facet_crops(params, layout)
    return root


def _params(
    tmp_path: Path,
    base_url: str,
    *,
    executor: str = "local",
    scheduler: str | None = None,
    concurrency: int = 4,
    rate_limit: str | None = None,
    curated: Path | None = None,
    extra_models: dict[str, Any] | None = None,
) -> StudyParams:
    """The smoke study (less its local LLM) plus a mock ``endpoint`` LLM at ``base_url``:
    FACT-OR-FAIR and OpenBias only, or all its methodologies reading ``curated``'s outputs."""
    raw = _compose(tmp_path)
    if curated is None:
        raw["methodologies"] = {m: raw["methodologies"][m] for m in METHODOLOGIES}
    else:
        _read_curated(raw, curated)
    # a proposer built in code (no model config to rebuild it from): it runs in this process
    captions = pd.read_csv(ROOT / raw["methodologies"]["open_bias"]["caption_set"])["caption_id"]
    answer = {
        "bias": [
            {
                "name": "gender",
                "refer_to": "person",
                "classes": ["man", "woman"],
                "question": "What is the gender of the person?",
                "present_in_prompt": False,
            }
        ]
    }
    raw["methodologies"]["open_bias"].update(
        proposer="scripted", scripted_proposals={str(c): answer for c in captions}
    )
    raw["generation"] = {"max_error_rate": 0.0, "executor": executor, "scheduler": scheduler}
    raw["models"]["endpoint"] = {
        "modality": "llm",
        "backend": "openai",
        "model_id": "mock",
        "base_url": base_url,
        "api_key_env": None,
        "max_retries": 0,
        "timeout_s": 30,
        "concurrency": concurrency,
        "rate_limit": rate_limit,
    }
    raw["models"].update(extra_models or {})
    return StudyParams.model_validate(with_runs(raw))


def _study(
    params: StudyParams, layout: Layout, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, bytes]:
    """Probes and every generate step of ``params`` under ``layout``; every output file's bytes."""
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(cache))
    for methodology in params.methodologies:
        make_probes(params, methodology, layout)
    for run in params.runs.values():
        generate(params, run["model"], run["methodology"], layout)
    responses = layout.data / "responses"
    return {
        str(p.relative_to(responses)): p.read_bytes()
        for p in sorted(responses.rglob("*"))
        if p.is_file()
    }


def _on_cluster(
    tmp_path: Path, cluster: Cluster, url: str, monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> tuple[StudyParams, Layout]:
    """Params with ``executor: dask`` on ``cluster`` and a layout holding FACT-OR-FAIR's probes."""
    params = _params(tmp_path, url, executor="dask", scheduler=cluster.address, **kwargs)
    layout = Layout(tmp_path)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    make_probes(params, "fact_or_fair", layout)
    return params, layout


def _splits(cache: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Per run, the calls its generate sent and read from the cache (the usage ledger)."""
    from genfair.models.usage import ledger_totals, read_ledger

    return {
        run: u.to_dict() for run, u in ledger_totals(read_ledger(cache / "usage.jsonl")).items()
    }


def _bodies(requests: Any) -> Counter[str]:
    import json

    return Counter(json.dumps(r.body, sort_keys=True) for r in requests)


def test_smoke_study_on_dask_is_byte_identical_to_local_and_sends_each_call_once(
    tmp_path: Path,
    curated: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="genfair.models.runner")
    server = mock_openai(
        reply="A"
    )  # one endpoint: its base_url is in the model's cache keys and run_params
    local = _study(
        _params(tmp_path, server.url, curated=curated),
        Layout(tmp_path / "local"),
        tmp_path / "cache-local",
        monkeypatch,
    )
    asked_locally = _bodies(list(server.requests))

    params = _params(
        tmp_path, server.url, executor="dask", scheduler=dask_cluster.address, curated=curated
    )
    assert set(params.methodologies) == {
        "fact_or_fair",
        "news_bias",
        "iris",
        "lvlm_facet",
        "open_bias",
    }
    on_dask = _study(params, Layout(tmp_path / "dask"), tmp_path / "cache-dask", monkeypatch)
    asked_on_dask = _bodies(list(server.requests)[sum(asked_locally.values()) :])

    assert on_dask.keys() == local.keys() and any(k.endswith(".png") for k in local)
    for run in params.runs.values():  # every run of every methodology answered something
        responses = Layout(tmp_path / "local").responses(run["model"], run["methodology"])
        assert len(pd.read_parquet(responses)), responses
    different = [name for name in local if local[name] != on_dask[name]]
    assert not different, f"outputs differ between executors: {different}"
    assert asked_locally and set(asked_on_dask) == set(asked_locally)  # the same calls...
    assert set(asked_on_dask.values()) == {1}  # ...each sent exactly once
    # every model's calls, the simulators' too, sent and counted once: OpenBias's questions
    # went out as their images arrived, and its step then read them from the cache
    assert any("(ahead)" in r.getMessage() for r in caplog.records)
    assert _splits(tmp_path / "cache-dask") == _splits(tmp_path / "cache-local")
    tasks = {w: s["tasks"] for w, s in dask_cluster.client.run(worker_stats).items()}
    assert len(tasks) == 2 and all(count > 0 for count in tasks.values()), (
        f"every worker serves tasks: {tasks}"
    )


def test_a_worker_killed_mid_stage_loses_nothing_answered_and_a_rerun_completes(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = mock_openai(reply="A", latency_s=0.05)
    params, layout = _on_cluster(tmp_path, dask_cluster, server.url, monkeypatch, concurrency=2)
    victim = dask_cluster.workers[0]
    killed = threading.Event()
    at_kill: list[int] = []

    def kill_when_busy() -> None:  # a state, not a delay: the endpoint has answered some calls
        while server.calls < 10 and not killed.is_set():
            threading.Event().wait(0.01)
        at_kill.append(server.calls)
        dask_cluster.kill(victim)
        killed.set()

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    try:
        generate(params, "endpoint", "fact_or_fair", layout)
        outcome = "completed"
    except Exception as exc:  # the other allowed outcome: one line naming the lost worker
        outcome = str(exc)
        assert "\n" not in outcome and "KilledWorker" in outcome and "tcp://127.0.0.1:" in outcome
    killed.set()
    killer.join()
    assert victim.poll() is not None, "the worker was killed mid-stage"

    first_run = server.calls
    assert at_kill and at_kill[0] < first_run, "the worker died while the stage was sending calls"
    generate(
        params, "endpoint", "fact_or_fair", layout
    )  # the rerun completes from the cache (+ what failed)
    responses = pd.read_parquet(layout.responses("endpoint", "fact_or_fair"))
    assert (responses["status"] != "error").all(), outcome
    if outcome == "completed":
        assert server.calls == first_run  # nothing left to ask
    repeated = {body: n for body, n in _bodies(list(server.requests)).items() if n > 1}
    # only requests in flight on the killed worker can be sent twice: at most the bound (2)
    assert len(repeated) <= 2, f"{len(repeated)} requests sent twice"


def test_the_cluster_wide_concurrency_bound_is_never_exceeded(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = mock_openai(reply="A", latency_s=0.05)
    # 3 leases over 2 one-thread workers: each task asks for 2 (ceil 3/2), so only the
    # semaphore keeps the two workers from 4 requests at once
    params, layout = _on_cluster(tmp_path, dask_cluster, server.url, monkeypatch, concurrency=3)
    generate(params, "endpoint", "fact_or_fair", layout)
    assert server.calls > 20
    assert 2 <= server.max_in_flight <= 3, server.max_in_flight


def test_a_rate_limit_holds_across_the_cluster(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = mock_openai(reply="A", latency_s=0.01)
    params, layout = _on_cluster(
        tmp_path, dask_cluster, server.url, monkeypatch, concurrency=8, rate_limit="8/second"
    )
    generate(params, "endpoint", "fact_or_fair", layout)
    assert server.calls > 16
    # both workers sent calls: one limit per worker would let 16 start within a second
    assert all(stats["tasks"] for stats in dask_cluster.client.run(worker_stats).values())
    # never 9 within a second (0.2 s for the server's receipt jitter)
    assert server.most_started_within(0.8) <= 8


def test_a_local_model_loads_once_per_worker_and_serves_tasks_on_both(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.tiny_models import tiny_llm_config

    tiny = tiny_llm_config(tmp_path / "tiny")
    server = mock_openai(reply="A")
    params, layout = _on_cluster(
        tmp_path, dask_cluster, server.url, monkeypatch, extra_models={"tiny": tiny}
    )
    generate(params, "tiny", "fact_or_fair", layout, limit=24)

    name = config_hash(params.model("tiny"))
    stats = dask_cluster.client.run(worker_stats)
    assert len(stats) == 2
    for worker, stat in stats.items():  # both serve it, each from its one load
        assert stat["loads"] == {name: 1} and stat["tasks"] >= 1, f"{worker}: {stat}"
    assert sum(stat["tasks"] for stat in stats.values()) > len(
        stats
    )  # a loaded model serves many tasks
    responses = pd.read_parquet(layout.responses("tiny", "fact_or_fair"))
    assert len(responses) and (responses["status"] != "error").all()


def test_every_process_listens_on_loopback_only(
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
) -> None:
    assert dask_cluster.listening() == {"127.0.0.1"}


def test_a_missing_scheduler_is_one_clear_line(tmp_path: Path, mock_openai, monkeypatch) -> None:
    from genfair.models.dask_executor import connect

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    with pytest.raises(
        ConfigError,
        match=r"generation.executor: dask, but no scheduler: set DASK_SCHEDULER_ADDRESS",
    ):
        connect(None)
    with pytest.raises(ConfigError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:9 "):
        monkeypatch.setattr("genfair.models.dask_executor.CONNECT_TIMEOUT_S", 1.0)
        connect("tcp://127.0.0.1:9")


def test_fill_answers_the_study_on_the_cluster_and_the_stages_then_only_replay(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = mock_openai(reply="A")
    params = _params(tmp_path, server.url, executor="dask", scheduler=dask_cluster.address)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(tmp_path / "cache"))
    assert fill(params, models=["endpoint"], jobs=2) == {
        "endpoint · fact_or_fair": "ok"
    }  # --models restricts
    asked = server.calls
    assert asked > 0

    outcome = fill(params, jobs=3)
    assert outcome == {f"{r['model']} · {r['methodology']}": "ok" for r in params.runs.values()}
    assert server.calls == asked  # resumable: the endpoint's calls were in the cache

    local = params.model_copy(
        update={"generation": params.generation.model_copy(update={"executor": "local"})}
    )
    _study(local, Layout(tmp_path / "repro"), tmp_path / "cache", monkeypatch)
    assert server.calls == asked  # the stages (dvc repro) replay from the cache


def test_fill_names_unknown_models_and_methodologies(tmp_path: Path) -> None:
    params = _params(tmp_path, "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match=r"no model 'nope' in the study; known: .*endpoint"):
        select_runs(params, ["nope"], None)
    with pytest.raises(ConfigError, match=r"no methodology 'iris' in the study"):
        select_runs(params, None, ["iris"])
    assert [r["model"] for r in select_runs(params, None, ["open_bias"])] == ["simulated_t2i"]


def test_worker_resources_place_a_model_on_the_workers_that_offer_them(
    tmp_path: Path,
    dask_cluster: Cluster,  # noqa: F811 - the imported fixture, by name
    mock_openai,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = _params(tmp_path, "http://127.0.0.1:9/v1").model_dump(mode="json")
    gpu_model = {**raw["models"]["simulated_llm"], "worker_resources": {"GPU": 1}}
    params, layout = _on_cluster(
        tmp_path,
        dask_cluster,
        "http://127.0.0.1:9/v1",
        monkeypatch,
        extra_models={"simulated_llm": gpu_model},
    )
    with pytest.raises(
        ConfigError,
        match=r"no Dask worker offers the resources \{'GPU': 1.0\} .* --resources GPU=1",
    ):
        generate(params, "simulated_llm", "fact_or_fair", layout)

    gpu = dask_cluster.add_worker(resources="GPU=1")
    dask_cluster.client.wait_for_workers(3, timeout=60)
    generate(params, "simulated_llm", "fact_or_fair", layout)
    tasks = {w: s["tasks"] for w, s in dask_cluster.client.run(worker_stats).items()}
    placed = dask_cluster.worker_address(gpu)
    assert tasks[placed] > 0 and all(n == 0 for w, n in tasks.items() if w != placed), tasks
