"""The ``diffusers`` t2i backend: any ``DiffusionPipeline`` by hub id or local directory.

Images are drawn in batches, each with its own ``torch.Generator`` seeded from its request
(the study seed, probe, sample and attempt: :func:`~genfair.models.base.derive_seed`), so an
image does not depend on which other prompts shared its batch. A pipeline with a safety
checker that flags an image (``nsfw_content_detected``) gives a ``refused`` completion,
which the t2i runner asks again with a new seed, as paper 000 §4.1 does for refusals.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from genfair.models.base import (
    Completion,
    OnDone,
    Request,
    T2IBackend,
    chunks,
    complete_in_batches,
)
from genfair.models.config import DiffusersT2IConfig
from genfair.models.images import encode_png
from genfair.models.local import apply_threads
from genfair.models.t2i import prompt_of

log = logging.getLogger(__name__)


class DiffusersT2I(T2IBackend):
    deterministic = False  # the same request repeats itself, but a re-ask has a new seed

    def __init__(self, pipeline: Any, config: DiffusersT2IConfig):
        self.pipeline = pipeline
        self.config = config
        pipeline.set_progress_bar_config(disable=True)

    @classmethod
    def from_config(
        cls, config: DiffusersT2IConfig, source: str | os.PathLike[str] | None = None
    ) -> DiffusersT2I:
        """Load the pipeline (``source`` overrides the config's id, e.g. a local copy) and
        swap in the configured scheduler."""
        import diffusers
        import torch

        dtype = "auto" if config.dtype == "auto" else getattr(torch, config.dtype)
        pipeline = diffusers.DiffusionPipeline.from_pretrained(
            str(source or config.model_id),
            revision=config.revision,
            variant=config.variant,
            dtype=dtype,
        ).to(config.device)
        if config.scheduler is not None:
            scheduler_class = getattr(diffusers, config.scheduler, None)
            if scheduler_class is None or not hasattr(scheduler_class, "from_config"):
                known = sorted(n for n in dir(diffusers) if n.endswith("Scheduler"))
                raise ValueError(
                    f"scheduler {config.scheduler!r} is not a diffusers scheduler class; "
                    f"known: {', '.join(known)}"
                )
            pipeline.scheduler = scheduler_class.from_config(pipeline.scheduler.config)
        return cls(pipeline, config)

    @property
    def fingerprint(self) -> dict[str, Any]:
        c = self.config
        return {
            "backend": "diffusers",
            "modality": "t2i",
            "model_id": c.model_id,
            "revision": c.revision,
            "variant": c.variant,
            "dtype": c.dtype,
            "steps": c.steps,
            "guidance_scale": c.guidance_scale,
            "height": c.height,
            "width": c.width,
            "scheduler": c.scheduler,
            "negative_prompt": c.negative_prompt,
        }

    def complete(self, requests: Sequence[Request], on_done: OnDone) -> None:
        def run(batch: Sequence[Request]) -> list[Completion]:
            images, flagged = self._draw(batch)
            return [
                Completion(
                    status="refused",
                    finish_reason="content_filter",
                    text="flagged by the pipeline's safety checker",
                )
                if nsfw
                else Completion(status="ok", finish_reason="stop", png=encode_png(image))
                for image, nsfw in zip(images, flagged, strict=True)
            ]

        complete_in_batches(
            chunks(requests, self.config.batch_size), run, on_done, "image generation"
        )

    def _draw(self, batch: Sequence[Request]) -> tuple[list[Any], list[bool]]:
        import torch

        c = self.config
        apply_threads(c.threads)
        # generators live on the pipeline's device; CPU generators for "mps" (unsupported)
        device = "cpu" if str(self.pipeline.device).startswith("mps") else self.pipeline.device
        generators = [torch.Generator(device=device).manual_seed(r.seed) for r in batch]
        kwargs: dict[str, Any] = {
            "prompt": [prompt_of(r) for r in batch],
            "num_inference_steps": c.steps,
            "guidance_scale": c.guidance_scale,
            "generator": generators,
            "output_type": "pil",
        }
        if c.height is not None:
            kwargs["height"] = c.height
        if c.width is not None:
            kwargs["width"] = c.width
        if c.negative_prompt is not None:
            kwargs["negative_prompt"] = [c.negative_prompt] * len(batch)
        with torch.inference_mode():
            output = self.pipeline(**kwargs)
        images = list(output.images)
        flagged = getattr(output, "nsfw_content_detected", None) or [False] * len(images)
        return images, [bool(f) for f in flagged]
