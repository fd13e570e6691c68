"""Inputs outside the repository (issue 16, item 3): what each curation config reads, a
content fingerprint of it, and, in a toy DVC project wired as docs/faults.md says, an edit to
a news file or a FACET image outside the repository reruns the curation stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from genfair.curation import inputs as inputs_module
from genfair.curation.facet import FacetConfig
from genfair.curation.inputs import (
    check_external_inputs,
    curation_inputs,
    external_inputs,
    inputs_fingerprint,
    outside,
    write_inputs_fingerprint,
)
from genfair.curation.news import NewsCollectionConfig
from genfair.curation.occupations import OccupationsConfig
from genfair.errors import ConfigError
from genfair.names import name_problem


def news_config(*paths: Path) -> NewsCollectionConfig:
    sources = [{"kind": "embedded"}, {"kind": "feed", "url": "https://x/rss"}]
    sources += [{"kind": "file", "path": str(p)} for p in paths]
    return NewsCollectionConfig.model_validate({"sources": sources})


def test_each_section_lists_what_it_reads(tmp_path: Path) -> None:
    assert curation_inputs("news", news_config(Path("a.csv"), tmp_path / "b.jsonl")) == [
        Path("a.csv"), tmp_path / "b.jsonl"
    ]  # fmt: skip
    facet = FacetConfig(release_dir=Path("rel"), annotations_file=tmp_path / "ann.csv")
    assert curation_inputs("facet", facet) == [tmp_path / "ann.csv", Path("rel/images")]
    assert [p.name for p in curation_inputs("occupations", OccupationsConfig())] == [
        "facet_occupations.csv", "iris_real_world_us.csv", "iris_real_world_eu.csv"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="curation section 'facet' with a NewsCollectionConfig"):
        curation_inputs("facet", news_config())


def test_outside_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    paths = [Path("data/x.csv"), Path("../elsewhere.csv"), tmp_path / "abs.csv", repo / "in.csv"]
    assert outside(paths, repo) == [Path("../elsewhere.csv"), tmp_path / "abs.csv"]


def _tree(root: Path) -> None:
    (root / "images").mkdir(parents=True)
    (root / "images" / "a.png").write_bytes(b"a" * 10)
    (root / "images" / "b.png").write_bytes(b"b" * 20)
    (root / "images" / ".partial.png").write_bytes(b"ignored")
    (root / "news.csv").write_text("headline,body\nH,B\n")


def test_fingerprint_follows_content_not_location_or_mtime(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    _tree(one)
    _tree(two)
    paths = [Path("news.csv"), Path("images"), Path("absent.csv")]
    first = inputs_fingerprint(paths, one)
    assert inputs_fingerprint(paths, two) == first  # another machine, same relative paths
    entries = {e["path"]: e for e in first["inputs"]}
    assert entries["images"]["kind"] == "dir" and entries["images"]["files"] == 2
    assert entries["images"]["bytes"] == 30  # the hidden leftover is not an input
    assert entries["absent.csv"] == {
        "path": "absent.csv", "kind": "missing", "files": 0, "bytes": 0, "sha256": None
    }  # fmt: skip
    os.utime(one / "news.csv", (1, 1))  # touched, same bytes: the same fingerprint
    assert inputs_fingerprint(paths, one) == first
    (one / "news.csv").write_text("headline,body\nH,B2\n")
    (one / "images" / "b.png").write_bytes(b"c" * 20)  # same size, other bytes
    changed = {e["path"]: e for e in inputs_fingerprint(paths, one)["inputs"]}
    assert changed["news.csv"]["sha256"] != entries["news.csv"]["sha256"]
    assert changed["images"]["sha256"] != entries["images"]["sha256"]
    (one / "images" / "c.png").write_bytes(b"")  # a new file changes the folder too
    after = {e["path"]: e for e in inputs_fingerprint(paths, one)["inputs"]}
    assert (
        after["images"]["files"] == 3 and after["images"]["sha256"] != changed["images"]["sha256"]
    )


def test_hash_cache_reads_each_unchanged_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path / "data")
    reads: list[str] = []
    real = inputs_module.file_sha256

    def counting(path: Path) -> str:
        reads.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(inputs_module, "file_sha256", counting)
    monkeypatch.setattr(
        inputs_module, "ALWAYS_HASH_BYTES", 0
    )  # these small files stand for big ones
    cache = tmp_path / "cache" / "hashes.json"
    paths = [Path("images"), Path("news.csv")]
    first = inputs_fingerprint(paths, tmp_path / "data", cache)
    assert sorted(reads) == ["a.png", "b.png", "news.csv"]
    reads.clear()
    assert inputs_fingerprint(paths, tmp_path / "data", cache) == first
    assert reads == []  # nothing read again
    (tmp_path / "data" / "images" / "a.png").write_bytes(b"z" * 11)
    inputs_fingerprint(paths, tmp_path / "data", cache)
    assert reads == ["a.png"]
    cache.write_text("{broken")  # a damaged cache costs a rehash, not an error
    assert inputs_fingerprint(paths, tmp_path / "data", cache)["inputs"][0]["files"] == 2


@pytest.mark.parametrize("always_hash_bytes", [inputs_module.ALWAYS_HASH_BYTES, 0])
def test_an_edit_in_place_keeping_size_and_mtime_is_seen(
    always_hash_bytes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21.5: small files are hashed at every run; a big file's cached hash is dropped
    when its ctime moves, which resetting the mtime (touch -d, os.utime) cannot avoid."""
    monkeypatch.setattr(inputs_module, "ALWAYS_HASH_BYTES", always_hash_bytes)
    news = tmp_path / "news.csv"
    news.write_text("headline,body\nA,aaaa\n")
    cache = tmp_path / "cache" / "hashes.json"
    first = inputs_fingerprint([news], tmp_path, cache)["inputs"][0]
    stat = news.stat()
    with news.open("r+b") as fh:  # same size, then the old mtime put back
        fh.write(b"HEADLINE")
    os.utime(news, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (news.stat().st_size, news.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    after = inputs_fingerprint([news], tmp_path, cache)["inputs"][0]
    assert after["sha256"] != first["sha256"] and after["bytes"] == first["bytes"]


def test_written_fingerprint_is_rewritten_only_when_it_changes(tmp_path: Path) -> None:
    external = tmp_path / "outside" / "news.csv"
    external.parent.mkdir()
    external.write_text("headline,body\nH,B\n")
    out = tmp_path / "repo" / "data" / "curated" / "inputs" / "news.json"
    config = news_config(external)
    write_inputs_fingerprint("news", config, out, tmp_path / "repo")
    data = json.loads(out.read_text())
    assert data["section"] == "news" and data["outside_repository"] == [str(external)]
    assert out.stat().st_mode & 0o777 == 0o644
    stamp = out.stat().st_mtime_ns
    write_inputs_fingerprint("news", config, out, tmp_path / "repo")
    assert out.stat().st_mtime_ns == stamp
    external.write_text("headline,body\nH,B edited\n")
    write_inputs_fingerprint("news", config, out, tmp_path / "repo")
    assert json.loads(out.read_text()) != data


# --- the DVC wiring (what dvc.yaml gets), on a toy project ------------------------------

STAGE = """\
import sys
from pathlib import Path
import yaml
from genfair.curation.facet import FacetConfig
from genfair.curation.inputs import write_inputs_fingerprint
from genfair.curation.news import NewsCollectionConfig

section = sys.argv[1]
params = yaml.safe_load(Path("params.yaml").read_text())["curation"][section]
config = {"news": NewsCollectionConfig, "facet": FacetConfig}[section].model_validate(params)
write_inputs_fingerprint(section, config, Path(f"data/curated/inputs/{section}.json"),
                         hash_cache=Path(f".cache/input_hashes/{section}.json"))
"""

DVC_YAML = """\
stages:
  curation_inputs_news:
    cmd: python curation_inputs.py news
    always_changed: true
    deps:
      - curation_inputs.py
    params:
      - curation.news
    outs:
      - data/curated/inputs/news.json:
          cache: false
  curation_inputs_facet:
    cmd: python curation_inputs.py facet
    always_changed: true
    deps:
      - curation_inputs.py
    params:
      - curation.facet
    outs:
      - data/curated/inputs/facet.json:
          cache: false
  collect_news:
    cmd: python -c "open('news_runs.txt', 'a').write('run\\\\n')"
    deps:
      - data/curated/inputs/news.json
  curate_facet:
    cmd: python -c "open('facet_runs.txt', 'a').write('run\\\\n')"
    deps:
      - data/curated/inputs/facet.json
"""


def _dvc(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_an_edit_outside_the_repository_reruns_curation(tmp_path: Path) -> None:
    outside_dir = tmp_path / "outside"
    (outside_dir / "facet" / "images").mkdir(parents=True)
    news = outside_dir / "news.jsonl"
    news.write_text('{"headline": "H", "body": "B"}\n')
    (outside_dir / "facet" / "annotations.csv").write_text("person_id\n")
    (outside_dir / "facet" / "images" / "1.jpg").write_bytes(b"jpeg")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "curation_inputs.py").write_text(STAGE)
    (repo / "dvc.yaml").write_text(DVC_YAML)
    params = {"curation": {"news": {"sources": [{"kind": "file", "path": str(news)}]},
                           "facet": {"release_dir": str(outside_dir / "facet")}}}  # fmt: skip
    (repo / "params.yaml").write_text(json.dumps(params))  # JSON is YAML
    src = str(Path(inputs_module.__file__).parents[2])
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "DVC_SITE_CACHE_DIR": str(tmp_path / "site"),
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    _dvc(["init", "--no-scm", "-q"], repo, env)

    def runs(name: str) -> int:
        path = repo / f"{name}_runs.txt"
        return len(path.read_text().splitlines()) if path.exists() else 0

    _dvc(["repro"], repo, env)
    assert (runs("news"), runs("facet")) == (1, 1)
    out = _dvc(["repro"], repo, env)  # nothing edited: the fingerprints run, curation does not
    assert "Stage 'collect_news' didn't change, skipping" in out
    assert (runs("news"), runs("facet")) == (1, 1)
    news.write_text('{"headline": "H", "body": "B edited"}\n')
    _dvc(["repro"], repo, env)
    assert (runs("news"), runs("facet")) == (2, 1)  # only the news curation reruns
    (outside_dir / "facet" / "images" / "1.jpg").write_bytes(b"other jpeg")
    _dvc(["repro"], repo, env)
    assert (runs("news"), runs("facet")) == (2, 2)
    status = _dvc(["status"], repo, env)
    assert "collect_news" not in status and "curate_facet" not in status
    assert status.count("always changed") == 2  # the fingerprint stages only


# --- which inputs become DVC dependencies (params.yaml's external_inputs) ---------------


def test_only_inputs_outside_the_repository_and_packages_become_external(tmp_path: Path) -> None:
    import yaml as installed

    repo, shared = tmp_path / "repo", tmp_path / "shared"
    (repo / "data").mkdir(parents=True)
    package_file = Path(installed.__file__).parent / "news.csv"
    curation = {
        "news": {
            "sources": [
                {"kind": "embedded"},
                {"kind": "file", "path": "data/in_repo.jsonl"},
                {"kind": "file", "path": str(shared / "a.jsonl")},
                {"kind": "file", "path": "../shared/./b.csv"},
                {"kind": "file", "path": str(package_file)},
            ]
        },
        "facet": {"release_dir": str(repo / "data" / "facet")},  # absolute, but inside
        "occupations": {"us_statistics": str(shared / "us.csv")},
    }
    found = external_inputs(curation, repo)
    assert found == {
        "news-sources-2": {"section": "news", "path": str(shared / "a.jsonl")},
        "news-sources-3": {"section": "news", "path": "../shared/b.csv"},  # relative stays relative
        "occupations-us_statistics": {"section": "occupations", "path": str(shared / "us.csv")},
    }
    assert all(name_problem(name) is None for name in found)
    # the default study reads nothing outside the repository: its params.yaml lists none
    assert (
        external_inputs(
            {"facet": {"release_dir": "data/curated/facet_fixture"}, "occupations": {}}, repo
        )
        == {}
    )


def test_external_inputs_never_fail_on_a_bad_config(tmp_path: Path) -> None:
    bad = {
        "facet": {"release_dir": "/x", "crop_size": "big"},
        "news": {"sources": []},
        "Bad Name": {"release_dir": "/x"},
        "unknown": {"path": "/x"},
    }
    assert external_inputs(bad, tmp_path) == {}
    assert external_inputs({"facet": {"release_dir": "/a\x00b"}}, tmp_path) == {}
    assert external_inputs(["not", "a", "mapping"], tmp_path) == {}  # type: ignore[arg-type]


def test_a_stale_external_inputs_names_the_fix(tmp_path: Path) -> None:
    curation = {"facet": {"release_dir": str(tmp_path.parent / "facet")}}
    written = external_inputs(curation)
    check_external_inputs(written, curation, "params.yaml")
    with pytest.raises(
        ConfigError,
        match=r"params.yaml: external_inputs does not follow curation .*facet-images.*"
        r"`genfair compose`",
    ):
        check_external_inputs({}, curation, "params.yaml")
    with pytest.raises(ConfigError, match="recompose"):
        check_external_inputs(
            {**written, "facet-images": {"section": "facet", "path": "/elsewhere"}},
            curation,
            "params.yaml",
        )


def test_compose_writes_external_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from genfair.cli import compose
    from tests.support.conf import ROOT

    monkeypatch.chdir(ROOT)
    out = compose(
        [f"curation.facet.release_dir={tmp_path}"], tmp_path / "params.yaml", ROOT / "conf"
    )
    written = yaml.safe_load(out.read_text())["external_inputs"]
    assert written == {
        "facet-annotations": {"section": "facet", "path": str(tmp_path / "annotations.csv")},
        "facet-images": {"section": "facet", "path": str(tmp_path / "images")},
    }
    default = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert default["external_inputs"] == {}


def test_external_input_stage_refuses_a_name_params_do_not_list(tmp_path: Path) -> None:
    from genfair.frame import load_frame
    from genfair.study.curation_stages import external_input
    from genfair.study.layout import Layout
    from tests.support.conf import ROOT

    frame = load_frame(ROOT / "params.yaml")
    with pytest.raises(
        ConfigError, match=r"external_inputs.facet-images: not in params.yaml; recompose"
    ):
        external_input(frame, "facet-images", Layout(tmp_path))


def test_a_folder_linked_into_the_repository_is_external_under_its_relative_path(
    tmp_path: Path,
) -> None:
    repo, shared = tmp_path / "repo", tmp_path / "shared" / "facet"
    (repo / "data").mkdir(parents=True)
    shared.mkdir(parents=True)
    (repo / "data" / "facet").symlink_to(shared)
    assert external_inputs({"facet": {"release_dir": "data/facet"}}, repo) == {
        "facet-annotations": {"section": "facet", "path": "data/facet/annotations.csv"},
        "facet-images": {"section": "facet", "path": "data/facet/images"},
    }
