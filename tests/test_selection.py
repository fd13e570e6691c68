"""What a study selects (issue 34.1, 34.2, 34.5): conf/study.yaml lasts, a composition that
drops a selection says so, a methodology field set by override gets the fix that works, a
partial methodology config is refused, and each methodology's sizes are recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genfair.cli import main
from genfair.methodologies.comparison import Headline
from genfair.study.runs import CUSTOM, sizes_for
from genfair.study.selection import dropped, partial_blocks
from tests.support.conf import copy_conf, read_conf


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the study's conf/, dvc.yaml and params.yaml; the working directory."""
    monkeypatch.chdir(copy_conf(tmp_path))
    return tmp_path


def _params(study: Path) -> dict:
    return yaml.safe_load((study / "params.yaml").read_text())


def _select(study: Path, *lines: str) -> None:
    """``lines`` appended to the study file's defaults list."""
    path = study / "conf/study.yaml"
    path.write_text(path.read_text() + "".join(f"  - {line}\n" for line in lines))


def _deselect(study: Path, name: str) -> None:
    """Methodology ``name``'s line taken out of the study file."""
    path = study / "conf/study.yaml"
    line = f"  - /methodology@methodologies.{name}: {name}\n"
    assert line in path.read_text()
    path.write_text(path.read_text().replace(line, ""))


