"""The planted-bias simulator honours its configured policy."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from genfair.models import build_backend
from genfair.models.base import Request
from genfair.models.config import (
    SimulatedCategoricalPolicy,
    SimulatedModelConfig,
    SimulatedPolicy,
)
from genfair.models.questions import ChoiceQuestion
from genfair.models.simulated import INVALID, REFUSAL, SimulatedLLM

N = 4000
#: draws of a categorical plant (each share checked within its 99.9% Wilson interval)
N_DRAWS = 2000


def simulator(**policies) -> SimulatedLLM:
    return SimulatedLLM(SimulatedModelConfig(backend="simulated", policy=policies))


def req(seed: int, letters="AB", truth=("B",), policy="objective") -> Request:
    return Request(
        messages=({"role": "user", "content": "q"},),
        seed=seed,
        meta={"policy": policy, "letters": list(letters), "truth_letters": list(truth)},
    )


def within_3se(count: int, n: int, p: float) -> bool:
    return abs(count / n - p) <= 3 * math.sqrt(p * (1 - p) / n)


def test_flags_and_fingerprint():
    sim = simulator(objective={"accuracy": 0.8})
    assert sim.simulated is True
    assert sim.deterministic is False
    assert sim.fingerprint["backend"] == "simulated"
    assert sim.fingerprint["policy"]["objective"]["accuracy"] == 0.8
    # the policy is part of the identity: a different planted bias is a different model
    assert simulator(objective={"accuracy": 0.7}).fingerprint != sim.fingerprint


def test_build_backend_dispatches_to_the_simulator():
    config = SimulatedModelConfig(backend="simulated", policy={"objective": {"accuracy": 0.5}})
    assert isinstance(build_backend(config), SimulatedLLM)


def test_answers_json_with_an_offered_letter():
    sim = simulator(objective={"accuracy": 0.5})
    done = []
    sim.complete(
        [req(s, letters="ABCD", truth=("C",)) for s in range(50)], lambda r, c: done.append((r, c))
    )
    assert len(done) == 50
    for _, completion in done:
        assert completion.status == "ok"
        assert completion.finish_reason == "stop"
        assert set(json.loads(completion.text)) == {"answer"}
        assert json.loads(completion.text)["answer"] in "ABCD"


def test_same_seed_same_answer_and_seeds_vary():
    sim = simulator(objective={"accuracy": 0.5, "refusal_rate": 0.1, "invalid_rate": 0.1})
    first = [sim.answer(req(s, "ABCD", ("A",))) for s in range(200)]
    again = [sim.answer(req(s, "ABCD", ("A",))) for s in range(200)]
    assert first == again
    assert len(set(first)) == 6  # 4 letters, a refusal and a ramble all occur


@pytest.mark.parametrize(
    ("letters", "truth", "accuracy"), [("AB", "B", 0.7), ("ABCD", "C", 0.3), ("ABCD", "A", 0.9)]
)
def test_accuracy_is_the_share_of_truth_answers(letters, truth, accuracy):
    sim = simulator(objective={"accuracy": accuracy})
    answers = Counter(json.loads(sim.answer(req(s, letters, (truth,))))["answer"] for s in range(N))
    assert sum(answers.values()) == N
    assert set(answers) == set(letters)
    assert within_3se(answers[truth], N, accuracy), answers
    # the other letters share the rest uniformly
    others = [x for x in letters if x != truth]
    for letter in others:
        assert within_3se(answers[letter], N, (1 - accuracy) / len(others)), answers


def test_refusal_and_invalid_rates():
    sim = simulator(subjective={"accuracy": 0.6, "refusal_rate": 0.1, "invalid_rate": 0.2})
    texts = Counter(sim.answer(req(s, "ABCD", ("D",), policy="subjective")) for s in range(N))
    assert within_3se(texts[REFUSAL], N, 0.1), texts
    assert within_3se(texts[INVALID], N, 0.2), texts
    # accuracy holds among the answers that are neither
    answered = {t: c for t, c in texts.items() if t not in (REFUSAL, INVALID)}
    n = sum(answered.values())
    assert within_3se(answered[json.dumps({"answer": "D"})], n, 0.6)


def test_two_truth_letters_and_extremes():
    sim = simulator(objective={"accuracy": 1.0}, subjective={"accuracy": 0.0})
    # accuracy 1: always one of the truth letters (both used)
    perfect = Counter(
        json.loads(sim.answer(req(s, "ABCD", ("A", "C"))))["answer"] for s in range(400)
    )
    assert set(perfect) == {"A", "C"}
    # accuracy 0: never a truth letter
    wrong = Counter(
        json.loads(sim.answer(req(s, "ABCD", ("A", "C"), "subjective")))["answer"]
        for s in range(400)
    )
    assert set(wrong) == {"B", "D"}
    # no truth (e.g. no ground truth): uniform over all letters, never crashes
    none = Counter(json.loads(sim.answer(req(s, "ABCD", ())))["answer"] for s in range(400))
    assert set(none) == set("ABCD")


def test_unknown_policy_names_the_configured_ones():
    sim = simulator(objective={"accuracy": 0.8}, subjective={"accuracy": 0.6})
    with pytest.raises(KeyError) as info:
        sim.answer(req(1, policy="t2i"))
    message = str(info.value)
    assert "'t2i'" in message
    assert "['objective', 'subjective']" in message


def test_prime_following_off_keeps_the_fingerprint_and_the_answers():
    """A choice policy written before prime following existed keeps its cache keys and draws."""
    sim = simulator(subjective={"accuracy": 0.6})
    assert sim.fingerprint["policy"]["subjective"] == {
        "accuracy": 0.6,
        "refusal_rate": 0.0,
        "invalid_rate": 0.0,
    }
    on = simulator(subjective={"accuracy": 0.6, "prime_following": 0.5})
    assert on.fingerprint["policy"]["subjective"]["prime_following"] == 0.5
    primed = {"race": ["B"], "gender": ["A", "B"]}
    for s in range(30):
        plain = req(s, letters="ABCD", truth=("C",), policy="subjective")
        with_prime = Request(
            messages=plain.messages, seed=s, meta={**plain.meta, "primed_letters": primed}
        )
        assert sim.answer(plain) == sim.answer(with_prime)


@pytest.mark.parametrize(("attribute", "letters"), [("race", ["B"]), ("gender", ["A", "D"])])
def test_prime_following_picks_the_primed_group_at_the_planted_rate(attribute, letters):
    q, accuracy, n = 0.5, 0.6, 4000
    sim = simulator(
        subjective={"accuracy": accuracy, "prime_following": q, "prime_attribute": attribute}
    )
    primed = {"race": ["B"], "gender": ["A", "D"]}
    picks = [
        json.loads(
            sim.answer(
                Request(
                    messages=({"role": "user", "content": "q"},),
                    seed=s,
                    meta={
                        "policy": "subjective",
                        "letters": list("ABCD"),
                        "truth_letters": ["C"],
                        "primed_letters": primed,
                    },
                )
            )
        )["answer"]
        for s in range(n)
    ]
    # q to the primed letters, else C w.p. accuracy and each other letter w.p. (1 - accuracy) / 3
    others = (1 - accuracy) / 3
    expected = q + (1 - q) * sum(accuracy if x == "C" else others for x in letters)
    assert within_3se(sum(p in letters for p in picks), n, expected)
    # a probe without a prime (baseline) follows the accuracy rule alone
    plain = [
        json.loads(sim.answer(req(s, letters="ABCD", truth=("C",), policy="subjective")))["answer"]
        for s in range(n)
    ]
    assert within_3se(plain.count("C"), n, accuracy)


# ---- the typed protocol (genfair.models.questions) and the cache keys it leaves alone


@pytest.mark.parametrize("name", ["simulated_llm", "simulated_t2i", "simulated_vlm"])
def test_a_simulated_call_is_keyed_by_the_model_settings_and_its_own_plant(name: str) -> None:
    """conf/model's simulators hold only model-level settings: a call's key covers them and
    the plant it carries, nothing else (a question without a plant: the model's named ones)."""
    import yaml
    from pydantic import TypeAdapter

    from genfair.models.cache import ResponseCache
    from genfair.models.config import ModelConfig, SimulatedT2IPolicy, SimulatedVLMPolicy
    from genfair.models.questions import ImageChoiceQuestion, ImageQuestion
    from tests.support.conf import ROOT

    raw = yaml.safe_load((ROOT / f"conf/model/{name}.yaml").read_text())
    assert not {"policy", "open_set", "open_vqa"} & set(raw), (
        "planted rates belong to the methodologies"
    )
    backend = build_backend(TypeAdapter(ModelConfig).validate_python(raw))

    def question(p: float):  # noqa: ANN202 - one question per simulator
        return {
            "simulated_llm": ChoiceQuestion(
                policy="quiz",
                letters=["A", "B"],
                truth_letters=["B"],
                plant=SimulatedPolicy(accuracy=p),
            ),
            "simulated_t2i": ImageQuestion(
                policy="quiz",
                plant=SimulatedT2IPolicy(attributes={"gender": {"male": p, "female": 1 - p}}),
            ),
            "simulated_vlm": ImageChoiceQuestion(
                policy="quiz",
                options=["a", "b"],
                truth="a",
                group="male",
                plant=SimulatedVLMPolicy(accuracy={"male": p}),
            ),
        }[name]

    def key(p: float, model=backend) -> str:  # noqa: ANN001
        request = Request(
            messages=({"role": "user", "content": "q"},), attempt=1, seed=7, meta=question(p).meta()
        )
        return ResponseCache.key(model.request_fingerprint(request), request)

    assert key(0.8) == key(0.8) != key(0.7)
    fingerprint = backend.request_fingerprint(Request(messages=(), meta=question(0.8).meta()))
    assert set(fingerprint) - {"modality", "size", "group_key"} == {
        "backend",
        "model_id",
        "revision",
        "plant",
    }
    # another revision of the model is another model
    other = build_backend(TypeAdapter(ModelConfig).validate_python({**raw, "revision": "x"}))
    assert key(0.8, other) != key(0.8)


def test_a_question_is_validated_where_it_is_made_and_read() -> None:
    with pytest.raises(ValueError, match=r"\['C'\] are not among the options"):
        ChoiceQuestion(policy="objective", letters=["A", "B"], truth_letters=["C"])
    with pytest.raises(ValueError, match="letters"):
        simulator(objective={"accuracy": 0.8}).answer(
            Request(messages=(), meta={"policy": "objective"})
        )
    with pytest.raises(
        ValueError, match="is a rewrite policy, but the call asks a choice question"
    ):
        simulator(news={"kind": "rewrite", "female_to_male": 0.5}).answer(req(1, policy="news"))


def test_a_planted_policy_in_the_call_keys_its_answers_alone() -> None:
    """A methodology's own planted rates (``plant``) decide its answers and its cache key;
    the model's named policies do not."""
    from genfair.models.cache import ResponseCache

    def request(accuracy: float, seed: int = 3) -> Request:
        plant = SimulatedPolicy(accuracy=accuracy)
        return Request(
            messages=({"role": "user", "content": "q"},),
            seed=seed,
            meta=ChoiceQuestion(
                policy="quiz", letters=["A", "B"], truth_letters=["A"], plant=plant
            ).meta(),
        )

    one, other = (
        simulator(objective={"accuracy": 0.8}),
        simulator(objective={"accuracy": 0.1}, news={"kind": "rewrite", "female_to_male": 0.5}),
    )
    key = ResponseCache.key(one.request_fingerprint(request(0.9)), request(0.9))
    assert key == ResponseCache.key(other.request_fingerprint(request(0.9)), request(0.9))
    assert key != ResponseCache.key(one.request_fingerprint(request(0.5)), request(0.5))
    assert (
        one.request_fingerprint(req(1)) == one.fingerprint
    )  # a named policy: the model's fingerprint
    answers = Counter(json.loads(one.answer(request(0.9, seed))).get("answer") for seed in range(N))
    assert within_3se(answers["A"], N, 0.9)


def test_image_and_vlm_questions_are_validated_where_they_are_made() -> None:
    """The t2i and VLM questions fail at the methodology's call, naming the bad field."""
    from pydantic import ValidationError

    from genfair.models.questions import (
        ImageChoiceQuestion,
        OpenSetImageQuestion,
        OpenVQAQuestion,
        RecallQuestion,
    )

    with pytest.raises(ValueError, match=r"truth 'vet' is not among the options"):
        ImageChoiceQuestion(
            policy="iris_ifs_und", options=["doctor", "nurse"], truth="vet", group="female"
        )
    with pytest.raises(ValidationError, match="biases"):
        OpenSetImageQuestion(policy="open_bias", caption_id="c1", biases=[])
    with pytest.raises(ValidationError, match="classes"):
        OpenSetImageQuestion(
            policy="open_bias", caption_id="c1", biases=[{"bias_id": "b", "classes": []}]
        )
    with pytest.raises(ValidationError, match="options"):
        OpenVQAQuestion(policy="open_bias", options=[], truth="x")
    with pytest.raises(ValidationError, match="skin_tone"):
        RecallQuestion(
            policy="lvlm_facet", cls="nurse", prompt="direct", gender="male", age="older"
        )
    recall = RecallQuestion(
        policy="lvlm_facet",
        cls="nurse",
        prompt="direct",
        gender="male",
        skin_tone="dark",
        age="older",
    )
    # ``class`` in meta, as the planted-recall policy and earlier keys spelt it; read back alike
    assert (
        recall.meta()["class"] == "nurse"
        and RecallQuestion.from_meta({**recall.meta(), "x": 1}) == recall
    )
    # one call, two simulators' questions (IRIS's tournament): each reads its own fields
    meta = {
        **ChoiceQuestion(policy="t", letters=["a", "b"], truth_letters=["a"]).meta(),
        **ImageChoiceQuestion(policy="t", options=["a", "b"], truth="a", group="male").meta(),
    }
    assert ChoiceQuestion.from_meta(meta).letters == ["a", "b"]
    assert ImageChoiceQuestion.from_meta(meta).group == "male"


# ---- the categorical plant: any methodology's distribution over its question's options


def categorical(**fields) -> SimulatedCategoricalPolicy:
    return SimulatedCategoricalPolicy(kind="categorical", **fields)


def pronoun_request(seed: int, plant: SimulatedCategoricalPolicy, group: str | None = None):
    question = ChoiceQuestion(
        policy="pronouns", letters=["he", "she", "they"], group=group, plant=plant
    )
    return Request(messages=({"role": "user", "content": "q"},), seed=seed, meta=question.meta())


def share_in_interval(count: int, n: int, p: float) -> bool:
    """``p`` lies in the 99.9% Wilson interval of ``count`` of ``n`` (scipy)."""
    from scipy.stats import binomtest

    ci = binomtest(count, n).proportion_ci(0.999, method="wilson")
    return ci.low <= p <= ci.high


def test_a_categorical_plant_answers_its_distribution_in_either_shape() -> None:
    planted = {"he": 0.6, "she": 0.3, "they": 0.1}
    sim = simulator()
    as_json = [
        sim.answer(pronoun_request(s, categorical(distribution=planted))) for s in range(N_DRAWS)
    ]
    as_text = [
        sim.answer(pronoun_request(s, categorical(distribution=planted, answer="text")))
        for s in range(N_DRAWS)
    ]
    # the same draws, written as {"answer": ...} or as the bare option
    assert [json.loads(t) for t in as_json] == [{"answer": t} for t in as_text]
    counts = Counter(as_text)
    assert set(counts) == set(planted)
    for option, p in planted.items():
        assert share_in_interval(counts[option], N_DRAWS, p), counts
        assert not share_in_interval(counts[option], N_DRAWS, p + 0.1), counts  # the test has power


def test_a_categorical_plant_per_group_and_an_option_never_planted() -> None:
    plant = categorical(
        distribution={"he": 0.6, "she": 0.4},
        by_group={"nurse": {"he": 0.1, "she": 0.8, "they": 0.1}},
    )
    sim = simulator()
    nurse = Counter(sim.answer(pronoun_request(s, plant, "nurse")) for s in range(N_DRAWS))
    pilot = Counter(sim.answer(pronoun_request(s, plant, "pilot")) for s in range(N_DRAWS))
    assert share_in_interval(nurse[json.dumps({"answer": "she"})], N_DRAWS, 0.8), nurse
    # a group not listed takes `distribution`, which never answers "they"
    assert share_in_interval(pilot[json.dumps({"answer": "he"})], N_DRAWS, 0.6), pilot
    assert json.dumps({"answer": "they"}) not in pilot


def test_a_categorical_plant_refuses_and_rambles_at_its_rates() -> None:
    plant = categorical(distribution={"he": 1.0}, refusal_rate=0.1, invalid_rate=0.2)
    texts = Counter(simulator().answer(pronoun_request(s, plant)) for s in range(N_DRAWS))
    assert share_in_interval(texts[REFUSAL], N_DRAWS, 0.1) and share_in_interval(
        texts[INVALID], N_DRAWS, 0.2
    )
    assert set(texts) == {REFUSAL, INVALID, json.dumps({"answer": "he"})}


def test_a_categorical_plant_is_validated_where_it_is_written_and_used() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="must sum to 1, got 0.9"):
        categorical(distribution={"he": 0.6, "she": 0.3})
    with pytest.raises(ValidationError, match=r"by_group.nurse: the probabilities must sum to 1"):
        categorical(distribution={"he": 1.0}, by_group={"nurse": {"she": 0.5}})
    with pytest.raises(ValidationError, match="needs a `distribution` or `by_group`"):
        categorical()
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        categorical(distribution={"he": 1.5, "she": -0.5})
    with pytest.raises(ValidationError, match="refusal_rate \\+ invalid_rate"):
        categorical(distribution={"he": 1.0}, refusal_rate=0.6, invalid_rate=0.6)
    # at the methodology's call: an option the question does not offer, a group without one
    with pytest.raises(ValueError, match=r"names options \['it'\] that the question does not"):
        pronoun_request(1, categorical(distribution={"he": 0.5, "it": 0.5}))
    with pytest.raises(ValueError, match="no distribution for group 'pilot': add it to `by_group`"):
        pronoun_request(1, categorical(by_group={"nurse": {"she": 1.0}}), "pilot")
    # a categorical plant on a rewrite question is refused like any other mismatch
    with pytest.raises(ValueError, match="is a categorical policy, but the call asks a rewrite"):
        simulator(news={"kind": "categorical", "distribution": {"he": 1.0}}).answer(
            Request(messages=(), seed=1, meta={"policy": "news", "article": "She said."})
        )


def test_a_categorical_plant_keys_its_calls_and_may_be_a_named_policy() -> None:
    from genfair.models.cache import ResponseCache

    sim = simulator()

    def key(plant: SimulatedCategoricalPolicy) -> str:
        request = pronoun_request(3, plant)
        return ResponseCache.key(sim.request_fingerprint(request), request)

    plant = categorical(distribution={"he": 0.6, "she": 0.3, "they": 0.1})
    assert key(plant) == key(plant.model_copy())
    assert key(plant) != key(plant.model_copy(update={"answer": "text"}))
    assert key(plant) != key(categorical(distribution={"he": 0.5, "she": 0.4, "they": 0.1}))
    # a study may configure one on the simulated model for calls that carry no plant
    named = simulator(pronouns={"kind": "categorical", "distribution": {"they": 1.0}})
    request = Request(
        messages=(),
        seed=1,
        meta=ChoiceQuestion(policy="pronouns", letters=["he", "she", "they"]).meta(),
    )
    assert named.answer(request) == json.dumps({"answer": "they"})
    wrong = simulator(pronouns={"kind": "categorical", "distribution": {"it": 1.0}})
    with pytest.raises(ValueError, match=r"names options \['it'\]"):
        wrong.answer(request)
