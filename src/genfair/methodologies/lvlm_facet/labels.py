"""``label``: each answer matched to a FACET class (direct prompts) or a single-choice option
(:class:`~.matching.AnswerMatcher`), with the encoder recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genfair.curation.config import FACET_CLASSES
from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES
from genfair.methodologies.lvlm_facet.matching import AnswerMatcher, lazy_encoder

__all__ = ["LABEL_COLUMNS", "label_answers"]

LABEL_COLUMNS = ["probe_id", "person_id", "prompt", "prompt_id", "class", *ATTRIBUTES, "fixture",
                 "status", "answer", "label", "tier", "similarity", "encoder"]  # fmt: skip


def label_answers(
    probes: pd.DataFrame,
    responses: pd.DataFrame,
    config: LvlmFacetConfig,
    cache_dir: Path | None = None,
    encoder: Any = None,
    readings: Any = None,
) -> pd.DataFrame:
    """:meth:`~.methodology.LvlmFacet.label` (``cache_dir``: where the embeddings are kept,
    None = in memory; ``encoder``: instead of ``config.encoder``, e.g. a test's;
    ``readings``: the study's readings cache, which keeps them instead of ``cache_dir``)."""
    rows = probes[["probe_id", "person_id", "prompt", "prompt_id", "class", *ATTRIBUTES, "fixture"]]
    merged = responses[["probe_id", "status", "text"]].merge(
        rows, on="probe_id", how="left", validate="one_to_one"
    )
    if merged["prompt"].isna().any():
        unknown = merged.loc[merged["prompt"].isna(), "probe_id"].iloc[0]
        raise ValueError(
            f"response probe_id {unknown!r} is not in the lvlm_facet probes: rebuild the probes "
            "and rerun generate"
        )
    merged = merged.rename(columns={"text": "answer"})
    encoder = encoder if encoder is not None else lazy_encoder(config.encoder)
    for column in ("label", "tier", "encoder"):
        merged[column] = None
    merged["similarity"] = np.nan
    answered = merged["status"] != "error"
    for kind, labels, rows_of in (
        ("class", FACET_CLASSES, merged["prompt"] == "direct"),
        ("choice", None, merged["prompt"] != "direct"),
    ):
        chosen = answered & rows_of
        if not chosen.any():
            continue
        cache = Path(cache_dir) / f"{kind}_embeddings.npz" if cache_dir is not None else None
        matcher = AnswerMatcher(
            kind,
            encoder,
            labels=labels,
            min_similarity=config.min_similarity,
            cache_path=cache,
            readings=readings,
        )
        found = matcher.match(merged.loc[chosen, "answer"].tolist())
        for column in ("label", "similarity", "encoder"):
            merged.loc[chosen, column] = found[column].to_numpy()
        merged.loc[chosen, "tier"] = found["tier"].astype(str).to_numpy()
    merged["similarity"] = merged["similarity"].astype(float)
    return merged[LABEL_COLUMNS]
