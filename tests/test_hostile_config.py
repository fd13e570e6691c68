"""Hostile configuration (issue 32): YAML aliases, FIFOs and devices as inputs, unbounded
counts, `genfair exp` spellings, base URLs with a query, `cache copy` onto another file. Each
ends in one line naming the file or key, before anything hangs, grows or is overwritten."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from genfair.cli import exp_overrides, main
from genfair.frame import read_params
from genfair.study_params import ConfigError, methodology_config, params_from
from genfair.yaml_guard import MAX_DEPTH, check_yaml
from tests.support.conf import copy_conf
from tests.test_names import ROOT

#: the 9 x 9 "billion laughs": 342 bytes, 387 million strings once expanded
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the study's conf/, dvc.yaml and params.yaml; the working directory."""
    monkeypatch.chdir(copy_conf(tmp_path))
    return tmp_path


# ---- 1. YAML aliases


def test_an_alias_bomb_in_conf_is_refused_before_hydra_reads_it(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (study / "conf/model/bomb.yaml").write_text(BOMB)
    assert main(["config"]) == 2  # before: Hydra expanded it for minutes, gigabytes growing
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "conf/model/bomb.yaml: line 2: YAML alias *a refused" in err
    assert main(["compose", "-o", "+model@models.x=bomb"]) == 2
    assert (study / "params.yaml").read_bytes() == (ROOT / "params.yaml").read_bytes()


def test_an_alias_in_params_yaml_is_refused_by_every_reader(study: Path) -> None:
    (study / "params.yaml").write_text((study / "params.yaml").read_text() + BOMB)
    with pytest.raises(ConfigError, match=r"^params\.yaml: line \d+: YAML alias \*a refused"):
        read_params("params.yaml")
    from genfair.study.lineage import current_experiment

    with pytest.raises(ConfigError, match="YAML alias"):
        current_experiment(study, study / "params.yaml")


def test_deep_nesting_is_refused_and_plain_yaml_passes() -> None:
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH}"):
        check_yaml("[" * 10_000 + "]" * 10_000, "x.yaml")
    check_yaml((ROOT / "params.yaml").read_text(), "params.yaml")
    check_yaml("a: [1, {b: '*not an alias &nor an anchor'}]", "x.yaml")


# ---- 2. FIFOs and devices as curation inputs


def _with_news_file(raw: dict, path: str) -> dict:
    news = {**raw["curation"]["news"], "sources": [{"kind": "file", "path": path}]}
    return {**raw, "curation": {**raw["curation"], "news": news}}


@pytest.mark.parametrize("kind", ["fifo", "device link", "fifo in a folder"])
def test_a_fifo_or_device_input_is_refused_at_compose_time(kind: str, tmp_path: Path) -> None:
    from genfair.curation.inputs import external_inputs

    raw = read_params(ROOT / "params.yaml")
    if kind == "fifo":
        os.mkfifo(tmp_path / "news.jsonl")
        raw = _with_news_file(raw, str(tmp_path / "news.jsonl"))
        key, problem = "curation.news.sources.0.path", "is a FIFO (named pipe)"
    elif kind == "device link":
        (tmp_path / "news.jsonl").symlink_to("/dev/zero")
        raw = _with_news_file(raw, str(tmp_path / "news.jsonl"))
        key, problem = "curation.news.sources.0.path", "is a character device"
    else:
        (tmp_path / "release/images").mkdir(parents=True)
        (tmp_path / "release/annotations.csv").write_text("person_id\n")
        os.mkfifo(tmp_path / "release/images/1.jpg")
        raw["curation"] = {**raw["curation"], "facet": {"release_dir": str(tmp_path / "release")}}
        key, problem = "curation.facet.images_dir", "1.jpg (in the folder"
    # never a DVC dependency (`dvc status` would wait on it forever) ...
    assert not [
        n for n in external_inputs(raw["curation"], ROOT) if n.startswith(("news-s", "facet-i"))
    ]
    # ... and refused, one line naming the key, wherever the params load
    with pytest.raises(ConfigError) as error:
        params_from(raw, "params.yaml")
    assert str(error.value).startswith(f"params.yaml: {key}: ") and problem in str(error.value)
    assert "\n" not in str(error.value)


