"""The ``open_bias`` methodology: OpenBias (paper 003) as pipeline stages.

The model under test is a text-to-image model (``modalities = ("t2i",)``); OpenBias drives two
more models, named in its config and built from the study's model configs
(:attr:`~genfair.methodologies.base.StepContext.models`): the bias proposer (an LLM, or the
SCRIPTED proposer of :mod:`.scripted`) and the VQA model (a vlm).

- ``probes@open_bias``: one row per caption with the authors' proposal chat
  (:func:`.probes.proposal_probes`).
- ``generate@<t2i model>-open_bias`` (:meth:`OpenBias.generate`), every call through the
  response cache: stage 1, the proposer's answers, parsed and retried as configured, then the
  knowledge base (:func:`.knowledge_base.build_knowledge_base`); stage 2, ``images_per_caption``
  images per caption of the knowledge base from the model under test (each with its own seed,
  recorded in ``seed``), exported as ``<sha256>.png``; stage 3, each bias's question on each of
  its captions' images, to the VQA model. One responses table, a ``step`` column:
  ``proposal`` (one row per caption, its parse status), ``knowledge_base`` (one row per bias
  and caption), ``knowledge_base_log`` (biases left by each post-processing step), ``image``
  and ``vqa``. The knowledge base depends only on the captions and the proposer, so every t2i
  model of a study gets the same one (the proposer's answers are cached once).
- ``label``: VQA answers mapped to a class (:class:`.vqa.AnswerToClass`, all-MiniLM-L6-v2,
  embeddings cached beside the response cache); the other steps' rows pass through.
- ``metrics``: the severity table per bias (:func:`.scoring.severity_table`): context-aware and
  context-free severities with bootstrap intervals, majority class, counts, ranks; the
  proposal yield. Figures (:mod:`.report`): the severity ranking and context-aware vs
  context-free severity (the paper's Figs. 3, 4 and 9).

A SIMULATED t2i model draws the planted classes of OpenBias's ``simulated.t2i`` policy for the
biases asked about each image (``true_attributes``); the SIMULATED VLM answers from them
(``meta["truth"]``) and never sees a real image, so it refuses to run on a real model's images.

Its presentation (figures, report title, samples): :mod:`.report`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
from pydantic import TypeAdapter

from genfair.methodologies.base import (
    Footprint,
    Methodology,
    MetricsResult,
    StepContext,
    bounded,
    table_rows,
)
from genfair.methodologies.open_bias.compare import OpenBiasComparison
from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.methodologies.open_bias.inputs import load_captions
from genfair.methodologies.open_bias.knowledge_base import build_knowledge_base
from genfair.methodologies.open_bias.probes import (
    collect_proposals,
    image_probes,
    proposal_probes,
    proposal_yield,
    vqa_probes,
)
from genfair.methodologies.open_bias.proposals import (
    BiasProposal,
    load_prompt,
    parse_proposals,
    proposals_json_schema,
)
from genfair.methodologies.open_bias.report import OpenBiasPresentation
from genfair.methodologies.open_bias.scoring import severity_table
from genfair.methodologies.open_bias.scripted import ScriptedProposer, load_scripted
from genfair.methodologies.open_bias.vqa import UNKNOWN, AnswerToClass, label_answers
from genfair.methodologies.reads import every_field_but
from genfair.models import build_backend
from genfair.models.base import derive_seed, stable_hash
from genfair.models.config import ModelConfig
from genfair.models.images import vlm_message
from genfair.models.questions import OpenSetImageQuestion, OpenVQAQuestion
from genfair.models.runner import Call, OnRows, Verdict
from genfair.models.t2i import prompt_call

__all__ = ["OpenBias"]

#: ``meta["policy"]`` of the requests, for simulators
PROPOSAL_POLICY = "open_bias_proposal"
POLICY = "open_bias"
SCORE_COLUMNS = [
    "bias_key",
    "bias_id",
    "label",
    "classes",
    "n_classes",
    "status",
    "severity_context_aware",
    "context_aware_ci_low",
    "context_aware_ci_high",
    "severity_context_free",
    "context_free_ci_low",
    "context_free_ci_high",
    "ci_adjusted",
    "majority_class",
    "majority_share",
    "n_captions",
    "n_captions_known",
    "n_images",
    "n_images_known",
    "unknown_share",
    "bias_rank",
    "rank_context_aware",
    "rank_context_free",
    "proposal_yield",
    "distribution",
]


def _model_config(spec: str | dict[str, Any] | None, models: Any, key: str, modality: str) -> Any:
    """A model config from a model name of the study or an inline config."""
    if spec is None:
        raise ValueError(
            f"methodologies.open_bias.{key} is not set: name a {modality} model of the study"
        )
    if isinstance(spec, str):
        if spec not in models:
            raise ValueError(
                f"methodologies.open_bias.{key}: no model {spec!r} in the "
                f"study's models ({', '.join(models) or 'none given'}); "
                "add it under models or give an inline config"
            )
        config = models[spec]
    else:
        config = TypeAdapter(ModelConfig).validate_python(spec)
    if config.modality != modality:
        raise ValueError(
            f"methodologies.open_bias.{key}: "
            f"{spec if isinstance(spec, str) else 'the inline model'} "
            f"is a {config.modality} model, not a {modality} model"
        )
    return config


def _any_answer(text: str, meta: dict[str, Any]) -> Verdict:
    """Images and VQA answers are never judged (a refusal is the backend's status)."""
    return "ok"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


#: the label columns :meth:`OpenBias.metrics` reads, present even when no step wrote them
_LABEL_COLUMNS = ("status", "caption_id", "bias_id", "classes", "label", "tier", "encoder", "text")


class OpenBias(Methodology[OpenBiasConfig]):
    """OpenBias (D'Incà et al., CVPR 2024, paper 003): open-set bias discovery (an LLM proposes
    biases per caption), generation, VQA, and severity by the entropy of the answers."""

    name: ClassVar[str] = "open_bias"
    presentation_role = OpenBiasPresentation
    modalities = ("t2i",)
    #: the images draw the proposer's biases, the VQA model asks about those images
    dependent_calls = ("t2i",)
    Config: ClassVar[type[OpenBiasConfig]] = OpenBiasConfig
    comparison_role = OpenBiasComparison
    #: the fields each step reads (its stage depends on them alone): the severity scoring is
    #: the metrics step's, the answer threshold the label step's
    reads: ClassVar[dict[str, tuple[str, ...]]] = {
        "probes": every_field_but(OpenBiasConfig, "severity", "answer_threshold"),
        "generate": every_field_but(OpenBiasConfig, "severity", "answer_threshold"),
        "label": every_field_but(OpenBiasConfig, "severity"),
        "study": (),
    }
    metric_keys = ("bias_key",)

    def models_read(self, config: OpenBiasConfig) -> tuple[str, ...]:
        """The proposer LLM and the VQA model, where the config names a model of the study."""
        named = (config.proposer if config.proposer != "scripted" else None, config.vqa_model)
        return tuple(name for name in named if isinstance(name, str))

    # ---- probes

    def footprint(self, config: OpenBiasConfig) -> list[Footprint]:
        """Over captions (``max_captions``, capped by the project caption set's row count;
        COCO and Flickr30k are not counted before they are read, so no estimate for them
        without ``max_captions``): stage 2's image table, captions x ``images_per_caption``,
        about 250 bytes a row at the peak of building it (measured with tracemalloc: 230-245
        bytes at 200 and 2,000 captions of 10 images); and one bias's context-free severity
        bootstrap, 9 bytes per resample, caption and (class + 1) (measured with tracemalloc:
        8.0-8.6 at 50-200 captions, 2-5 classes, 2,000-8,000 resamples), at the fewest
        classes a bias has (``knowledge_base.min_classes``): a lower bound."""
        rows = table_rows(config.caption_set) if config.captions == "project" else None
        captions = bounded(config.max_captions, rows)
        if captions is None:
            return []
        classes = config.knowledge_base.min_classes
        return [
            Footprint("images_per_caption", "the image table",
                      captions * config.images_per_caption, 250),
            Footprint("severity.n_resamples", "one bias's severity bootstrap",
                      config.severity.n_resamples, captions * (classes + 1) * 9),
        ]  # fmt: skip

    def build_probes(self, config: OpenBiasConfig, seed: int) -> pd.DataFrame:
        """One row per caption: its proposal chat (the study's caption/proposal table)."""
        captions, _ = load_captions(config)
        probes = proposal_probes(captions, load_prompt())
        return probes.assign(source=captions["source"].to_numpy())

    # ---- generate

    def judge(self, text: str, meta: dict[str, Any]) -> Verdict:
        """A proposal answer is ``ok`` when it parses with at least one valid bias."""
        parsed = parse_proposals(text, meta.get("repair", True), meta.get("salvage", False))
        return "ok" if parsed.status == "ok" and parsed.proposals else "invalid"

    def generate(
        self, probes: pd.DataFrame, config: OpenBiasConfig, ctx: StepContext
    ) -> pd.DataFrame:
        captions = probes[["caption_id", "image_id", "caption"]].astype(str)
        proposals, pairs = self._propose(probes, config, ctx)
        kb = build_knowledge_base(captions, pairs, config.knowledge_base)
        kb_frame = kb.to_frame(captions)
        support = {b.bias_id: b.support for b in kb.biases}
        kb_rows = kb_frame.assign(
            step="knowledge_base",
            status="ok",
            support=kb_frame["bias_id"].map(support),
            classes=[_json(list(c)) for c in kb_frame["classes"]],
        )
        log_rows = pd.DataFrame(
            {"step": "knowledge_base_log", "status": "ok", "text": [_json(s) for s in kb.steps]}
        )
        vqa_config, vqa = self._vqa_model(config, ctx)
        try:
            # each image's questions go out as soon as it exists (on a cluster), then all of
            # them are asked in order here: from the cache, so the table is the same anywhere
            with ctx.ahead(
                lambda rows: self._questions(kb_frame, pd.DataFrame(rows), config)[1],
                _any_answer,
                vqa,
            ) as early:
                images = self._draw(kb_frame, config, ctx, early)
            answers = self._ask(kb_frame, images, config, ctx, vqa_config, vqa)
        finally:
            vqa.close()
        parts = [proposals, kb_rows, log_rows, images, answers]
        out = pd.concat([p for p in parts if len(p)], ignore_index=True)
        front = ["step", "probe_id", "caption_id", "bias_id", "sample_index", "status"]
        return out[[c for c in front if c in out] + [c for c in out.columns if c not in front]]

    def _propose(
        self, probes: pd.DataFrame, config: OpenBiasConfig, ctx: StepContext
    ) -> tuple[pd.DataFrame, list[tuple[str, BiasProposal]]]:
        """Stage 1: one row per caption (``step`` proposal) and the proposal pairs."""
        if config.captions == "published":
            _, pairs = load_captions(config)
            counts = pd.Series([c for c, _ in pairs]).value_counts()
            rows = probes[["probe_id", "caption_id"]].assign(
                step="proposal",
                status="ok",
                proposer="published",
                n_proposals=[int(counts.get(c, 0)) for c in probes["caption_id"]],
            )
            return rows, pairs or []
        if config.proposer == "scripted":
            backend: Any = ScriptedProposer(load_scripted(config.scripted_proposals))
            name = "scripted"
        else:
            backend = build_backend(_model_config(config.proposer, ctx.models, "proposer", "llm"))
            name = (
                config.proposer
                if isinstance(config.proposer, str)
                else backend.fingerprint.get("model_id")
            )
        # constrained where the backend can enforce the schema (hf, embedded, openai); the
        # others (scripted, simulators) decode freely, and the table says which ran
        constrained = config.constrained_decoding and backend.supports_json_schema
        schema = proposals_json_schema() if constrained else None
        calls = [
            Call(
                probe_id=r["probe_id"],
                messages=tuple(json.loads(r["messages"])),
                max_attempts=config.proposal_max_attempts,
                max_tokens=config.proposal_max_tokens,
                json_schema=schema,
                meta={
                    "policy": PROPOSAL_POLICY,
                    "caption_id": str(r["caption_id"]),
                    "repair": config.repair_trailing_commas,
                    "salvage": config.salvage_truncated,
                },
            )
            for r in probes.to_dict("records")
        ]
        try:
            answers = ctx.run(calls, self.judge, f"{ctx.desc} proposals", backend=backend)
        finally:
            backend.close()
        pairs, statuses = collect_proposals(
            probes, answers, config.repair_trailing_commas, config.salvage_truncated
        )
        rows = answers[["probe_id", "status", "attempts", "text", "error"]].rename(
            columns={"status": "runner_status"}
        )
        rows = rows.assign(caption_id=probes["caption_id"].astype(str).to_numpy(), step="proposal")
        rows = rows.merge(statuses.drop(columns="attempts"), on="caption_id", how="left")
        return rows.assign(
            proposer=name,
            proposer_simulated=bool(getattr(backend, "simulated", False)),
            decoding="json_schema" if constrained else "free",
        ), pairs

    def _draw(
        self, kb: pd.DataFrame, config: OpenBiasConfig, ctx: StepContext, on_images: OnRows
    ) -> pd.DataFrame:
        """Stage 2: ``images_per_caption`` images of every caption of the knowledge base; the
        images' rows (``probe_id``, ``caption_id``, ``sample_index``, ``status``,
        ``true_attributes`` and their ``path`` in the image store) handed to ``on_images`` as
        they arrive."""
        probes = image_probes(kb, config.images_per_caption)
        if not len(probes):
            return pd.DataFrame()
        asked = {
            c: [
                {
                    "bias_id": r["bias_id"],
                    "name": r["name"],
                    "label": r["label"],
                    "classes": list(r["classes"]),
                }
                for r in g.to_dict("records")
            ]
            for c, g in kb.groupby("caption_id", sort=False)
        }
        simulated = bool(getattr(ctx.backend, "simulated", False))
        calls, ids = [], {}
        for r in probes.to_dict("records"):
            biases = asked[r["caption_id"]]
            call_id = r["probe_id"]
            if simulated:  # a simulated image records the classes of the biases asked about it
                call_id = f"{call_id}-{stable_hash(biases, 12)}"
            ids[call_id] = r["probe_id"]
            question = OpenSetImageQuestion(
                policy=POLICY,
                caption_id=r["caption_id"],
                biases=biases,
                n_images=config.images_per_caption,
                plant=config.simulated.t2i,
            )
            calls.append(
                prompt_call(
                    call_id,
                    r["caption"],
                    int(r["sample_index"]),
                    max_attempts=config.image_max_attempts,
                    question=question,
                )
            )
        caption_of = dict(zip(probes["probe_id"], probes["caption_id"], strict=True))

        def drawn_now(rows: list[dict[str, Any]]) -> None:
            on_images(
                [
                    {
                        **row,
                        "probe_id": ids[row["probe_id"]],
                        "caption_id": caption_of[ids[row["probe_id"]]],
                    }
                    for row in rows
                ]
            )

        # images are never judged
        drawn = ctx.run(calls, _any_answer, f"{ctx.desc} images", on_rows=drawn_now)
        drawn["seed"] = [
            derive_seed(ctx.seed, c, s, a - 1)
            for c, s, a in zip(
                drawn["probe_id"], drawn["sample_index"], drawn["attempts"], strict=True
            )
        ]
        drawn["probe_id"] = drawn["probe_id"].map(ids)
        return drawn.merge(
            probes[["probe_id", "caption_id", "caption"]], on="probe_id", how="left"
        ).assign(step="image")

    def _vqa_model(self, config: OpenBiasConfig, ctx: StepContext) -> tuple[Any, Any]:
        """Stage 3's VQA model: its config and backend (a SIMULATED VLM only for a simulated
        model under test)."""
        vqa_config = _model_config(config.vqa_model, ctx.models, "vqa_model", "vlm")
        if vqa_config.backend == "simulated" and not ctx.model.simulated:
            raise ValueError(
                "methodologies.open_bias.vqa_model is a SIMULATED VLM, which answers "
                "from the planted classes of a simulated t2i model's images; "
                f"{ctx.model.name} is a real model: set vqa_model to a real VLM"
            )
        return vqa_config, build_backend(vqa_config)

    def _questions(
        self, kb: pd.DataFrame, images: pd.DataFrame, config: OpenBiasConfig
    ) -> tuple[pd.DataFrame, list[Call]]:
        """Each bias's question on each ``ok`` image of its captions (``images``: rows of
        the image table with ``path``, the file the VLM reads): the probes and their calls."""
        ok = images[images["status"] == "ok"] if len(images) else images
        if not len(ok):
            return pd.DataFrame(), []
        probes = vqa_probes(kb, ok)
        path = dict(zip(ok["probe_id"], ok["path"], strict=True))
        truth = {
            pid: json.loads(t) if isinstance(t, str) else {}
            for pid, t in zip(ok["probe_id"], ok["true_attributes"], strict=True)
        }
        calls = []
        for r in probes.to_dict("records"):
            choices = json.loads(r["choices"])
            # SIMULATORS read the planted class; real models never see it
            meta = OpenVQAQuestion(
                policy=POLICY,
                options=choices[:-1],
                truth=truth[r["image_probe_id"]].get(r["bias_id"]),
                plant=config.simulated.vlm,
            ).meta()
            calls.append(
                Call(
                    probe_id=r["probe_id"],
                    messages=(vlm_message(r["prompt"], [path[r["image_probe_id"]]]),),
                    max_attempts=1,
                    max_tokens=config.vqa_max_tokens,
                    meta=meta,
                )
            )
        return probes, calls

    def _ask(
        self,
        kb: pd.DataFrame,
        images: pd.DataFrame,
        config: OpenBiasConfig,
        ctx: StepContext,
        vqa_config: Any,
        backend: Any,
    ) -> pd.DataFrame:
        """Stage 3: each bias's question on each image of its captions, to the VQA model."""
        if len(images):  # the exported copies, in the step's image folder
            folder = Path(ctx.image_dir)
            images = images.assign(
                path=[str(folder / f) if isinstance(f, str) else None for f in images["file"]]
            )
        probes, calls = self._questions(kb, images, config)
        if not calls:
            return pd.DataFrame()
        answers = ctx.run(calls, _any_answer, f"{ctx.desc} VQA", backend=backend)
        answers = answers.drop(columns="sample_index").merge(probes, on="probe_id", how="left")
        name = config.vqa_model if isinstance(config.vqa_model, str) else vqa_config.model_id
        return answers.assign(
            step="vqa", vqa_model=name, vqa_simulated=vqa_config.backend == "simulated"
        )

    # ---- label

    def label(
        self,
        probes: pd.DataFrame,
        responses: pd.DataFrame,
        config: OpenBiasConfig,
        ctx: StepContext,
    ) -> pd.DataFrame:
        """VQA answers mapped to a class (``label``, ``tier``, ``similarity``, ``encoder``);
        the proposal, knowledge-base and image rows pass through."""
        if responses.empty:
            return pd.DataFrame(columns=["step", "status"])
        vqa = responses[responses["step"] == "vqa"]
        parts = [responses[responses["step"] != "vqa"]]
        if len(vqa):
            mapper = AnswerToClass(
                threshold=config.answer_threshold,
                cache_path=Path(ctx.cache_dir) / "answer_mapper" / "open_bias_embeddings.npz",
                readings=ctx.open_cache,
            )
            questions = vqa[
                ["probe_id", "bias_id", "caption_id", "sample_index", "image_probe_id", "choices"]
            ]
            labelled = label_answers(questions, vqa[["probe_id", "status", "text"]], mapper)
            extra = vqa[["probe_id", "vqa_model", "vqa_simulated"]]
            parts.append(labelled.merge(extra, on="probe_id", how="left").assign(step="vqa"))
        return pd.concat(parts, ignore_index=True)

    # ---- metrics

    def metrics(
        self, labels: pd.DataFrame, config: OpenBiasConfig, ctx: StepContext | None = None
    ) -> MetricsResult:
        steps = labels["step"] if "step" in labels else pd.Series(dtype=str)
        # a proposer whose every answer was unusable finds no bias: the labels then hold no
        # knowledge-base or VQA rows, nor their columns (issue 44), and the study says so
        labels = labels.reindex(columns=list(dict.fromkeys([*labels.columns, *_LABEL_COLUMNS])))
        proposals = labels[steps == "proposal"]
        kb = labels[steps == "knowledge_base"]
        vqa = labels[steps == "vqa"]
        images = labels[steps == "image"]
        statuses = proposals.assign(n_proposals=proposals.get("n_proposals", 0)).fillna(
            {"n_proposals": 0}
        )
        yield_ = (
            proposal_yield(statuses[["caption_id", "status", "n_proposals"]])
            if len(proposals)
            else float("nan")
        )
        classes_of = {b: json.loads(c) for b, c in zip(kb["bias_id"], kb["classes"], strict=True)}
        label_of = dict(zip(kb["bias_id"], kb["label"], strict=True))
        if classes_of:
            part = (
                vqa[["bias_id", "caption_id", "label", "status"]]
                if len(vqa)
                else pd.DataFrame(columns=["bias_id", "caption_id", "label", "status"])
            )
            table = severity_table(part, classes_of, config.severity)
            table["label"] = table["bias_id"].map(label_of)
            table["bias_key"] = [re.sub(r"[^A-Za-z0-9_\-./ ]", "_", b) for b in table["bias_id"]]
            table["bias_rank"] = table[f"rank_{config.severity.rank_by}"]
            table["classes"] = table["classes"].map("|".join)
            table["distribution"] = table.get(
                "distribution", pd.Series(index=table.index, dtype=object)
            ).map(lambda d: _json(d) if isinstance(d, dict) else None)
            table["proposal_yield"] = yield_
            scores = table.reindex(columns=SCORE_COLUMNS)
        else:
            scores = pd.DataFrame(columns=SCORE_COLUMNS)
        log = [json.loads(t) for t in labels.loc[steps == "knowledge_base_log", "text"]]
        summary: dict[str, Any] = {
            "simulated": {
                "t2i": bool(ctx.model.simulated) if ctx is not None else None,
                "proposer": bool(proposals["proposer_simulated"].any())
                if "proposer_simulated" in proposals
                else False,
                "vqa": bool(vqa["vqa_simulated"].any()) if "vqa_simulated" in vqa else None,
            },
            "proposals": {
                "captions": int(len(proposals)),
                "proposer": str(proposals["proposer"].iloc[0]) if len(proposals) else None,
                "decoding": str(proposals["decoding"].iloc[0])
                if "decoding" in proposals and len(proposals)
                else None,
                "yield": None if pd.isna(yield_) else round(float(yield_), 6),
                "statuses": {str(k): int(v) for k, v in proposals["status"].value_counts().items()},
            },
            "knowledge_base": {
                "biases": int(kb["bias_id"].nunique()),
                "bias_captions": int(len(kb)),
                "steps": log,
            },
            "images": {str(k): int(v) for k, v in images["status"].value_counts().items()}
            if len(images)
            else {},
            "vqa": {
                "answers": int(len(vqa)),
                "statuses": {str(k): int(v) for k, v in vqa["status"].value_counts().items()}
                if len(vqa)
                else {},
                "tiers": {str(k): int(v) for k, v in vqa["tier"].value_counts().items()}
                if len(vqa)
                else {},
                "unknown": int((vqa["label"] == UNKNOWN).sum()) if len(vqa) else 0,
                "encoder": str(vqa["encoder"].dropna().iloc[0])
                if len(vqa) and vqa["encoder"].notna().any()
                else None,
            },
            "severity": config.severity.model_dump(mode="json"),
        }
        return MetricsResult(scores=scores, summary=summary)
