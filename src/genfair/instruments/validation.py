"""Validation of the demographic instrument on labelled images: its accuracy per attribute
and its recall per true group, i.e. the instrument's own bias.

Paper 000 §4.1 / Table 2 checks its face-attribute detectors by hand (error rate per task on
100 manually labelled images); paper 002 App. B.4 reports ARES's per-group recall and its
Accuracy Disparity (Table 19):

    recall(g)   = #{i : true_i = g and pred_i = g} / #{i : true_i = g}
    accuracy    = #{i : pred_i = true_i} / n          (error rate = 1 - accuracy)
    AD          = max_g recall(g) - min_g recall(g)

Only the attributes an image is labelled with are scored. An image the instrument finds no
face in has no prediction for the face attributes and counts as an error for each of them
(``n_predicted`` shows the coverage). Race predicted as ``unavailable`` everywhere (no
classifier configured) is reported with ``status = "unavailable"`` and no accuracy.

:func:`package_photo_set` is a small labelled set built only from photos that ship inside
installed packages, labelled only with what their packages document (see its docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from genfair.instruments.face_demographics import UNAVAILABLE, FaceDemographics, ImageRecord
from genfair.models.photos import grace_hopper

__all__ = [
    "ATTRIBUTES",
    "LabelledImage",
    "ValidationReport",
    "package_photo_set",
    "predictions_of",
    "score_predictions",
    "validate_instrument",
]

#: Attributes that can be validated; ``has_face`` and ``n_faces`` score the detector, the
#: others the primary (largest) face.
ATTRIBUTES: tuple[str, ...] = ("has_face", "n_faces", "gender", "age_group", "skin_group", "race")


@dataclass(frozen=True)
class LabelledImage:
    """An image (anything :func:`load_rgb` takes, or a zero-argument loader) and its known
    labels (a subset of :data:`ATTRIBUTES`), with where the labels come from."""

    image_id: str
    image: Any
    labels: Mapping[str, Any]
    label_source: str = ""

    def load(self) -> Any:
        return self.image() if callable(self.image) else self.image


@dataclass(frozen=True)
class ValidationReport:
    #: attribute, status, n, n_predicted, accuracy, error_rate, n_groups, accuracy_disparity
    per_attribute: pd.DataFrame
    per_group: pd.DataFrame  # attribute, group, support, correct, recall
    predictions: pd.DataFrame  # image_id, true_<attr>, pred_<attr>

    def confusion(self, attribute: str) -> pd.DataFrame:
        """True (rows) x predicted (columns) counts; missing predictions as ``<none>``."""
        t, p = f"true_{attribute}", f"pred_{attribute}"
        if t not in self.predictions:
            raise KeyError(f"no labels for attribute {attribute!r}")
        sub = self.predictions[self.predictions[t].notna()]
        return pd.crosstab(sub[t].astype(str), sub[p].fillna("<none>").astype(str))


def predictions_of(record: ImageRecord) -> dict[str, Any]:
    """What the instrument says about each attribute, ``None`` where it says nothing."""
    face = record.primary
    race = face.race if face is not None and face.race != UNAVAILABLE else None
    return {
        "has_face": record.n_faces > 0,
        "n_faces": record.n_faces,
        "gender": face.gender if face else None,
        "age_group": face.age_group if face else None,
        "skin_group": face.skin_group if face else None,
        "race": race,
        "race_unavailable": face is not None and face.race == UNAVAILABLE,
    }


def score_predictions(predictions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-attribute and per-group tables from a ``true_<a>`` / ``pred_<a>`` frame."""
    attr_rows, group_rows = [], []
    for a in ATTRIBUTES:
        t, p = f"true_{a}", f"pred_{a}"
        if t not in predictions:
            continue
        sub = predictions[predictions[t].notna()]
        if sub.empty:
            continue
        truth, pred = sub[t].to_numpy(object), sub[p].to_numpy(object)
        has_pred = np.array(
            [x is not None and not (isinstance(x, float) and np.isnan(x)) for x in pred]
        )
        unavailable = a == "race" and not has_pred.any()
        correct = np.array(
            [bool(h and x == y) for h, x, y in zip(has_pred, pred, truth, strict=True)]
        )
        recalls = []
        for g in sorted(set(truth), key=str):
            m = truth == g
            rec = float(correct[m].mean())
            recalls.append(rec)
            group_rows.append(
                {
                    "attribute": a,
                    "group": g,
                    "support": int(m.sum()),
                    "correct": int(correct[m].sum()),
                    "recall": np.nan if unavailable else rec,
                }
            )
        acc = np.nan if unavailable else float(correct.mean())
        attr_rows.append(
            {
                "attribute": a,
                "status": "unavailable" if unavailable else "ok",
                "n": len(sub),
                "n_predicted": int(has_pred.sum()),
                "accuracy": acc,
                "error_rate": 1.0 - acc,
                "n_groups": len(recalls),
                "accuracy_disparity": (
                    max(recalls) - min(recalls) if len(recalls) > 1 and not unavailable else np.nan
                ),
            }
        )
    return pd.DataFrame(attr_rows), pd.DataFrame(group_rows)


