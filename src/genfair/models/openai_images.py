"""OpenAI-compatible image generation (``POST {base_url}/images/generations``).

One request per image (``n = 1``), so each image has its own cache entry, seed and refusal
status. The transport (concurrent workers, retries with backoff honouring ``Retry-After``,
the API key from the environment, redaction) is the chat backend's
(:class:`~genfair.models.openai.OpenAIChatBackend`). A refusal is a 400 whose error code
is one of ``config.refusal_codes`` (OpenAI: ``content_policy_violation`` for dall-e,
``moderation_blocked`` for gpt-image), or a 200 whose image carries no data; it becomes a
``refused`` completion, which the t2i runner asks again (paper 000 §4.1).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import httpx

from genfair.models.base import Completion, Request, T2IBackend
from genfair.models.config import OpenAIT2IConfig
from genfair.models.openai import (
    OpenAIChatBackend,
    Rejected,
    error_detail,
    json_field,
    response_json,
    token_usage,
)
from genfair.models.t2i import prompt_of


class OpenAIImageBackend(OpenAIChatBackend, T2IBackend):
    modality = "t2i"
    _path = "/images/generations"
    supports_json_schema = False  # an image endpoint: no text to constrain

    def __init__(self, config: OpenAIT2IConfig):  # type: ignore[override]
        super().__init__(config)  # type: ignore[arg-type]
        self.config: OpenAIT2IConfig = config  # type: ignore[assignment]

    @property
    def fingerprint(self) -> dict[str, Any]:
        c = self.config
        return {
            "backend": "openai",
            "modality": "t2i",
            "model_id": c.model_id,
            "revision": c.revision,
            "base_url": c.base_url,
            "size": c.size,
            "quality": c.quality,
            "style": c.style,
            "extra_body": c.extra_body,
        }

    def _body(self, request: Request) -> dict[str, Any]:
        c = self.config
        body: dict[str, Any] = {
            "model": c.model_id,
            "prompt": prompt_of(request),
            "n": 1,
            "size": c.size,
        }
        if c.send_response_format:
            body["response_format"] = "b64_json"
        if c.quality is not None:
            body["quality"] = c.quality
        if c.style is not None:
            body["style"] = c.style
        if c.send_seed:
            body["seed"] = request.seed
        return {**body, **c.extra_body}

    def _refusal(self, response: httpx.Response) -> Completion | None:
        if response.status_code != 400:
            return None
        try:
            error = response_json(response)["error"]
            code = error.get("code") or error.get("type")
        except (ValueError, LookupError, TypeError, AttributeError):
            return None
        if code not in self.config.refusal_codes:
            return None
        return Completion(
            status="refused",
            text=self._redact(error_detail(response)),
            finish_reason=str(code),
        )

    def _parse(self, data: Any, latency: float) -> Completion:
        items = json_field(data, "data", list)
        if not items:
            raise ValueError("the answer has an empty data list")
        item = json_field(items, 0, dict)
        encoded = json_field(item, "b64_json", str, optional=True)
        revised = self._redact(json_field(item, "revised_prompt", str, optional=True))
        usage = token_usage(data)
        if not encoded:
            # a URL instead of bytes means the server ignored response_format; no data at
            # all is how some servers report a filtered image
            if item.get("url"):
                raise Rejected(
                    "the endpoint sent an image URL, not b64_json bytes: set "
                    "send_response_format: true in the model config (dall-e-* models)"
                )
            return Completion(
                status="refused",
                text=revised,
                finish_reason="content_filter",
                latency_s=latency,
                usage=usage,
            )
        try:
            png = base64.b64decode(encoded, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"b64_json is not base64: {exc}") from exc
        return Completion(
            status="ok",
            text=revised,
            finish_reason="stop",
            latency_s=latency,
            usage=usage,
            png=png,
        )
