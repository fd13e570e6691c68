"""Constrained decoding for local transformers generation: answers that are JSON matching a
schema (a request's ``json_schema``), through ``lm-format-enforcer``.

At each step lm-format-enforcer's :class:`~lmformatenforcer.TokenEnforcer` walks its prefix
tree of the vocabulary with a character-level :class:`~lmformatenforcer.JsonSchemaParser`
and returns the tokens that keep the text a valid prefix of a matching JSON value (and the
end-of-sequence tokens once the value is complete); transformers' ``prefix_allowed_tokens_fn``
masks every other token. The prefix tree is built by decoding every token of the vocabulary
(about 1 s for SmolLM2's 49k tokens on one core), so :class:`JsonConstraint` builds it once per
backend and each batch gets only a fresh enforcer.

The library's own transformers glue (``lmformatenforcer.integrations.transformers``) cannot be
imported with transformers 5 in 0.11.3, the latest release (it imports
``transformers.tokenization_utils.PreTrainedTokenizerBase``, which moved; fixed upstream in
noamgat/lm-format-enforcer#175, not yet released). :func:`_vocabulary` does what its
``build_token_enforcer_tokenizer_data`` does; the rest is the library's core, which does not
depend on transformers. The library reads ``LMFE_*`` environment variables (e.g. the
whitespace and array-length caps): leave them unset for reproducible answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["JsonConstraint"]


class JsonConstraint:
    """lm-format-enforcer's view of one tokenizer, and a ``generate`` hook per schema."""

    def __init__(self, tokenizer: Any, eos_ids: Iterable[int]):
        from lmformatenforcer import TokenEnforcerTokenizerData

        self._data = TokenEnforcerTokenizerData(
            _vocabulary(tokenizer),
            lambda ids: tokenizer.decode(ids).rstrip("\ufffd"),
            sorted(eos_ids),
            use_bitmask=False,
            vocab_size=len(tokenizer),
        )

    def allowed_tokens(self, schema: dict[str, Any]) -> Callable[[int, Any], list[int]]:
        """``prefix_allowed_tokens_fn`` for one ``generate`` call whose rows all follow
        ``schema``. A fresh enforcer per call: it keys its states on whole token sequences
        (prompt included), so the rows of a batch never share one."""
        from lmformatenforcer import JsonSchemaParser, TokenEnforcer

        enforcer = TokenEnforcer(self._data, JsonSchemaParser(schema))

        def allowed(batch_id: int, ids: Any) -> list[int]:
            return enforcer.get_allowed_tokens(ids.tolist()).allowed_tokens

        return allowed


def _vocabulary(tokenizer: Any) -> list[tuple[int, str, bool]]:
    """``(token id, text, starts a word)`` for every non-special token. A token's text is
    decoded after a ``0`` token and that character dropped, so a leading space that the
    tokenizer drops at the start of a text survives (lm-format-enforcer's own method)."""
    zero = tokenizer.encode("0", add_special_tokens=False)[-1]
    special = set(tokenizer.all_special_ids)
    tokens = []
    for token in range(len(tokenizer)):
        if token in special:
            continue
        after_zero = tokenizer.decode([zero, token])[1:]
        tokens.append((token, after_zero, len(after_zero) > len(tokenizer.decode([token]))))
    return tokens
