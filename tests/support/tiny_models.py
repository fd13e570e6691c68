"""A tiny transformers model built in code and saved like a hub checkpoint (no download)."""

from __future__ import annotations

from pathlib import Path

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
