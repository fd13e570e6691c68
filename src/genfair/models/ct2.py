"""CTranslate2: a CPU inference engine for the hf / embedded backends' greedy requests.

``engine: ctranslate2`` runs a transformers causal LM through CTranslate2 (PyPI
``ctranslate2``, prebuilt wheels), from a copy converted once from the same weights
(``ct2-transformers-converter``; float32, no quantization) and kept beside them. It serves
greedy, unconstrained requests; sampled and JSON-constrained ones stay with transformers
(:class:`genfair.models.hf.HFChatBackend`), whose seeded sampling and lm-format-enforcer
constraint CTranslate2 does not reproduce. Greedy decoding reads the prompt tokens and
returns new token ids, so tokenization, chat template and decoding of the text are
transformers' own in both engines.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: the converted copy's compute type: float32, the weights as transformers runs them
COMPUTE_TYPE = "float32"


def converted(source: Path) -> Path:
    """CTranslate2's copy of the transformers model saved in ``source``, made once (about a
    minute) beside it; an interrupted conversion is never used (atomic rename)."""
    target = source.with_name(f"{source.name}-ct2-{COMPUTE_TYPE}")
    if (target / "model.bin").exists():
        return target
    from ctranslate2.converters import TransformersConverter

    log.info("converting %s once for CTranslate2 to %s", source.name, target)
    staging = Path(tempfile.mkdtemp(prefix=".ct2-", dir=target.parent))
    staging.chmod(0o755)
    try:
        TransformersConverter(str(source)).convert(
            str(staging), quantization=COMPUTE_TYPE, force=True
        )
        os.replace(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "model.bin").exists():
            raise
    return target


class CT2Generator:
    """Greedy generation with CTranslate2 from token ids to new token ids."""

    def __init__(self, path: Path, tokenizer: Any, threads: int, batch_size: int = 16):
        import ctranslate2

        self.tokenizer = tokenizer
        #: CTranslate2 sorts a call's prompts by length and generates them this many at a time
        self.batch_size = batch_size
        self.generator = ctranslate2.Generator(
            str(path),
            device="cpu",
            compute_type=COMPUTE_TYPE,
            intra_threads=threads,
            inter_threads=1,
        )

    def greedy(
        self, prompts: Sequence[Sequence[int]], limit: int, stop: set[int]
    ) -> list[list[int]]:
        """Each prompt's new token ids (at most ``limit``; the end token not included)."""
        tokens = [self.tokenizer.convert_ids_to_tokens(list(p)) for p in prompts]
        results = self.generator.generate_batch(
            tokens,
            max_length=limit,
            sampling_topk=1,
            beam_size=1,
            include_prompt_in_result=False,
            end_token=sorted(stop),
            max_batch_size=self.batch_size,
        )
        return [list(r.sequences_ids[0]) for r in results]
