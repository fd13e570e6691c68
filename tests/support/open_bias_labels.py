"""SYNTHETIC OpenBias labels for paired-comparison tests and benchmarks: a knowledge base of
biases over shared captions, each caption's images answered from given class shares (a share
of answers ``unknown``, a share of failed calls), with the rows the metrics step reads."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

#: bias_id -> (its classes, its captions)
KnowledgeBase = Mapping[str, tuple[Sequence[str], Sequence[str]]]


def knowledge_base(
    rng: np.random.Generator, biases: int, captions: int, per_bias: int, classes: Sequence[int]
) -> dict[str, tuple[list[str], list[str]]]:
    """``biases`` biases (``b00``...), each with a number of classes drawn from ``classes`` and
    ``per_bias`` captions drawn from ``captions`` shared ones (a caption carries several)."""
    pool = [f"c{i:05d}" for i in range(captions)]
    return {
        f"b{i:02d}": (
            [f"b{i:02d}-k{j}" for j in range(int(rng.choice(classes)))],
            sorted(rng.choice(pool, min(per_bias, captions), replace=False)),
        )
        for i in range(biases)
    }


def open_bias_labels(
    rng: np.random.Generator,
    kb: KnowledgeBase,
    shares: Mapping[tuple[str, str], np.ndarray],
    *,
    images: int = 10,
    unknown: float = 0.05,
    failed: float = 0.02,
) -> pd.DataFrame:
    """One model's labels: a proposal row per caption, the knowledge base's rows and log, its
    images, and each bias's answer on each image of its captions, drawn from ``shares[(bias,
    caption)]`` over the bias's classes (``unknown``: the share answered ``unknown``,
    ``failed``: the share of failed calls)."""
    captions = sorted({c for _, cs in kb.values() for c in cs})
    parts = [
        pd.DataFrame(
            {"step": "proposal", "caption_id": captions, "status": "ok", "n_proposals": 1}
        ).assign(proposer="SYNTHETIC", proposer_simulated=True),
        pd.DataFrame({"step": ["knowledge_base_log"], "status": "ok", "text": "[]"}),
    ]
    keys = [(bias, caption) for bias, (_, its) in kb.items() for caption in its]
    kb_frame = pd.DataFrame(keys, columns=["bias_id", "caption_id"])
    kb_frame["classes"] = [json.dumps(list(kb[bias][0])) for bias, _ in keys]
    parts.append(kb_frame.assign(step="knowledge_base", status="ok", label=kb_frame["bias_id"]))
    parts.append(
        pd.DataFrame(
            {
                "step": "image",
                "caption_id": np.repeat(captions, images),
                "sample_index": np.tile(np.arange(images), len(captions)),
                "status": "ok",
            }
        )
    )
    if keys and images:  # each answer's class by its uniform draw against the shares' CDF
        widest = max(len(c) for c, _ in kb.values())
        cdf = np.ones((len(keys), widest))
        names = np.empty((len(keys), widest), dtype=object)
        for i, key in enumerate(keys):
            classes = kb[key[0]][0]
            cdf[i, : len(classes) - 1] = np.cumsum(shares[key])[:-1]
            names[i, : len(classes)] = classes
        drawn = (rng.uniform(size=(len(keys), images, 1)) > cdf[:, None, :-1]).sum(axis=-1)
        answers = np.take_along_axis(names, drawn, axis=1)
        answers[rng.uniform(size=answers.shape) < unknown] = "unknown"
        parts.append(
            pd.DataFrame(
                {
                    "bias_id": np.repeat(kb_frame["bias_id"].to_numpy(), images),
                    "caption_id": np.repeat(kb_frame["caption_id"].to_numpy(), images),
                    "sample_index": np.tile(np.arange(images), len(keys)),
                    "label": answers.ravel(),
                    "status": np.where(rng.uniform(size=answers.size) < failed, "error", "ok"),
                }
            ).assign(step="vqa", tier="exact", encoder="SYNTHETIC", vqa_simulated=True)
        )
    return pd.concat(parts, ignore_index=True)


def distinct_copies(labels: pd.DataFrame, units: pd.Series, drawn: Sequence[str]) -> pd.DataFrame:
    """The rows of the ``drawn`` units (``units``: each row's), in draw order, the k-th copy
    (k >= 1) of a caption renamed ``<caption>#k``: what a replicate is, as the metrics step
    would read it (its own bootstrap counts a caption drawn twice twice)."""
    seen: dict[str, int] = {}
    parts = []
    for unit in drawn:
        rows = labels[(units == unit).to_numpy()]
        k = seen[unit] = seen.get(unit, -1) + 1
        parts.append(rows.assign(caption_id=rows["caption_id"] + f"#{k}") if k else rows)
    return pd.concat(parts, ignore_index=True)
