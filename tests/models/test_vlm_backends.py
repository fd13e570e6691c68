"""VLM backends: hf (a tiny random LLaVA built in code, no hub), openai (mock server), and
the planted-bias SIMULATOR; all through the ordinary runner and cache."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from genfair.models import build_backend
from genfair.models.base import Request
from genfair.models.cache import ResponseCache
from genfair.models.config import HFVLMConfig, OpenAIVLMConfig, SimulatedVLMConfig
from genfair.models.images import encode_png, vlm_message
from genfair.models.runner import Call, run_calls
from genfair.models.vlm import HFVisionBackend, OpenAIVisionBackend, SimulatedVLM
from tests.support.mock_openai import Fault, MockOpenAI

MockFactory = Callable[..., MockOpenAI]


def ok(text: str, meta: dict[str, Any]) -> str:
    return "ok"


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    path = tmp_path / "person.png"
    path.write_bytes(encode_png(Image.new("RGB", (20, 24), (200, 100, 50))))
    return path


# --- cache key ---------------------------------------------------------------------------


def test_cache_key_follows_image_bytes_not_path(tmp_path: Path, photo: Path) -> None:
    moved = tmp_path / "moved.png"
    moved.write_bytes(photo.read_bytes())
    other = tmp_path / "other.png"
    other.write_bytes(encode_png(Image.new("RGB", (20, 24), (0, 0, 0))))
    key = lambda p: ResponseCache.key({"m": 1}, Request(messages=(vlm_message("job?", [p]),)))  # noqa: E731
    assert key(photo) == key(moved) != key(other)
    text_only = Request(messages=({"role": "user", "content": "job?"},))
    assert text_only.key_payload()["messages"] == [{"role": "user", "content": "job?"}]


# --- openai ------------------------------------------------------------------------------


def openai_backend(url: str, **overrides: Any) -> OpenAIVisionBackend:
    settings = {
        "modality": "vlm",
        "backend": "openai",
        "model_id": "gpt-4o",
        "base_url": url,
        "api_key_env": None,
        "max_retries": 2,
        "backoff_initial_s": 0.001,
        "backoff_max_s": 0.01,
        "timeout_s": 2.0,
        **overrides,
    }
    backend = build_backend(OpenAIVLMConfig(**settings))
    assert isinstance(backend, OpenAIVisionBackend)
    return backend


def test_openai_sends_images_as_data_urls(
    mock_openai: MockFactory, tmp_path: Path, photo: Path
) -> None:
    server = mock_openai(prompt_faults={"What is the job?": [Fault.server_error()]})
    backend = openai_backend(server.url, image_detail="low", system_prompt="Be brief.")
    calls = [Call("p1", (vlm_message("What is the job?", [photo]),))]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = run_calls(backend, cache, calls, ok, seed=1)
    assert frame.loc[0, "status"] == "ok" and frame.loc[0, "text"] == "echo: What is the job?"
    assert frame.loc[0, "tries"] == 2  # the chat transport's retries serve vision too
    url = server.image_urls[-1]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == photo.read_bytes()
    body = server.requests[-1].body
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1]["content"][0]["image_url"]["detail"] == "low"
    assert "path" not in str(body) and "sha256" not in str(body)
    assert backend.fingerprint["modality"] == "vlm"


def test_openai_changed_image_is_an_error_not_a_wrong_answer(
    mock_openai: MockFactory, tmp_path: Path, photo: Path
) -> None:
    server = mock_openai()
    message = vlm_message("job?", [photo])
    photo.write_bytes(
        encode_png(Image.new("RGB", (2, 2), (0, 0, 0)))
    )  # changed after the probe was built
    done = []
    openai_backend(server.url).complete([Request(messages=(message,))], lambda r, c: done.append(c))
    assert done[0].status == "error" and "rebuild the probes" in done[0].error
    assert server.calls == 0


# --- simulated ---------------------------------------------------------------------------


def test_simulator_plants_the_per_group_accuracy(tmp_path: Path, photo: Path) -> None:
    config = SimulatedVLMConfig(
        backend="simulated",
        policy={"occupation": {"accuracy": {"younger": 0.9, "older": 0.6}, "refusal_rate": 0.0}},
    )
    backend = build_backend(config)
    assert isinstance(backend, SimulatedVLM) and backend.simulated
    message = vlm_message("job?", [photo])
    n = 800
    calls = [
        Call(
            f"{g}{i}",
            (message,),
            meta={
                "policy": "occupation",
                "group": g,
                "options": ["doctor", "nurse", "pilot"],
                "truth": "doctor",
            },
        )
        for g in ("younger", "older")
        for i in range(n)
    ]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = run_calls(backend, cache, calls, ok, seed=4)
    correct = (frame["text"] == "doctor").to_numpy().reshape(2, n).mean(axis=1)
    for observed, planted in zip(correct, (0.9, 0.6), strict=True):
        assert abs(observed - planted) < 4 * np.sqrt(planted * (1 - planted) / n)
    wrong = frame.loc[frame["text"] != "doctor", "text"]
    assert set(wrong) == {"nurse", "pilot"}


def test_simulator_unknown_group_is_a_clear_error() -> None:
    config = SimulatedVLMConfig(backend="simulated", policy={"k": {"accuracy": {"a": 1.0}}})
    request = Request(
        messages=(), meta={"policy": "k", "group": "b", "options": ["x"], "truth": "x"}
    )
    with pytest.raises(KeyError, match="default_accuracy"):
        SimulatedVLM(config).answer(request)
    lenient = SimulatedVLMConfig(
        backend="simulated", policy={"k": {"accuracy": {"a": 1.0}, "default_accuracy": 1.0}}
    )
    assert SimulatedVLM(lenient).answer(request).text == "x"


# --- hf: a tiny random LLaVA -------------------------------------------------------------

WORDS = [
    "<unk>",
    "<pad>",
    "<s>",
    "</s>",
    "<image>",
    "USER:",
    "ASSISTANT:",
    "SYSTEM:",
    "what",
    "is",
    "the",
    "job",
    "of",
    "this",
    "person",
    "?",
    "doctor",
    "nurse",
    "a",
]
TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}"
    "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LLaVA with a 1-layer CLIP vision tower and a 1-layer Llama, random weights, and a
    processor from a word-level tokenizer and a 16 px CLIP image processor."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    vocab = {w: i for i, w in enumerate(WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16}
        ),
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=TEMPLATE,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=16,
            image_size=16,
            patch_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            projection_dim=16,
        ),
        text_config=LlamaConfig(
            vocab_size=len(WORDS),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=64,
            pad_token_id=1,
            bos_token_id=2,
            eos_token_id=3,
        ),
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-llava")
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def hf_config(folder: Path, **overrides: Any) -> HFVLMConfig:
    return HFVLMConfig(
        **{
            "backend": "hf",
            "model_id": str(folder),
            "batch_size": 2,
            "sampling": {"max_tokens": 3},
            **overrides,
        }
    )


def test_hf_vlm_loads_by_path_and_answers_in_batches(
    tiny_llava: Path, tmp_path: Path, photo: Path
) -> None:
    backend = build_backend(hf_config(tiny_llava, system_prompt="be brief"))
    assert isinstance(backend, HFVisionBackend) and backend.deterministic
    dark = tmp_path / "dark.png"
    dark.write_bytes(encode_png(Image.new("RGB", (30, 30), (5, 5, 5))))
    calls = [
        Call("a", (vlm_message("what is the job of this person ?", [photo]),)),
        Call("b", (vlm_message("what is this ?", [dark]),)),
        Call("c", (vlm_message("what is the job of this person ?", [photo]),), sample_index=1),
    ]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = run_calls(backend, cache, calls, ok, seed=1)
        assert len(cache) == 3
    assert (frame["status"] == "ok").all()
    vocabulary = set(WORDS)
    for text in frame["text"]:  # a random model says random words, but only its own
        assert isinstance(text, str) and set(text.replace("?", " ? ").split()) <= vocabulary
    # greedy decoding: the same input gives the same answer in another batch position
    assert frame.loc[0, "text"] == frame.loc[2, "text"]


def test_hf_vlm_image_changes_the_input(tiny_llava: Path, tmp_path: Path, photo: Path) -> None:
    backend = build_backend(hf_config(tiny_llava))
    messages, images = backend._chat(Request(messages=(vlm_message("what is this ?", [photo]),)))
    assert messages == [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "what is this ?"}]}
    ]
    assert images[0].size == (20, 24)
    prompt = backend.processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False
    )
    inputs = backend.processor(text=[prompt], images=[images], return_tensors="pt")
    assert inputs["pixel_values"].shape == (1, 3, 16, 16)
    assert int((inputs["input_ids"] == WORDS.index("<image>")).sum()) == 4  # 2x2 patches


def test_hf_vlm_failure_is_an_error_completion(
    tiny_llava: Path, tmp_path: Path, photo: Path
) -> None:
    backend = build_backend(hf_config(tiny_llava))
    message = vlm_message("what ?", [photo])
    photo.unlink()
    done = []
    backend.complete([Request(messages=(message,))], lambda r, c: done.append(c))
    assert done[0].status == "error" and "FileNotFoundError" in done[0].error