# ---- 3. counts


@pytest.mark.parametrize(
    "key, value",
    [("samples_per_prompt", 1_000_000_000), ("bootstrap_resamples", 10**12)],
)
def test_every_count_has_an_upper_bound(key: str, value: int) -> None:
    raw = read_params(ROOT / "params.yaml")
    raw["methodologies"]["fact_or_fair"][key] = value
    with pytest.raises(ConfigError, match=rf"fact_or_fair\.{key}: Input should be less than"):
        params_from(raw, "params.yaml")


def test_a_run_the_machine_cannot_hold_is_refused_before_any_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from genfair.study import footprint
    from genfair.study.layout import Layout
    from genfair.study.steps import make_probes

    raw = read_params(ROOT / "params.yaml")
    raw["methodologies"]["fact_or_fair"]["samples_per_prompt"] = 10_000
    params = params_from(raw, "params.yaml")
    monkeypatch.setattr(footprint, "available_memory", lambda: 2 << 30)
    with pytest.raises(ConfigError) as error:
        make_probes(params, "fact_or_fair", Layout(tmp_path))
    message = str(error.value)
    assert message.startswith("params.yaml: methodologies.fact_or_fair.samples_per_prompt: ")
    assert "rows x 2,000 bytes =" in message and "2.0 GiB this machine has available" in message
    assert not list(tmp_path.rglob("*.parquet"))
    config = methodology_config(params_from(read_params(ROOT / "params.yaml"), "p"), "fact_or_fair")
    footprint.check_footprint(footprint_method(), config)  # the study as committed fits


def footprint_method():  # noqa: ANN201 - the methodology object
    from genfair.methodologies import get_methodology

    return get_methodology("fact_or_fair")


# ---- 4. genfair exp reads -S as DVC does


def test_exp_reads_every_spelling_dvc_reads() -> None:
    args = ["--set-par", "a.b=-1", "-fS", "x=1", "-qS", "y=2", "--set=z=3", "--temp"]
    assert exp_overrides(args) == ["a.b=-1", "x=1", "y=2", "z=3"]
    with pytest.raises(ConfigError, match="dvc exp run cannot read .*expected one argument"):
        exp_overrides(["--temp", "-S"])


@pytest.mark.parametrize(
    "spelling",
    [
        ["--set-par", "methodologies.news_bias.articles=-1"],
        ["-fS", "methodologies.news_bias.articles=-1"],
        ["-qS", "methodologies.news_bias.articles=-1"],
        ["--set=methodologies.news_bias.articles=-1"],
    ],
)
def test_exp_validates_an_abbreviated_or_combined_set_param(
    spelling: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a))
    before = (ROOT / "params.yaml").read_bytes()
    assert main(["exp", *spelling]) == 2  # before: passed unchecked; DVC wrote -1
    assert "methodologies.news_bias.articles" in capsys.readouterr().err
    assert calls == [] and (ROOT / "params.yaml").read_bytes() == before


# ---- 5. cache copy onto a file that is not a cache


