"""A plant per simulator (issue 46.2): a simulated model's config may carry its own plant for a
methodology (``plants.<methodology>.<plant field>``), which its runs of that methodology answer
with in place of the methodology's; it is in the DVC params of those runs' stages alone, so
editing it reruns that model's generate (then its label and metrics, whose input changed) of
that methodology and nothing else. Read from the stage params DVC itself reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from genfair.cli import main
from genfair.study.context import configured
from genfair.study.runs import check_runs
from genfair.study.steps import run_params
from genfair.study_params import ConfigError, load_params
from tests.support.conf import ROOT, copy_conf, stage_params

#: the second simulator's own news-bias plant: more swaps than the methodology's
OWN = {
    "unbiased": {"kind": "rewrite", "female_to_male": 0.5, "black_to_white": 0.5},
    "biased": {"kind": "rewrite", "female_to_male": 0.9, "black_to_white": 0.9},
}


def _second(study: Path, plants: dict | None, *extra: str) -> None:
    """A second simulated LLM (conf/model/simulated_llm_b.yaml: the first one with ``plants``)
    in the study file, held to news bias, then composed."""
    model = (ROOT / "conf/model/simulated_llm.yaml").read_text()
    body = yaml.safe_dump({"plants": plants}) if plants is not None else ""
    (study / "conf/model/simulated_llm_b.yaml").write_text(model + body)
    path = study / "conf/study.yaml"
    path.write_text(
        path.read_text()
        + "  - /model@models.simulated_llm_b: simulated_llm_b\n"
        + "model_methodologies:\n  simulated_llm_b: [news_bias]\n"
        + "".join(extra)
    )


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(copy_conf(tmp_path))
    return tmp_path


def test_a_simulators_own_plant_is_in_its_own_runs_stage_params_alone(study: Path) -> None:
    _second(study, {"news_bias": {"simulated": OWN}})
    assert main(["compose"]) == 0
    before = stage_params(study)
    params = load_params(study / "params.yaml")
    check_runs(params)  # what `score` checks: the runs follow the validated configs too
    # its runs answer with its own plant; the first simulator's with the methodology's
    _, own = configured(params, "news_bias", "generate", "simulated_llm_b")
    _, shared = configured(params, "news_bias", "generate", "simulated_llm")
    assert own.simulated.biased.female_to_male == 0.9
    assert shared.simulated.biased.female_to_male == 0.6
    recorded = run_params(params, "simulated_llm_b", "news_bias")["methodologies"]["news_bias"]
    assert recorded["simulated"]["biased"]["female_to_male"] == 0.9
    # not the model's identity: the two simulators' model digests are the same
    digests = yaml.safe_load((study / "params.yaml").read_text())["digests"]["models"]
    assert digests["simulated_llm_b"] == digests["simulated_llm"]

    # its plant edited: the stage params of that one run change, no other stage's
    (study / "conf/study.yaml").write_text((ROOT / "conf/study.yaml").read_text())
    edited = {**OWN, "biased": {**OWN["biased"], "female_to_male": 0.8}}
    _second(study, {"news_bias": {"simulated": edited}})
    assert main(["compose"]) == 0
    after = stage_params(study)
    assert set(after) == set(before)
    changed = {stage for stage in after if after[stage] != before[stage]}
    assert changed == {"generate@simulated_llm_b-news_bias"}, sorted(changed)


@pytest.mark.parametrize(
    ("plants", "said"),
    [
        (
            {"lvlm_facet": {"simulated": {}}},
            "models.simulated_llm_b.plants.lvlm_facet: simulated_llm_b runs no lvlm_facet",
        ),
        (
            {"news_bias": {"sample": 3}},
            "models.simulated_llm_b.plants.news_bias: sample not a plant field of news_bias "
            "(its plant fields: simulated)",
        ),
        (
            {"news_bias": {"simulated": {"biased": {"kind": "rewrite", "female_to_male": 2}}}},
            "models.simulated_llm_b.plants.news_bias.simulated.biased.female_to_male",
        ),
    ],
)
def test_a_plant_its_runs_cannot_use_is_refused_naming_its_key(
    study: Path, capsys: pytest.CaptureFixture[str], plants: dict, said: str
) -> None:
    _second(study, plants)
    assert main(["config"]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "conf/model/simulated_llm_b.yaml" in err, err


def test_a_real_model_carries_no_plant(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    data["models"]["smollm2"]["plants"] = {"news_bias": {"simulated": OWN}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"models\.smollm2\.plants"):
        load_params(path)
