"""The curation and instrument stages: datasets every methodology may read, and the
instruments' own accuracy.

- :func:`curation_inputs` (``curation_inputs``, always runs): a content fingerprint of every
  file each curation config reads, inside the repository or not, so an edit reruns exactly
  the curation stage that reads it (:mod:`genfair.curation.inputs`);
- :func:`external_input` (``external_input@<section>-<name>``, composed): the fingerprint of one
  input outside the repository, which the stage lists as a DVC dependency (``dvc status``
  names it when it changes);
- :func:`collect_news_corpus` (``collect_news``): a news corpus and a report of what was skipped;
- :func:`occupations_table` (``map_occupations``): occupations with WordNet aliases and
  real-world statistics (``data/curated/occupations/``);
- :func:`facet_fixture`, :func:`curate_facet_crops` (``facet_fixture``, ``curate_facet``):
  the FACET-format fixture and the FACET person crops;
- :func:`validate_instruments` (``validate_instruments``): the face instrument's accuracy per
  attribute and per group on the labelled photos that ship in packages.

Each stage imports its own curation or instrument module where it runs (a news corpus's HTTP
client, WordNet, Pillow, pandas, the tracking store), so the always-running ``curation_inputs``
starts without them.
"""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path
from typing import Any

from genfair.curation.inputs import check_external_inputs, inputs_fingerprint, write_fingerprint
from genfair.curation.inputs import curation_inputs as inputs_of
from genfair.errors import ConfigError
from genfair.frame import (
    PARAMS_FILE,
    StudyFrame,
    cache_dir,
    curation_config,
    instrument_class,
    instrument_config,
)
from genfair.io import write_json, write_parquet
from genfair.stamps import write_stamp
from genfair.study.always import CURATION_STAGE, curation_key, write_sections
from genfair.study.layout import Layout

log = logging.getLogger(__name__)


def curation_inputs(
    params: StudyFrame, layout: Layout = Layout(), *, stamp: bool = False
) -> list[Path]:
    """``curation_inputs``: ``data/curated/inputs/<section>.json`` per configured section
    (rewritten only when the inputs change, so DVC reruns only what they feed). First checks
    that ``params.yaml``'s ``external_inputs`` follows ``curation`` (else ``dvc status`` would
    miss an input). ``stamp``: record the input lists for the next run's fast path
    (:mod:`genfair.study.always`); only the stage, whose ``params`` are ``params.yaml``'s."""
    check_external_inputs(params.external_inputs, params.curation, PARAMS_FILE)
    key = curation_key()
    hashes = cache_dir(params.cache.dir) / "input_hashes"
    folder = layout.data / "curated" / "inputs"
    sections = {
        section: {
            "paths": [str(p) for p in inputs_of(section, curation_config(params, section))],
            "out": str(folder / f"{section}.json"),
            "hash_cache": str(hashes / f"{section}.json"),
        }
        for section in params.curation
    }
    written = write_sections(sections)
    # DVC keeps the folder between runs (persist: unchanged files keep their inode and mtime, so
    # DVC need not hash them again): whatever a section no longer configured left goes
    for entry in set(folder.iterdir() if folder.is_dir() else ()) - set(written):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    if stamp:
        write_stamp(CURATION_STAGE, key, {"sections": sections})
    return written


def external_input(params: StudyFrame, name: str, layout: Layout = Layout()) -> Path:
    """``external_input@<name>``: the fingerprint of ``external_inputs.<name>`` (an input outside
    the repository) to ``data/curated/external/<name>.json``; ``curation_inputs`` depends on the
    folder, so ``dvc repro`` of any curation stage brings these up to date first."""
    entry = (params.external_inputs or {}).get(name)
    if entry is None:
        raise ConfigError(
            f"{PARAMS_FILE}: external_inputs.{name}: not in params.yaml; recompose it with "
            "`genfair compose` (or `make compose`)"
        )
    data = inputs_fingerprint(
        [Path(entry["path"])],
        hash_cache=cache_dir(params.cache.dir) / "input_hashes" / f"{name}.json",
    )
    return write_fingerprint(
        data | {"name": name, "section": entry["section"]},
        layout.named(layout.data / "curated" / "external", name, suffix=".json"),
    )


def collect_news_corpus(params: StudyFrame, layout: Layout = Layout()) -> list[Path]:
    """``collect_news``. Web sources keep their resumable fetch state beside the response
    cache, so a rerun (or an interrupted run) never fetches an article twice."""
    from genfair.curation.news import collect_news

    corpus = collect_news(curation_config(params, "news"), cache_dir(params.cache.dir) / "news")
    report = corpus.attrs.pop("report", {})
    out = layout.curated("news")
    return [write_parquet(corpus, out), write_json(report, out.with_name("news_report.json"))]


def occupations_table(params: StudyFrame, layout: Layout = Layout()) -> list[Path]:
    """``map_occupations``: the occupation table, ``data/curated/occupations/``."""
    from genfair.curation.occupations import write_occupations

    written = write_occupations(
        curation_config(params, "occupations"), layout.data / "curated" / "occupations"
    )
    return list(written.values())


