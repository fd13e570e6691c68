"""A methodology's planted rates are its own (issue 22, point 4): every simulated call carries a
policy of its methodology's ``simulated`` config, and its cache key covers the simulator's
model-level settings and that policy alone, so changing one planted rate changes the keys of
the calls that use it and no other; the answers are the ones given before the plants moved.

Each built-in methodology runs its own ``generate`` at a tiny size on conf/model's simulators
(the keys recorded as the runner computes them), then again with one planted rate changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pandas as pd
import pytest
import yaml
from pydantic import BaseModel

from genfair.curation.facet import FacetConfig, curate_facet
from genfair.curation.facet_fixture import build_facet_fixture
from genfair.instruments.face_demographics import FaceDemographics, FaceDemographicsConfig
from genfair.methodologies import get_methodology
from genfair.models import ResponseCache, build_backend
from genfair.models.base import Request, Simulator
from genfair.models.config import ModelConfig
from genfair.models.questions import ChoiceQuestion
from tests.methodologies.test_fact_or_fair_t2i import config as fact_or_fair_config
from tests.methodologies.test_iris_understanding import _persons
from tests.methodologies.test_news_bias_methodology import config as news_config
from tests.methodologies.test_news_bias_methodology import synthetic_corpus
from tests.methodologies.test_open_bias_methodology import _captions, _scripted
from tests.support.conf import ROOT
from tests.support.contexts import step_context

SEED = 3
ANSWER_COLUMNS = [
    "probe_id",
    "sample_index",
    "status",
    "attempts",
    "text",
    "image",
    "true_attributes",
]


def simulator(name: str) -> Any:
    from pydantic import TypeAdapter

    raw = yaml.safe_load((ROOT / f"conf/model/{name}.yaml").read_text())
    return build_backend(TypeAdapter(ModelConfig).validate_python(raw))


@contextmanager
def recording() -> Iterator[dict[str, dict[str, Any]]]:
    """Every simulated request's cache key, as the runner computes it, and the plant its
    simulator reads (dumped as a call's ``meta`` carries it)."""
    seen: dict[str, dict[str, Any]] = {}
    original = Simulator.request_fingerprint

    def record(self: Simulator, request: Request) -> dict[str, Any]:
        fingerprint = original(self, request)
        plant = self.question(request).plant
        seen[ResponseCache.key(fingerprint, request)] = None if plant is None else dumped(plant)
        return fingerprint

    with patch.object(Simulator, "request_fingerprint", record):
        yield seen


def dumped(policy: BaseModel) -> dict[str, Any]:
    return policy.model_dump(mode="json", exclude_defaults=True)


def generate(
    name: str, config: Any, modality: str, model: str, tmp: Path, record: bool = True, **models: Any
) -> tuple[dict[str, Any], str]:
    """Methodology ``name``'s ``generate`` on one simulator: the plant of each call by cache key
    (``record``), and a digest of its answers (:func:`answer_digest`)."""
    method = get_methodology(name)
    probes = method.probes_for(method.build_probes(config, SEED), modality)
    oracle = FaceDemographics(FaceDemographicsConfig(mode="oracle"))
    with (
        recording() if record else nullcontext({}) as seen,
        ResponseCache(tmp / "cache" / "responses.sqlite") as cache,
    ):
        ctx = step_context(
            modality, SEED, tmp=tmp, instrument=oracle, backend=simulator(model), cache=cache
        )
        ctx.models = models
        responses = method.generate(probes, config, ctx)
    return seen, answer_digest(responses)


def answer_digest(responses: pd.DataFrame) -> str:
    """A digest of what the simulators answered: texts, statuses, attempts, images (by hash)
    and their recorded draws, per call."""
    columns = [c for c in ANSWER_COLUMNS if c in responses.columns]
    return hashlib.sha256(responses[columns].to_json(orient="split").encode()).hexdigest()[:16]


def configs(
    tmp: Path, occupations_table: Path
) -> dict[str, tuple[BaseModel, list[tuple[str, str]]]]:
    """Per methodology: a tiny config and the (modality, simulator) pairs it runs on."""
    from genfair.methodologies.iris.methodology import IrisConfig
    from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
    from genfair.methodologies.open_bias.config import OpenBiasConfig

    release = build_facet_fixture(tmp / "release")
    curate_facet(FacetConfig(release_dir=release), tmp / "curated", progress=False)
    corpus, _, _ = synthetic_corpus(tmp, n=3)
    return {
        "fact_or_fair": (
            fact_or_fair_config(
                images_per_query=1,
                objective_rounds=1,
                scenarios_per_direction=1,
                samples_per_prompt=1,
            ),
            [("llm", "simulated_llm"), ("t2i", "simulated_t2i")],
        ),
        "news_bias": (news_config(corpus, articles=3), [("llm", "simulated_llm")]),
        "iris": (
            IrisConfig.model_validate(
                {
                    "occupations_table": str(occupations_table),
                    "max_occupations": 6,
                    "tournament": {"rounds": 1},
                    "ifs_gen": {"images_per_occupation": 2},
                    "bis_gen": {"top": 2, "images_per_prompt": 1},
                    "ifs_und": {"persons": str(_persons(tmp / "facet", 24))},
                    "bis_und": {"dataset": "fixture"},
                }
            ),
            [("llm", "simulated_llm"), ("t2i", "simulated_t2i"), ("vlm", "simulated_vlm")],
        ),
        "lvlm_facet": (
            LvlmFacetConfig(
                persons=str(tmp / "curated" / "persons.parquet"),
                images_dir=str(release / "images"),
                classes="all",
            ),
            [("vlm", "simulated_vlm")],
        ),
        "open_bias": (
            OpenBiasConfig.model_validate(
                {
                    "caption_set": str(_captions(tmp)),
                    "max_captions": 2,
                    "proposer": "scripted",
                    "scripted_proposals": _scripted(),
                    "images_per_caption": 2,
                    "vqa_model": "vqa",
                }
            ),
            [("t2i", "simulated_t2i")],
        ),
    }


def leaves(
    model: BaseModel, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], BaseModel]]:
    """Every planted policy of a ``simulated`` section, by path (a policy has a rate field;
    an optional plant left out, None, is none)."""
    if model is None:
        return
    if {"refusal_rate", "refusal_share"} & set(type(model).model_fields):
        yield path, model
        return
    for name in type(model).model_fields:
        yield from leaves(getattr(model, name), (*path, name))


