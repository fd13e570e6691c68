"""Per-image scores of BIS-Gen's steering images for the quality [M8] and semantic [M9]
penalties (paper 002, Table 5, §D.2.3), from the configured instruments, in the label step.

The paper names the four penalties (Table 6: Penalty_QPS, Penalty_FQP, Penalty_SIL,
Penalty_SCL) and their instruments only as "established Image Quality Assessment (IQA)
models" and "CLIP-based and DINO-based scores" (§D.2.3); the authors' code reads them from the
columns ``clip_iqa``, ``face_iqa``, ``clip_t_score`` and ``dino_ref_score``. genfair's reading
(docs/methodology.md, "BIS-Gen quality and semantic penalties"):

- QPS: :class:`~genfair.instruments.image_quality.ImageQuality` on the whole image;
- FQP: the same model on the face crop (the demographic instrument's primary face box; no
  face, no score);
- SIL: CLIP cosine of the image and the steering prompt it was drawn for (CLIP-T);
- SCL: DINOv2 mean cosine of the image to the model's own IFS-Gen images of the same
  occupation (``a photo of a/an {occupation}``: the reference the prompt steers away from).

Each column is written only when its instrument measures it; an oracle-mode instrument
(SIMULATORS) is a STAND-IN that returns the scores the simulator planted in
``true_attributes``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from genfair.logs import progress

__all__ = ["steering_scores"]

#: images opened at a time
CHUNK = 64


def _planted(truth: Any, key: str) -> float:
    values = json.loads(truth or "{}") if isinstance(truth, str) else (truth or {})
    value = values.get(key)
    return float(value) if value is not None else np.nan


def steering_scores(
    images: pd.DataFrame,
    *,
    quality: Any,
    semantics: Any,
    columns: dict[str, str],
    path_of: Callable[[str], Path],
) -> pd.DataFrame:
    """The per-image score columns (``columns[penalty]``, e.g. ``qps``) for the BIS-Gen rows
    of ``images`` (IFS-Gen and BIS-Gen labels: ``sector``, ``status``, ``image``,
    ``occupation``, ``prompt``, ``face_status``, ``face_box`` when FQP is measured,
    ``true_attributes`` for an oracle), NaN elsewhere; only the measured columns.
    ``path_of(image)``: the PNG of an image id."""
    from genfair.instruments import image_quality as iq
    from genfair.instruments import image_semantics as sem

    wanted = {
        "QPS": quality is not None and quality.measures["image"],
        "FQP": quality is not None and quality.measures["face"],
        "SIL": semantics is not None and semantics.measures["prompt_similarity"],
        "SCL": semantics is not None and semantics.measures["reference"],
    }
    out = pd.DataFrame(index=images.index)
    steer = images[(images["sector"] == "BIS-Gen") & (images["status"] == "ok")]
    steer = steer[steer["image"].notna()]
    if not any(wanted.values()):
        return out
    for pen, on in wanted.items():
        if on:
            out[columns[pen]] = np.nan
    face = (steer["face_status"] == "ok").to_numpy()
    oracle = {"QPS": quality, "FQP": quality, "SIL": semantics, "SCL": semantics}
    keys = {
        "QPS": iq.ORACLE_KEYS["image"],
        "FQP": iq.ORACLE_KEYS["face"],
        "SIL": sem.ORACLE_KEYS["prompt_similarity"],
        "SCL": sem.ORACLE_KEYS["reference"],
    }
    for pen in [p for p, on in wanted.items() if on and oracle[p].oracle]:
        vals = np.array([_planted(t, keys[pen]) for t in steer["true_attributes"]], dtype=float)
        if pen == "FQP":
            vals[~face] = np.nan
        if np.isnan(vals).all():  # nothing planted: no column, as without the instrument
            out = out.drop(columns=columns[pen])
        else:
            out.loc[steer.index, columns[pen]] = vals
    measured = [p for p, on in wanted.items() if on and not oracle[p].oracle]
    if not measured:
        return out
    references = None
    if "SCL" in measured:
        references = _references(images, set(steer["occupation"]), semantics, path_of)
    from PIL import Image

    rows = steer.to_dict("records")
    for start in progress(range(0, len(rows), CHUNK), desc="iris: steering scores", unit="chunk"):
        chunk, index = rows[start : start + CHUNK], steer.index[start : start + CHUNK]
        pictures = [Image.open(path_of(r["image"])).convert("RGB") for r in chunk]
        if "QPS" in measured:
            out.loc[index, columns["QPS"]] = quality.score(pictures)
        if "FQP" in measured:
            crops = [
                (i, iq.face_crop(p, tuple(r["face_box"]), quality.config.face_margin))
                for i, (p, r) in enumerate(zip(pictures, chunk, strict=True))
                if r["face_status"] == "ok" and r.get("face_box") is not None
            ]
            if crops:
                scores = quality.score([c for _, c in crops])
                out.loc[index[[i for i, _ in crops]], columns["FQP"]] = scores
        if "SIL" in measured:
            prompts = [str(r["prompt"]) for r in chunk]
            out.loc[index, columns["SIL"]] = semantics.prompt_similarity(pictures, prompts)
        if "SCL" in measured:
            emb = semantics.embed(pictures)
            out.loc[index, columns["SCL"]] = [
                float(sem.reference_similarity(e[None], references[r["occupation"]])[0])
                if r["occupation"] in references
                else np.nan
                for e, r in zip(emb, chunk, strict=True)
            ]
    return out


def _references(
    images: pd.DataFrame, occupations: set[str], semantics: Any, path_of: Callable[[str], Path]
) -> dict[str, np.ndarray]:
    """Per occupation, the L2-normalised DINOv2 embeddings of its IFS-Gen images (rows)."""
    from PIL import Image

    ifs = images[
        (images["sector"] == "IFS-Gen")
        & (images["status"] == "ok")
        & images["image"].notna()
        & images["occupation"].isin(occupations)
    ]
    found: dict[str, list[np.ndarray]] = {}
    rows = ifs.to_dict("records")
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        emb = semantics.embed([Image.open(path_of(r["image"])).convert("RGB") for r in chunk])
        for e, r in zip(emb, chunk, strict=True):
            found.setdefault(r["occupation"], []).append(e)
    return {occ: np.stack(rows) for occ, rows in found.items()}
