"""Names are identifiers (issue 21.1, 21.8): a model, methodology, scale, curation step or
instrument name that would become a shell word, a path or a stage name is refused, with one
line naming the key and the pattern, before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genfair.cli import main
from genfair.errors import ConfigError
from genfair.frame import read_params
from genfair.names import (
    NAME_PATTERN,
    check_name,
    inside,
    name_problem,
    pair_key,
    pair_problem,
    split_pair,
)
from genfair.study.layout import Layout
from genfair.study.runs import compose_runs
from genfair.study_params import params_from

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [
    "m1; touch /tmp/X; #",
    "../../../../tmp/somewhere",
    "/abs/path",
    "a" * 300,
    "a\nb",
    "a.b",
    "..",
    "",
    "Upper",
    "$(id)",
    "a b",
    "-leading",
    "a/b",
    "é",
]


@pytest.mark.parametrize(
    "name", ["smollm2", "simulated_llm", "fact_or_fair", "qwen2-5", "a", "0" * 64]
)
def test_plain_names_pass(name: str) -> None:
    assert name_problem(name) is None and check_name(name, "models") == name


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_in_one_line_naming_the_key(name: str) -> None:
    with pytest.raises(ConfigError) as error:
        check_name(name, "models.<key>")
    text = str(error.value)
    assert "\n" not in text and text.startswith("models.<key>: ") and NAME_PATTERN in text
    assert len(text) < 250  # a 300-character key is quoted short


@pytest.mark.parametrize("name", HOSTILE)
def test_a_params_file_with_a_hostile_model_key_does_not_load(name: str) -> None:
    raw = read_params(ROOT / "params.yaml")
    raw["models"] = {name: raw["models"]["simulated_llm"], **raw["models"]}
    with pytest.raises(ConfigError, match=r"params\.yaml: models: .* is not a name"):
        params_from(raw, "params.yaml")


def test_scale_and_every_named_section_are_checked() -> None:
    raw = read_params(ROOT / "params.yaml")
    for section, bad in (
        ("scale", "../paper"),
        ("methodologies", {"../x": {}}),
        ("curation", {"a b": {}}),
        ("instruments", {"X": {}}),
        ("runs", {"m;x": {"model": "m", "methodology": "x"}}),
    ):
        with pytest.raises(ConfigError, match=rf"params\.yaml: {section}: .* is not a name"):
            params_from({**raw, section: bad}, "params.yaml")
    entry = {"ok-run": {"model": "../x", "methodology": "fact_or_fair"}}
    with pytest.raises(ConfigError, match=r"runs: ok-run\.model: '\.\./x' is not a name"):
        params_from({**raw, "runs": entry}, "params.yaml")


def test_no_methodology_takes_the_instruments_folder() -> None:
    """data/metrics/instruments and data/headline/instruments are the instruments' own,
    beside the methodologies' folders."""
    raw = read_params(ROOT / "params.yaml")
    methodologies = {**raw["methodologies"], "instruments": {}}
    with pytest.raises(
        ConfigError,
        match=r"params\.yaml: methodologies: 'instruments' is the instruments' folder .*: "
        "name the methodology otherwise$",
    ):
        params_from({**raw, "methodologies": methodologies}, "params.yaml")


def test_composed_runs_never_carry_a_hostile_name_into_a_stage_command() -> None:
    model = {"modality": "llm", "backend": "simulated"}
    runs = compose_runs(
        {"m1; touch /tmp/X; #": model, "ok": model}, {"fact_or_fair": {}, "../x": {}}
    )
    assert list(runs) == ["ok-fact_or_fair"]


