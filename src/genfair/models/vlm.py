"""Vision-language (``vlm``) backends: image + text in, text out.

A VLM request is an ordinary chat request whose user message holds image content parts
(:func:`genfair.models.images.vlm_message`): ``{"type": "image", "sha256", "path"}``. The
cache key holds the image's hash, so the runner (:func:`genfair.models.runner.run_calls`),
its re-asking and its cache serve VLMs unchanged. Each backend turns the parts into what its
model takes:

- ``hf``: ``AutoProcessor`` + ``AutoModelForImageTextToText``; parts become ``{"type":
  "image"}`` in the processor's chat template and PIL images go to the processor.
- ``openai``: chat completions with ``{"type": "image_url", "image_url": {"url":
  "data:image/png;base64,..."}}``; transport and retries are the chat backend's.
- ``simulated``: a planted-bias SIMULATOR answering with a configured accuracy per group, or
  (policy kind ``planted_recall``) with a planted recall per class, group and prompt kind
  (:mod:`genfair.models.planted_recall`).

A request's ``temperature`` and ``top_p`` are honoured by ``hf`` and ``openai``; a
``json_schema`` only by ``openai`` (the chat backend's ``response_format``): ``hf`` and the
simulators have ``supports_json_schema`` False.
"""

from __future__ import annotations

import base64
import io
import logging
import mimetypes
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from genfair.models.base import (
    Completion,
    OnDone,
    Request,
    Simulator,
    VLMBackend,
    complete_in_batches,
    grouped_chunks,
)
from genfair.models.config import (
    HFVLMConfig,
    OpenAIVLMConfig,
    SimulatedOpenVQAPolicy,
    SimulatedVLMConfig,
    SimulatedVLMPolicy,
    SimulatedVLMRecallPolicy,
)
from genfair.models.hf import checkpoint_as_data
from genfair.models.images import image_parts, read_image_part
from genfair.models.local import apply_threads, decoding_kwargs, eos_ids, finish_reasons
from genfair.models.openai import OpenAIChatBackend
from genfair.models.planted_recall import PlantedRecall
from genfair.models.questions import ImageChoiceQuestion, OpenVQAQuestion, RecallQuestion

log = logging.getLogger(__name__)