def bumped(config: BaseModel, path: tuple[str, ...]) -> BaseModel:
    """``config`` with the planted policy at ``simulated.<path>`` refusing a little more often."""
    raw = config.model_dump()
    policy = raw["simulated"]
    for name in path:
        policy = policy[name]
    field = "refusal_rate" if "refusal_rate" in policy else "refusal_share"
    policy[field] = round(policy[field] + 0.01, 6)
    return type(config).model_validate(raw)


@pytest.fixture(scope="module")
def runs(occupations_table: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per methodology: its config, its (modality, simulator) pairs, the plant of each call by
    key, and the answer digest of each pair."""
    tmp = tmp_path_factory.mktemp("plants")
    out = {}
    vqa = {"vqa": simulator("simulated_vlm").model_config}
    for name, (config, pairs) in configs(tmp, occupations_table).items():
        done = {
            f"{model}-{name}": generate(
                name, config, modality, model, tmp / f"{name}-{modality}", **vqa
            )
            for modality, model in pairs
        }
        out[name] = (
            config,
            pairs,
            {k: p for plants, _ in done.values() for k, p in plants.items()},
            {run: digest for run, (_, digest) in done.items()},
        )
    return out


#: the answer digests of the runs above on integ's code (fc1ec46: planted rates in conf/model,
#: keys over every policy), by tests/methodologies/test_simulated_plants.py's ``configs`` and
#: ``generate(record=False)`` run in that tree: moving the plants changed keys, not answers
INTEG_ANSWERS = {
    "simulated_llm-fact_or_fair": "2a304d2828694875",
    "simulated_t2i-fact_or_fair": "4e161cf2b4a2a391",
    "simulated_llm-news_bias": "f382f1a5122af9e3",
    "simulated_llm-iris": "4e031a8fe255c906",
    "simulated_t2i-iris": "85cf7a8d06447878",
    "simulated_vlm-iris": "8cc06d028d7c79d8",
    "simulated_vlm-lvlm_facet": "9239677666116688",
    "simulated_t2i-open_bias": "96f568b780bfca89",
}


def test_the_simulated_answers_are_the_ones_before_the_plants_moved(runs) -> None:
    assert {run: d for *_, digests in runs.values() for run, d in digests.items()} == INTEG_ANSWERS


def test_every_simulated_call_carries_a_plant_of_its_own_methodology(runs) -> None:
    for name, (config, _, plants, _) in runs.items():
        own = [dumped(policy) for _, policy in leaves(config.simulated)]
        assert plants and None not in plants.values(), f"{name}: a simulated call without a plant"
        assert all(p in own for p in plants.values()), (
            f"{name}: a call's plant is not one of its config's"
        )
        unused = [path for path, p in leaves(config.simulated) if dumped(p) not in plants.values()]
        assert not unused, f"{name}: plants no call of the sample used: {unused}"


@pytest.mark.parametrize(
    "name, path",
    [
        ("fact_or_fair", ("llm", "objective")),
        ("fact_or_fair", ("t2i", "subjective")),
        ("news_bias", ("biased",)),
        ("iris", ("vlm", "tournament")),
        ("iris", ("t2i", "ifs_gen")),
        ("lvlm_facet", ()),
        ("open_bias", ("vlm",)),
    ],
)
def test_one_planted_rate_changes_only_the_keys_of_the_calls_using_it(
    runs, name, path, tmp_path
) -> None:
    config, pairs, before, _ = runs[name]
    old = dumped(dict(leaves(config.simulated))[path])
    changed = bumped(config, path)
    vqa = {"vqa": simulator("simulated_vlm").model_config}
    after = {
        k: p
        for modality, model in pairs
        for k, p in generate(name, changed, modality, model, tmp_path / modality, **vqa)[0].items()
    }
    using = {k for k, p in before.items() if p == old}
    assert using, f"no call of the sample uses {name}'s {path}"
    # the calls using the changed plant get new keys; every other call of the methodology keeps
    # its key (the other methodologies' configs, and so their calls, are untouched)
    assert set(before) - using <= set(after) and not using & set(after)
    new = [p for k, p in after.items() if k not in before]
    assert new and all(p == dumped(dict(leaves(changed.simulated))[path]) for p in new)


def test_a_call_is_keyed_by_its_plant_not_by_another_methodologys() -> None:
    """The same question under two methodologies' plants: equal plants, equal keys."""
    from genfair.methodologies.fact_or_fair.config import LLMPlants
    from genfair.methodologies.iris.simulated import LLMPlants as IrisLLMPlants

    backend = simulator("simulated_llm")
    objective, tournament = LLMPlants().objective, IrisLLMPlants().tournament

    def key(policy: Any) -> str:
        question = ChoiceQuestion(
            policy="any", letters=["A", "B"], truth_letters=["A"], plant=policy
        )
        request = Request(
            messages=({"role": "user", "content": "q"},), seed=1, meta=question.meta()
        )
        return ResponseCache.key(backend.request_fingerprint(request), request)

    assert key(objective) != key(tournament)
    assert key(objective) == key(objective.model_copy())
    assert key(
        tournament.model_copy(
            update={
                "accuracy": objective.accuracy,
                "invalid_rate": objective.invalid_rate,
                "refusal_rate": objective.refusal_rate,
            }
        )
    ) == key(objective)


def test_the_default_study_declares_every_plant_in_the_methodology_configs() -> None:
    """conf/methodology/<m>.yaml's ``simulated`` is the coded default (what a test builds)."""
    for name in ("fact_or_fair", "news_bias", "iris", "lvlm_facet", "open_bias"):
        raw = yaml.safe_load((ROOT / f"conf/methodology/{name}.yaml").read_text())
        config = get_methodology(name).Config
        assert (
            config.model_fields["simulated"].annotation.model_validate(raw["simulated"])
            == config.model_fields["simulated"].default
        ), name
    for name in ("simulated_llm", "simulated_t2i", "simulated_vlm"):
        raw = yaml.safe_load((ROOT / f"conf/model/{name}.yaml").read_text())
        assert not {"policy", "open_set", "open_vqa"} & set(raw), (
            f"{name}: planted rates belong to the methodologies"
        )