def test_compose_refuses_a_bad_name_and_leaves_params_yaml_as_it_was(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = (ROOT / "params.yaml").read_bytes()
    assert main(["compose", "-o", "+model@models.Bad_Key=simulated_llm"]) == 2
    err = capsys.readouterr().err
    assert "models: 'Bad_Key' is not a name" in err and NAME_PATTERN in err
    assert (ROOT / "params.yaml").read_bytes() == before
    assert (
        main(["config", "-o", "scale=../paper"]) == 2
    )  # a scale is a name (and a conf/ group option)


@pytest.mark.parametrize("model", ["../../../../tmp/somewhere", "/tmp/abs", "a" * 300])
def test_try_refuses_a_path_as_model_and_writes_nothing(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["try", model, "fact_or_fair", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "genfair try's MODEL:" in err and NAME_PATTERN in err and "OSError" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "stage, args",
    [
        ("generate", ["../../x", "fact_or_fair"]),
        ("probes", ["$(id)"]),
        ("label", ["ok", "a/../../b"]),
        ("study", ["/etc"]),
    ],
)
def test_every_stage_refuses_a_bad_name_before_reading_params(
    stage: str, args: list[str], tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / f"{stage}.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert (
        "is not a name" in done.stderr
        and "argument" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert list(tmp_path.iterdir()) == []


def test_layout_builds_paths_only_from_names(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    # a run's outputs by methodology first: study@<methodology> depends on its folders alone
    data = tmp_path / "data"
    assert layout.responses("m", "fact_or_fair") == (
        data / "responses/fact_or_fair/m/responses.parquet"
    )
    assert layout.labels("m", "fact_or_fair") == data / "labels/fact_or_fair/m.parquet"
    assert layout.metrics("m", "fact_or_fair") == data / "metrics/fact_or_fair/m"
    for path in (layout.run_params, layout.usage, layout.images, layout.labels, layout.metrics):
        parts = path("m", "fact_or_fair").relative_to(data).parts  # <kind>/<methodology>/<model>
        assert parts[1] == "fact_or_fair" and parts[2] in ("m", "m.parquet"), parts
    for model, methodology in (("m", "iris"), ("a", "iris"), ("m", "fact_or_fair")):
        layout.usage(model, methodology).parent.mkdir(parents=True)
        layout.usage(model, methodology).write_text("{}")
    assert [(model, m) for model, m, _ in layout.usages()] == [
        ("m", "fact_or_fair"),
        ("a", "iris"),
        ("m", "iris"),
    ]
    for model in ("..", "../x", "/etc", "a/b"):
        with pytest.raises(ConfigError, match="is not a name"):
            layout.metrics(model, "fact_or_fair")
    with pytest.raises(ConfigError, match="is not a name"):
        layout.named(layout.scores, "../../escape", suffix=".parquet")


def test_inside_refuses_paths_that_leave_their_root(tmp_path: Path) -> None:
    assert inside(tmp_path, tmp_path / "data" / "x") == tmp_path / "data" / "x"
    for escape in (
        tmp_path / ".." / "x",
        Path("/etc/passwd"),
        tmp_path / "data" / ".." / ".." / "y",
    ):
        with pytest.raises(ConfigError, match="outside"):
            inside(tmp_path, escape)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_string_is_a_name_or_a_one_line_error_and_a_name_stays_inside(text: str) -> None:
    """Fuzzed (21.8): arbitrary text is a name or one line of error; every accepted name
    builds a path inside the layout's root."""
    try:
        name = check_name(text, "models")
    except ConfigError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 250
        return
    layout = Layout(Path("/srv/study"))
    for path in (
        layout.responses(name, name),
        layout.labels(name, name),
        layout.named(layout.plots, name, name),
    ):
        assert os.path.commonpath(["/srv/study", os.path.normpath(path)]) == "/srv/study"
        assert name in path.parts or f"{name}.parquet" in path.parts


@pytest.mark.parametrize("name", ["b_vs_c", "a_vs_b", "vs_b", "a_vs", "vs"])
def test_a_model_name_that_could_join_two_pairs_into_one_key_does_not_load(name: str) -> None:
    """Issue 44: models a, b_vs_c, a_vs_b and c made 6 comparisons into 5 keys."""
    raw = read_params(ROOT / "params.yaml")
    raw["models"] = {name: raw["models"]["simulated_llm"], **raw["models"]}
    with pytest.raises(ConfigError, match=r"params\.yaml: models: .* would make two comparisons"):
        params_from(raw, "params.yaml")


#: names a config accepts, over an alphabet that makes "_vs_" likely
_PAIRABLE = st.text(alphabet="av_s", min_size=1, max_size=8).filter(
    lambda n: name_problem(n) is None and pair_problem(n) is None
)


@given(_PAIRABLE, _PAIRABLE, _PAIRABLE, _PAIRABLE)
def test_two_pairs_of_accepted_names_never_share_a_key(a: str, b: str, c: str, d: str) -> None:
    assert split_pair(pair_key(a, b)) == (a, b)
    assert (a, b) == (c, d) or pair_key(a, b) != pair_key(c, d)
