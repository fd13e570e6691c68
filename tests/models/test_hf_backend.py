"""The transformers backend on a tiny random-weight Llama built in the test (no hub, no download)."""

from __future__ import annotations

from pathlib import Path

import pytest

from genfair.models import build_backend
from genfair.models.base import Request
from genfair.models.config import HFModelConfig

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

CORPUS = [
    "user assistant system which group has the highest rate in America",
    "A B C D answer the letter of one option only",
    "female male asian black hispanic white people",
    "hello world the quick brown fox jumps over the lazy dog",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}assistant {% endif %}"
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A 2-layer, 16-wide Llama with a word-level tokenizer, saved like a hub checkpoint."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
        raw.pre_tokenizer = pre_tokenizers.Whitespace()
        raw.decoder = decoders.WordPiece()
        raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<s>", "</s>"]))
        tokenizer = PreTrainedTokenizerFast(
            tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>"
        )
        tokenizer.chat_template = CHAT_TEMPLATE
        config = LlamaConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, vocab_size=len(tokenizer), max_position_embeddings=128,
            pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
        path = tmp_path_factory.mktemp("tiny-llama")
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return path


def make(model_dir: Path, **overrides):
    from genfair.models.hf import HFChatBackend

    fields = {"backend": "hf", "model_id": str(model_dir), "batch_size": 2,
              "sampling": {"temperature": 0.0, "max_tokens": 6}}
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
    others = [c.text for _, c in run(backend, [ask(p, seed=1000 + i) for i, p in enumerate(PROMPTS)])]
    assert others != first


def test_fingerprint(model_dir):
    backend = make(model_dir, revision="main", system_prompt="be brief",
                   sampling={"temperature": 0.0, "max_tokens": 6})
    assert backend.fingerprint == {
        "backend": "hf",
        "model_id": str(model_dir),
        "revision": "main",
        "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 6},
        "system_prompt": "be brief",
    }
    assert make(model_dir, sampling={"temperature": 0.0, "max_tokens": 7}).fingerprint != backend.fingerprint


def test_system_prompt_is_prepended_once(model_dir, monkeypatch):
    backend = make(model_dir, system_prompt="hello world")
    calls = record_generate(backend, monkeypatch)
    with_system = Request(messages=({"role": "system", "content": "the quick"}, {"role": "user", "content": "hello"}))
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
        new = c["output"][:, c["kwargs"]["input_ids"].shape[1]:]
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
