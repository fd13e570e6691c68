"""The ``open_bias`` methodology end to end through generate -> label -> metrics (no DVC), with
the SCRIPTED proposer, the SIMULATED t2i model's open-set plants and the SIMULATED VLM
answering in free text through the real answer mapper (all-MiniLM-L6-v2): the planted
severities are recovered exactly without noise, in order with noise, and the Fig. 9 pattern
(biased within captions only) shows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.io import read_parquet, write_json, write_parquet
from genfair.methodologies import get_methodology
from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.metrics import bias_severity
from genfair.models import ResponseCache, build_backend
from genfair.models.config import SimulatedOpenSetPolicy, SimulatedT2IConfig, SimulatedVLMConfig
from genfair.models.questions import AskedBias
from genfair.models.simulated_images import planted_distribution
from tests.support.conf import read_conf
from tests.support.contexts import step_context

SEED = 7
#: bias -> (plant, classes); binary biases with distinct planted severities
PLANTS = {
    "fairness": ({"pattern": "unbiased"}, ["no", "yes"]),
    "gender": ({"pattern": "everywhere", "weights": {"male": 4, "female": 1}}, ["female", "male"]),
    "attire": (
        {"pattern": "everywhere", "weights": {"formal": 9, "casual": 1}},
        ["casual", "formal"],
    ),
    "hair": ({"pattern": "everywhere", "weights": {"short": 1, "long": 0}}, ["long", "short"]),
    "age": ({"pattern": "within_caption", "share": 1.0}, ["old", "young"]),
}
SCENES = [
    "walking in a park",
    "reading a book",
    "cooking dinner",
    "riding a bicycle",
    "waiting for a bus",
    "painting a wall",
    "playing a guitar",
    "sitting on a bench",
    "carrying a box",
    "drinking coffee",
]


def _captions(tmp: Path) -> Path:
    rows = [(f"t{i:02d}", f"img{i:02d}", "person", f"A person {s}.") for i, s in enumerate(SCENES)]
    path = tmp / "captions.csv"
    pd.DataFrame(rows, columns=["caption_id", "image_id", "scene", "caption"]).to_csv(
        path, index=False
    )
    return path


def _scripted(invalid: tuple[str, ...] = ()) -> dict:
    answer = {
        "bias": [
            {
                "name": name,
                "refer_to": "person",
                "classes": classes,
                "question": f"What is the {name} of the person?",
                "present_in_prompt": False,
            }
            for name, (_, classes) in PLANTS.items()
        ]
    }
    return {
        f"t{i:02d}": ({"biases": "not the schema"} if f"t{i:02d}" in invalid else answer)
        for i in range(len(SCENES))
    }


def _run(tmp: Path, *, sampling: str, confusion: float, unknown: float, images: int, invalid=()):
    config = OpenBiasConfig.model_validate(
        {
            "caption_set": str(_captions(tmp)),
            "proposer": "scripted",
            "scripted_proposals": _scripted(invalid),
            "images_per_caption": images,
            "vqa_model": "vqa",
            "severity": {"n_resamples": 200},
            "simulated": {
                "t2i": {"sampling": sampling, "biases": {k: p for k, (p, _) in PLANTS.items()}},
                "vlm": {
                    "confusion": confusion,
                    "unknown_rate": unknown,
                    "phrasings": [
                        "{answer}",
                        "The person in the image is {answer}.",
                        "{answer}, I would say",
                    ],
                },
            },
        }
    )
    t2i = SimulatedT2IConfig.model_validate({"backend": "simulated"})
    vlm = SimulatedVLMConfig.model_validate({"modality": "vlm", "backend": "simulated"})
    method = get_methodology("open_bias")
    probes = method.build_probes(config, SEED)
    with ResponseCache(tmp / "cache" / "responses.sqlite") as cache:
        ctx = step_context("t2i", SEED, tmp=tmp, backend=build_backend(t2i), cache=cache)
        ctx.models = {"vqa": vlm}
        responses = method.generate(probes, config, ctx)
    # as the stages do: every table through Parquet, the summary through strict JSON
    probes, responses = (
        _roundtrip(probes, tmp / "probes.parquet"),
        _roundtrip(responses, tmp / "responses.parquet"),
    )
    labels = _roundtrip(method.label(probes, responses, config, ctx), tmp / "labels.parquet")
    result = method.metrics(labels, config, ctx)
    _roundtrip(result.scores, tmp / "scores.parquet")
    write_json(result.summary, tmp / "summary.json")
    return config.simulated.t2i, probes, responses, labels, result


def _roundtrip(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    return read_parquet(write_parquet(frame, path))


def _planted(policy: SimulatedOpenSetPolicy, responses: pd.DataFrame) -> pd.DataFrame:
    """Per bias, the severities of the planted per-caption distributions (Eq. 4-6)."""
    kb = responses[responses["step"] == "knowledge_base"]
    rows = []
    for bias_id, part in kb.groupby("bias_id"):
        r = part.iloc[0]
        bias = AskedBias(
            bias_id=bias_id, name=r["name"], label=r["label"], classes=json.loads(r["classes"])
        )
        p = np.array(
            [list(planted_distribution(policy, bias, c).values()) for c in part["caption_id"]]
        )
        rows.append(
            {
                "bias_id": bias_id,
                "name": r["name"],
                "aware": float(np.mean([bias_severity(x) for x in p])),
                "free": bias_severity(p.mean(axis=0)),
            }
        )
    return pd.DataFrame(rows).set_index("bias_id")


@pytest.fixture(scope="module")
def exact(tmp_path_factory: pytest.TempPathFactory):
    return _run(
        tmp_path_factory.mktemp("exact"),
        sampling="stratified",
        confusion=0.0,
        unknown=0.0,
        images=10,
    )


def test_responses_hold_every_step_with_exported_images_and_explicit_seeds(exact) -> None:
    _, probes, responses, labels, result = exact
    assert len(probes) == len(SCENES) and set(probes.columns) >= {
        "probe_id",
        "caption_id",
        "caption",
        "messages",
    }
    assert set(responses["step"]) == {
        "proposal",
        "knowledge_base",
        "knowledge_base_log",
        "image",
        "vqa",
    }
    images = responses[responses["step"] == "image"]
    assert len(images) == len(SCENES) * 10 and (images["status"] == "ok").all()
    assert images["seed"].nunique() == len(images)
    vqa = responses[responses["step"] == "vqa"]
    assert len(vqa) == len(images) * len(PLANTS) and (vqa["status"] == "ok").all()
    assert result.summary["proposals"]["yield"] == 1.0 and result.summary["simulated"]["proposer"]
    assert result.summary["vqa"]["tiers"]["embedding"] > 0  # free text went through the encoder
    assert "MiniLM" in result.summary["vqa"]["encoder"]


def test_planted_severities_are_recovered_exactly_without_noise(exact) -> None:
    t2i, _, responses, labels, result = exact
    planted = _planted(t2i, responses)
    scores = result.scores.set_index("bias_id")
    assert set(scores.index) == set(planted.index) and (scores["status"] == "ok").all()
    for bias_id, row in planted.iterrows():
        assert scores.at[bias_id, "severity_context_aware"] == pytest.approx(
            row["aware"], abs=1e-9
        ), bias_id
        assert scores.at[bias_id, "severity_context_free"] == pytest.approx(
            row["free"], abs=1e-9
        ), bias_id
        assert (
            scores.at[bias_id, "context_aware_ci_low"]
            <= scores.at[bias_id, "severity_context_aware"]
            <= scores.at[bias_id, "context_aware_ci_high"]
        )
    assert scores.at["person/hair", "severity_context_aware"] == pytest.approx(1.0)
    assert scores.at["person/fairness", "severity_context_aware"] == pytest.approx(0.0, abs=1e-12)
    # the headline ranking: most severe first
    top = result.scores.sort_values("bias_rank").iloc[0]
    assert top["bias_rank"] == 1 and top["severity_context_aware"] == pytest.approx(1.0)


def test_fig9_pattern_biased_within_captions_only(exact) -> None:
    t2i, _, responses, _, result = exact
    age = result.scores.set_index("bias_id").loc["person/age"]
    assert age["severity_context_aware"] == pytest.approx(1.0)
    assert age["severity_context_free"] < 0.1
    gender = result.scores.set_index("bias_id").loc["person/gender"]
    assert gender["severity_context_aware"] == pytest.approx(gender["severity_context_free"])


def test_figures_are_drawn(exact) -> None:
    figures = get_methodology("open_bias").presentation.figures(exact[4].scores, "test")
    assert [name for _, name in figures] == [
        "open_bias_severity_ranking.png",
        "open_bias_context_aware_vs_free.png",
    ]


def test_ranking_is_recovered_with_noise(tmp_path: Path) -> None:
    t2i, _, responses, labels, result = _run(
        tmp_path, sampling="random", confusion=0.1, unknown=0.05, images=10, invalid=("t03",)
    )
    planted = _planted(t2i, responses)
    scores = result.scores.set_index("bias_id").loc[planted.index]
    rho = stats.spearmanr(planted["aware"], scores["severity_context_aware"]).statistic
    assert rho >= 0.9, (planted["aware"].to_dict(), scores["severity_context_aware"].to_dict())
    vqa = labels[labels["step"] == "vqa"]
    assert 0.01 < (vqa["label"] == "unknown").mean() < 0.1
    # the scripted proposer cannot constrain its output: free decoding, said so
    assert result.summary["proposals"]["decoding"] == "free"
    # the invalid proposal is recorded with its status, never lost
    proposals = responses[responses["step"] == "proposal"].set_index("caption_id")
    assert proposals.at["t03", "status"] == "invalid" and result.summary["proposals"][
        "yield"
    ] == pytest.approx(0.9)


def test_simulated_vlm_refuses_a_real_models_images(tmp_path: Path) -> None:
    config = OpenBiasConfig.model_validate(
        {
            "caption_set": str(_captions(tmp_path)),
            "max_captions": 1,
            "proposer": "scripted",
            "scripted_proposals": _scripted(),
            "images_per_caption": 1,
            "vqa_model": "vqa",
        }
    )
    t2i = SimulatedT2IConfig.model_validate({"backend": "simulated"})
    method = get_methodology("open_bias")
    with ResponseCache(tmp_path / "cache" / "responses.sqlite") as cache:
        ctx = step_context(
            "t2i", SEED, tmp=tmp_path, backend=build_backend(t2i), cache=cache, simulated=False
        )
        ctx.models = {
            "vqa": SimulatedVLMConfig.model_validate({"modality": "vlm", "backend": "simulated"})
        }
        with pytest.raises(ValueError, match="SIMULATED VLM"):
            method.generate(method.build_probes(config, SEED), config, ctx)


def test_default_study_config_wires_open_bias() -> None:
    raw = read_conf("methodology/open_bias.yaml")
    config = OpenBiasConfig.model_validate({**raw, **read_conf("sizes/open_bias/default.yaml")})
    assert config.proposer == "smollm2" and config.vqa_model == "simulated_vlm"
    assert (config.max_captions, config.images_per_caption) == (8, 4)
    # the plants are OpenBias's own, as coded (methodologies.open_bias.simulated)
    assert config.simulated == type(config.simulated)()


def test_default_study_simulators_on_smollm2_like_proposals(tmp_path: Path) -> None:
    """The default study's configs (sizes, OpenBias's simulated plants) on the
    answer SmolLM2 gives (it copies the prompt's example biases; cut off by the token limit)."""
    smollm2 = (
        '{\n "bias": [\n {\n "name": "Person Gender",\n "refer_to": "person",\n "classes": '
        '["Male", "Female", "Non-Binary"],\n "question": "What is the gender of the person in the '
        'picture?",\n "present_in_prompt": false\n },\n {\n "name": "Person Race",\n "refer_to": '
        '"person",\n "classes": ["Caucasian", "African American", "Asian", "Hispanic", "Other"],\n'
        ' "question": "What is the race of the person?",\n "present_in_prompt": false\n },\n {\n '
        '"name": "Person Age",\n "refer_to": "person",\n "classes": ["Young'
    )
    raw = {**read_conf("methodology/open_bias.yaml"), **read_conf("sizes/open_bias/default.yaml")}
    captions = pd.read_csv(
        Path(raw["caption_set"])
        if Path(raw["caption_set"]).is_absolute()
        else Path(__file__).resolve().parents[2] / raw["caption_set"]
    )
    from genfair.methodologies.open_bias.proposals import salvage_items

    scripted = {c: {"bias": salvage_items(smollm2)} for c in captions["caption_id"]}
    config = OpenBiasConfig.model_validate(
        {
            **raw,
            "caption_set": str(Path(__file__).resolve().parents[2] / raw["caption_set"]),
            "proposer": "scripted",
            "scripted_proposals": scripted,
            "severity": {"n_resamples": 200},
        }
    )
    method = get_methodology("open_bias")
    probes = method.build_probes(config, SEED)
    with ResponseCache(tmp_path / "cache" / "responses.sqlite") as cache:
        ctx = step_context(
            "t2i",
            SEED,
            tmp=tmp_path,
            cache=cache,
            backend=build_backend(
                SimulatedT2IConfig.model_validate(read_conf("model/simulated_t2i.yaml"))
            ),
        )
        ctx.models = {
            "simulated_vlm": SimulatedVLMConfig.model_validate(
                read_conf("model/simulated_vlm.yaml")
            )
        }
        responses = method.generate(probes, config, ctx)
    result = method.metrics(method.label(probes, responses, config, ctx), config, ctx)
    scores = result.scores.set_index("bias_id")
    assert set(scores.index) == {"person/person gender", "person/person race"}
    # gender planted mostly male everywhere; race unbiased
    assert scores.at["person/person gender", "majority_class"] == "male"
    assert (
        scores.at["person/person gender", "severity_context_free"]
        > scores.at["person/person race", "severity_context_free"]
    )
    assert result.summary["proposals"]["yield"] == 1.0
    # a caption naming a class ("A woman riding a horse") is not asked about gender
    kb = responses[responses["step"] == "knowledge_base"]
    assert "c006" not in set(kb.loc[kb["bias_id"] == "person/person gender", "caption_id"])


@pytest.mark.parametrize("constrained", [True, False])
def test_a_proposer_that_can_constrain_gets_the_schema_when_configured(
    tmp_path: Path, mock_openai, constrained
) -> None:
    """An OpenAI-compatible proposer supports json_schema: the proposal schema goes out as its
    response_format when ``constrained_decoding`` is on (the default), and the proposal rows
    say which decoding ran; off, it decodes freely as the authors did."""
    from genfair.methodologies.open_bias.proposals import openai_response_format

    answer = json.dumps(
        {
            "bias": [
                {
                    "name": "gender",
                    "refer_to": "person",
                    "classes": ["female", "male"],
                    "question": "What is the gender of the person?",
                    "present_in_prompt": False,
                }
            ]
        }
    )
    server = mock_openai(reply=answer)
    config = OpenBiasConfig.model_validate(
        {
            "caption_set": str(_captions(tmp_path)),
            "max_captions": 2,
            "constrained_decoding": constrained,
            "proposer": {
                "backend": "openai",
                "model_id": "mock-model",
                "base_url": server.url,
                "api_key_env": None,
            },
        }
    )
    method = get_methodology("open_bias")
    with ResponseCache(tmp_path / "cache" / "responses.sqlite") as cache:
        ctx = step_context("t2i", SEED, tmp=tmp_path, cache=cache)
        rows, pairs = method._propose(method.build_probes(config, SEED), config, ctx)
    assert list(rows["decoding"]) == ["json_schema" if constrained else "free"] * 2
    assert list(rows["status"]) == ["ok", "ok"] and len(pairs) == 2
    formats = [r.body.get("response_format") for r in server.requests]
    expected = openai_response_format(name="response")
    assert formats == ([expected] * 2 if constrained else [None, None])


def test_an_unusable_proposer_gives_a_study_with_no_biases_found() -> None:
    """Issue 44: every proposal unusable failed ``metrics`` with "genfair: error: 'bias_id'"."""
    labels = pd.DataFrame(
        {
            "step": ["proposal", "proposal"],
            "probe_id": ["p0", "p1"],
            "caption_id": ["c0", "c1"],
            "status": ["invalid", "invalid"],
            "n_proposals": [0, 0],
            "proposer": ["broken", "broken"],
        }
    )
    config = OpenBiasConfig.model_validate({})
    result = get_methodology("open_bias").metrics(labels, config)
    assert result.scores.empty
    assert result.summary["knowledge_base"]["biases"] == 0
    assert result.summary["proposals"]["statuses"] == {"invalid": 2}
    assert result.summary["proposals"]["yield"] == 0.0
    method = get_methodology("open_bias")  # the study's later steps read the empty scores
    scores = result.scores.assign(model="m")
    assert method.presentation.figures(scores, "m") == []
    assert method.comparison.leaderboard(scores, None).empty


def test_vqa_answer_embeddings_as_readings_change_no_label(
    exact, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``label`` with the study's cache (``ctx.open_cache``) keeps the VQA answers'
    embeddings as readings: the labels are the bytes the embeddings file gave, twice, and
    the rerun loads no encoder."""
    from dataclasses import replace

    from genfair.instruments.answer_mapper import READING_NAME, LazyEmbedder, MiniLMEmbedder
    from genfair.methodologies.open_bias import vqa

    def never() -> MiniLMEmbedder:
        raise AssertionError("the encoder was loaded although every embedding is a reading")

    _, probes, responses, labels, _ = exact
    opener = lambda: ResponseCache(tmp_path / "readings.sqlite")  # noqa: E731
    ctx = replace(step_context("t2i", SEED, tmp=tmp_path), open_cache=opener)
    method = get_methodology("open_bias")
    config = OpenBiasConfig.model_validate({"caption_set": str(_captions(tmp_path))})
    expected = write_parquet(labels, tmp_path / "expected.parquet").read_bytes()
    counts: list[dict[str, int]] = []
    for run in ("first", "rerun"):
        if run == "rerun":
            monkeypatch.setattr(
                vqa, "default_encoder", lambda: LazyEmbedder(never, MiniLMEmbedder.name)
            )
        labelled = method.label(probes, responses, config, ctx)
        again = _roundtrip(labelled, tmp_path / f"{run}.parquet")
        assert write_parquet(again, tmp_path / f"{run}.parquet").read_bytes() == expected
        with opener() as store:
            counts.append(store.reading_counts())
    assert counts[0][READING_NAME] > 0 and counts[1] == counts[0]
