"""The transformers backend on a tiny random-weight Llama built in the test (no hub, no
download)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genfair.models import build_backend
from genfair.models.base import Request
from genfair.models.config import HFModelConfig
from tests.support.tiny_models import CHAT_TEMPLATE, count_loads, save_tiny_llama

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A 2-layer, 16-wide Llama with a word-level tokenizer, saved like a hub checkpoint."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def make(model_dir: Path, **overrides):
    from genfair.models.hf import HFChatBackend

    fields = {
        "backend": "hf",
        "model_id": str(model_dir),
        "batch_size": 2,
        "sampling": {"temperature": 0.0, "max_tokens": 6},
    }
    fields.update(overrides)
    return HFChatBackend.from_config(HFModelConfig(**fields))


def ask(text: str, seed: int = 0) -> Request:
    return Request(messages=({"role": "user", "content": text},), seed=seed)


PROMPTS = [
    "which group has the highest rate",
    "hello",
    "A B C D answer the letter of one option only female male",
    "the quick brown fox",
    "people in America",
]


def run(backend, requests):
    done = []
    backend.complete(requests, lambda request, completion: done.append((request, completion)))
    return done


def record_generate(backend, monkeypatch):
    """Wrap ``model.generate`` to record its inputs, keyword arguments and output."""
    calls = []
    original = backend.model.generate

    def spy(**kwargs):
        output = original(**kwargs)
        calls.append({"kwargs": kwargs, "output": output})
        return output

    monkeypatch.setattr(backend.model, "generate", spy)
    return calls


def test_batches_of_batch_size_and_one_ok_completion_per_request(model_dir, monkeypatch):
    backend = make(model_dir)
    calls = record_generate(backend, monkeypatch)
    requests = [ask(p, seed=i) for i, p in enumerate(PROMPTS)]
    done = run(backend, requests)
    assert [request for request, _ in done] == requests  # each exactly once, in order
    for _, completion in done:
        assert completion.status == "ok"
        assert isinstance(completion.text, str)
        assert completion.text == completion.text.strip()
        assert completion.finish_reason in ("stop", "length")  # which one: tests below
        assert completion.latency_s > 0
    assert len(calls) == 3
    assert [c["kwargs"]["input_ids"].shape[0] for c in calls] == [2, 2, 1]
    for c in calls:  # at most max_tokens new tokens
        assert c["output"].shape[1] - c["kwargs"]["input_ids"].shape[1] <= 6
        assert c["kwargs"]["max_new_tokens"] == 6


def test_left_padding(model_dir, monkeypatch):
    backend = make(model_dir)
    assert backend.tokenizer.padding_side == "left"
    calls = record_generate(backend, monkeypatch)
    run(backend, [ask(PROMPTS[2]), ask(PROMPTS[1])])  # long, then short
    ids, mask = calls[0]["kwargs"]["input_ids"], calls[0]["kwargs"]["attention_mask"]
    pad = backend.tokenizer.pad_token_id
    assert mask[0].all()  # the longest row has no padding
    short = int(mask[1].sum())
    assert 0 < short < mask.shape[1]
    # padding on the left: zeros first, then the prompt, which ends at the right edge
    assert mask[1, : mask.shape[1] - short].eq(0).all()
    assert mask[1, mask.shape[1] - short :].eq(1).all()
    assert ids[1, : mask.shape[1] - short].eq(pad).all()
    # the prompt ends with the generation cue of the chat template
    tail = backend.tokenizer.decode(ids[1, -2:])
    assert tail.split() == ["</s>", "assistant"]


def test_batched_greedy_matches_one_by_one(model_dir):
    """With correct left padding and masks, a padded row decodes as if alone."""
    backend = make(model_dir, batch_size=3)
    requests = [ask(PROMPTS[2]), ask(PROMPTS[1]), ask(PROMPTS[3])]
    batched = [c.text for _, c in run(backend, requests)]
    backend.batch_size = 1
    alone = [c.text for _, c in run(backend, requests)]
    assert batched == alone


def test_greedy_is_deterministic_and_flagged(model_dir, monkeypatch):
    backend = make(model_dir)
    assert backend.deterministic is True
    calls = record_generate(backend, monkeypatch)
    first = [c.text for _, c in run(backend, [ask(p, seed=1) for p in PROMPTS])]
    second = [c.text for _, c in run(backend, [ask(p, seed=2) for p in PROMPTS])]  # seed is ignored
    assert first == second
    assert calls[0]["kwargs"]["do_sample"] is False
    assert "temperature" not in calls[0]["kwargs"]


def test_sampling_is_not_deterministic_and_seeded_by_the_batch(model_dir, monkeypatch):
    backend = make(model_dir, sampling={"temperature": 1.5, "top_p": 0.9, "max_tokens": 8})
    assert backend.deterministic is False
    calls = record_generate(backend, monkeypatch)
    requests = [ask(p, seed=10 + i) for i, p in enumerate(PROMPTS)]
    first = [c.text for _, c in run(backend, requests)]
    kwargs = calls[0]["kwargs"]
    assert kwargs["do_sample"] is True
    assert kwargs["temperature"] == 1.5
    assert kwargs["top_p"] == 0.9
    # same requests (seeds) -> same samples
    assert [c.text for _, c in run(backend, requests)] == first
    # other seeds -> other samples (random weights, 8 tokens from a ~40-word vocabulary)
    others = [
        c.text for _, c in run(backend, [ask(p, seed=1000 + i) for i, p in enumerate(PROMPTS)])
    ]
    assert others != first


def test_fingerprint(model_dir):
    backend = make(
        model_dir,
        revision="main",
        system_prompt="be brief",
        sampling={"temperature": 0.0, "max_tokens": 6},
    )
    assert backend.fingerprint == {
        "backend": "hf",
        "model_id": str(model_dir),
        "revision": "main",
        "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 6},
        "system_prompt": "be brief",
    }
    assert (
        make(model_dir, sampling={"temperature": 0.0, "max_tokens": 7}).fingerprint
        != backend.fingerprint
    )


def test_system_prompt_is_prepended_once(model_dir, monkeypatch):
    backend = make(model_dir, system_prompt="hello world")
    calls = record_generate(backend, monkeypatch)
    with_system = Request(
        messages=({"role": "system", "content": "the quick"}, {"role": "user", "content": "hello"})
    )
    run(backend, [ask("hello"), with_system])
    ids, mask = calls[0]["kwargs"]["input_ids"], calls[0]["kwargs"]["attention_mask"]
    texts = [backend.tokenizer.decode(row[m.bool()]) for row, m in zip(ids, mask, strict=True)]
    assert texts[0].split()[:3] == ["system", "hello", "world"]
    assert texts[1].split()[:3] == ["system", "the", "quick"]
    assert texts[1].count("system") == 1


def test_generation_failure_becomes_error_completions(model_dir, monkeypatch):
    backend = make(model_dir)
    original = backend.model.generate
    state = {"calls": 0}

    def flaky(**kwargs):
        state["calls"] += 1
        if state["calls"] == 1:
            raise RuntimeError("CUDA out of memory (simulated)")
        return original(**kwargs)

    monkeypatch.setattr(backend.model, "generate", flaky)
    done = run(backend, [ask(p) for p in PROMPTS[:4]])
    statuses = [c.status for _, c in done]
    assert statuses == ["error", "error", "ok", "ok"]  # the failed batch only; the run goes on
    assert done[0][1].error == "RuntimeError: CUDA out of memory (simulated)"
    assert done[0][1].text is None


def test_build_backend_dispatches_hf(model_dir):
    from genfair.models.hf import HFChatBackend

    backend = build_backend(HFModelConfig(backend="hf", model_id=str(model_dir), batch_size=3))
    assert isinstance(backend, HFChatBackend)
    assert backend.batch_size == 3
    assert backend.fingerprint["backend"] == "hf"
    assert not backend.model.training  # eval mode


# --- finish_reason (issue 12 point 4) and thread counts (issue 16.11) --------------------------


def _expected_reasons(calls, backend, limit):
    """Independently of the backend: "stop" where the generated row holds the end token."""
    eos = backend.model.generation_config.eos_token_id
    eos = {eos} if isinstance(eos, int) else set(eos or ())
    eos.add(backend.tokenizer.eos_token_id)
    reasons = []
    for c in calls:
        new = c["output"][:, c["kwargs"]["input_ids"].shape[1] :]
        reasons += ["stop" if eos & set(row.tolist()) else "length" for row in new]
    return reasons


def test_finish_reason_is_length_when_the_token_limit_cut_the_answer(model_dir, monkeypatch):
    backend = make(model_dir)  # max_tokens 6: random weights rarely say </s> that soon
    calls = record_generate(backend, monkeypatch)
    done = run(backend, [ask(p) for p in PROMPTS])
    reasons = [c.finish_reason for _, c in done]
    assert reasons == _expected_reasons(calls, backend, 6)
    assert "length" in reasons  # the case that was recorded as "stop"


def test_finish_reason_is_stop_when_the_model_ends_its_answer(model_dir, monkeypatch):
    backend = make(model_dir, batch_size=1)
    calls = record_generate(backend, monkeypatch)
    run(backend, [ask(PROMPTS[0])])
    first = int(calls[0]["output"][0, calls[0]["kwargs"]["input_ids"].shape[1]])
    # make the model's first answer token its end of sequence: greedy decoding stops there
    monkeypatch.setattr(backend.model.generation_config, "eos_token_id", first)
    [(_, completion)] = run(backend, [ask(PROMPTS[0])])
    assert completion.finish_reason == "stop"
    assert calls[1]["output"].shape[1] - calls[1]["kwargs"]["input_ids"].shape[1] == 1


def test_threads_are_set_before_generation(model_dir, monkeypatch):
    from genfair.models import local

    seen = []
    backend = make(model_dir, threads=1)

    def spy(**kwargs):
        seen.append(torch.get_num_threads())
        return original(**kwargs)

    original = backend.model.generate
    monkeypatch.setattr(backend.model, "generate", spy)
    before = torch.get_num_threads()
    try:
        run(backend, [ask("hello")])
        assert seen == [1]
        backend.threads = None  # default: the cores this process may use
        run(backend, [ask("hello")])
        assert seen[-1] == local.available_cores() == len(__import__("os").sched_getaffinity(0))
    finally:
        torch.set_num_threads(before)


def test_threads_must_be_positive():
    with pytest.raises(ValueError, match="threads"):
        HFModelConfig(backend="hf", model_id="x", threads=0)


# --- per-request decoding and constrained decoding (issues 12, 13) ------------------------------


def test_batches_group_requests_by_their_decoding(model_dir, monkeypatch):
    """A batch generates with one setting: token limit, temperature, top_p and schema."""
    backend = make(model_dir, batch_size=4)
    calls = record_generate(backend, monkeypatch)
    requests = [
        ask("hello", seed=1),
        Request(messages=({"role": "user", "content": "hello"},), temperature=0.9),
        ask("people", seed=2),
        Request(messages=({"role": "user", "content": "fox"},), temperature=0.9, top_p=0.5),
        Request(messages=({"role": "user", "content": "people"},), max_tokens=3),
    ]
    groups = [[id(r) for r in batch] for batch in backend._batches(requests)]
    assert groups == [
        [id(requests[0]), id(requests[2])],
        [id(requests[1])],
        [id(requests[3])],
        [id(requests[4])],
    ]
    done = run(backend, requests)
    assert [r for r, _ in done] == [requests[i] for i in (0, 2, 1, 3, 4)]
    decoding = [
        (
            c["kwargs"]["do_sample"],
            c["kwargs"].get("temperature"),
            c["kwargs"].get("top_p"),
            c["kwargs"]["max_new_tokens"],
        )
        for c in calls
    ]
    assert decoding == [
        (False, None, None, 6),
        (True, 0.9, 1.0, 6),
        (True, 0.9, 0.5, 6),
        (False, None, None, 3),
    ]


def test_repeats_follows_the_requests_effective_temperature(model_dir):
    greedy = make(model_dir)
    assert greedy.repeats(ask("hello")) and not greedy.repeats(
        Request(messages=(), temperature=0.5)
    )
    sampling = make(model_dir, sampling={"temperature": 1.0, "max_tokens": 6})
    assert not sampling.repeats(ask("hello")) and sampling.repeats(
        Request(messages=(), temperature=0.0)
    )


JSON_CORPUS = [
    '{"answer": "yes", "ok": true}',
    '{"answer": "no", "ok": false}',
    "[1, 2, 3] null",
    "user assistant system hello world the quick brown fox",
    "A B C D answer the letter",
]
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answer", "ok"],
    "properties": {"answer": {"enum": ["yes", "no", "maybe"]}, "ok": {"type": "boolean"}},
}


@pytest.fixture(scope="module")
def json_model_dir(tmp_path_factory) -> Path:
    """A 2-layer Llama with a byte-level BPE tokenizer, which can write any JSON (the word-level
    one of ``model_dir`` has no braces or quotes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        JSON_CORPUS,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<pad>", "<s>", "</s>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=len(tokenizer),
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-llama-bpe")
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_a_json_schema_constrains_the_answer_to_matching_json(json_model_dir, monkeypatch):
    """Random weights write anything; under the schema every answer is JSON that validates,
    ended by the model (``stop``), for greedy and sampled requests alike. The tokenizer data
    is built once per backend, not per batch."""
    import jsonschema

    from genfair.models import hf
    from genfair.models.constrained import JsonConstraint

    built = []

    class Counted(JsonConstraint):
        def __init__(self, *args):
            built.append(args)
            super().__init__(*args)

    monkeypatch.setattr(hf, "JsonConstraint", Counted)
    backend = make(json_model_dir, batch_size=2, sampling={"temperature": 0.0, "max_tokens": 160})
    calls = record_generate(backend, monkeypatch)
    prompts = ["hello", "the quick brown fox", "A B C D", "world"]
    free = [c.text for _, c in run(backend, [ask(p) for p in prompts])]
    constrained = [
        Request(messages=({"role": "user", "content": p},), json_schema=SCHEMA, seed=i)
        for i, p in enumerate(prompts)
    ]
    sampled = [
        Request(
            messages=({"role": "user", "content": p},), json_schema=SCHEMA, temperature=1.0, seed=i
        )
        for i, p in enumerate(prompts)
    ]
    done = run(backend, constrained + sampled)
    for _, completion in done:
        jsonschema.validate(json.loads(completion.text), SCHEMA)
        assert completion.finish_reason == "stop"
    assert not any(_valid(text) for text in free)  # the same model, unconstrained: not JSON
    assert len(built) == 1  # four constrained batches, one build
    assert all("prefix_allowed_tokens_fn" in c["kwargs"] for c in calls[2:])
    assert "prefix_allowed_tokens_fn" not in calls[0]["kwargs"]


def _valid(text: str) -> bool:
    import jsonschema

    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


# --- engines and dtypes (issue 25): CTranslate2 for greedy requests, the dtype in the key


def ct2_backend(model_dir: Path, threads: int = 1, **overrides):
    """``make``'s backend with CTranslate2 serving its greedy unconstrained requests."""
    pytest.importorskip("ctranslate2")
    from genfair.models.ct2 import CT2Generator, converted

    backend = make(model_dir, **overrides)
    backend.ct2 = CT2Generator(
        converted(model_dir), backend.tokenizer, threads, batch_size=backend.batch_size
    )
    return backend


def test_ctranslate2_greedy_answers_as_transformers_does(model_dir, monkeypatch):
    """Same weights, float32, greedy: the same texts and finish reasons, without torch's
    generate."""
    requests = [ask(p) for p in PROMPTS]
    expected = [(c.text, c.finish_reason) for _, c in run(make(model_dir, batch_size=3), requests)]
    backend = ct2_backend(model_dir, batch_size=3)
    calls = record_generate(backend, monkeypatch)
    assert [(c.text, c.finish_reason) for _, c in run(backend, requests)] == expected
    assert calls == []


def test_ctranslate2_gets_whole_groups_and_answers_the_same_in_any_batch_size(model_dir):
    """CTranslate2 is handed every greedy request of a call at once and sorts them by prompt
    length into its own batches of ``batch_size``: the answers do not depend on that size."""
    requests = [ask(p) for p in PROMPTS]
    expected = [(c.text, c.finish_reason) for _, c in run(make(model_dir, batch_size=3), requests)]
    for size in (1, 2, len(requests)):
        backend = ct2_backend(model_dir, batch_size=size)
        assert backend._batches(requests) == [requests]
        seen = []
        generator = backend.ct2.generator

        class Spy:  # a ctranslate2.Generator's methods cannot be patched
            def __init__(self, seen, generator):
                self.seen, self.generator = seen, generator

            def generate_batch(self, tokens, **kw):
                self.seen.append(kw["max_batch_size"])
                return self.generator.generate_batch(tokens, **kw)

        backend.ct2.generator = Spy(seen, generator)
        assert [(c.text, c.finish_reason) for _, c in run(backend, requests)] == expected
        assert seen == [size]


def test_ctranslate2_leaves_sampled_and_constrained_requests_to_transformers(
    json_model_dir, monkeypatch
):
    import jsonschema

    backend = ct2_backend(json_model_dir, sampling={"temperature": 0.0, "max_tokens": 160})
    calls = record_generate(backend, monkeypatch)
    constrained = [Request(messages=({"role": "user", "content": "hello"},), json_schema=SCHEMA)]
    sampled = [Request(messages=({"role": "user", "content": "hello"},), temperature=1.0, seed=3)]
    done = run(backend, constrained + sampled)
    jsonschema.validate(json.loads(done[0][1].text), SCHEMA)
    assert len(calls) == 2  # both through transformers
    run(backend, [ask("hello")])
    assert len(calls) == 2  # greedy: CTranslate2


def test_engine_and_dtype_enter_the_fingerprint_only_off_the_fp32_transformers_path(model_dir):
    fp32 = make(model_dir)
    assert "dtype" not in fp32.fingerprint and "engine" not in fp32.fingerprint
    assert fp32.runtime == {"engine": "transformers", "dtype": "float32", "batch_size": 2}
    assert make(model_dir, dtype="bfloat16").fingerprint == {
        **fp32.fingerprint,
        "dtype": "bfloat16",
    }
    assert ct2_backend(model_dir).fingerprint == {**fp32.fingerprint, "engine": "ctranslate2"}


GREEDY = """
import json, sys
from pathlib import Path
from genfair.models.base import Request
from genfair.models.config import HFModelConfig
from genfair.models.hf import HFChatBackend
from genfair.models.ct2 import CT2Generator, converted
path, threads, engine = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
backend = HFChatBackend.from_config(HFModelConfig(backend="hf", model_id=str(path), batch_size=3,
                                                  threads=threads,
                                                  sampling={"temperature": 0.0, "max_tokens": 6}))
if engine == "ctranslate2":
    backend.ct2 = CT2Generator(converted(path), backend.tokenizer, threads)
done = {}
backend.complete([Request(messages=({"role": "user", "content": p},))
                  for p in json.loads(sys.argv[4])],
                 lambda r, c: done.__setitem__(r.messages[0]["content"], c.text))
print(json.dumps(done, sort_keys=True))
"""


@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_greedy_answers_are_the_same_across_runs_and_thread_counts(model_dir, engine):
    """Separate processes (thread pools are per process) with 1, 2 and again 1 threads."""
    import os
    import subprocess
    import sys

    pytest.importorskip("ctranslate2")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    src = str(Path(__file__).resolve().parents[2] / "src")

    def answers(threads: int) -> str:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                GREEDY,
                str(model_dir),
                str(threads),
                engine,
                json.dumps(PROMPTS),
            ],
            env={**env, "PYTHONPATH": src},
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return out.stdout.strip().splitlines()[-1]

    first = answers(1)
    assert answers(2) == first
    assert answers(1) == first


