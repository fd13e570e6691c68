"""The image parts of the study's steps (kept out of :mod:`genfair.pipeline` to keep it small).

- :func:`generate_t2i`: ``generate@<t2i model>``: one image per probe row through the
  response cache, exported as ``<sha256>.png`` files beside the responses index;
- :func:`face_instrument`: the demographic instrument a label stage uses (oracle mode for
  simulators, whose images carry their planted attributes);
- :func:`facet_fixture`, :func:`curate_facet_crops`: the FACET-format fixture and the FACET
  person crops (``facet_fixture``, ``curate_facet``);
- :func:`validate_instruments`: the face instrument's accuracy per attribute and per group on
  the labelled photos that ship in packages (``validate_instruments``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from genfair.config import ConfigError, StudyParams, curation_config, instrument_config
from genfair.io import write_json, write_parquet

log = logging.getLogger(__name__)


def generate_t2i(backend: Any, cache: Any, calls: Sequence[Any], seed: int, label: str,
                 image_dir: Path) -> pd.DataFrame:
    """Draw the images and put those the table uses into ``image_dir``; the responses table
    (every call, refused ones too) gains ``file``, the PNG's name inside ``image_dir``."""
    from genfair.models.images import export_images
    from genfair.models.t2i import generate_images

    responses = generate_images(backend, cache, calls, seed=seed, label=label)
    index = export_images(responses, cache, image_dir)
    files = dict(zip(index["image"], index["file"], strict=True))
    responses["file"] = responses["image"].map(files)
    statuses = ", ".join(f"{k} {v}" for k, v in responses["status"].value_counts().items())
    log.info("%s: %d images in %s (%s)", label, len(index["image"].unique()), image_dir, statuses)
    return responses


def face_instrument(params: StudyParams, model: str, name: str = "face_demographics") -> Any:
    """The configured face instrument for ``model``'s images: oracle mode for a simulator
    (labels ``source = "oracle"``), the configured model mode otherwise."""
    from genfair.instruments.face_demographics import FaceDemographics

    config = instrument_config(params, name)
    if params.model(model).backend == "simulated":
        config = config.model_copy(update={"mode": "oracle"})
    elif config.mode == "oracle":
        raise ConfigError(f"params.yaml: instruments.{name}.mode: oracle reads a simulator's planted "
                          f"attributes, but model {model!r} is not a simulator; set mode: model")
    return FaceDemographics(config)


def facet_fixture(params: StudyParams, root: Path = Path(".")) -> Path:
    """``facet_fixture``: the small FACET-format FIXTURE built from package-shipped photos."""
    from genfair.curation.facet_fixture import build_facet_fixture

    del params
    out = build_facet_fixture(root / "data" / "curated" / "facet_fixture")
    log.info("FACET-format fixture (NOT FACET: fixture labels) written to %s", out)
    return out


def curate_facet_crops(params: StudyParams, root: Path = Path(".")) -> Path:
    """``curate_facet``: person crops and labels from ``curation.facet``'s release."""
    from genfair.curation.facet import curate_facet

    config = curation_config(params, "facet")
    if not config.annotations_path().exists():
        raise FileNotFoundError(f"params.yaml: curation.facet.release_dir: {config.annotations_path()} not "
                                "found; point release_dir at a FACET release (or the fixture)")
    out = root / "data" / "curated" / "facet"
    report = curate_facet(config, out, progress=False)
    if report.fixture:
        log.warning("curation.facet reads a FIXTURE, not FACET: its labels are fixture labels")
    return out


def validate_instruments(params: StudyParams, root: Path = Path(".")) -> Path:
    """``validate_instruments``: the face instrument (model mode: what real images get) on
    :func:`~genfair.instruments.validation.package_photo_set`; tables per attribute, per
    group and per image, plus a metrics JSON for ``dvc metrics show``."""
    from genfair.instruments.face_demographics import FaceDemographics
    from genfair.instruments.validation import package_photo_set, validate_instrument

    name = "face_demographics"
    config = instrument_config(params, name).model_copy(update={"mode": "model"})
    instrument = FaceDemographics(config)
    photos = package_photo_set()
    report = validate_instrument(instrument, photos)
    folder = root / "data" / "metrics" / "instruments" / name
    write_parquet(report.per_attribute, folder / "per_attribute.parquet")
    # groups mix types across attributes (has_face: bool, n_faces: int, gender: str)
    write_parquet(report.per_group.astype({"group": str}), folder / "per_group.parquet")
    write_parquet(report.predictions.map(lambda v: None if v is None else str(v)), folder / "predictions.parquet")
    sources = pd.DataFrame([{"image_id": p.image_id, "label_source": p.label_source} for p in photos])
    write_parquet(sources, folder / "label_sources.parquet")

    def num(value: Any) -> float | None:
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 6)

    summary: dict[str, Any] = {"instrument": instrument.name, "images": len(photos)}
    for row in report.per_attribute.to_dict("records"):
        summary[row["attribute"]] = {
            "status": row["status"], "n": int(row["n"]), "n_predicted": int(row["n_predicted"]),
            "accuracy": num(row["accuracy"]), "error_rate": num(row["error_rate"]),
            "accuracy_disparity": num(row["accuracy_disparity"]),
            "recall": {str(g["group"]): num(g["recall"]) for g in report.per_group.to_dict("records")
                       if g["attribute"] == row["attribute"]},
        }
    log.info("%s on %d package photos:\n%s", instrument.name, len(photos),
             report.per_attribute.round(3).to_string(index=False))
    return write_json(summary, root / "data" / "metrics" / "instruments" / f"{name}.json")
