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

from genfair.instruments import image_quality as iq
from genfair.instruments import image_semantics as sem
from genfair.instruments.readings import pack_vector, read_in_chunks, unpack_vector
from genfair.io import stable_hash

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
    readings: Any = None,
) -> pd.DataFrame:
    """The per-image score columns (``columns[penalty]``, e.g. ``qps``) for the BIS-Gen rows
    of ``images`` (IFS-Gen and BIS-Gen labels: ``sector``, ``status``, ``image``,
    ``occupation``, ``prompt``, ``face_status``, ``face_box`` when FQP is measured,
    ``true_attributes`` for an oracle), NaN elsewhere; only the measured columns.
    ``path_of(image)``: the PNG of an image id. A measured score is read once per image
    content, instrument config and code: ``readings`` (the response cache or its opener;
    None: not kept) keeps them (:func:`~genfair.instruments.readings.read_in_chunks`)."""
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
    oracle = {"QPS": quality, "FQP": quality, "SIL": semantics, "SCL": semantics}
    planted = [p for p, on in wanted.items() if on and oracle[p].oracle]
    out = _planted_columns(out, steer, planted, columns)
    measured = [p for p, on in wanted.items() if on and not oracle[p].oracle]
    if not measured:
        return out
    rows = steer.to_dict("records")
    shas = [str(r["image"]) for r in rows]

    def scores(instrument: Any, contents: list[str], compute: Callable[[list[int]], Any]) -> list:
        name = "image_quality" if instrument is quality else "image_semantics"
        return _read_scores(instrument, name, contents, compute, readings)

    def pictures(idx: list[int]) -> list[Any]:
        return [_open(path_of(shas[i])) for i in idx]

    if "QPS" in measured:
        out.loc[steer.index, columns["QPS"]] = scores(
            quality, [f"{s}/image" for s in shas], lambda idx: quality.score(pictures(idx))
        )
    if "FQP" in measured:
        faces = [
            i
            for i, r in enumerate(rows)
            if r["face_status"] == "ok" and r.get("face_box") is not None
        ]
        boxes = [tuple(int(v) for v in rows[i]["face_box"]) for i in faces]
        margin = quality.config.face_margin

        def crops(idx: list[int]) -> list[Any]:
            return [iq.face_crop(_open(path_of(shas[faces[j]])), boxes[j], margin) for j in idx]

        if faces:
            out.loc[steer.index[faces], columns["FQP"]] = scores(
                quality,
                [
                    f"{shas[i]}/face/{','.join(map(str, b))}"
                    for i, b in zip(faces, boxes, strict=True)
                ],
                lambda idx: quality.score(crops(idx)),
            )
    if "SIL" in measured:
        prompts = [str(r["prompt"]) for r in rows]
        out.loc[steer.index, columns["SIL"]] = scores(
            semantics,
            [f"{s}/prompt/{stable_hash(p)}" for s, p in zip(shas, prompts, strict=True)],
            lambda idx: semantics.prompt_similarity(pictures(idx), [prompts[i] for i in idx]),
        )
    if "SCL" in measured:
        references = _references(images, set(steer["occupation"]), semantics, path_of, readings)
        embedded = _embeddings(semantics, shas, path_of, readings)
        out.loc[steer.index, columns["SCL"]] = [
            float(sem.reference_similarity(e[None], references[r["occupation"]])[0])
            if r["occupation"] in references
            else np.nan
            for e, r in zip(embedded, rows, strict=True)
        ]
    return out


def _planted_columns(
    out: pd.DataFrame, steer: pd.DataFrame, planted: list[str], columns: dict[str, str]
) -> pd.DataFrame:
    """``out`` with the ``planted`` penalties' columns read from an oracle's truth (FQP only
    where a face was found); a penalty with nothing planted has no column, as without its
    instrument."""
    face = (steer["face_status"] == "ok").to_numpy()
    keys = {
        "QPS": iq.ORACLE_KEYS["image"],
        "FQP": iq.ORACLE_KEYS["face"],
        "SIL": sem.ORACLE_KEYS["prompt_similarity"],
        "SCL": sem.ORACLE_KEYS["reference"],
    }
    for pen in planted:
        vals = np.array([_planted(t, keys[pen]) for t in steer["true_attributes"]], dtype=float)
        if pen == "FQP":
            vals[~face] = np.nan
        if np.isnan(vals).all():
            out = out.drop(columns=columns[pen])
        else:
            out.loc[steer.index, columns[pen]] = vals
    return out


def _read_scores(
    instrument: Any,
    name: str,
    contents: list[str],
    compute: Callable[[list[int]], Any],
    readings: Any,
) -> list:
    """Per content, its cached score, the missing ones computed ``CHUNK`` at a time."""
    found = read_in_chunks(
        instrument,
        name,
        contents,
        lambda idx: [{"score": float(x)} for x in compute(idx)],
        readings,
        chunk=CHUNK,
        problem=lambda r: None if isinstance(r.get("score"), float) else "no score",
    )
    return [f["score"] for f in found]


def _open(path: Path) -> Any:
    from PIL import Image

    return Image.open(path).convert("RGB")


def _embeddings(
    semantics: Any, shas: list[str], path_of: Callable[[str], Path], readings: Any
) -> list[np.ndarray]:
    """The L2-normalised DINOv2 embedding of each image (float32), cached as its bytes."""
    found = read_in_chunks(
        semantics,
        "image_semantics",
        [f"{s}/dino" for s in shas],
        lambda idx: [
            {"dino": pack_vector(vector)}
            for vector in semantics.embed([_open(path_of(shas[i])) for i in idx])
        ],
        readings,
        chunk=CHUNK,
        problem=lambda r: None if isinstance(r.get("dino"), str) else "no embedding",
    )
    return [unpack_vector(f["dino"]) for f in found]


def _references(
    images: pd.DataFrame,
    occupations: set[str],
    semantics: Any,
    path_of: Callable[[str], Path],
    readings: Any,
) -> dict[str, np.ndarray]:
    """Per occupation, the L2-normalised DINOv2 embeddings of its IFS-Gen images (rows)."""
    ifs = images[
        (images["sector"] == "IFS-Gen")
        & (images["status"] == "ok")
        & images["image"].notna()
        & images["occupation"].isin(occupations)
    ]
    found: dict[str, list[np.ndarray]] = {}
    embedded = _embeddings(semantics, [str(s) for s in ifs["image"]], path_of, readings)
    for e, occupation in zip(embedded, ifs["occupation"], strict=True):
        found.setdefault(occupation, []).append(e)
    return {occ: np.stack(rows) for occ, rows in found.items()}