# --- the weights load on first need (issue 31): a run whose answers are cached loads none ----


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The sources whose weights were loaded (``from_pretrained``), in order."""
    return count_loads(monkeypatch)


@pytest.mark.parametrize(
    ("dtype", "keyed"), [("float32", {}), ("bfloat16", {"dtype": "bfloat16"}), ("auto", {})]
)
def test_the_weights_load_only_when_an_answer_must_be_generated(model_dir, loads, dtype, keyed):
    """What cached answers need is known without the weights, and the same once they load:
    the cache key (fp32's as before the dtype entered it; hf's ``auto``: the checkpoint's,
    float32 here), the runtime, ``repeats`` and the tokenizer's counts."""
    from genfair.models.config import SamplingParams

    backend = make(model_dir, dtype=dtype)
    request = ask("which group has the highest rate")

    def cached_needs():
        return (
            backend.fingerprint,
            backend.runtime,
            backend.repeats(request),
            backend.prompt_tokens(request),
            backend.text_tokens("hello world"),
        )

    before = cached_needs()
    assert loads == []
    assert before[0] == {
        "backend": "hf",
        "model_id": str(model_dir),
        "revision": "main",
        "sampling": SamplingParams(temperature=0.0, max_tokens=6).model_dump(),
        "system_prompt": None,
        **keyed,
    }
    run(backend, [request])
    assert loads == [str(model_dir)]
    assert cached_needs() == before  # the same dict, computed from the loaded model now
    assert str(backend.model.dtype) == f"torch.{keyed.get('dtype', 'float32')}"
    run(backend, [ask("hello")])
    assert len(loads) == 1  # once