def test_a_selection_in_the_study_file_lasts_and_one_by_override_is_said_dropped(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compose", "-o", "+model@models.extra=simulated_llm"]) == 0
    assert "extra" in _params(study)["models"]
    capsys.readouterr()
    assert main(["compose"]) == 0  # before: extra silently left params.yaml
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "models extra (in the current params.yaml) are dropped" in err
    assert "add its line to conf/study.yaml" in err and "extra" not in _params(study)["models"]

    _select(study, "/model@models.extra: simulated_llm")
    assert main(["compose", "-o", "scale=smoke"]) == 0
    assert "extra" in _params(study)["models"] and "note" not in capsys.readouterr().err


def test_a_methodology_runs_at_its_own_sizes_and_they_are_recorded(study: Path) -> None:
    _select(study, "override /sizes/fact_or_fair@methodologies.fact_or_fair: smoke")
    assert main(["compose"]) == 0
    params = _params(study)
    assert params["scale"] == "default"
    assert params["sizes"] == {
        "fact_or_fair": "smoke",
        "news_bias": "default",
        "iris": "default",
        "lvlm_facet": "default",
        "open_bias": "default",
    }
    smoke = read_conf("sizes/fact_or_fair/smoke.yaml")
    block = params["methodologies"]["fact_or_fair"]
    assert {key: block[key] for key in smoke if key != "t2i"} == {
        k: v for k, v in smoke.items() if k != "t2i"
    }
    from genfair.study_params import load_params

    loaded = load_params(study / "params.yaml")
    assert loaded.sizes_of("fact_or_fair") == "smoke" and loaded.sizes_of("iris") == "default"


def test_sizes_name_the_file_a_block_holds(tmp_path: Path) -> None:
    folder = tmp_path / "sizes"
    (folder / "m").mkdir(parents=True)
    (folder / "m/smoke.yaml").write_text("{n: 1, t2i: {k: 2}}")
    (folder / "m/default.yaml").write_text("{n: 5, t2i: {k: 2}}")
    blocks = {"m": {"n": 1, "t2i": {"k": 2, "other": 0}, "x": 3}, "bare": {"n": 1}}
    assert sizes_for(blocks, "default", folder) == {"m": "smoke", "bare": None}
    assert sizes_for({"m": {"n": 2, "t2i": {"k": 2}}}, "default", folder) == {"m": CUSTOM}


def test_a_field_override_of_an_unselected_methodology_gives_the_fix_that_works(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _deselect(study, "iris")
    assert main(["config", "-o", "methodologies.iris.max_occupations=5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "To append" not in err  # Hydra's hint replaced the config
    assert "methodologies.iris.max_occupations=5: methodology 'iris' is not in the study" in err
    assert "`- /methodology@methodologies.iris: iris` in conf/study.yaml" in err

    # the fix works: selected in the study file (its last line), the override sets one field
    _select(study, "/methodology@methodologies.iris: iris")
    assert main(["compose", "-o", "methodologies.iris.max_occupations=5"]) == 0
    iris = _params(study)["methodologies"]["iris"]
    assert iris["max_occupations"] == 5 and set(read_conf("methodology/iris.yaml")) <= set(iris)


def test_a_field_override_of_a_selected_methodology_names_its_fields(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "-o", "methodologies.fact_or_fair.nope=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "fact_or_fair's config has no field 'nope'; its fields: statistics, " in err
    # a real field the file leaves out: Hydra's `+` is right there, and said so
    assert main(["config", "-o", "methodologies.fact_or_fair.kld_aggregation=exp_of_mean"]) == 2
    err = capsys.readouterr().err
    assert "'+methodologies.fact_or_fair.kld_aggregation=exp_of_mean' adds it" in err
    assert main(["config", "-o", "+methodologies.fact_or_fair.kld_aggregation=exp_of_mean"]) == 0


def test_a_methodology_added_by_override_without_its_sizes_gets_the_fix(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _deselect(study, "iris")
    assert main(["config", "-o", "+methodology@methodologies.iris=iris"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "its file picks its sizes by the scale" in err
    assert "`- /methodology@methodologies.iris: iris` in conf/study.yaml" in err
    # the fix works: the study file's line picks its sizes by the scale (and records them)
    _select(study, "/methodology@methodologies.iris: iris")
    assert main(["compose", "-o", "scale=smoke"]) == 0
    assert _params(study)["sizes"]["iris"] == "smoke"


def test_a_partial_methodology_config_is_refused(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (study / "params.yaml").read_bytes()
    args = ["-o", "~methodology@methodologies.iris", "-o", "+methodologies.iris.max_occupations=5"]
    assert main(["compose", *args]) == 2  # before: iris ran with every other field defaulted
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "methodologies.iris: a partial config, without occupations_table, " in err
    assert "(they would fall back to code defaults)" in err and "conf/study.yaml" in err
    assert (study / "params.yaml").read_bytes() == before


def test_partial_blocks_compare_with_the_methodology_file(tmp_path: Path) -> None:
    (tmp_path / "methodology").mkdir()
    (tmp_path / "methodology/m.yaml").write_text("defaults: [_self_]\na: 1\nb: 2\n")
    assert partial_blocks({"m": {"a": 1, "b": 3, "c": 0}, "other": {"z": 1}}, tmp_path) is None
    line = partial_blocks({"m": {"b": 3}}, tmp_path)
    assert line and line.startswith("methodologies.m: a partial config, without a of ")


def test_dropped_names_methodologies_and_models() -> None:
    before = {"methodologies": {"a": {}, "b": {}}, "models": {"x": {}, "y": {}}}
    assert dropped(before, before) is None and dropped({}, before) is None
    line = dropped(before, {"methodologies": {"a": {}}, "models": {"y": {}}})
    assert line and line.startswith(
        "methodologies b; models x (in the current params.yaml) are dropped: conf/study.yaml "
        "does not select them (their line was removed from it, or an override selected them"
    )


def test_headline_better_is_one_of_three() -> None:
    for better in ("lower", "higher", "closer to 0"):
        assert Headline("n", "c", {}, better).better == better  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Headline 'n': better='up'; use one of 'lower', "):
        Headline("n", "c", {}, "up")  # type: ignore[arg-type]


def test_a_line_naming_a_key_of_params_yaml_says_which_conf_file_sets_it(tmp_path: Path) -> None:
    from genfair.study.selection import conf_file, where_to_edit

    conf = tmp_path / "conf"
    (conf / "sizes" / "m").mkdir(parents=True)
    (conf / "instrument").mkdir()
    (conf / "instrument" / "faces.yaml").write_text("{}")
    (conf / "study.yaml").write_text("defaults:\n  - /model@models.mine: served_smollm2\n")
    assert conf_file("models.mine.max_attempts", conf) == "conf/model/served_smollm2.yaml"
    assert conf_file("models.other.x", conf) == "the model file conf/study.yaml names"
    assert (
        conf_file("methodologies.m.n", conf)
        == "conf/methodology/m.yaml or its sizes, conf/sizes/m/"
    )
    assert conf_file("methodologies.k.n", conf) == "conf/methodology/k.yaml"
    assert conf_file("instruments.faces.mode", conf) == "conf/instrument/faces.yaml"
    assert conf_file("generation.max_cost", conf) == "conf/config.yaml"
    assert conf_file("runs", conf) is None and conf_file("digests.methodologies.m", conf) is None
    text = (
        "invalid configuration:\n"
        "  params.yaml: models.mine.max_attempts: Input should be greater than or equal to 1\n"
        "  params.yaml: generation.max_cost: raise it in conf/config.yaml (already said)"
    )
    assert where_to_edit(text, conf).split("\n") == [
        "invalid configuration:",
        "  params.yaml: models.mine.max_attempts: Input should be greater than or equal to 1 "
        "(params.yaml is composed: set it in conf/model/served_smollm2.yaml, then "
        "`genfair compose`)",
        "  params.yaml: generation.max_cost: raise it in conf/config.yaml (already said)",
    ]


def _hold(study: Path, only: str) -> None:
    """A second simulated LLM in the study file, held to the methodologies ``only`` names
    (a YAML flow list, e.g. ``[news_bias]``)."""
    _select(study, "/model@models.second: simulated_llm")
    path = study / "conf/study.yaml"
    path.write_text(path.read_text() + f"model_methodologies:\n  second: {only}\n")


def test_a_model_held_to_some_methodologies_adds_only_their_runs(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 46.1: the study file holds a model to some methodologies; its runs (dvc.yaml's
    generate/label/metrics stages) are those alone, and every other run and digest stays
    (so `dvc status` lists only the new stages and the study-level ones:
    tests/e2e/test_authoring.py reads it)."""
    assert main(["compose"]) == 0
    before = _params(study)  # composed here: the code paths are this copy's
    capsys.readouterr()
    _hold(study, "[news_bias]")
    assert main(["config"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["model_methodologies"] == {"second": ["news_bias"]}
    assert main(["compose"]) == 0
    after = _params(study)
    assert [k for k in after["runs"] if k.startswith("second-")] == ["second-news_bias"]
    assert {k: v for k, v in after["runs"].items() if not k.startswith("second-")} == before["runs"]
    assert {k: v for k, v in after["digests"]["models"].items() if k != "second"} == before[
        "digests"
    ]["models"]
    assert after["study_steps"] == before["study_steps"]


@pytest.mark.parametrize(
    ("only", "said"),
    [
        ("[iris, lvlm_facet]", "second is a llm model and lvlm_facet measures vlm only: remove"),
        ("[news_bias, quiz]", "'quiz' is not a methodology of the study"),
        ("[]", "an empty list runs nothing: remove the model's line"),
    ],
)
def test_a_methodology_a_held_model_cannot_run_is_refused_in_one_line(
    study: Path, capsys: pytest.CaptureFixture[str], only: str, said: str
) -> None:
    _hold(study, only)
    assert main(["compose"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and said in err, err
    assert "model_methodologies.second" in err and "conf/study.yaml" in err


def test_a_held_model_the_study_lacks_is_refused(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = study / "conf/study.yaml"
    path.write_text(path.read_text() + "model_methodologies:\n  sceond: [news_bias]\n")
    assert main(["config"]) == 2
    err = capsys.readouterr().err.strip()
    assert "model_methodologies.sceond: no model 'sceond' in the study" in err, err


def test_a_run_the_study_holds_out_is_an_error_naming_the_study_file(study: Path) -> None:
    from genfair.study.steps import _check_run
    from genfair.study_params import ConfigError, load_params

    _hold(study, "[news_bias]")
    assert main(["compose"]) == 0
    with pytest.raises(ConfigError, match=r"holds it to news_bias \(conf/study\.yaml: model_"):
        _check_run(load_params(study / "params.yaml"), "second", "iris")
