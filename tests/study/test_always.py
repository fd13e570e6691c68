"""The always-running stages' fast path (genfair.study.always): the same check with the last
full run's record, taken only while params.yaml and the environment it reads are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genfair.stamps import STAMP_DIR, stamp_key, write_stamp
from genfair.study.always import (
    CURATION_STAGE,
    STORE_STAGE,
    curation_key,
    quick,
    quick_curation_inputs,
    quick_sync_store,
    store_key,
)
from genfair.study.layout import Layout


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GENFAIR_CACHE_DIR", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    Path("params.yaml").write_text("seed: 0\n")
    return tmp_path


def _stamp_curation(news: Path) -> Path:
    out = Path("data/curated/inputs/news.json")
    write_stamp(
        CURATION_STAGE,
        curation_key(),
        {
            "sections": {
                "news": {
                    "paths": [str(news)],
                    "out": str(out),
                    "hash_cache": ".cache/input_hashes/news.json",
                }
            }
        },
    )
    return out


def test_fast_path_hashes_the_inputs_every_time(workspace: Path) -> None:
    news = workspace / "outside" / "news.jsonl"
    news.parent.mkdir()
    news.write_text('{"text": "one"}\n')
    out = _stamp_curation(news)
    assert quick(CURATION_STAGE, quick_curation_inputs)
    first = json.loads(out.read_text())
    news.write_text('{"text": "two"}\n')  # an edit: the same size
    assert quick(CURATION_STAGE, quick_curation_inputs)
    assert json.loads(out.read_text())["inputs"][0]["sha256"] != first["inputs"][0]["sha256"]


def test_changed_params_or_environment_take_the_full_path(workspace: Path, monkeypatch) -> None:
    news = workspace / "news.jsonl"
    news.write_text("x\n")
    _stamp_curation(news)
    Path("params.yaml").write_text("seed: 1\n")
    assert not quick(CURATION_STAGE, quick_curation_inputs)
    _stamp_curation(news)
    monkeypatch.setenv("GENFAIR_CACHE_DIR", str(workspace / "elsewhere"))
    assert not quick(CURATION_STAGE, quick_curation_inputs)


def test_a_change_of_genfairs_code_changes_the_key(workspace: Path) -> None:
    code = workspace / "code"
    (code / "curation").mkdir(parents=True)
    (code / "curation" / "inputs.py").write_text("A = 1\n")
    before = stamp_key(["params.yaml"], [], code)
    assert stamp_key(["params.yaml"], [], code) == before
    (code / "curation" / "inputs.py").write_text("A = 2\n")  # a new version may derive other paths
    assert stamp_key(["params.yaml"], [], code) != before


def test_a_damaged_stamp_takes_the_full_path(workspace: Path) -> None:
    (workspace / STAMP_DIR).mkdir(parents=True)
    (workspace / STAMP_DIR / f"{CURATION_STAGE}.json").write_text("{not json")
    assert not quick(CURATION_STAGE, quick_curation_inputs)
    write_stamp(CURATION_STAGE, curation_key(), {"sections": {"news": {"paths": ["a"]}}})  # no out
    assert not quick(CURATION_STAGE, quick_curation_inputs)


def test_store_fast_path_only_when_the_store_holds_every_run(workspace: Path) -> None:
    layout = Layout()
    layout.tracking.parent.mkdir(parents=True)
    layout.tracking.write_text(json.dumps({"parent_run": "k0", "child_runs": {"a": "k1"}}))
    assert not quick(STORE_STAGE, lambda: quick_sync_store(layout))  # no stamp
    write_stamp(
        STORE_STAGE,
        store_key(),
        {"uri": f"sqlite:///{workspace / 'mlflow.db'}", "experiment": "genfair"},
    )
    assert not quick(
        STORE_STAGE, lambda: quick_sync_store(layout)
    )  # no store yet: every run missing
    assert not layout.tracking_store.exists()


def test_the_full_path_leaves_unchanged_fingerprints_and_drops_stale_ones(workspace: Path) -> None:
    """DVC keeps ``data/curated/inputs`` between runs (persist): an unchanged fingerprint keeps
    its inode and mtime (DVC's state database still knows its hash), and a section no longer
    configured leaves nothing behind."""
    from genfair.frame import StudyFrame
    from genfair.study.curation_stages import curation_inputs

    news = workspace / "news.jsonl"
    news.write_text('{"headline": "H", "body": "B"}\n')
    frame = StudyFrame(
        seed=1,
        scale="smoke",
        models={"m": {}},
        methodologies={"x": {}},
        curation={"news": {"sources": [{"kind": "file", "path": str(news)}]}},
    )
    folder = workspace / "data/curated/inputs"
    stale = folder / "gone.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    [out] = curation_inputs(frame, Layout(workspace))
    assert sorted(p.name for p in folder.iterdir()) == ["news.json"]
    before = out.stat()
    curation_inputs(frame, Layout(workspace))
    assert (out.stat().st_ino, out.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    news.write_text('{"headline": "H", "body": "B edited"}\n')
    curation_inputs(frame, Layout(workspace))
    assert out.stat().st_ino != before.st_ino


def test_the_store_file_is_rewritten_only_when_it_changes(workspace: Path) -> None:
    from genfair.study.store import write_store

    layout = Layout(workspace)
    store = write_store("sqlite:///mlflow.db", "genfair", ["a", "b"], layout, workspace)
    before = store.stat()
    write_store("sqlite:///mlflow.db", "genfair", ["a", "b"], layout, workspace)
    assert (store.stat().st_ino, store.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    write_store("sqlite:///mlflow.db", "genfair", ["a", "b", "c"], layout, workspace)
    assert json.loads(store.read_text())["runs"] == 3
