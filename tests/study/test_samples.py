"""The report's samples (issue 33.1): the rows a methodology shows (join_samples, its
default and the built-in views) and their export (escaping, encoding, image links)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.comparison import Headline
from genfair.methodologies.sample_view import SAMPLE_FIELDS, SampleView, guess_groups, join_samples
from genfair.study.report import samples_href
from genfair.study.sample_files import SampleFile, encode_rows, image_urls, script_json
from tests.support.conf import ROOT

HOSTILE = "<img src=x onerror=alert(1)></script><!-- & \u2028"


def _decode(data: dict) -> pd.DataFrame:
    """The rows back from :func:`encode_rows` (what the browser's script reads)."""
    columns = {}
    for name, col in data["columns"].items():
        columns[name] = (
            [col["levels"][c] for c in col["codes"]] if "codes" in col else col["values"]
        )
    return pd.DataFrame(columns)


def test_script_json_cannot_end_a_script_and_reads_back() -> None:
    text = script_json({"answer": HOSTILE, "n": 1})
    assert not set("<>&\u2028") & set(text)
    assert "</script" not in text.lower() and "<!--" not in text
    assert json.loads(text) == {"answer": HOSTILE, "n": 1}
    assert script_json({"a": "café"}) == '{"a":"café"}'  # UTF-8 kept: no 6-byte escapes


def test_encode_rows_keeps_every_value_and_stores_repeats_once() -> None:
    rows = pd.DataFrame(
        {
            "probe_id": ["p1", "p2", "p3", "p4"],
            "status": ["ok", "ok", "invalid", "ok"],
            "attempts": pd.array([1, 2, None, 1], dtype="Int64"),
            "answer": [HOSTILE, None, "b", "c"],
        }
    )
    data = encode_rows(rows)
    assert data["n"] == 4
    assert data["columns"]["status"] == {"levels": ["ok", "invalid"], "codes": [0, 0, 1, 0]}
    assert "values" in data["columns"]["probe_id"] and "values" in data["columns"]["answer"]
    assert data["columns"]["attempts"]["values"] == [1, 2, None, 1]
    back = _decode(json.loads(script_json(data)))
    assert back.astype(object).where(back.notna(), None).values.tolist() == (
        rows.astype(object).where(rows.notna(), None).values.tolist()
    )


def _tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    probes = pd.DataFrame(
        {
            "probe_id": ["a", "b", "c"],
            "prompt": ["prompt a", "prompt b", None],
            "photo": ["data/curated/x/1.png", None, None],
        }
    )
    # probe b was sampled twice; c's prompt is the response's own
    responses = pd.DataFrame(
        {
            "probe_id": ["a", "b", "b", "c"],
            "sample_index": [0, 0, 1, 0],
            "status": ["ok", "ok", "refused", "ok"],
            "attempts": [1, 1, 3, 2],
            "text": ["raw a", "raw b0", HOSTILE, "raw c"],
            "file": [None, "b0.png", None, None],
            "prompt": [None, None, None, "prompt of c"],
        }
    )
    labels = pd.DataFrame(
        {
            "probe_id": ["a", "b", "b", "c"],
            "sample_index": [0.0, 0.0, 1.0, None],
            "choice": ["A", "B", None, "C"],
            "gender": ["female", "male", "male", "female"],
            "note": ["x" * 10] * 4,
            "score": [0.1, 0.2, 0.3, 0.4],
        }
    )
    return probes, responses, labels


def test_join_samples_matches_answers_prompts_and_images() -> None:
    probes, responses, labels = _tables()
    view = SampleView(groups=("gender",), label=("choice",), probe_image="photo")
    rows = join_samples(view, probes, responses, labels, Path("data/responses/x/m/images"))
    assert list(rows.columns) == [*SAMPLE_FIELDS, "gender"]
    assert rows["answer"].tolist() == ["raw a", "raw b0", HOSTILE, None]  # c: no sample 0 match
    assert rows["status"].tolist() == ["ok", "ok", "refused", None]
    assert rows["attempts"].tolist()[:3] == [1, 1, 3] and rows["attempts"].isna().iloc[3]
    assert rows["prompt"].tolist() == ["prompt a", "prompt b", "prompt b", None]
    assert rows["label"].tolist() == ["A", "B", None, "C"]
    assert rows["image"].tolist() == [
        "data/curated/x/1.png",  # the probe's input image
        "data/responses/x/m/images/b0.png",  # a generated image
        None,
        None,
    ]
    assert rows["gender"].tolist() == ["female", "male", "male", "female"]


def test_join_samples_default_guesses_groups_and_label() -> None:
    probes, responses, labels = _tables()
    unique = responses.drop_duplicates("probe_id")  # one answer per probe: matched by probe
    rows = join_samples(SampleView(), probes, unique, labels, Path("img"))
    # text columns with 2-50 values are groups; numbers and one-value columns are not
    assert guess_groups(labels, SampleView()) == ("gender",)
    assert [c for c in rows.columns if c not in SAMPLE_FIELDS] == ["gender"]
    assert rows["label"].tolist() == ["A", "B", None, "C"]  # the ``choice`` column
    assert rows["answer"].tolist() == ["raw a", "raw b0", "raw b0", "raw c"]
    assert rows["prompt"].tolist() == ["prompt a", "prompt b", "prompt b", "prompt of c"]
    assert join_samples(SampleView(), probes, responses, labels.iloc[0:0], Path(".")).empty


def test_a_group_cannot_take_a_field_name() -> None:
    with pytest.raises(ValueError, match="prompt"):
        SampleView(groups=("prompt",))


def test_image_links_are_relative_to_the_report_and_stay_in_the_study(tmp_path: Path) -> None:
    report = tmp_path / "data/report"
    paths = pd.Series(
        ["data/responses/x/m/images/ab.png", "data/curated/a b/1#.png", "../../etc/passwd", None]
    )
    assert image_urls(paths, tmp_path, report).tolist() == [
        "../responses/x/m/images/ab.png",
        "../curated/a%20b/1%23.png",
        None,
        None,
    ]


def test_headline_links_filter_by_the_groups_rows_have() -> None:
    file = SampleFile("m", "x", "samples/m/x.js", 3, {"ok": 3}, {"context": {"objective"}})
    where = {"context": "objective", "attribute": "gender", "class": "pooled"}
    assert samples_href(file, where) == "#samples/m/x?context=objective"
    assert samples_href(file, {"context": "a b&c"}) == "#samples/m/x"  # no row has it


def test_lvlm_facet_links_its_prompt_kind_to_the_question_column() -> None:
    method = get_methodology("lvlm_facet")
    headline = method.comparison.headline[0]
    assert "prompt" in headline.where
    link = method.presentation.sample_filter(headline)
    assert link["question"] == headline.where["prompt"] and "prompt" not in link
    default = get_methodology("fact_or_fair").presentation.sample_filter(
        Headline("x", "distance", {"context": "objective", "attribute": "gender"}, "lower")
    )
    assert default == {"context": "objective", "attribute": "gender"}


def test_open_bias_vqa_rows_show_the_image_they_asked_about() -> None:
    responses = pd.DataFrame(
        {
            "step": ["image", "vqa", "vqa"],
            "probe_id": ["img1", "q1", "q2"],
            "image_probe_id": [None, "img1", "missing"],
            "file": ["aa.png", None, None],
            "status": ["ok", "ok", "ok"],
            "text": [None, "Answer: male", "Answer: female"],
        }
    )
    labels = responses.drop(columns=["image_probe_id", "file"]).assign(
        label=[None, "male", "female"]
    )
    rows = get_methodology("open_bias").presentation.sample_rows(
        pd.DataFrame(), responses, labels, Path("i")
    )
    assert rows["image"].tolist() == ["i/aa.png", "i/aa.png", None]
    assert rows["label"].tolist() == [None, "male", "female"]


# ---- issue 43.6: a report rerun rewrites only the sample files whose rows changed

WRITER = """
from pathlib import Path
from genfair.io import write_text
first = Path("input.txt").read_text()
write_text(first, Path("samples/changed.js"), if_changed=True)
write_text("the same rows\\n", Path("samples/same.js"), if_changed=True)
"""


def _stage(persist: bool) -> str:
    out = "      - samples:\n          persist: true\n" if persist else "      - samples\n"
    return (
        "stages:\n  samples:\n    cmd: python writer.py\n    deps:\n      - input.txt\n"
        f"      - writer.py\n    outs:\n{out}"
    )


def _seen(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


@pytest.mark.parametrize("persist", [True, False])
def test_dvc_keeps_an_unchanged_sample_file_only_as_a_persist_output(
    tmp_path: Path, persist: bool
) -> None:
    """The report stage's ``data/report/samples`` is ``persist: true`` (dvc.yaml): DVC does
    not delete the folder before the stage, so a file ``write_text(if_changed=True)`` leaves
    alone keeps its inode and mtime through ``dvc repro`` (DVC finds its hash in its state
    database, its object already cached). Without ``persist`` (the control) every file is
    new on every run."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "dvc.yaml").write_text(_stage(persist))
    (tmp_path / "input.txt").write_text("first rows\n")

    def dvc(*args: str) -> None:
        subprocess.run(["dvc", *args], cwd=tmp_path, env=env, check=True, capture_output=True)

    dvc("init", "--no-scm")
    dvc("repro")
    same, changed = tmp_path / "samples/same.js", tmp_path / "samples/changed.js"
    before = _seen(same), _seen(changed)
    (tmp_path / "input.txt").write_text("other rows\n")
    dvc("repro")
    assert changed.read_text() == "other rows\n" and _seen(changed) != before[1]
    assert (_seen(same) == before[0]) is persist
    status = subprocess.run(
        ["dvc", "status"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert "up to date" in status.stdout  # the lock holds the files as they are


def test_the_report_stage_keeps_its_samples_between_runs() -> None:
    import yaml

    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["report"]
    assert {"data/report/samples": {"persist": True}} in stage["outs"]