def test_a_run_whose_answers_are_all_cached_loads_no_weights(model_dir, loads, tmp_path):
    """The second run of the same calls, on a new backend, reads every answer from the cache:
    the same answers and token counts (the tokenizer's), and its weights never load."""
    from genfair.models.cache import ResponseCache
    from genfair.models.runner import run_calls
    from genfair.models.usage import recording
    from tests.models.test_runner import call

    calls = [call(p) for p in PROMPTS]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with recording() as first:
            sent = run_calls(make(model_dir), cache, calls, lambda text, meta: "ok", seed=1)
        with recording() as second:
            again = run_calls(make(model_dir), cache, calls, lambda text, meta: "ok", seed=1)
    assert loads == [str(model_dir)]  # the first run's backend only
    assert again["text"].tolist() == sent["text"].tolist()
    assert second.cached == first.sent and second.sent.calls == 0
    assert second.rules == first.rules


def test_a_model_loaded_in_another_dtype_than_its_cache_key_is_refused(model_dir, monkeypatch):
    """A cache key never silently differs from the computation: a checkpoint that loads in
    float32 when the key says bfloat16 stops the run in one line, before any answer."""
    from transformers import AutoModelForCausalLM

    from genfair.models.hf import DtypeMismatch

    original = AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(
        AutoModelForCausalLM,
        "from_pretrained",
        lambda source, **kwargs: original(source, **{**kwargs, "dtype": torch.float32}),
    )
    backend = make(model_dir, dtype="bfloat16")
    done = []
    with pytest.raises(
        DtypeMismatch,
        match=r"loaded in float32, but its cache key was made for bfloat16: set dtype: float32",
    ):
        backend.complete([ask("hello")], lambda r, c: done.append(c))
    assert done == []


