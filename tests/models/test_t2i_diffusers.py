"""The diffusers backend with a tiny random-weight Stable Diffusion pipeline built in code
(no hub): saved with ``save_pretrained`` and loaded through the backend by path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("diffusers")

from genfair.models import build_backend
from genfair.models.cache import ResponseCache
from genfair.models.config import DiffusersT2IConfig, ModelConfig
from genfair.models.diffusers_backend import DiffusersT2I
from genfair.models.images import ImageStore
from genfair.models.t2i import generate_images, prompt_call


def _bytes_to_unicode() -> list[str]:
    """CLIP's byte-level alphabet (the 256 symbols its BPE vocabulary starts from)."""
    bs = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    cs, extra = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return [chr(c) for c in cs]


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 32x32 Stable Diffusion pipeline with random weights (~250 kB) in a local folder."""
    import torch
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    alphabet = _bytes_to_unicode()
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for symbol in alphabet + [a + "</w>" for a in alphabet]:
        vocab[symbol] = len(vocab)
    merges = ["d o", "do c", "doc t", "doct o", "docto r</w>"]  # "doctor" is one token
    for merge in merges:
        vocab.setdefault(merge.replace(" ", ""), len(vocab))
    files = tmp_path_factory.mktemp("tokenizer")
    (files / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (files / "merges.txt").write_text(
        "#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8"
    )
    tokenizer = CLIPTokenizer(
        vocab=str(files / "vocab.json"), merges=str(files / "merges.txt"), model_max_length=16
    )
    assert tokenizer.tokenize("a doctor") == ["a</w>", "doctor</w>"]
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(4, 8),
        layers_per_block=1,
        sample_size=16,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16,
        norm_num_groups=2,
        attention_head_dim=2,
    )
    vae = AutoencoderKL(
        block_out_channels=[4, 8],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        norm_num_groups=2,
        down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2,
        sample_size=32,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
            hidden_size=16,
            intermediate_size=32,
            num_attention_heads=2,
            num_hidden_layers=1,
            vocab_size=len(vocab),
            max_position_embeddings=16,
        )
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipeline = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    folder = tmp_path_factory.mktemp("tiny-sd")
    pipeline.save_pretrained(folder)
    return folder


def config(folder: Path, **overrides: Any) -> DiffusersT2IConfig:
    settings = {
        "backend": "diffusers",
        "model_id": str(folder),
        "steps": 2,
        "guidance_scale": 3.0,
        "height": 32,
        "width": 32,
        "batch_size": 3,
        **overrides,
    }
    return DiffusersT2IConfig(**settings)


def draw(backend: Any, tmp_path: Path, prompts: list[str], seed: int = 11, name: str = "c"):
    calls = [prompt_call(f"p{i}", text, 0) for i, text in enumerate(prompts)]
    with ResponseCache(tmp_path / f"{name}.sqlite") as cache:
        frame = generate_images(backend, cache, calls, seed=seed)
        images = [ImageStore.beside(cache).open(h) for h in frame["image"].dropna()]
    return frame, images


def test_loads_by_path_and_draws_one_png_per_prompt(tiny_sd: Path, tmp_path: Path) -> None:
    backend = build_backend(
        config(tiny_sd, scheduler="EulerDiscreteScheduler", negative_prompt="blurry")
    )
    assert isinstance(backend, DiffusersT2I)
    assert type(backend.pipeline.scheduler).__name__ == "EulerDiscreteScheduler"
    frame, images = draw(backend, tmp_path, ["a doctor", "a nurse", "a pilot", "a judge"])
    assert (frame["status"] == "ok").all() and frame["image"].nunique() == 4
    assert [im.size for im in images] == [(32, 32)] * 4
    assert backend.fingerprint["scheduler"] == "EulerDiscreteScheduler"


def test_an_image_does_not_depend_on_its_batch(tiny_sd: Path, tmp_path: Path) -> None:
    together, _ = draw(
        build_backend(config(tiny_sd, batch_size=4)), tmp_path, ["a doctor", "a nurse"], name="a"
    )
    alone, _ = draw(
        build_backend(config(tiny_sd, batch_size=1)), tmp_path, ["a doctor", "a nurse"], name="b"
    )
    assert together["image"].tolist() == alone["image"].tolist()


def test_seed_and_settings_change_the_image(tiny_sd: Path, tmp_path: Path) -> None:
    base, _ = draw(build_backend(config(tiny_sd)), tmp_path, ["a doctor"], seed=1, name="a")
    other_seed, _ = draw(build_backend(config(tiny_sd)), tmp_path, ["a doctor"], seed=2, name="b")
    negative, _ = draw(
        build_backend(config(tiny_sd, negative_prompt="nurse")),
        tmp_path,
        ["a doctor"],
        seed=1,
        name="c",
    )
    assert base.loc[0, "image"] != other_seed.loc[0, "image"]
    assert base.loc[0, "image"] != negative.loc[0, "image"]


def test_nsfw_flag_is_a_refusal_and_is_re_asked(tiny_sd: Path, tmp_path: Path) -> None:
    backend = build_backend(config(tiny_sd, batch_size=1))
    real = backend.pipeline.__call__
    flags = iter([True, True, False])

    class Flagging:  # a safety checker that flags the first two images it sees
        device = backend.pipeline.device

        def __call__(self, **kwargs: Any) -> Any:
            output = real(**kwargs)
            output.nsfw_content_detected = [next(flags)]
            return output

        def set_progress_bar_config(self, **_: Any) -> None: ...

    backend.pipeline = Flagging()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        frame = generate_images(
            backend, cache, [prompt_call("p", "a doctor", max_attempts=5)], seed=1
        )
    assert frame.loc[0, "status"] == "ok" and frame.loc[0, "attempts"] == 3


def test_a_failing_batch_is_an_error_not_a_crash(tiny_sd: Path, tmp_path: Path) -> None:
    backend = build_backend(config(tiny_sd, height=30))  # not a multiple of 8: diffusers refuses
    frame, _ = draw(backend, tmp_path, ["a doctor"])
    assert frame.loc[0, "status"] == "error" and "ValueError" in frame.loc[0, "error"]


def test_unknown_scheduler_lists_the_known_ones(tiny_sd: Path) -> None:
    with pytest.raises(ValueError, match="not a diffusers scheduler.*DDIMScheduler"):
        build_backend(config(tiny_sd, scheduler="NoSuchScheduler"))


def test_t2i_configs_join_the_model_union() -> None:
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(ModelConfig)
    parsed = adapter.validate_python({"modality": "t2i", "backend": "diffusers", "model_id": "x"})
    assert isinstance(parsed, DiffusersT2IConfig)
    with pytest.raises(ValidationError) as info:
        adapter.validate_python(
            {"modality": "t2i", "backend": "diffusers", "model_id": "x", "stepz": 3}
        )
    assert info.value.errors()[0]["loc"][-1] == "stepz"
    with pytest.raises(ValidationError, match="'t2i'.*'vlm'"):
        adapter.validate_python({"modality": "audio", "backend": "diffusers"})
