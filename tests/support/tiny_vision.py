"""Tiny random-weight CLIP, DINOv2 and one-output IQA checkpoints built in code and saved to a
folder (as Hugging Face's own tests build theirs): nothing is downloaded."""

from __future__ import annotations

from pathlib import Path


def _pil(name: str):  # the PIL image processors (no torchvision here), older names as fallback
    import transformers

    return getattr(transformers, f"{name}Pil", None) or getattr(transformers, name)


def tiny_clip(folder: Path) -> Path:
    """A tiny CLIP (2 layers, width 32, 32x32 images) with a character-level tokenizer."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, CLIPTokenizer

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for char in "abcdefghijklmnopqrstuvwxyz_.":
        vocab[char] = len(vocab)
        vocab[char + "</w>"] = len(vocab)
    text = {"vocab_size": len(vocab), "hidden_size": 32, "intermediate_size": 37,
            "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 77,
            "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}  # fmt: skip
    vision = {"image_size": 32, "patch_size": 8, "hidden_size": 32, "intermediate_size": 37,
              "num_hidden_layers": 2, "num_attention_heads": 4}  # fmt: skip
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    processor = CLIPProcessor(
        image_processor=_pil("CLIPImageProcessor")(
            size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
        ),
        tokenizer=CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77),  # as CLIP's
    )
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def tiny_dino(folder: Path) -> Path:
    """A tiny DINOv2 (2 layers, width 32, 32x32 images)."""
    import torch
    from transformers import Dinov2Config, Dinov2Model

    torch.manual_seed(1)
    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=37, image_size=32, patch_size=8)  # fmt: skip
    Dinov2Model(config).save_pretrained(folder)
    _pil("BitImageProcessor")(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(folder)
    return folder


def tiny_iqa(folder: Path) -> Path:
    """A tiny ViT with one regression output (an IQA head's shape)."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(2)
    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=37, image_size=32, patch_size=8, num_labels=1)  # fmt: skip
    ViTForImageClassification(config).save_pretrained(folder)
    _pil("ViTImageProcessor")(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder
