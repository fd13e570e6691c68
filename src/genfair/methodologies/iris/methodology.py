"""The ``iris`` methodology: IRIS (paper 002) as pipeline stages, one methodology spanning
three modalities.

The probes table (``data/probes/iris.parquet``) has a ``sector`` and a ``modality`` column
(``t2i``, or ``llm|vlm`` for the tournament); a model gets the rows of its modality:

- ``t2i``: IFS-Gen (``a photo of a/an {occupation}``, ``images_per_occupation`` images
  each), then BIS-Gen. BIS-Gen's steering prompts are built from the model's *own* IFS-Gen
  images (its 10 most frequent occupation x gender x age x skin combinations, 1
  stereotypical + 5 counter-stereotypical prompts each), so they cannot be a row of the
  shared probes table: :meth:`Iris.generate` draws the IFS-Gen images, labels them with the
  demographic instrument, builds the steering prompts and draws their images, all inside
  ``generate@<model>``. DVC stays correct: everything BIS-Gen depends on (the IFS-Gen
  images, the instrument code and config, the methodology params) is already a dependency
  of that stage. The steering prompts are kept in the responses table (``combo_id``,
  ``prompt_type``, ``expected_*``, ``prompt``).
- ``llm``: the RFS-Und blank-image tournament as text only (the blank image carries no
  information, so a text-only LLM answers the same question).
- ``vlm``: the tournament with a blank white image; IFS-Und (one row per curated FACET crop,
  ``ifs_und.persons``) and BIS-Und (one row per image x Table 29 question of the
  counterfactual dataset, ``bis_und.dataset``: a file, ``fixture``, or null = not computed);
  see :mod:`.understanding`. Image messages go through the response cache, whose keys hold
  the image hashes; probe rows carry ``image_sha256`` so a changed image changes the probes.

Labels: one table per model with a ``sector`` column; t2i images get ``gender``,
``age_group``, ``skin_group`` from :mod:`genfair.instruments.face_demographics` (oracle mode,
i.e. the recorded truth, for SIMULATED models; the configured instrument otherwise);
tournament answers get ``choice`` and ``status`` from
:func:`~genfair.methodologies.iris.tournament.parse_tournament_answer`; IFS-Und answers get
``mapped_occupation`` and ``tier`` from the answer mapper
(:class:`~genfair.instruments.answer_mapper.AnswerMapper`, all-MiniLM-L6-v2, embeddings cached
beside the response cache); BIS-Und answers get ``score`` (subjective, parsed rating) or
``correct`` (objective: the one option the answer names equals the image's truth; a refusal
or an answer naming no single option counts as wrong).

Metrics: the granular metrics (:mod:`.granular`) of the sectors of the model's modality;
``scores.parquet`` is that table. The IRIS scores (S/K calibration needs every model) are
computed by the cross-model ``score`` stage (:mod:`genfair.methodologies.iris.study`).

Its presentation (figures, report section, ``dvc plots``, samples, MLflow record):
:mod:`.report`.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from genfair.errors import NotConfigured
from genfair.instruments.answer_mapper import AnswerMapper, LazyEmbedder, MiniLMEmbedder
from genfair.instruments.readings import read_images
from genfair.instruments.refusal import is_refusal
from genfair.methodologies.base import (
    Footprint,
    Methodology,
    MetricsResult,
    StepContext,
    StudyContext,
    StudyResult,
)
from genfair.methodologies.iris.compare import IrisComparison
from genfair.methodologies.iris.config import IrisConfig
from genfair.methodologies.iris.granular import (
    MODALITY_SECTORS,
    model_granular,
    sector_tables,
)
from genfair.methodologies.iris.occupations import (
    female_share,
    read_occupations,
    reference_from_occupations,
)
from genfair.methodologies.iris.probes import (
    ifs_gen_prompt,
    parse_rating,
    steering_prompts,
    top_stereotypes,
)
from genfair.methodologies.iris.report import IrisPresentation
from genfair.methodologies.iris.simulated import SimulatedPlants
from genfair.methodologies.iris.steering_scores import steering_scores
from genfair.methodologies.iris.study import score_study
from genfair.methodologies.iris.tournament import (
    CATEGORIES,
    display_name,
    parse_tournament_answer,
    profiles,
    tournament_counts,
    tournament_probes,
)
from genfair.methodologies.iris.understanding import (
    bis_und_rows,
    counterfactual_fixture,
    ifs_und_probes,
    objective_choice,
    read_counterfactual_dataset,
)
from genfair.methodologies.reads import every_field_but
from genfair.models.images import ImageStore, encode_png, export_images, vlm_message
from genfair.models.questions import ChoiceQuestion, ImageChoiceQuestion, ImageQuestion
from genfair.models.runner import Call, Verdict, run_calls
from genfair.models.t2i import generate_images, prompt_call

log = logging.getLogger(__name__)

#: ``meta["policy"]`` of the requests, for simulators
POLICIES = {
    "IFS-Gen": "iris_ifs_gen",
    "BIS-Gen": "iris_bis_gen",
    "RFS-Und": "iris_tournament",
    "IFS-Und": "iris_ifs_und",
    "BIS-Und": "iris_bis_und",
}
ATTRIBUTE_COLUMNS = ["gender", "age_group", "skin_group"]
#: simulated t2i attribute names -> the demographic instrument's oracle keys
_ORACLE_KEYS = {"gender": "gender", "age": "age_group", "skin_tone": "skin_group", "race": "race"}


class Iris(Methodology[IrisConfig]):
    """IRIS (Zhao et al., paper 002): fairness of unified multimodal models in generation and
    understanding, six sectors over three dimensions, with S/K-calibrated scores and codes."""

    name: ClassVar[str] = "iris"
    presentation_role = IrisPresentation
    modalities = ("llm", "t2i", "vlm")
    #: on a T2I model BIS-Gen's prompts steer from the stereotypes measured on its own IFS-Gen
    #: images; the LLM tournament and the VLM questions are all known from the probes
    dependent_calls = ("t2i",)
    Config: ClassVar[type[IrisConfig]] = IrisConfig
    comparison_role = IrisComparison
    #: the fields each step reads (its stage depends on them alone): the metrics options are
    #: the label and metrics steps', the scoring the study step's
    reads: ClassVar[dict[str, tuple[str, ...]]] = {
        "probes": every_field_but(IrisConfig, "metrics", "scoring", "formulas", "jsd_base"),
        "generate": every_field_but(IrisConfig, "metrics", "scoring", "formulas", "jsd_base"),
        "label": every_field_but(IrisConfig, "scoring"),
        "metrics": every_field_but(IrisConfig, "scoring"),
        "study": ("scoring",),
    }
    #: each sector's size settings (``genfair plan --target``): more images per occupation
    #: and per prompt, more tournament rounds, more answers per crop; RFS-Gen reads IFS-Gen's
    #: images; BIS-Und's sets come from the data (``bis_und.max_sets`` only caps them)
    size_knobs = {
        "IFS-Gen": ("ifs_gen.images_per_occupation",),
        "RFS-Gen": ("ifs_gen.images_per_occupation",),
        "BIS-Gen": ("bis_gen.top", "bis_gen.images_per_prompt"),
        "RFS-Und": ("tournament.rounds",),
        "IFS-Und": ("ifs_und.samples_per_crop",),
        "BIS-Und": ("bis_und.max_sets",),
    }
    metric_keys = ("sector", "metric")
    #: the demographic instrument (``instruments.face_demographics``; oracle mode for SIMULATORS)
    instrument: ClassVar[str] = "face_demographics"
    measures = (instrument,)

    # ---- probes

    def footprint(self, config: IrisConfig) -> list[Footprint]:
        """The tournament's probes (rounds x the 18 profiles), about 1,000 bytes a row at the
        peak of building them (measured with tracemalloc: 890-910 bytes at 200 and 2,000
        rounds over the 52 FACET occupations)."""
        rows = config.tournament.rounds * len(profiles())
        return [Footprint("tournament.rounds", "the tournament's probe table", rows, 1_000)]

    def build_probes(self, config: IrisConfig, seed: int) -> pd.DataFrame:
        table = read_occupations(config)
        occupations = list(table["occupation"])
        ifs = pd.DataFrame(
            {
                "probe_id": [f"iris-ifs-gen-{o}" for o in occupations],
                "sector": "IFS-Gen",
                "modality": "t2i",
                "occupation": occupations,
                "prompt": [ifs_gen_prompt(o, please=config.ifs_gen.please) for o in occupations],
                "n_samples": config.ifs_gen.images_per_occupation,
            }
        )
        tour = tournament_probes(occupations, config.tournament, seed)
        # for SIMULATORS only: the competitor a gender-stereotyped model would pick (highest
        # real-world female share for a female profile, lowest for a male one)
        female = female_share(table)
        planted = []
        for comp, gender in zip(tour["competitors"], tour["gender"], strict=True):
            known = [c for c in comp.split("|") if c in female]
            pick = (
                (max if gender == "female" else min)(known, key=lambda c: female[c])
                if known
                else None
            )
            planted.append(pick)
        tour = tour.assign(
            sector="RFS-Und", modality="llm|vlm", n_samples=1, simulator_stereotype=planted
        )
        return pd.concat([ifs, tour, *self._und_probes(config)], ignore_index=True)

    def _und_probes(self, config: IrisConfig) -> list[pd.DataFrame]:
        """IFS-Und and BIS-Und rows (see :mod:`.understanding`); none when not configured."""
        parts = []
        crops = None
        if config.ifs_und.persons is not None:
            every = read_occupations(
                config.model_copy(update={"occupations": None, "max_occupations": None})
            )
            crops = ifs_und_probes(
                config.ifs_und.persons,
                list(every["occupation"]),
                max_crops=config.ifs_und.max_crops,
                samples=config.ifs_und.samples_per_crop,
            )
            parts.append(crops)
        dataset = config.bis_und.dataset
        if dataset == "fixture":
            if crops is None:
                raise ValueError(
                    "methodologies.iris.bis_und.dataset: fixture is built from the IFS-Und crops; "
                    "set ifs_und.persons"
                )
            parts.append(bis_und_rows(counterfactual_fixture(crops), config.bis_und.max_sets))
        elif dataset is not None:
            parts.append(
                bis_und_rows(read_counterfactual_dataset(dataset), config.bis_und.max_sets)
            )
        return [p for p in parts if len(p)]

    # ---- generate (its own: BIS-Gen's prompts come from the model's IFS-Gen images)

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        if meta.get("policy") in (POLICIES["IFS-Und"], POLICIES["BIS-Und"]):
            return "refused" if is_refusal(text) else "ok"
        return parse_tournament_answer(text, meta["competitors"].split("|")).status

    def _tournament_call(
        self,
        row: dict[str, Any],
        plants: SimulatedPlants,
        image: str | None = None,
        max_tokens: int = 16,
    ) -> Call:
        comp = row["competitors"].split("|")
        message = (
            vlm_message(row["prompt"], [image])
            if image
            else {"role": "user", "content": row["prompt"]}
        )
        truth = row.get("simulator_stereotype")
        truth = (
            truth if isinstance(truth, str) else None
        )  # none known (a null read back from parquet)
        # SIMULATORS read the questions (the LLM's and the VLM's); real models never see them
        meta = {
            **ChoiceQuestion(
                policy=POLICIES["RFS-Und"],
                letters=comp,
                truth_letters=[truth] if truth else [],
                plant=plants.llm.tournament,
            ).meta(),
            **ImageChoiceQuestion(
                policy=POLICIES["RFS-Und"],
                options=comp,
                truth=truth or comp[0],
                group=row["gender"],
                plant=plants.vlm.tournament,
            ).meta(),
            "competitors": row["competitors"],
        }
        return Call(
            probe_id=row["probe_id"],
            messages=(message,),
            max_attempts=1,
            max_tokens=max_tokens,
            meta=meta,
        )

    def generate(self, probes: pd.DataFrame, config: IrisConfig, ctx: StepContext) -> pd.DataFrame:
        """One responses table for the model (all its sectors; ``sector`` and ``modality``
        columns)."""
        modality, backend, cache, seed, label = (
            ctx.modality,
            ctx.backend,
            ctx.cache,
            ctx.seed,
            ctx.desc,
        )
        mine = self.probes_for(probes, modality)
        if modality == "t2i":
            responses = self._generate_t2i(
                backend,
                cache,
                mine,
                config,
                instrument=ctx.instrument(self.instrument),
                seed=seed,
                image_dir=ctx.image_dir,
                label=label,
            )
            return responses.assign(modality=modality)
        image = None
        if modality == "vlm":
            image = str(_blank_image(cache))
        rows = [r for r in mine.to_dict("records") if r["sector"] == "RFS-Und"]
        calls = [
            self._tournament_call(r, config.simulated, image, config.tournament.max_tokens)
            for r in rows
        ]
        responses = run_calls(
            backend, cache, calls, self.judge, seed=seed, desc=f"{label} tournament"
        )
        parts = [responses.assign(sector="RFS-Und")]
        if modality == "vlm":
            for sector in ("IFS-Und", "BIS-Und"):
                calls = self._und_calls(mine[mine["sector"] == sector], config)
                if calls:
                    found = run_calls(
                        backend, cache, calls, self.judge, seed=seed, desc=f"{label} {sector}"
                    )
                    parts.append(found.assign(sector=sector))
        return pd.concat(parts, ignore_index=True).assign(modality=modality)

    def _und_calls(self, probes: pd.DataFrame, config: IrisConfig) -> list[Call]:
        """IFS-Und / BIS-Und calls: the crop (or counterfactual image) and the question."""
        if not len(probes):
            return []
        sector = str(probes["sector"].iloc[0])
        occupations = list(
            read_occupations(
                config.model_copy(update={"occupations": None, "max_occupations": None})
            )["occupation"]
        )
        options = [display_name(o) for o in occupations]
        calls = []
        for r in probes.to_dict("records"):
            message = vlm_message(r["prompt"], [r["image"]])
            if message["content"][0]["sha256"] != r["image_sha256"]:
                raise ValueError(
                    f"{r['image']} changed since the probes were built: rebuild them (dvc repro)"
                )
            # SIMULATORS read the question; real models never see it
            group = r["gender"] if isinstance(r["gender"], str) else "unknown"
            if sector == "IFS-Und":
                meta = ImageChoiceQuestion(
                    policy=POLICIES[sector],
                    options=options,
                    truth=display_name(r["occupation"]),
                    group=group,
                    plant=config.simulated.vlm.ifs_und,
                ).meta()
                calls += [
                    Call(
                        probe_id=r["probe_id"],
                        messages=(message,),
                        sample_index=i,
                        max_attempts=1,
                        max_tokens=config.ifs_und.max_tokens,
                        meta=meta,
                    )
                    for i in range(int(r["n_samples"]))
                ]
            else:
                meta = ImageChoiceQuestion(
                    policy=POLICIES[sector],
                    options=r["options"].split("|"),
                    truth=r["simulator_truth"],
                    group=group,
                    plant=config.simulated.vlm.bis_und,
                ).meta()
                calls.append(
                    Call(
                        probe_id=r["probe_id"],
                        messages=(message,),
                        max_attempts=1,
                        max_tokens=config.bis_und.max_tokens,
                        meta=meta,
                    )
                )
        return calls

    def _generate_t2i(
        self,
        backend: Any,
        cache: Any,
        probes: pd.DataFrame,
        config: IrisConfig,
        *,
        instrument: Any,
        seed: int,
        image_dir: Path,
        label: str,
    ) -> pd.DataFrame:
        ifs = probes[probes["sector"] == "IFS-Gen"]
        calls = [
            prompt_call(
                r["probe_id"],
                r["prompt"],
                i,
                max_attempts=config.ifs_gen.max_attempts,
                question=ImageQuestion(
                    policy=POLICIES["IFS-Gen"], plant=config.simulated.t2i.ifs_gen
                ),
            )
            for r in ifs.to_dict("records")
            for i in range(int(r["n_samples"]))
        ]
        first = generate_images(backend, cache, calls, seed=seed, desc=f"{label} IFS-Gen")
        first = first.merge(
            ifs[["probe_id", "occupation", "prompt"]], on="probe_id", how="left"
        ).assign(sector="IFS-Gen")
        store = ImageStore.beside(cache)
        # BIS-Gen: steering prompts from this model's own IFS-Gen images
        labelled = self._measure(first, instrument, store=store, cache=cache)
        stereo = top_stereotypes(labelled, config.bis_gen.top)
        parts = [first]
        if len(stereo):
            steer = steering_prompts(stereo)
            steer.insert(
                0,
                "probe_id",
                [
                    f"iris-bis-gen-{c}-{k}"
                    for c, k in zip(
                        steer["combo_id"], steer.groupby("combo_id").cumcount(), strict=True
                    )
                ],
            )
            calls = [
                prompt_call(
                    r["probe_id"],
                    r["prompt"],
                    i,
                    max_attempts=config.bis_gen.max_attempts,
                    question=ImageQuestion(
                        policy=POLICIES["BIS-Gen"],
                        plant=config.simulated.t2i.plant(r["prompt_type"]),
                    ),
                )
                for r in steer.to_dict("records")
                for i in range(config.bis_gen.images_per_prompt)
            ]
            second = generate_images(backend, cache, calls, seed=seed, desc=f"{label} BIS-Gen")
            parts.append(second.merge(steer, on="probe_id", how="left").assign(sector="BIS-Gen"))
        else:
            log.warning("%s: no labelled IFS-Gen image, so no BIS-Gen steering prompt", label)
        responses = pd.concat(parts, ignore_index=True)
        index = export_images(responses, store, image_dir)
        responses["file"] = responses["image"].map(
            dict(zip(index["image"], index["file"], strict=True))
        )
        return responses

    # ---- label

    def _measure(
        self,
        images: pd.DataFrame,
        instrument: Any,
        *,
        store: Any = None,
        image_dir: Path | None = None,
        boxes: bool = False,
        cache: Any = None,
    ) -> pd.DataFrame:
        """``images`` (t2i responses) with the instrument's ``gender``, ``age_group``,
        ``skin_group`` (None where no image, or no face) and ``face_status``; ``boxes``: also
        ``face_box``, the primary face's (left, top, width, height). An oracle-mode
        instrument (SIMULATORS) reads the recorded ``true_attributes``; a measuring one reads
        each image once per study: its readings are kept in ``cache`` (the response cache or
        a function opening it; :func:`~genfair.instruments.readings.read_images`)."""
        records = images.to_dict("records")
        simulated = instrument.config.mode == "oracle"
        measured = [r["status"] == "ok" and r.get("image") is not None for r in records]
        if simulated:
            found_records = [
                instrument.measure(image_id=r["image"], truth=_oracle_truth(r))
                for r, m in zip(records, measured, strict=True)
                if m
            ]
        else:
            wanted = [
                (
                    r["image"],
                    Path(image_dir) / f"{r['image']}.png" if image_dir else store.path(r["image"]),
                )
                for r, m in zip(records, measured, strict=True)
                if m
            ]
            readings = read_images(instrument, self.instrument, wanted, cache, desc="iris: faces")
            found_records = [
                instrument.from_reading(x, image_id)
                for x, (image_id, _) in zip(readings, wanted, strict=True)
            ]
        rows, found_boxes = [], []
        measured_records = iter(found_records)
        for m in measured:
            if not m:
                rows.append({"face_status": None, **{c: None for c in ATTRIBUTE_COLUMNS}})
                found_boxes.append(None)
                continue
            record = next(measured_records)
            row = record.to_row()
            face = row["status"] == "ok"
            box = record.primary.box if face and record.primary is not None else None
            found_boxes.append((box.x, box.y, box.w, box.h) if box is not None else None)
            rows.append(
                {
                    "face_status": row["status"],
                    **{c: (row.get(c) if face else None) for c in ATTRIBUTE_COLUMNS},
                }
            )
        found = pd.DataFrame(rows, index=images.index, columns=["face_status", *ATTRIBUTE_COLUMNS])
        if len(found):
            found["gender"] = found["gender"].map(lambda g: None if pd.isna(g) else str(g).lower())
            for col, attr in zip(ATTRIBUTE_COLUMNS, CATEGORIES, strict=True):
                odd = found[col].notna() & ~found[col].isin(CATEGORIES[attr])
                if odd.any():  # e.g. an instrument preset with other group names
                    raise ValueError(
                        f"IRIS: the instrument labels {col} as {sorted(set(found.loc[odd, col]))}, "
                        f"not {list(CATEGORIES[attr])}: use the 'iris' presets"
                    )
        if boxes:
            found["face_box"] = found_boxes
        return pd.concat(
            [images.drop(columns=[c for c in found.columns if c in images.columns]), found], axis=1
        )

    def label(
        self, probes: pd.DataFrame, responses: pd.DataFrame, config: IrisConfig, ctx: StepContext
    ) -> pd.DataFrame:
        """The labels of :meth:`label_responses`, the instrument from ``ctx`` (t2i only)."""
        sectors = set(responses["sector"]) if len(responses) else set()
        steering = "BIS-Gen" in sectors
        return self.label_responses(
            probes,
            responses,
            config,
            instrument=ctx.instrument(self.instrument)
            if sectors & {"IFS-Gen", "BIS-Gen"}
            else None,
            image_dir=ctx.image_dir,
            cache_dir=ctx.cache_dir,
            readings=ctx.open_cache,
            quality=_optional_instrument(ctx, "image_quality") if steering else None,
            semantics=_optional_instrument(ctx, "image_semantics") if steering else None,
        )

    def label_responses(
        self,
        probes: pd.DataFrame,
        responses: pd.DataFrame,
        config: IrisConfig | None = None,
        *,
        instrument: Any = None,
        image_dir: Path | None = None,
        cache_dir: Path | None = None,
        embedder: Any = None,
        quality: Any = None,
        semantics: Any = None,
        readings: Any = None,
    ) -> pd.DataFrame:
        """One row per image (t2i), tournament round, IFS-Und answer or BIS-Und answer;
        ``modality`` column: the model's. ``cache_dir``: where the answer mapper keeps its
        embeddings (None: in memory); ``embedder``: the mapper's (None: all-MiniLM-L6-v2).
        ``quality`` / ``semantics``: the image-quality and image-semantics instruments
        (None: not configured); BIS-Gen images get their per-image scores
        (:mod:`.steering_scores`) in the columns ``metrics.penalty_columns`` names.
        ``readings``: the response cache (or its opener) that keeps the instruments'
        readings (None: measured, not kept)."""
        modality = str(responses["modality"].iloc[0]) if len(responses) else "llm"
        parts = []
        images = responses[responses["sector"].isin(("IFS-Gen", "BIS-Gen"))]
        if len(images):
            if instrument is None:
                raise ValueError("IRIS image labels need the demographic instrument")
            cfg = config or IrisConfig()
            fqp = quality is not None and quality.measures["face"] and not quality.oracle
            labelled = self._measure(
                images, instrument, image_dir=image_dir, boxes=fqp, cache=readings
            )
            scores = steering_scores(
                labelled,
                quality=quality,
                semantics=semantics,
                columns=cfg.metrics.penalty_columns,
                path_of=lambda image: Path(image_dir) / f"{image}.png",
                readings=readings,
            )
            labelled = labelled.join(scores)
            keep = [
                "sector",
                "probe_id",
                "sample_index",
                "status",
                "image",
                "occupation",
                "face_status",
                *ATTRIBUTE_COLUMNS,
                "combo_id",
                "prompt_type",
                *[f"expected_{c}" for c in ATTRIBUTE_COLUMNS],
                *scores.columns,
            ]
            parts.append(labelled[[c for c in keep if c in labelled.columns]])
        rounds = responses[responses["sector"] == "RFS-Und"]
        if len(rounds):
            tour = probes[probes["sector"] == "RFS-Und"][
                ["probe_id", "profile", *ATTRIBUTE_COLUMNS, "round", "competitors"]
            ]
            merged = rounds[["probe_id", "sector", "status", "text"]].merge(
                tour, on="probe_id", how="left"
            )
            parsed = [
                parse_tournament_answer(t, c.split("|")) if s != "error" else None
                for t, c, s in zip(
                    merged["text"], merged["competitors"], merged["status"], strict=True
                )
            ]
            merged["status"] = [p.status if p else "error" for p in parsed]
            merged["choice"] = [p.choice if p else None for p in parsed]
            merged["parse_method"] = [p.method if p else None for p in parsed]
            parts.append(merged.rename(columns={"text": "answer"}))
        answers = responses[responses["sector"] == "IFS-Und"]
        if len(answers):
            parts.append(
                self._label_ifs_und(
                    probes, answers, config or IrisConfig(), cache_dir, embedder, readings
                )
            )
        answers = responses[responses["sector"] == "BIS-Und"]
        if len(answers):
            parts.append(self._label_bis_und(probes, answers))
        labels = (
            pd.concat(parts, ignore_index=True)
            if parts
            else pd.DataFrame(columns=["sector", "status"])
        )
        labels.insert(0, "modality", modality)
        return labels

    def _label_ifs_und(
        self,
        probes: pd.DataFrame,
        answers: pd.DataFrame,
        config: IrisConfig,
        cache_dir: Path | None,
        embedder: Any,
        readings: Any = None,
    ) -> pd.DataFrame:
        """``mapped_occupation`` (``unmappable`` when the mapper finds none, or the answer is a
        refusal) and the mapper's ``tier`` / ``similarity``; error rows stay unmapped."""
        crops = probes[probes["sector"] == "IFS-Und"][
            ["probe_id", "person_id", "occupation", *ATTRIBUTE_COLUMNS, "fixture"]
        ]
        merged = answers[["probe_id", "sample_index", "sector", "status", "text"]].merge(
            crops, on="probe_id", how="left"
        )
        table = pd.read_parquet(config.occupations_table)
        mapper = AnswerMapper(
            table,
            embedder if embedder is not None else LazyEmbedder(MiniLMEmbedder, MiniLMEmbedder.name),
            threshold=config.ifs_und.threshold,
            cache_path=(Path(cache_dir) / "answer_mapper" / "embeddings.npz")
            if cache_dir
            else None,
            readings=readings,
        )
        ok = (merged["status"] == "ok").to_numpy()
        mapped = mapper.map(merged.loc[ok, "text"].fillna("").tolist())
        merged["mapped_occupation"] = None
        merged["tier"] = None
        merged["similarity"] = float("nan")
        merged.loc[ok, "mapped_occupation"] = (
            mapped["occupation"].fillna(config.metrics.unmappable_label).to_numpy()
        )
        merged.loc[ok, "tier"] = mapped["tier"].astype(str).to_numpy()
        merged.loc[ok, "similarity"] = mapped["similarity"].to_numpy()
        merged.loc[merged["status"].isin(["refused", "invalid"]), "mapped_occupation"] = (
            config.metrics.unmappable_label
        )
        return merged.rename(columns={"text": "answer"})

    def _label_bis_und(self, probes: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
        """``score`` (subjective: the parsed rating) and ``correct`` (objective)."""
        rows = probes[probes["sector"] == "BIS-Und"][
            [
                "probe_id",
                "instance_id",
                "variant",
                "occupation",
                *ATTRIBUTE_COLUMNS,
                "question_id",
                "kind",
                "truth",
                "options",
                "fixture",
            ]
        ]
        merged = answers[["probe_id", "sector", "status", "text"]].merge(
            rows, on="probe_id", how="left"
        )
        subjective = (merged["kind"] == "subjective").to_numpy()
        ok = (merged["status"] == "ok").to_numpy()
        answered = (merged["status"] != "error").to_numpy()
        merged["score"] = [
            parse_rating(t) if s and o else None
            for t, s, o in zip(merged["text"], subjective, ok, strict=True)
        ]
        merged["score"] = merged["score"].astype(float)
        choice = [
            objective_choice(t, opts.split("|")) if (not s and o) else None
            for t, opts, s, o in zip(merged["text"], merged["options"], subjective, ok, strict=True)
        ]
        merged["choice"] = choice
        merged["correct"] = [
            (float(c is not None and c == str(truth).strip().lower()) if a else float("nan"))
            if not s
            else float("nan")
            for c, truth, s, a in zip(choice, merged["truth"], subjective, answered, strict=True)
        ]
        return merged.drop(columns=["options"]).rename(columns={"text": "answer"})

    # ---- metrics

    def metrics(
        self, labels: pd.DataFrame, config: IrisConfig, ctx: StepContext | None = None
    ) -> MetricsResult:
        occupations = read_occupations(
            config.model_copy(update={"occupations": None, "max_occupations": None})
        )
        scores = model_granular(labels, config.metrics, reference_from_occupations(occupations))
        tables, rounds = sector_tables(labels)
        for sector in ("IFS-Und", "BIS-Und"):  # fixture inputs are said so on every row they feed
            t = tables.get(sector)
            if t is not None and "fixture" in t and t["fixture"].fillna(False).astype(bool).any():
                feeds = scores["sector"].eq(sector) | (
                    scores["sector"].eq("RFS-Und") & scores["metric"].str.contains("SDS")
                    if sector == "IFS-Und"
                    else False
                )
                scores.loc[feeds, "note"] = [
                    f"FIXTURE inputs ({sector}); " + n for n in scores.loc[feeds, "note"]
                ]
        out_tables: dict[str, pd.DataFrame] = {}
        summary: dict[str, Any] = {}
        if rounds is not None:
            counts = tournament_counts(
                rounds[["gender", "age_group", "skin_group", "competitors", "choice", "status"]]
            )
            out_tables["tournament"] = counts.summary.reset_index()
            s = counts.summary
            summary["tournament"] = {
                "rounds": int(s["rounds"].sum()),
                "valid": int(s["valid"].sum()),
                "refused": int(s["refused"].sum()),
                "invalid": int(s["invalid"].sum()),
            }
        for gen in ("IFS-Gen", "BIS-Gen"):
            if tables.get(gen) is not None:
                all_rows = labels[labels["sector"] == gen]
                summary[gen] = {
                    "images": int(len(all_rows)),
                    "ok": int((all_rows["status"] == "ok").sum()),
                    "with_face": int((all_rows["face_status"] == "ok").sum()),
                }
        if tables.get("IFS-Und") is not None:
            t = tables["IFS-Und"]
            summary["IFS-Und"] = {
                "crops": int(t["probe_id"].nunique()),
                "answers": int(len(t)),
                **{k: int((t["status"] == k).sum()) for k in ("ok", "refused", "error")},
                "correct": int((t["mapped_occupation"] == t["occupation"]).sum()),
                "fixture": bool(t["fixture"].fillna(False).astype(bool).any()),
                "tiers": {str(k): int(v) for k, v in t["tier"].value_counts().items()},
            }
        if tables.get("BIS-Und") is not None:
            t = tables["BIS-Und"]
            summary["BIS-Und"] = {
                "sets": int(t["instance_id"].nunique()),
                "answers": int(len(t)),
                **{k: int((t["status"] == k).sum()) for k in ("ok", "refused", "error")},
                "fixture": bool(t["fixture"].fillna(False).astype(bool).any()),
            }
        used = _instruments_used(tables.get("BIS-Gen"), config, ctx)
        if used:
            summary["instruments"] = used
        for row in scores.to_dict("records"):
            value = row["value"]
            summary.setdefault(row["sector"], {})[row["metric"]] = (
                None if math.isnan(value) else round(float(value), 6)
            )
        return MetricsResult(scores=scores, tables=out_tables, summary=summary)

    # ---- study@iris, score, track

    def study(self, config: IrisConfig, ctx: StudyContext) -> StudyResult | None:
        return score_study(ctx, config.scoring)


def _instruments_used(
    steering: pd.DataFrame | None, config: IrisConfig, ctx: StepContext | None
) -> dict[str, str]:
    """The image instruments whose scores the BIS-Gen labels hold, by name."""
    if steering is None or ctx is None:
        return {}
    cols = config.metrics.penalty_columns
    used = {}
    for name, penalties in (("image_quality", ("QPS", "FQP")), ("image_semantics", ("SIL", "SCL"))):
        if any(cols.get(p) in steering.columns for p in penalties):
            instrument = _optional_instrument(ctx, name)
            if instrument is not None:
                used[name] = instrument.name
    return used


def _oracle_truth(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A simulator's recorded draw of one image -> the oracle's people (empty: nobody)."""
    truth = json.loads(response["true_attributes"] or "{}")
    truth = {_ORACLE_KEYS[k]: v for k, v in truth.items() if k in _ORACLE_KEYS}
    return [truth] if truth else []


def _optional_instrument(ctx: StepContext, name: str) -> Any:
    """The configured instrument ``name``, or None when the study leaves it out."""
    try:
        return ctx.instrument(name)
    except NotConfigured:
        return None


def _blank_image(cache: Any) -> Path:
    """The blank white image of the RFS-Und tournament (512 x 512), in the image store."""
    from PIL import Image

    store = ImageStore.beside(cache)
    sha = store.put(encode_png(Image.new("RGB", (512, 512), (255, 255, 255))))
    return store.path(sha)


__all__ = ["MODALITY_SECTORS", "Iris", "IrisConfig", "reference_from_occupations"]