def _as_parts(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


# --- hf -------------------------------------------------------------------------------


class HFVisionBackend(VLMBackend):
    """Chat-template generation with a transformers image-text-to-text model, batched."""

    def __init__(self, model: Any, processor: Any, config: HFVLMConfig):
        self.model = model.eval()
        self.processor = processor
        self.config = config
        self.deterministic = config.sampling.temperature == 0
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is not None:
            tokenizer.padding_side = "left"  # generation continues from the right edge
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_config(
        cls, config: HFVLMConfig, source: str | os.PathLike[str] | None = None
    ) -> HFVisionBackend:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        hub = {"revision": config.revision, "trust_remote_code": config.trust_remote_code}
        dtype = "auto" if config.dtype == "auto" else getattr(torch, config.dtype)
        source = str(source or config.model_id)
        with checkpoint_as_data(source):
            processor = AutoProcessor.from_pretrained(source, **hub)
            model = AutoModelForImageTextToText.from_pretrained(source, dtype=dtype, **hub)
        return cls(model.to(config.device), processor, config)

    @property
    def fingerprint(self) -> dict[str, Any]:
        c = self.config
        return {
            "backend": "hf",
            "modality": "vlm",
            "model_id": c.model_id,
            "revision": c.revision,
            "sampling": c.sampling.model_dump(),
            "system_prompt": c.system_prompt,
        }

    def repeats(self, request: Request) -> bool:
        """Greedy decoding (the request's effective temperature 0) repeats itself."""
        return request.sampling(self.config.sampling).temperature == 0

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        def run(batch: Sequence[Request]) -> list[Completion]:
            return [
                Completion(status="ok", text=t, finish_reason=r) for t, r in self._generate(batch)
            ]

        def decoding(request: Request) -> tuple[float, float]:  # what a batch must share
            sampling = request.sampling(self.config.sampling)
            return sampling.temperature, sampling.top_p

        batches = grouped_chunks(requests, decoding, self.config.batch_size)
        complete_in_batches(batches, run, on_done, "VLM generation")

    def _chat(self, request: Request) -> tuple[list[dict[str, Any]], list[Any]]:
        """The request as the processor's chat template takes it, and its PIL images."""
        from PIL import Image

        messages: list[dict[str, Any]] = []
        images: list[Any] = []
        if self.config.system_prompt and not any(m["role"] == "system" for m in request.messages):
            messages.append(
                {"role": "system", "content": [{"type": "text", "text": self.config.system_prompt}]}
            )
        for message in request.messages:
            parts = []
            for part in _as_parts(message["content"]):
                if part.get("type") == "image":
                    with Image.open(io.BytesIO(read_image_part(part))) as image:
                        images.append(image.convert("RGB"))
                    parts.append({"type": "image"})
                else:
                    parts.append({"type": "text", "text": part["text"]})
            messages.append({"role": message["role"], "content": parts})
        return messages, images

    def _generate(self, batch: Sequence[Request]) -> list[tuple[str, str]]:
        """Each request's answer and finish reason (``length``: cut by the token limit)."""
        import torch

        apply_threads(self.config.threads)
        chats = [self._chat(r) for r in batch]
        prompts = [
            self.processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False)
            for m, _ in chats
        ]
        images = [i for _, i in chats]
        kwargs: dict[str, Any] = {"text": prompts, "padding": True, "return_tensors": "pt"}
        if any(images):
            kwargs["images"] = images
        inputs = self.processor(**kwargs).to(self.model.device)
        if "pixel_values" in inputs and self.model.dtype != torch.float32:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        tokenizer = self.processor.tokenizer
        limit = max(r.token_limit(self.config.sampling.max_tokens) for r in batch)
        generate: dict[str, Any] = {
            "max_new_tokens": limit,
            "pad_token_id": tokenizer.pad_token_id,
            **decoding_kwargs(batch[0].sampling(self.config.sampling), [r.seed for r in batch]),
        }
        with torch.inference_mode():
            output = self.model.generate(**inputs, **generate)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = [
            t.strip() for t in self.processor.batch_decode(new_tokens, skip_special_tokens=True)
        ]
        reasons = finish_reasons(new_tokens, eos_ids(self.model, tokenizer), limit)
        return list(zip(texts, reasons, strict=True))


# --- openai ---------------------------------------------------------------------------


class OpenAIVisionBackend(OpenAIChatBackend, VLMBackend):
    """Chat completions with images sent inline as base64 data URLs."""

    modality = "vlm"

    def __init__(self, config: OpenAIVLMConfig):  # type: ignore[override]
        super().__init__(config)  # type: ignore[arg-type]
        self.config: OpenAIVLMConfig = config  # type: ignore[assignment]

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {**super().fingerprint, "modality": "vlm", "image_detail": self.config.image_detail}

    def _body(self, request: Request) -> dict[str, Any]:
        body = super()._body(request)
        body["messages"] = [self._wire_message(m) for m in body["messages"]]
        return body

    def _wire_message(self, message: dict[str, Any]) -> dict[str, Any]:
        if not image_parts(message):
            return message
        parts = []
        for part in message["content"]:
            if part.get("type") == "image":
                url = data_url(read_image_part(part), part.get("path", ""))
                parts.append(
                    {
                        "type": "image_url",
                        "image_url": {"url": url, "detail": self.config.image_detail},
                    }
                )
            else:
                parts.append(part)
        return {**message, "content": parts}


def data_url(data: bytes, name: str = "") -> str:
    """``data:<mime>;base64,...`` for image bytes (PNG unless the file name says otherwise)."""
    mime = mimetypes.guess_type(name)[0] if name else None
    if not mime or not mime.startswith("image/"):
        mime = "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


# --- simulated --------------------------------------------------------------------------

REFUSAL = "I'm sorry, but I can't make judgements about people in images."


def planted_recall(policy: SimulatedVLMRecallPolicy) -> PlantedRecall:
    """The :class:`PlantedRecall` a ``planted_recall`` policy configures."""
    return PlantedRecall(**policy.model_dump(exclude={"kind"}))


