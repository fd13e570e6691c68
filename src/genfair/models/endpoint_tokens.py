"""Token counts of a model behind an OpenAI-compatible endpoint, from its own tokenizer
wherever one can be had (``genfair plan``'s prompt tokens, an answer without ``usage``).

The model config's ``tokenizer`` says where (issue 45.1):

- unset: the ``model_id`` when it names a local folder holding a tokenizer (a model served
  from its folder), else none;
- a local folder, or a hub id the local Hugging Face cache already holds (never downloaded):
  that tokenizer, its chat template applied as the server applies it;
- ``endpoint``: the server's ``POST /tokenize`` route (vLLM's, at the server's root beside
  ``/v1``), asked with the chat messages so its own chat template is counted. A server
  without one (``transformers serve``, a hosted API) answers an error: counted as none from
  then on, with one warning.

None: the caller's estimate (4 characters a token), labelled as one
(:func:`genfair.models.usage.prompt_tokens`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from genfair.logs import printable

log = logging.getLogger(__name__)

#: the ``tokenizer`` value that asks the endpoint's own ``/tokenize`` route
ENDPOINT = "endpoint"
#: the files of a saved tokenizer (one is enough to try loading it)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
#: seconds one ``/tokenize`` request may take (a local server answers in milliseconds)
TOKENIZE_TIMEOUT_S = 10.0


def tokenize_url(base_url: str) -> str:
    """Where an OpenAI-compatible server's tokenize route is: vLLM serves it at its root,
    beside ``/v1``."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1") + "/tokenize"


def local_tokenizer(source: str) -> bool:
    """Whether ``source`` is a local folder holding a saved tokenizer."""
    folder = Path(os.path.expanduser(source))
    return folder.is_dir() and any((folder / name).is_file() for name in TOKENIZER_FILES)


class TokenCounter:
    """Counts a chat prompt's and a text's tokens for one endpoint model (None: cannot)."""

    def __init__(
        self,
        source: str | None,
        *,
        model_id: str,
        base_url: str,
        headers: dict[str, str] | None = None,
        system_prompt: str | None = None,
    ) -> None:
        self.source = source
        self._model_id = model_id
        self._url = tokenize_url(base_url)
        self._headers = headers or {}
        self._system_prompt = system_prompt
        self._tokenizer: Any = None
        #: why counting stopped (a failed load or route): None while it works
        self.failed: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, config: Any, headers: dict[str, str] | None = None) -> TokenCounter | None:
        """The counter a chat model ``config`` allows (None: no tokenizer can be had)."""
        source = getattr(config, "tokenizer", None)
        if source is None and local_tokenizer(config.model_id):
            source = config.model_id
        if source is None:
            return None
        return cls(
            source,
            model_id=config.model_id,
            base_url=config.base_url,
            headers=headers,
            system_prompt=config.system_prompt,
        )

    def prompt(self, messages: Sequence[dict[str, Any]]) -> int | None:
        """The tokens of a chat input as the server builds it (system prompt and chat
        template included)."""
        messages = list(messages)
        if self._system_prompt:
            messages.insert(0, {"role": "system", "content": self._system_prompt})
        if self.source == ENDPOINT:
            return self._ask({"messages": messages, "add_generation_prompt": True})
        tokenizer = self._loaded()
        if tokenizer is None:
            return None
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self._encoded(tokenizer, text)

    def text(self, text: str) -> int | None:
        """The tokens of ``text`` (an answer), no special tokens added."""
        if self.source == ENDPOINT:
            return self._ask({"prompt": text, "add_special_tokens": False})
        tokenizer = self._loaded()
        return None if tokenizer is None else self._encoded(tokenizer, text)

    @staticmethod
    def _encoded(tokenizer: Any, text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    def _loaded(self) -> Any:
        with self._lock:
            if self._tokenizer is None and self.failed is None:
                try:
                    from transformers import AutoTokenizer

                    self._tokenizer = AutoTokenizer.from_pretrained(
                        os.path.expanduser(str(self.source)),
                        local_files_only=True,  # never a download: offline machines, CI
                        trust_remote_code=False,  # a tokenizer is data, never code
                    )
                except (OSError, ValueError, ImportError) as exc:
                    self._fail(f"no tokenizer loads from {self.source} ({_first_line(exc)})")
            return self._tokenizer

    def _ask(self, body: dict[str, Any]) -> int | None:
        """The tokenize route's count of ``body`` (vLLM's ``count``, else its ``tokens``)."""
        if self.failed is not None:
            return None
        try:
            response = httpx.post(
                self._url,
                json={"model": self._model_id, **body},
                headers=self._headers,
                timeout=TOKENIZE_TIMEOUT_S,
            )
            response.raise_for_status()
            data = response.json()
            count = data.get("count") if isinstance(data, dict) else None
            if count is None and isinstance(data, dict) and isinstance(data.get("tokens"), list):
                count = len(data["tokens"])
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError("the answer holds no token count")
        except (httpx.HTTPError, ValueError) as exc:
            self._fail(f"{self._url} gave no token count ({_first_line(exc)})")
            return None
        return count

    def _fail(self, why: str) -> None:
        self.failed = why
        log.warning("%s: tokens estimated at 4 characters a token from now on", why)


def _first_line(exc: BaseException) -> str:
    return printable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)[:200]