def embedded_on(model_dir: Path, **fields):
    """The embedded backend's loader on the tiny model's folder (its package's converted copy
    stands in for the tiny one)."""
    from genfair.models.config import EmbeddedModelConfig
    from genfair.models.hf import HFChatBackend

    config = EmbeddedModelConfig(
        backend="embedded",
        model_id="tiny",
        package="tiny",
        gguf_file="tiny.gguf",
        revision="1",
        batch_size=3,
        threads=1,
        sampling={"temperature": 0.0, "max_tokens": 6},
        **fields,
    )
    return HFChatBackend.from_config(config, source=model_dir)


def test_the_ctranslate2_engine_converts_and_loads_on_first_need(model_dir, loads):
    """engine: ctranslate2 is in the key before anything loads; the first answer loads the
    model and its CTranslate2 copy, which answers as transformers does."""
    pytest.importorskip("ctranslate2")
    requests = [ask(p) for p in PROMPTS]
    expected = [(c.text, c.finish_reason) for _, c in run(make(model_dir, batch_size=3), requests)]
    backend = embedded_on(model_dir, engine="ctranslate2", dtype="float32")
    key = backend.fingerprint
    assert key["engine"] == "ctranslate2" and "dtype" not in key
    assert len(loads) == 1  # make()'s only
    assert [(c.text, c.finish_reason) for _, c in run(backend, requests)] == expected
    assert len(loads) == 2 and backend.ct2 is not None and backend.fingerprint == key