class SimulatedVLM(Simulator, VLMBackend):
    """SIMULATOR: answers an :class:`~genfair.models.questions.ImageChoiceQuestion` about an
    image with the accuracy set for the pictured person's demographic ``group`` (never read
    from the pixels): with probability ``accuracy[group]`` it answers ``truth``, otherwise
    another option uniformly, so the planted per-group accuracy gap is known exactly. A
    ``planted_recall`` policy answers paper 004's FACET questions instead
    (:class:`~genfair.models.questions.RecallQuestion`, :mod:`genfair.models.planted_recall`),
    an ``open_vqa`` one OpenBias's (:class:`~genfair.models.questions.OpenVQAQuestion`)."""

    config: SimulatedVLMConfig
    kind = "simulated VLM"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return self._fingerprint(
            {"policy": self.config.policy, "open_vqa": self.config.open_vqa}, **self.settings()
        )

    def settings(self) -> dict[str, Any]:
        return {"group_key": self.config.group_key}

    def question(self, request: Request) -> ImageChoiceQuestion | RecallQuestion | OpenVQAQuestion:
        """The request's typed question: a FACET recall when ``meta`` names a ``class``, a
        choice when it names a ``group``, else an open-set one."""
        meta = request.meta
        kind = (
            RecallQuestion
            if "class" in meta
            else ImageChoiceQuestion
            if "group" in meta
            else OpenVQAQuestion
        )
        return kind.from_meta(meta)

    def respond(self, request: Request) -> Completion:
        return self.answer(request)

    def answer(self, request: Request) -> Completion:
        meta = request.meta
        question = self.question(request)
        if isinstance(question, OpenVQAQuestion):
            return self.answer_open(
                request, question, self.planted(question, meta, self.config.open_vqa)
            )
        policy = self.planted(question, meta, self.config.policy)
        if isinstance(question, RecallQuestion) != isinstance(policy, SimulatedVLMRecallPolicy):
            raise ValueError(
                f"{self.kind}: policy {question.policy!r} "
                f"does not answer a {type(question).__name__}"
            )
        if isinstance(question, RecallQuestion):
            groups = {
                "class": question.cls,
                "prompt": question.prompt,
                "gender": question.gender,
                "skin_tone": question.skin_tone,
                "age": question.age,
            }
            return Completion(
                status="ok",
                text=planted_recall(policy).answer(groups, request.seed),
                finish_reason="stop",
            )
        assert isinstance(policy, SimulatedVLMPolicy) and isinstance(question, ImageChoiceQuestion)
        accuracy = policy.accuracy.get(question.group, policy.default_accuracy)
        if accuracy is None:
            raise KeyError(
                f"simulated VLM policy {question.policy!r} has no accuracy "
                f"for group {question.group!r}; add it to accuracy "
                f"({sorted(policy.accuracy)}) or set default_accuracy"
            )
        rng = np.random.default_rng(request.seed)
        if rng.random() < policy.refusal_rate:
            return Completion(status="ok", text=REFUSAL, finish_reason="stop")
        others = [o for o in question.options if o != question.truth]
        if not others or rng.random() < accuracy:
            text = question.truth
        else:
            text = others[int(rng.integers(len(others)))]
        return Completion(status="ok", text=text, finish_reason="stop")

    def answer_open(
        self, request: Request, question: OpenVQAQuestion, policy: SimulatedOpenVQAPolicy
    ) -> Completion:
        """An open-set VQA answer in free text (see :class:`SimulatedOpenVQAPolicy`): from the
        planted class of the pictured image (the question's ``truth``), never from the pixels."""
        if question.truth is None:
            raise KeyError(
                "the simulated VLM answers open-set questions from the planted "
                "classes of a simulated t2i model's images (the question's "
                "truth); this image has none: use a real VLM for real images"
            )
        rng = np.random.default_rng(request.seed)
        roll = rng.random()
        if roll < policy.refusal_rate:
            return Completion(status="ok", text=REFUSAL, finish_reason="stop")
        truth = question.truth
        others = [o for o in question.options if o != truth]
        if roll < policy.refusal_rate + policy.unknown_rate:
            answer = policy.unknown_text
        elif others and rng.random() < policy.confusion:
            answer = others[int(rng.integers(len(others)))]
        else:
            answer = truth
        phrasing = policy.phrasings[int(rng.integers(len(policy.phrasings)))]
        return Completion(
            status="ok", text=phrasing.replace("{answer}", answer), finish_reason="stop"
        )
