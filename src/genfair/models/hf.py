"""Hugging Face transformers backend: batched chat generation on CPU or GPU.

Serves the ``hf`` backend (any hub id or local directory) and, through
:mod:`genfair.models.embedded`, the ``embedded`` one. Each completion's ``finish_reason``
is ``"length"`` when the token limit cut it, ``"stop"`` when the model ended it; the
thread count is set before each batch (:mod:`genfair.models.local`).

A request's decoding overrides (``max_tokens``, ``temperature``, ``top_p``) are honoured, and
its ``json_schema`` by constrained decoding (:mod:`genfair.models.constrained`); a batch
generates with one setting, so requests are batched by their decoding.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from genfair.errors import ConfigError
from genfair.models.base import (
    Completion,
    LLMBackend,
    OnDone,
    Request,
    chunks,
    complete_in_batches,
    grouped_chunks,
    stable_hash,
)
from genfair.models.config import EmbeddedModelConfig, HFModelConfig, SamplingParams
from genfair.models.constrained import JsonConstraint
from genfair.models.cpu import resolve_dtype, resolve_engine
from genfair.models.ct2 import CT2Generator, converted
from genfair.models.local import (
    apply_threads,
    available_cores,
    decoding_kwargs,
    eos_ids,
    finish_reasons,
)

log = logging.getLogger(__name__)


class HFChatBackend(LLMBackend):
    """Chat-template generation with a transformers causal LM, in left-padded batches.

    The weights load on first need (:meth:`complete`, or reading :attr:`model` / :attr:`ct2`):
    a run whose answers are all cached never loads them. What cached answers need is known
    without them: the cache key (:attr:`fingerprint`, whose dtype is the one the config
    resolves to, checked against the loaded model's), :meth:`repeats`, :attr:`runtime` and the
    token counts (the tokenizer, loaded eagerly: it is cheap).
    """

    supports_json_schema = True

    def __init__(
        self,
        tokenizer: Any,
        load: Callable[[], tuple[Any, CT2Generator | None]],
        *,
        dtype: str | None,
        identity: dict[str, Any],
        sampling: SamplingParams,
        engine: str = "transformers",
        batch_size: int = 8,
        system_prompt: str | None = None,
        threads: int | None = None,
    ):
        self.tokenizer = tokenizer
        #: builds ``(model, CTranslate2 generator or None)``: called once, on first need
        self._load = load
        self._model: Any = None
        self._ct2: CT2Generator | None = None
        self._loading = threading.Lock()  # a Dask worker's threads share one backend
        #: the dtype the model computes in, known before it loads (None: only once loaded)
        self._dtype = dtype
        self._engine = engine
        self.sampling = sampling
        self.batch_size = batch_size
        self.system_prompt = system_prompt
        #: torch / BLAS threads (None: the cores available); not part of the fingerprint
        self.threads = threads
        self._identity = identity
        # greedy decoding repeats itself: re-asking after an invalid answer is pointless
        # (the model's default; a request's own temperature decides for it: repeats())
        self.deterministic = sampling.temperature == 0
        #: lm-format-enforcer's view of the tokenizer: slow to build, so built once, on the
        #: first request with a json_schema
        self._json: JsonConstraint | None = None
        tokenizer.padding_side = "left"  # decoder-only models continue from the right edge
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_config(
        cls,
        config: HFModelConfig | EmbeddedModelConfig,
        source: str | os.PathLike[str] | None = None,
    ) -> HFChatBackend:
        """From ``source`` (default: the config's hub id or local directory): the tokenizer
        now, the weights on first need."""
        hub = {}
        if isinstance(config, HFModelConfig):
            hub = {"revision": config.revision, "trust_remote_code": config.trust_remote_code}
        source = str(source or config.model_id)
        _check_local_source(source)
        engine = "transformers"
        if isinstance(config, EmbeddedModelConfig):  # its "auto" follows the CPU
            dtype = resolve_dtype(config.dtype, config.device)
            engine = resolve_engine(config.engine)
        else:  # an hf model's "auto" is its checkpoint's
            with checkpoint_as_data(source):
                dtype = config.dtype if config.dtype != "auto" else _checkpoint_dtype(source, hub)
        if engine == "ctranslate2" and (dtype != "float32" or config.device != "cpu"):
            raise ValueError(
                "engine: ctranslate2 runs float32 on CPU: set dtype: float32 and device: cpu"
            )
        with checkpoint_as_data(source):
            tokenizer = _tokenizer(source, hub)
        checkpoint_auto = isinstance(config, HFModelConfig) and config.dtype == "auto"

        def load() -> tuple[Any, CT2Generator | None]:
            from transformers import AutoModelForCausalLM

            log.info("loading %s (%s, %s)", source, dtype or "dtype auto", engine)
            # hf's "auto" is left to transformers (the checkpoint's), the dtype checked after
            wanted = "auto" if checkpoint_auto else getattr(_torch(), dtype)
            with checkpoint_as_data(source):
                model = AutoModelForCausalLM.from_pretrained(source, dtype=wanted, **hub)
            model = model.to(config.device)
            if engine != "ctranslate2":
                return model, None
            threads = config.threads or available_cores()
            ct2 = CT2Generator(
                converted(Path(source)), tokenizer, threads, batch_size=config.batch_size
            )
            return model, ct2

        return cls(
            tokenizer,
            load,
            dtype=dtype,
            identity={
                "backend": config.backend,
                "model_id": config.model_id,
                "revision": config.revision,
            },
            sampling=config.sampling,
            engine=engine,
            batch_size=config.batch_size,
            system_prompt=config.system_prompt,
            threads=config.threads,
        )

    @property
    def model(self) -> Any:
        """The transformers model, loaded on first use."""
        return self._loaded()

    @property
    def ct2(self) -> CT2Generator | None:
        """CTranslate2 for greedy unconstrained requests (engine: ctranslate2; converted and
        loaded with the model), else None."""
        if self._engine == "ctranslate2" and self._ct2 is None:
            self._loaded()
        return self._ct2

    @ct2.setter
    def ct2(self, generator: CT2Generator | None) -> None:
        self._ct2 = generator
        self._engine = "transformers" if generator is None else "ctranslate2"

    def _loaded(self) -> Any:
        """The model, loaded once; its dtype must be the one the cache key was made with."""
        with self._loading:
            if self._model is None:
                model, ct2 = self._load()
                loaded = _dtype_name(model)
                if self._dtype not in (None, loaded):
                    raise DtypeMismatch(
                        f"{self._identity['model_id']} loaded in {loaded}, but its cache key "
                        f"was made for {self._dtype}: set dtype: {loaded} in its model config"
                    )
                self._dtype = loaded
                if self._ct2 is None:
                    self._ct2 = ct2
                self._model = model.eval()
            return self._model

    @property
    def dtype(self) -> str:
        """The dtype the model computes in (``float32``, ``bfloat16``...)."""
        if self._dtype is None:  # an hf checkpoint that does not say its dtype
            self._loaded()
        return self._dtype  # type: ignore[return-value]  # set by _loaded

    @property
    def runtime(self) -> dict[str, Any]:
        return {"engine": self.engine, "dtype": self.dtype, "batch_size": self.batch_size}

    @property
    def engine(self) -> str:
        return self._engine

    @property
    def fingerprint(self) -> dict[str, Any]:
        # the dtype only when not float32, so that fp32 cache keys stay those of before it was there
        dtype = {} if self.dtype == "float32" else {"dtype": self.dtype}
        engine = {} if self.engine == "transformers" else {"engine": self.engine}
        return {
            **self._identity,
            "sampling": self.sampling.model_dump(),
            "system_prompt": self.system_prompt,
            **dtype,
            **engine,
        }

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        if requests:  # loaded here, not in a batch: a failed load stops the stage in one line
            self._loaded()

        def run(batch: Sequence[Request]) -> list[Completion]:
            return [
                Completion(status="ok", text=t, finish_reason=r) for t, r in self._generate(batch)
            ]

        complete_in_batches(self._batches(requests), run, on_done)

    def repeats(self, request: Request) -> bool:
        """Greedy decoding (the request's effective temperature 0) repeats itself."""
        return request.sampling(self.sampling).temperature == 0

    def prompt_tokens(self, request: Request) -> int:
        """The prompt's tokens as :meth:`_generate` builds and encodes it."""
        prompt = self.tokenizer.apply_chat_template(
            self._messages(request), add_generation_prompt=True, tokenize=False
        )
        return self.text_tokens(prompt)

    def text_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _batches(self, requests: Sequence[Request]) -> list[Sequence[Request]]:
        """Batches of requests sharing one decoding (a batch generates with one
        ``max_new_tokens``, temperature, top_p and schema): of at most ``batch_size`` for
        transformers; whole for CTranslate2, which sorts them by prompt length and cuts its
        own batches of ``batch_size`` (less padding, the same answers: docs/methodology.md)."""
        groups = grouped_chunks(requests, self._decoding, max(len(requests), 1))
        return [
            batch
            for group in groups
            for batch in chunks(group, len(group) if self._on_ct2(group[0]) else self.batch_size)
        ]

    def _on_ct2(self, request: Request) -> bool:
        """Whether CTranslate2 answers ``request``: greedy and unconstrained, engine ctranslate2."""
        return self.ct2 is not None and self.repeats(request) and request.json_schema is None

    def _decoding(self, request: Request) -> tuple[int, float, float, str | None]:
        """What a batch must share: token limit, temperature, top_p and schema (by hash)."""
        sampling = request.sampling(self.sampling)
        schema = None if request.json_schema is None else stable_hash(request.json_schema)
        return sampling.max_tokens, sampling.temperature, sampling.top_p, schema

    def _messages(self, request: Request) -> list[dict[str, str]]:
        messages = list(request.messages)
        if self.system_prompt and not any(m["role"] == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        return messages

    def _generate(self, batch: Sequence[Request]) -> list[tuple[str, str]]:
        """Each request's answer and finish reason."""
        torch = _torch()
        apply_threads(self.threads)
        prompts = [
            self.tokenizer.apply_chat_template(
                self._messages(r), add_generation_prompt=True, tokenize=False
            )
            for r in batch
        ]
        sampling = batch[0].sampling(self.sampling)  # the batch's (see _decoding)
        limit = sampling.max_tokens
        stop = eos_ids(self.model, self.tokenizer)
        if self._on_ct2(batch[0]):
            ids = self.tokenizer(prompts, add_special_tokens=False)["input_ids"]
            return self._decoded(self.ct2.greedy(ids, limit, stop), stop, limit)
        inputs = self.tokenizer(
            prompts, return_tensors="pt", padding=True, add_special_tokens=False
        ).to(self.model.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": limit,
            "pad_token_id": self.tokenizer.pad_token_id,
            **decoding_kwargs(sampling, [r.seed for r in batch]),
        }
        if batch[0].json_schema is not None:
            if self._json is None:
                self._json = JsonConstraint(self.tokenizer, stop)
            kwargs["prefix_allowed_tokens_fn"] = self._json.allowed_tokens(batch[0].json_schema)
        with torch.inference_mode():
            output = self.model.generate(**inputs, **kwargs)
        return self._decoded(output[:, inputs["input_ids"].shape[1] :].tolist(), stop, limit)

    def _decoded(
        self, new_tokens: list[list[int]], stop: set[int], limit: int
    ) -> list[tuple[str, str]]:
        """Each row of new token ids as text, with its finish reason."""
        texts = [
            t.strip() for t in self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        ]
        return list(zip(texts, finish_reasons(new_tokens, stop, limit), strict=True))


def looks_like_path(model_id: str) -> bool:
    """Whether ``model_id`` names a local folder rather than a hub id (``org/name``): absolute,
    relative with ``./`` / ``../`` / ``~``, or with more than one ``/``."""
    return (
        os.path.isabs(model_id)
        or model_id.startswith((".", "~"))
        or model_id.count("/") > 1
        or os.sep != "/"
        and os.sep in model_id
    )


class ModelNotFound(FileNotFoundError):
    """A local model folder that is not there; ``config_key`` is the model config's key at
    fault, which callers that know the model's name prefix with ``models.<name>.``."""

    config_key = "model_id"


class DtypeMismatch(ValueError):
    """The loaded model computes in another dtype than the one its cache key was made with
    (resolved from the config before loading): refused, never silently keyed wrong."""

    config_key = "dtype"


@contextmanager
def checkpoint_as_data(source: str, where: str = "", code_setting: bool = True) -> Iterator[None]:
    """A checkpoint is data, never code: transformers' refusal of its own code (``auto_map``
    in config.json, ``trust_remote_code`` off: always passed, so it never asks "[y/N]") and
    torch's of a weights pickle holding more than tensors, each as one :class:`ConfigError`
    line naming the checkpoint (after ``where``, e.g. ``params.yaml: <key>: ``) and the fix;
    ``code_setting``: whether the config has a ``trust_remote_code`` to offer."""
    try:
        yield
    except pickle.UnpicklingError:
        raise ConfigError(
            f"{where}{source}: a weights file holds a pickle of more than tensors, refused "
            "unread (it could run code): use a safetensors checkpoint from a source you trust"
        ) from None
    except ValueError as exc:
        if "trust_remote_code" not in str(exc):
            raise
        fix = (
            "which genfair runs only with trust_remote_code: true in the model config: set it "
            "only for a checkpoint you trust"
            if code_setting
            else "which genfair never does: use a checkpoint of an architecture transformers ships"
        )
        raise ConfigError(
            f"{where}{source} asks to run its own code (auto_map in config.json), {fix}"
        ) from None


def _check_local_source(source: str) -> None:
    """A local model folder that does not exist is named as such (transformers would say
    "Repo id must be in the form 'repo_name'..."), with the fix."""
    if not looks_like_path(source):
        return
    path = os.path.expanduser(source)
    if not os.path.isdir(path):
        state = "is not a folder" if os.path.exists(path) else "not found"
        raise ModelNotFound(
            f"{source} {state}: give the folder of a saved model (config.json and weights, as "
            "save_pretrained writes them) or a hub id such as HuggingFaceTB/SmolLM2-135M-Instruct"
        )


#: model types whose folder, when its ``tokenizer_config.json`` declares the generic fast class
#: and no custom code, ``AutoTokenizer`` loads as exactly that class (checked by
#: tests/models/test_hf_backend.py on a Llama: the embedded model's architecture)
GENERIC_TOKENIZER_TYPES = frozenset({"llama"})
GENERIC_TOKENIZER_CLASSES = frozenset({"TokenizersBackend", "PreTrainedTokenizerFast"})


def _tokenizer(source: str, hub: dict[str, Any]) -> Any:
    """``AutoTokenizer``'s tokenizer for ``source``; for a local folder of a generic fast
    tokenizer (:data:`GENERIC_TOKENIZER_TYPES`), the same class loaded directly, without the
    model config classes that ``AutoTokenizer`` imports, and torch with them (about 5 of the
    7-9 CPU-seconds of a cached SmolLM2 generate stage, issue 31)."""
    if _generic_tokenizer(source):
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(source)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source, **hub)


def _generic_tokenizer(source: str) -> bool:
    """Whether ``source`` is a local folder whose tokenizer is the generic fast class
    (see :func:`_tokenizer`)."""
    folder = Path(os.path.expanduser(source))
    try:
        tokenizer = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        model = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(tokenizer, dict)
        and isinstance(model, dict)
        and tokenizer.get("tokenizer_class") in GENERIC_TOKENIZER_CLASSES
        and "auto_map" not in tokenizer
        and "auto_map" not in model
        and model.get("model_type") in GENERIC_TOKENIZER_TYPES
        and (folder / "tokenizer.json").is_file()
    )


def _dtype_name(model: Any) -> str:
    return str(getattr(model, "dtype", "torch.float32")).removeprefix("torch.")


def _checkpoint_dtype(source: str, hub: dict[str, Any]) -> str | None:
    """The dtype ``dtype: auto`` loads an hf checkpoint in, from its config (None where it
    does not say: then known only once loaded)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(source, **hub)
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _torch() -> Any:
    import torch

    return torch
