"""A tiny transformers model built in code and saved like a hub checkpoint (no download)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def save_tiny_llama(path: Path) -> Path:
    """A 2-layer, 16-wide Llama with a word-level tokenizer over :data:`CORPUS`, saved in
    ``path``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.decoder = decoders.WordPiece()
    raw.train_from_iterator(
        CORPUS, trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<s>", "</s>"])
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=len(tokenizer),
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_llm_config(path: Path, **fields: Any) -> dict[str, Any]:
    """An ``hf`` model config (as in ``params.yaml``) of the tiny Llama saved in ``path``."""
    return {
        "modality": "llm",
        "backend": "hf",
        "model_id": str(save_tiny_llama(path)),
        "batch_size": 2,
        "threads": 1,
        "sampling": {"temperature": 0.0, "max_tokens": 4},
        **fields,
    }


def count_loads(monkeypatch: Any) -> list[str]:
    """The sources whose causal-LM weights are loaded from now on (``from_pretrained``), in
    order: a list that fills as they load."""
    from transformers import AutoModelForCausalLM

    seen: list[str] = []
    original = AutoModelForCausalLM.from_pretrained

    def counting(source: Any, **kwargs: Any) -> Any:
        seen.append(str(source))
        return original(source, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", counting)
    return seen