def test_ctranslate2_off_float32_is_refused_before_anything_loads(model_dir, loads):
    with pytest.raises(ValueError, match="engine: ctranslate2 runs float32 on CPU"):
        embedded_on(model_dir, engine="ctranslate2", dtype="bfloat16")
    assert loads == []


def test_a_generic_fast_tokenizer_is_the_one_autotokenizer_loads(model_dir):
    """A Llama folder declaring the generic fast tokenizer is loaded as that class directly,
    which is AutoTokenizer's choice too: the same class, tokens, template and counts."""
    from transformers import AutoTokenizer

    from genfair.models.hf import _tokenizer

    light, auto = _tokenizer(str(model_dir), {}), AutoTokenizer.from_pretrained(model_dir)
    assert type(light) is type(auto)
    assert light.special_tokens_map == auto.special_tokens_map
    for prompt in PROMPTS:
        messages = [{"role": "user", "content": prompt}]
        rendered = [
            t.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            for t in (light, auto)
        ]
        assert rendered[0] == rendered[1]
        assert light(rendered[0], add_special_tokens=False) == auto(
            rendered[1], add_special_tokens=False
        )


@pytest.mark.parametrize(
    ("change", "generic"),
    [
        ({}, True),
        ({"config.json": {"model_type": "qwen2"}}, False),  # AutoTokenizer may pick another
        ({"tokenizer_config.json": {"tokenizer_class": "LlamaTokenizer"}}, False),
        ({"tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["x.T", None]}}}, False),
    ],
)
def test_only_a_plain_llama_folder_skips_autotokenizer(model_dir, tmp_path, change, generic):
    import shutil

    from genfair.models.hf import _generic_tokenizer

    folder = Path(shutil.copytree(model_dir, tmp_path / "m"))
    for name, fields in change.items():
        data = json.loads((folder / name).read_text())
        (folder / name).write_text(json.dumps({**data, **fields}))
    assert _generic_tokenizer(str(folder)) is generic
    assert not _generic_tokenizer(str(tmp_path / "absent"))


CACHED_NEEDS = """
import sys
from genfair.models.config import HFModelConfig
from genfair.models.hf import HFChatBackend
from genfair.models.base import Request
backend = HFChatBackend.from_config(HFModelConfig(backend="hf", model_id=sys.argv[1]))
request = Request(messages=({"role": "user", "content": "hello"},))
backend.fingerprint, backend.runtime, backend.repeats(request), backend.prompt_tokens(request)
print("torch" in sys.modules)
"""


def test_what_cached_answers_need_imports_no_torch(model_dir):
    """A stage whose answers are all cached pays neither for the weights nor for importing
    torch (issue 31: SmolLM2's cached generate stage, 7-9 CPU-seconds, became 2-3.5)."""
    import os
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", CACHED_NEEDS, str(model_dir)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["False"], done.stderr[-2000:]


@pytest.mark.parametrize("dtype", ["float32", "auto"])
def test_a_checkpoint_asking_to_run_its_own_code_is_one_line_and_never_a_prompt(
    model_dir, tmp_path, monkeypatch, dtype
):
    """``auto_map`` for an architecture transformers does not ship: with trust_remote_code
    off (the default) transformers raised a three-line ValueError, deep in the stage."""
    import json
    import shutil

    from genfair.errors import ConfigError

    folder = Path(shutil.copytree(model_dir, tmp_path / "custom"))
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "evil_llama"
    config["auto_map"] = {
        "AutoConfig": "evil.EvilConfig",
        "AutoModelForCausalLM": "evil.EvilModel",
        "AutoTokenizer": ["evil.EvilTokenizer", None],
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "evil.py").write_text("raise SystemExit('custom code ran')\n")

    def no_prompt(*_: object) -> str:
        raise AssertionError("prompted")

    monkeypatch.setattr("builtins.input", no_prompt)
    with pytest.raises(ConfigError) as error:
        run(make(folder, dtype=dtype), [ask("hello")])
    assert str(error.value) == (
        f"{folder} asks to run its own code (auto_map in config.json), which genfair runs "
        "only with trust_remote_code: true in the model config: set it only for a checkpoint "
        "you trust"
    )


def test_a_malicious_weights_pickle_is_one_line_and_never_run(model_dir, tmp_path):
    import os
    import pickle
    import shutil

    import torch

    from genfair.errors import ConfigError

    class Evil:
        def __reduce__(self) -> tuple:
            return os.system, (f"touch {tmp_path / 'ran'}",)

    folder = Path(shutil.copytree(model_dir, tmp_path / "pickled"))
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    torch.save({"weights": Evil()}, folder / "pytorch_model.bin", pickle_module=pickle)
    with pytest.raises(ConfigError) as error:
        run(make(folder), [ask("hello")])
    assert str(error.value).startswith(
        f"{folder}: a weights file holds a pickle of more than tensors, refused unread"
    )
    assert not (tmp_path / "ran").exists()