def validate_instrument(
    instrument: FaceDemographics | Callable[..., ImageRecord], labelled: Iterable[LabelledImage]
) -> ValidationReport:
    """Run ``instrument`` on every labelled image and score it (see the module docstring)."""
    measure = instrument.measure if hasattr(instrument, "measure") else instrument
    rows = []
    for item in labelled:
        unknown = set(item.labels) - set(ATTRIBUTES)
        if unknown:
            raise ValueError(
                f"{item.image_id}: unknown label(s) {sorted(unknown)}; "
                f"expected some of {ATTRIBUTES}"
            )
        rec = measure(item.load(), image_id=item.image_id)
        pred = predictions_of(rec)
        row: dict[str, Any] = {"image_id": item.image_id}
        for a in ATTRIBUTES:
            row[f"true_{a}"] = item.labels.get(a)
            row[f"pred_{a}"] = pred[a]
        rows.append(row)
    predictions = pd.DataFrame(rows, dtype=object)  # keep ints ints and None None
    per_attribute, per_group = score_predictions(predictions)
    return ValidationReport(per_attribute, per_group, predictions)


def package_photo_set(lfw: bool = True) -> list[LabelledImage]:
    """Real photos shipped in installed packages, labelled only with documented facts.

    * ``astronaut`` (``skimage.data.astronaut``): its docstring says it is a photograph of
      Eileen Collins, an American astronaut, "She ...": one face, gender female. Her age at
      the photo is not documented (any time 1992-2006): no age label.
    * ``grace_hopper`` (matplotlib's sample data ``grace_hopper.jpg``): the file is named for
      Grace Hopper, the U.S. Navy rear admiral (a woman); a head-and-shoulders portrait: one
      face, gender female. Date undocumented: no age label.
    * ``lfw_face_000..099`` and ``lfw_nonface_000..099`` (``skimage.data.lfw_subset``): "100
      first images are faces and subsequent 100 are non-faces" (25x25 gray crops): face
      presence only.
    * ``chelsea`` (a cat), ``coffee`` (a coffee cup), ``rocket`` (a Falcon 9 launch): per
      their docstrings, no human face.

    No skin-tone or race labels: none of these photos documents one (skin tone is validated
    on synthetic patches of known colour in the tests instead).
    """
    from skimage import data

    items = [
        LabelledImage(
            "astronaut",
            data.astronaut,
            {"has_face": True, "n_faces": 1, "gender": "female"},
            "skimage.data.astronaut docstring: Eileen Collins",
        ),
        LabelledImage(
            "grace_hopper",
            grace_hopper,
            {"has_face": True, "n_faces": 1, "gender": "female"},
            "matplotlib sample_data/grace_hopper.jpg: Grace Hopper",
        ),
    ]
    for name in ("chelsea", "coffee", "rocket"):
        items.append(
            LabelledImage(
                name,
                getattr(data, name),
                {"has_face": False, "n_faces": 0},
                f"skimage.data.{name} docstring: no person",
            )
        )
    if lfw:
        crops = data.lfw_subset()
        for i, crop in enumerate(crops):
            face = i < 100
            iid = f"lfw_{'face' if face else 'nonface'}_{i % 100:03d}"
            items.append(
                LabelledImage(
                    iid,
                    crop,
                    {"has_face": face},
                    "skimage.data.lfw_subset docstring: first 100 are faces",
                )
            )
    return items
