"""Hugging Face checkpoints for the instruments, from a user-given local folder or a model id
already in the local Hugging Face cache: never fetched at run time (``local_files_only``).

A missing folder or an id not in the cache is one :class:`~genfair.errors.ConfigError` line
naming the config key and the fix (download once with ``huggingface-cli download <id>``, or
``save_pretrained`` into a folder). A checkpoint is data, never code: its own code
(``auto_map`` in ``config.json``) is never run, and transformers is told so
(``trust_remote_code=False``) instead of asking "Do you wish to run the custom code? [y/N]"
inside a stage; a weights pickle holding more than tensors is refused by torch's
weights-only loader, unread. Both are one line naming the key."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from genfair.errors import ConfigError
from genfair.models.hf import checkpoint_as_data

__all__ = ["checkpoint_files", "load_pretrained", "reading_identity"]


def load_pretrained(cls: Any, ref: str, key: str, **kwargs: Any) -> Any:
    """``cls.from_pretrained(ref, local_files_only=True)``; ``key`` names the config entry
    in the error (e.g. ``instruments.image_semantics.clip``)."""
    looks_local = ref.startswith((".", "/", "~")) or Path(ref).expanduser().exists()
    source = str(Path(ref).expanduser()) if looks_local else ref
    if (
        looks_local
        and not (Path(source) / "config.json").is_file()
        and cls.__name__.endswith(("Model", "Classification"))
    ):
        raise ConfigError(
            f"params.yaml: {key}: {source} holds no checkpoint (config.json missing); "
            "point it at a folder written by save_pretrained"
        )

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        with checkpoint_as_data(source, f"params.yaml: {key}: ", code_setting=False):
            return cls.from_pretrained(
                source, local_files_only=True, trust_remote_code=False, **kwargs
            )
    except OSError as exc:
        raise ConfigError(
            f"params.yaml: {key}: {ref!r} is neither a checkpoint folder nor a model id in the "
            f"local Hugging Face cache ({type(exc).__name__}); download it once "
            f"(huggingface-cli download {ref}) or give a local folder"
        ) from None


def checkpoint_files(ref: str) -> list[str]:
    """The files of checkpoint ``ref`` (a folder, or a model id's snapshot in the local
    Hugging Face cache), sorted: what a cached reading's code identity hashes
    (:mod:`genfair.instruments.readings`). None found: an empty list (the id alone)."""
    local = Path(ref).expanduser()
    if not local.exists():
        try:
            from huggingface_hub import snapshot_download

            local = Path(snapshot_download(ref, local_files_only=True))
        except Exception:  # noqa: BLE001 - not in the cache: loading it names the fix
            return []
    if local.is_file():
        return [str(local)]
    return sorted(str(f) for f in local.rglob("*") if f.is_file())


def reading_identity(module: str, refs: Sequence[str | None]) -> dict[str, list[str]]:
    """What computes the readings of an instrument of Hugging Face networks besides its
    config: its ``module`` and the encoders' helpers, the packages that run the networks,
    and the files of its checkpoints ``refs`` (None: not configured)."""
    return {
        "modules": [module, "genfair.models.clip", __name__],
        "packages": ["torch", "transformers", "pillow", "numpy"],
        "files": [f for ref in refs if ref for f in checkpoint_files(ref)],
    }
