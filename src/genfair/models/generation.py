"""Generation for any modality: one entry point over the text runner and the image runner.

A methodology's default ``generate`` sends its calls here (through
:meth:`genfair.methodologies.base.StepContext.run`): text and image+text calls go through
:func:`~genfair.models.runner.run_calls`; a text-to-image backend draws through
:func:`~genfair.models.t2i.generate_images` and the images the table uses are exported as
``<sha256>.png`` files into ``image_dir`` (a DVC output beside the responses table).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from genfair.models.base import LLMBackend
from genfair.models.images import export_images
from genfair.models.runner import Call, Judge, OnRows, run_calls
from genfair.models.t2i import generate_images

if TYPE_CHECKING:  # the cache needs SQLAlchemy: loaded by whoever opens one
    from genfair.models.cache import ResponseCache

log = logging.getLogger(__name__)


def run(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    judge: Judge,
    *,
    seed: int,
    desc: str = "",
    image_dir: Path | None = None,
    on_rows: OnRows | None = None,
) -> pd.DataFrame:
    """Every call answered through the response cache; one row per call, each also handed
    to ``on_rows`` the moment it exists, with the others of its group (an image's row with
    ``path``, its file in the image store, since ``image_dir`` is written at the end).

    For a t2i backend the table gains ``file`` (the PNG's name inside ``image_dir``); images
    are never judged (a refusal is the backend's status).
    """
    if getattr(backend, "modality", "llm") != "t2i":
        return run_calls(backend, cache, calls, judge, seed=seed, desc=desc, on_rows=on_rows)
    if image_dir is None:
        raise ValueError(f"{desc}: a text-to-image model's images need an image_dir")
    return draw(backend, cache, calls, seed=seed, desc=desc, image_dir=image_dir, on_rows=on_rows)


def draw(
    backend: LLMBackend,
    cache: ResponseCache,
    calls: Sequence[Call],
    *,
    seed: int,
    desc: str,
    image_dir: Path,
    on_rows: OnRows | None = None,
) -> pd.DataFrame:
    """Draw the images and put those the table uses into ``image_dir``; the responses table
    (every call, refused ones too) gains ``file``, the PNG's name inside ``image_dir``."""
    responses = generate_images(backend, cache, calls, seed=seed, desc=desc, on_rows=on_rows)
    index = export_images(responses, cache, image_dir)
    files = dict(zip(index["image"], index["file"], strict=True))
    responses["file"] = responses["image"].map(files)
    statuses = ", ".join(f"{k} {v}" for k, v in responses["status"].value_counts().items())
    log.info("%s: %d images in %s (%s)", desc, len(index["image"].unique()), image_dir, statuses)
    return responses