@pytest.mark.parametrize("kind", ["empty", "text", "other sqlite"])
def test_cache_copy_refuses_a_file_that_is_not_a_cache(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "dst.db"
    if kind == "empty":
        target.touch()
    elif kind == "text":
        target.write_text("notes\n")
    else:
        with sqlite3.connect(target) as db:
            db.execute("CREATE TABLE t (x)")
    before = target.read_bytes()
    assert main(["cache", "copy", str(tmp_path / "src.sqlite"), str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "\n" not in err
        and f"{target}: an existing" in err
        and "not a genfair response cache" in err
    )
    assert target.read_bytes() == before


def test_any_path_a_methodology_names_is_checked_too(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "statistics.csv")
    raw = read_params(ROOT / "params.yaml")
    raw["methodologies"]["fact_or_fair"]["statistics"] = str(tmp_path / "statistics.csv")
    with pytest.raises(ConfigError) as error:
        params_from(raw, "params.yaml")  # before: the probes stage waited on it forever
    assert str(error.value).startswith(
        "params.yaml: methodologies.fact_or_fair.statistics: "
    ) and "is a FIFO (named pipe), not a regular file or folder" in str(error.value)


def test_the_response_cache_never_writes_its_tables_into_another_database(tmp_path: Path) -> None:
    from genfair.errors import CacheError
    from genfair.models.cache import ResponseCache

    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE accounts (id)")
    before = other.read_bytes()
    with pytest.raises(CacheError, match=r"SQLite database of something else \(tables: accounts\)"):
        ResponseCache(other)
    assert other.read_bytes() == before


def test_an_interpolation_bomb_in_conf_is_refused_before_hydra_expands_it(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same growth through OmegaConf interpolations (Hydra copies an interpolated node
    where it is used): 7 levels of 9 grew past 340 MB in 60 s before."""
    levels = "abcdefg"
    text = "ia: [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"i{b}: [{', '.join([repr('${models.x.i' + a + '}')] * 9)}]\n"
        for a, b in zip(levels, levels[1:], strict=False)
    )
    (study / "conf/model/ibomb.yaml").write_text(text)
    assert main(["config", "-o", "+model@models.x=ibomb"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "conf/model/ibomb.yaml: its interpolations (${...}) expand to" in err
    check_yaml("a: 1\nb: ['${a}', '${.a}', 'x ${a}']\nc: '${b}'\n", "fine.yaml")


def _config_models() -> list[type]:
    """Every pydantic model a study's config is validated with: the frame, each model kind,
    each methodology's, curation step's and instrument's config, and all they nest."""
    import importlib
    import typing

    from pydantic import BaseModel

    from genfair.frame import CURATION, INSTRUMENTS
    from genfair.methodologies import get_methodology, names
    from genfair.study_params import StudyParams

    roots: list[Any] = [StudyParams]
    # genfair's own (a test may have registered a toy methodology in this process)
    builtin = [get_methodology(n) for n in names()]
    roots += [m.Config for m in builtin if type(m).__module__.startswith("genfair.")]
    for spec in [*CURATION.values(), *INSTRUMENTS.values()]:
        module, cls = spec.split(":")
        roots.append(getattr(importlib.import_module(module), cls))
    seen: list[type] = []

    def walk(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                return
            seen.append(tp)
            for field in tp.model_fields.values():
                walk(field.annotation)
        for arg in typing.get_args(tp):
            walk(arg)

    for root in roots:
        walk(root)
    return seen


def test_every_integer_count_of_every_config_has_an_upper_bound() -> None:
    """docs/security.md, "Counts are bounded": every integer field of every config model
    (a count, a size, a number of attempts...) carries ``le=``; seeds are any integer."""
    import typing

    import annotated_types

    unbounded = []
    for model in _config_models():
        for name, field in model.model_fields.items():
            # an int, or an optional one (a tuple of ints is a range of values, not a count)
            if field.annotation not in (int, int | None, typing.Optional[int]):  # noqa: UP045
                continue
            if "seed" in name or field.annotation is bool:
                continue
            bounds = (annotated_types.Le, annotated_types.Lt)
            if not any(isinstance(m, bounds) for m in field.metadata):
                unbounded.append(f"{model.__module__}.{model.__qualname__}.{name}")
    assert not unbounded, unbounded


# ---- issue 44.3: the guard sees what the loader sees; interpolated strings are bounded

#: 30 lines, each value two copies of the one above: 2^29 x 16 characters once resolved
STRING_BOMB = "a0: xxxxxxxxxxxxxxxx\n" + "".join(
    f"a{i}: ${{.a{i - 1}}}${{.a{i - 1}}}\n" for i in range(1, 30)
)


def _bounded(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``args`` run in ``cwd`` under 3 GB of address space and 120 s: a bomb that got past
    the guard ends in MemoryError or a timeout instead of taking the machine."""
    return subprocess.run(
        ["bash", "-c", 'ulimit -v 3000000 && exec timeout 120 "$@"', "bounded", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )


@pytest.mark.parametrize("directive", ["%YAML 1.3", "%YAML 1.9", "%YAML 1.1"])
def test_an_alias_bomb_behind_any_version_directive_is_refused(directive: str, study: Path) -> None:
    """libyaml refuses ``%YAML 1.3``, PyYAML's pure-Python parser (OmegaConf's) reads it: the
    guard skipped the file and `genfair config` hung before."""
    text = f"{directive}\n---\n{BOMB}"
    with pytest.raises(ConfigError, match=r"^x\.yaml: line 4: YAML alias \*a refused"):
        check_yaml(text, "x.yaml")
    (study / "conf/model/bomb.yaml").write_text(text)
    run = _bounded(["genfair", "config", "-o", "+model@models.x=bomb"], study)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().count("\n") == 0
    assert "conf/model/bomb.yaml: line 4: YAML alias *a refused" in run.stderr


def test_a_string_interpolation_bomb_in_conf_is_refused_before_it_is_built(study: Path) -> None:
    """572 bytes of ``${.a0}${.a0}`` chains: MemoryError at 3.3 GB before."""
    with pytest.raises(ConfigError, match=r"build a string of about 8,589,934,592 characters"):
        check_yaml(STRING_BOMB, "x.yaml")
    (study / "conf/model/sbomb.yaml").write_text(STRING_BOMB)
    run = _bounded(["genfair", "config", "-o", "+model@models.x=sbomb"], study)
    assert run.returncode == 2, run.stderr
    assert (
        "conf/model/sbomb.yaml: its interpolations (${...}) build a string of about" in (run.stderr)
        and run.stderr.strip().count("\n") == 0
    )
    check_yaml("a: xx\nb: '${.a} and ${.a}'\nc: '${b}${b}'\n", "fine.yaml")


def test_a_string_bomb_no_file_shows_is_refused_where_omegaconf_builds_it(study: Path) -> None:
    """Chained through overrides (each file is harmless), so only the bound where OmegaConf
    joins an interpolated string sees it: in genfair's composition and in DVC's own
    (``compose_and_dump``, what ``dvc exp run -S`` calls)."""
    chain = [f"+a{i}=${{a{i - 1}}}${{a{i - 1}}}" for i in range(1, 30)]
    overrides = ["+a0=xxxxxxxxxxxxxxxx", *chain]
    run = _bounded(["genfair", "config", *[a for o in overrides for a in ("-o", o)]], study)
    assert run.returncode == 2, run.stderr
    assert (
        "a16: its interpolations (${...}) would build a string of more than 1,000,000" in run.stderr
    )
    assert run.stderr.strip().count("\n") == 0
    dvc_compose = (
        "import sys; from dvc.utils.hydra import compose_and_dump; "
        "compose_and_dump('out.yaml', sys.argv[1], None, 'config', '.', sys.argv[2:])"
    )
    run = _bounded(["python", "-c", dvc_compose, str(study / "conf"), *overrides], study)
    assert run.returncode == 1 and "MemoryError" not in run.stderr, run.stderr
    assert (
        "a16: its interpolations (${...}) would build a string of more than 1,000,000" in run.stderr
    )
    assert not (study / "out.yaml").exists()


@pytest.mark.parametrize("where", ["override", "conf file"])
def test_oc_env_is_refused_and_no_variable_reaches_params_yaml(
    where: str, study: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``${oc.env:PGPASSWORD}`` wrote the password into the composed params.yaml."""
    monkeypatch.setenv("PGPASSWORD", "canary-pg-password-5f1e")
    if where == "override":
        args = ["compose", "-o", "+tracking.note=${oc.env:PGPASSWORD}"]
    else:
        (study / "conf/model/leak.yaml").write_text(
            "backend: simulated\nmodel_id: leak\ndescription: ${oc.env:PGPASSWORD}\n"
        )
        args = ["compose", "-o", "+model@models.leak=leak"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "${oc.env:PGPASSWORD} refused" in err
    assert "canary-pg-password" not in err
    assert (study / "params.yaml").read_bytes() == (ROOT / "params.yaml").read_bytes()


@pytest.mark.parametrize("name", ["__init__.py", "notes.txt", "responses"])
def test_an_empty_file_of_another_kind_never_becomes_the_response_cache(
    name: str, tmp_path: Path
) -> None:
    """Before: ``cache.url: sqlite:///pkg/__init__.py`` (an empty file) silently became a
    SQLite database. An empty ``*.sqlite`` is still taken: another process may be creating
    the cache this moment."""
    from genfair.errors import CacheError
    from genfair.models.cache import ResponseCache

    target = tmp_path / name
    target.touch()
    with pytest.raises(CacheError, match=f"^response cache {target}: an existing empty file, "):
        ResponseCache(f"sqlite:///{target}")
    assert target.read_bytes() == b""
    (tmp_path / "responses.sqlite").touch()
    ResponseCache(f"sqlite:///{tmp_path / 'responses.sqlite'}")


def test_yaml_tags_overrides_too_deep_and_numbers_too_long_are_one_line(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "unexpected ConstructorError", "unexpected RecursionError", and Python's
    "Exceeds the limit (4300 digits)" naming no key."""
    (study / "conf/model/evil.yaml").write_text(
        "backend: simulated\nmodel_id: !!python/object/apply:os.system ['echo hi']\n"
    )
    huge = "9" * 5000
    cases = {
        ("-o", "+model@models.e=evil"): "conf/model/evil.yaml: line 2: YAML tag "
        "tag:yaml.org,2002:python/object/apply:os.system refused",
        ("-o", "+x=" + "[" * 10_000 + "]" * 10_000): "override +x: nested deeper than 64 levels",
        ("-o", f"seed={huge}"): "override seed: a number of 5,000 digits, more than the 4,300",
    }
    for args, expected in cases.items():
        assert main(["config", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"genfair: error: {expected}") and "\n" not in err, err
    with pytest.raises(ConfigError, match=r"^params\.yaml: line 2: a number of 5,000 digits"):
        check_yaml(f"a: 1\nseed: {huge}\n", "params.yaml")
    check_yaml("a: !!str 1\nb: !!int '2'\nc: !!float 1\n", "tags.yaml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # before: 4.8 s of CPU through `genfair config` (6.2 s in issue 44)
        ("a: " + "x" * 5_000_000 + "\n", "5,000,004 bytes, more than the 1,048,576"),
        # before: 21 s of CPU (2 min 33 s in issue 44); refused by size
        ("".join(f"k{i}: {i}\n" for i in range(100_000)), "1,377,780 bytes, more than"),
        # small enough, too many values
        ("".join(f"k{i}: {i}\n" for i in range(30_000)), "line 10001: more than 20,000 values"),
    ],
    ids=["5 MB scalar", "100,000 keys", "30,000 keys"],
)
def test_a_config_file_too_large_to_parse_quickly_is_refused_before_it_is_parsed(
    text: str, expected: str, study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (study / "conf/model/big.yaml").write_text(text)
    assert main(["config"]) == 2  # every file of conf/ is checked, selected or not
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"genfair: error: conf/model/big.yaml: {expected}") and "\n" not in err
    (study / "params.yaml").write_text(text)
    with pytest.raises(ConfigError, match=f"^params.yaml: {expected}"):
        read_params("params.yaml")