def facet_fixture(params: StudyFrame, layout: Layout = Layout()) -> Path:
    """``facet_fixture``: the small FACET-format FIXTURE built from package-shipped photos."""
    from genfair.curation.facet_fixture import build_facet_fixture

    del params
    out = build_facet_fixture(layout.data / "curated" / "facet_fixture")
    log.info("FACET-format fixture (NOT FACET: fixture labels) written to %s", out)
    return out


def curate_facet_crops(params: StudyFrame, layout: Layout = Layout()) -> Path:
    """``curate_facet``: person crops and labels from ``curation.facet``'s release."""
    from genfair.curation.facet import curate_facet

    config = curation_config(params, "facet")
    if not config.annotations_path().exists():
        raise FileNotFoundError(
            f"params.yaml: curation.facet.release_dir: {config.annotations_path()} not "
            "found; point release_dir at a FACET release (or the fixture)"
        )
    out = layout.data / "curated" / "facet"
    report = curate_facet(config, out)
    if report.fixture:
        log.warning("curation.facet reads a FIXTURE, not FACET: its labels are fixture labels")
    return out


def validate_instruments(
    params: StudyFrame, layout: Layout = Layout(), name: str = "face_demographics"
) -> Path:
    """``validate_instruments``: the face instrument (model mode: what real images get) on
    :func:`~genfair.instruments.validation.package_photo_set`; tables per attribute, per
    group and per image, plus a metrics JSON for ``dvc metrics show``."""
    from genfair.instruments.validation import package_photo_set, validate_instrument

    config = instrument_config(params, name).model_copy(update={"mode": "model"})
    instrument = instrument_class(name)(config)
    photos = package_photo_set()
    report = validate_instrument(instrument, photos)
    folder = layout.instruments / name
    write_parquet(report.per_attribute, folder / "per_attribute.parquet")
    # groups mix types across attributes (has_face: bool, n_faces: int, gender: str)
    write_parquet(report.per_group.astype({"group": str}), folder / "per_group.parquet")
    write_parquet(
        report.predictions.map(lambda v: None if v is None else str(v)),
        folder / "predictions.parquet",
    )
    import pandas as pd  # here: curation_inputs runs on every dvc repro and needs no pandas

    sources = pd.DataFrame(
        [{"image_id": p.image_id, "label_source": p.label_source} for p in photos]
    )
    write_parquet(sources, folder / "label_sources.parquet")

    def num(value: Any) -> float | None:
        return (
            None
            if value is None or (isinstance(value, float) and math.isnan(value))
            else round(float(value), 6)
        )

    summary: dict[str, Any] = {"instrument": instrument.name, "images": len(photos)}
    for row in report.per_attribute.to_dict("records"):
        summary[row["attribute"]] = {
            "status": row["status"],
            "n": int(row["n"]),
            "n_predicted": int(row["n_predicted"]),
            "accuracy": num(row["accuracy"]),
            "error_rate": num(row["error_rate"]),
            "accuracy_disparity": num(row["accuracy_disparity"]),
            "recall": {
                str(g["group"]): num(g["recall"])
                for g in report.per_group.to_dict("records")
                if g["attribute"] == row["attribute"]
            },
        }
    log.info(
        "%s on %d package photos:\n%s",
        instrument.name,
        len(photos),
        report.per_attribute.round(3).to_string(index=False),
    )
    _validate_image_instruments(params, layout)
    return write_json(summary, layout.instruments / f"{name}.json")


#: the image instruments validated beside the face instrument (when the study configures them)
IMAGE_INSTRUMENTS = ("image_quality", "image_semantics")


def _validate_image_instruments(params: StudyFrame, layout: Layout) -> list[Path]:
    """Each configured image instrument (model mode) on the captioned package photos:
    ``<name>/checks.parquet`` and ``<name>.json`` (one entry per check, its ``accuracy``);
    without weights, no checks and a ``status`` saying what to set."""
    from genfair.instruments.image_validation import (
        VALIDATED_ON,
        captioned_photos,
        validate_image_instrument,
    )

    written = []
    photos = None
    for name in IMAGE_INSTRUMENTS:
        if name not in params.instruments:
            continue
        config = instrument_config(params, name).model_copy(update={"mode": "model"})
        instrument = instrument_class(name)(config)
        summary: dict[str, Any] = {"instrument": instrument.name, "validated_on": VALIDATED_ON}
        if any(instrument.measures.values()):
            photos = photos if photos is not None else captioned_photos()
            checks = validate_image_instrument(instrument, photos)
            summary["images"] = len(photos)
        else:
            checks = validate_image_instrument(instrument, [])
            summary["images"] = 0
            summary["status"] = (
                f"not configured: no weights given (instruments.{name}); its scores are not "
                "computed"
            )
        folder = layout.instruments / name
        write_parquet(checks, folder / "checks.parquet")
        for row in checks.to_dict("records"):
            summary[row["check"]] = {
                "what": row["what"],
                "n": int(row["n"]),
                "accuracy": round(float(row["accuracy"]), 6),
                "mean_drop": round(float(row["mean_drop"]), 6),
            }
        written.append(write_json(summary, layout.instruments / f"{name}.json"))
    return written
