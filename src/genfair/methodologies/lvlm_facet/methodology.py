"""The ``lvlm_facet`` methodology: paper 004 (Wu et al.) on the methodology contract.

- ``build_probes``: the curated FACET persons (``persons.parquet`` of curate_facet) ->
  single-person images in the class subset with their groups (:mod:`.groups`), one row per
  image and prompt kind (:mod:`.probes`, Table 3 verbatim), with the image's hash (a changed
  image changes the probes).
- ``generate`` (the contract's default, through ``ctx.run`` and the response cache): one
  image + text call per row (:func:`genfair.models.images.vlm_message`), asked once (the
  paper), decoding as the model is configured; a ``backend: clip`` model gets the direct
  question only (CLIP has no single-choice answer; the paper's N/A). The request ``meta``
  holds the row's class, prompt kind and groups: SIMULATORS read them, real models never
  see them.
- ``label``: :class:`~.matching.AnswerMatcher` (``class`` on direct answers, ``choice`` on
  single-choice ones), encoder as configured and recorded, embeddings cached beside the
  response cache.
- ``metrics``: recall per class and group, pooled and macro, disparities with intervals
  (:mod:`.scoring`, :mod:`genfair.methodologies.lvlm_facet.recall`); the scores table is
  :func:`.scoring.score_rows`.
- headline: the pooled disparity of the paper's pair per attribute and prompt (closer to 0
  is fairer); leaderboard ranked by ``|disparity|`` among real models.

Its presentation (figures, report title, samples): :mod:`.report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from genfair.instruments.refusal import is_refusal
from genfair.methodologies.base import (
    Footprint,
    Methodology,
    MetricsResult,
    StepContext,
    bounded,
    table_rows,
)
from genfair.methodologies.lvlm_facet.compare import LvlmFacetComparison
from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
from genfair.methodologies.lvlm_facet.groups import (
    ATTRIBUTES,
    lvlm_persons,
    resolve_classes,
)
from genfair.methodologies.lvlm_facet.labels import label_answers
from genfair.methodologies.lvlm_facet.probes import probe_rows
from genfair.methodologies.lvlm_facet.report import LvlmFacetPresentation
from genfair.methodologies.lvlm_facet.scoring import (
    SCORE_COLUMNS,
    headline,
    recall_tables,
    score_rows,
)
from genfair.methodologies.reads import every_field_but
from genfair.models.images import sha256_file, vlm_message
from genfair.models.questions import RecallQuestion
from genfair.models.runner import Call, Verdict

__all__ = ["LvlmFacet"]

#: ``meta["policy"]`` of every request (the simulated vlm's policy name)
POLICY = "lvlm_facet"
#: backends that answer the direct question only (CLIP zero-shot classifies the image)
DIRECT_ONLY_BACKENDS = ("clip",)


_MATCHING = ("encoder", "min_similarity")
_SCORING = ("confidence", "empty_group_recall")


class LvlmFacet(Methodology[LvlmFacetConfig]):
    """LVLM fairness on FACET (Wu et al., paper 004): recall of vision-language models per
    class and gender, skin tone and age group, and its disparities."""

    name: ClassVar[str] = "lvlm_facet"
    presentation_role = LvlmFacetPresentation
    modalities = ("vlm",)
    Config: ClassVar[type[LvlmFacetConfig]] = LvlmFacetConfig
    comparison_role = LvlmFacetComparison
    #: the fields each step reads (its stage depends on them alone): answer matching is the
    #: label step's, the intervals the metrics step's
    reads: ClassVar[dict[str, tuple[str, ...]]] = {
        "probes": every_field_but(LvlmFacetConfig, *_MATCHING, *_SCORING),
        "generate": every_field_but(LvlmFacetConfig, *_MATCHING, *_SCORING),
        "label": every_field_but(LvlmFacetConfig, *_SCORING),
        "metrics": (*_MATCHING, *_SCORING, "classes"),
        "study": (),
    }
    metric_keys = ("measure", "prompt", "attribute", "class", "group")

    # ---- probes@lvlm_facet

    def footprint(self, config: LvlmFacetConfig) -> list[Footprint]:
        """The probe table: persons (``max_persons``, capped by the row count of curation's
        ``persons`` table, read from its Parquet footer: every annotated person, more than the
        single-person images kept) x prompt kinds, about 800 bytes a row at the peak of
        building it (measured with tracemalloc: 750-800 bytes at 200 and 2,000 persons).
        No estimate before curation with no ``max_persons``."""
        persons = bounded(config.max_persons, table_rows(config.persons))
        if persons is None:
            return []
        rows = persons * len(config.prompts)
        return [Footprint("max_persons", "the probe table", rows, 800)]

    def build_probes(self, config: LvlmFacetConfig, seed: int) -> pd.DataFrame:
        path = Path(config.persons)
        if not path.is_file():
            raise FileNotFoundError(
                f"methodologies.lvlm_facet.persons: {path} not found; run the curate_facet "
                "stage first (dvc repro curate_facet)"
            )
        persons = lvlm_persons(
            pd.read_parquet(path), config.classes, config.skin_rule, source=str(path)
        )
        if persons.empty:
            raise ValueError(
                f"{path}: no single-person image of the classes {config.classes!r}; choose other "
                "methodologies.lvlm_facet.classes (`all` keeps every class)"
            )
        if config.max_persons is not None and len(persons) > config.max_persons:
            keep = np.random.default_rng(seed).choice(
                len(persons), config.max_persons, replace=False
            )
            persons = persons.iloc[np.sort(keep)].reset_index(drop=True)
        folder = path.parent if config.image == "crop" else Path(config.images_dir)
        probes = probe_rows(
            persons,
            folder,
            config.prompts,
            shuffle_seed=config.shuffle_seed,
            class_display=config.class_display,
            image=config.image,
        )
        missing = sorted({p for p in probes["image_path"] if not Path(p).is_file()})
        if missing:
            raise FileNotFoundError(
                f"{len(missing)} image(s) of {path} not found, e.g. {missing[0]}; set "
                "methodologies.lvlm_facet.images_dir to the FACET release's image folder"
            )
        hashes = {p: sha256_file(p) for p in dict.fromkeys(probes["image_path"])}
        probes["image_sha256"] = probes["image_path"].map(hashes)
        fixture = persons.set_index("person_id")["fixture"] if "fixture" in persons else None
        probes["fixture"] = (
            probes["person_id"].map(fixture).fillna(False).astype(bool)
            if fixture is not None
            else False
        )
        return probes

    # ---- generate@<model>-lvlm_facet

    def calls(self, probes: pd.DataFrame, config: LvlmFacetConfig, modality: str) -> list[Call]:
        calls = []
        for row in probes.to_dict("records"):
            message = vlm_message(row["text"], [row["image_path"]])
            if message["content"][0]["sha256"] != row["image_sha256"]:
                raise ValueError(
                    f"{row['image_path']} changed since the probes were built: rebuild them "
                    "(dvc repro probes@lvlm_facet)"
                )
            # SIMULATORS read these; real models never see them
            meta = RecallQuestion(
                policy=POLICY,
                cls=row["class"],
                prompt=row["prompt"],
                plant=config.simulated,
                **{a: row[a] for a in ATTRIBUTES},
            ).meta()
            calls.append(
                Call(
                    probe_id=row["probe_id"],
                    messages=(message,),
                    max_attempts=1,
                    max_tokens=config.max_tokens,
                    meta=meta,
                )
            )
        return calls

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        """``refused`` for a refusal (recorded; still a miss), else ``ok``; never re-asked
        (the paper asks once)."""
        return "refused" if is_refusal(text) else "ok"

    def generate(
        self, probes: pd.DataFrame, config: LvlmFacetConfig, ctx: StepContext
    ) -> pd.DataFrame:
        mine = self.probes_for(probes, ctx.modality)
        if ctx.model.backend in DIRECT_ONLY_BACKENDS:
            mine = mine[mine["prompt"] == "direct"]
        return ctx.run(self.calls(mine, config, ctx.modality), self.judge)

    # ---- label@<model>-lvlm_facet

    def label(
        self,
        probes: pd.DataFrame,
        responses: pd.DataFrame,
        config: LvlmFacetConfig,
        ctx: StepContext,
    ) -> pd.DataFrame:
        """One row per answer: the probe's class, prompt and groups, ``status``, the
        ``answer`` and its matched ``label`` (a class, or yes / no / unknown), ``tier``,
        ``similarity`` and ``encoder``. Error rows (no answer) stay unmatched."""
        return label_answers(
            probes, responses, config, Path(ctx.cache_dir) / "lvlm_facet", readings=ctx.open_cache
        )

    # ---- metrics@<model>-lvlm_facet

    def metrics(
        self, labels: pd.DataFrame, config: LvlmFacetConfig, ctx: StepContext | None = None
    ) -> MetricsResult:
        answered = labels[labels["status"] != "error"] if len(labels) else labels
        summary: dict[str, Any] = {
            "images": int(labels["person_id"].nunique()) if len(labels) else 0,
            "answers": {
                str(p): {str(k): int(v) for k, v in part["status"].value_counts().items()}
                for p, part in labels.groupby("prompt", sort=False)
            }
            if len(labels)
            else {},
            "tiers": {str(k): int(v) for k, v in labels["tier"].value_counts().items()}
            if len(labels)
            else {},
            "fixture": bool(labels["fixture"].astype(bool).any()) if len(labels) else False,
            "instruments": {
                "encoder": str(labels["encoder"].dropna().iloc[0])
                if labels["encoder"].notna().any()
                else config.encoder,
                "min_similarity": config.min_similarity,
            },
            "empty_group_recall": config.empty_group_recall,
            "simulated": bool(ctx.model.simulated) if ctx is not None else None,
        }
        if answered.empty:
            summary["note"] = "no answer to score (every call failed, or no probe for this model)"
            return MetricsResult(scores=pd.DataFrame(columns=SCORE_COLUMNS), summary=summary)
        # classes with no selected image are not in the study (a class subset evaluates its own)
        present = set(labels["class"])
        classes = [c for c in resolve_classes(config.classes) if c in present]
        tables = recall_tables(labels, classes, config.confidence, config.empty_group_recall)
        summary["headline"] = {
            k: (None if np.isnan(v) else round(v, 6)) for k, v in headline(tables).items()
        }
        summary["classes"] = classes
        return MetricsResult(scores=score_rows(tables), tables=tables, summary=summary)
