"""Configuration of OpenBias (``methodologies.open_bias``, paper 003). Defaults: the paper's
text, or the authors' code where the paper is silent; decisions in ``docs/methodology.md``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from genfair.limits import MAX_ATTEMPTS, MAX_RECORDS, MAX_SAMPLES, MAX_SMALL, MAX_TOKENS
from genfair.methodologies.open_bias.captions import CAPTIONS_PER_IMAGE, DEFAULT_CAPTION_SET
from genfair.methodologies.open_bias.knowledge_base import KnowledgeBaseConfig
from genfair.methodologies.open_bias.scoring import SeverityConfig
from genfair.models.config import (
    SimulatedOpenSetBias,
    SimulatedOpenSetPolicy,
    SimulatedOpenVQAPolicy,
)
from genfair.strict import Strict

__all__ = ["OpenBiasConfig"]


_MOSTLY_MALE = SimulatedOpenSetBias(
    pattern="everywhere",
    other_weight=0.5,
    weights={"male": 4, "man": 4, "men": 4, "female": 1, "woman": 1, "women": 1},
)
_OWN_AGE = SimulatedOpenSetBias(pattern="within_caption", share=0.9)
_UNBIASED = SimulatedOpenSetBias(pattern="unbiased")


class SimulatedPlants(Strict):
    """``methodologies.open_bias.simulated``: what the SIMULATORS plant when they answer
    OpenBias (each call carries its policy; a real model never reads it): the open-set biases
    of the simulated t2i model's images, and how the simulated VLM answers about them."""

    t2i: SimulatedOpenSetPolicy = SimulatedOpenSetPolicy(
        sampling="random",
        refusal_rate=0.0,
        biases={
            "gender": _MOSTLY_MALE,
            "person gender": _MOSTLY_MALE,
            "age": _OWN_AGE,
            "person age": _OWN_AGE,
            "race": _UNBIASED,
            "person race": _UNBIASED,
            "ethnicity": _UNBIASED,
        },
        default=SimulatedOpenSetBias(pattern="within_caption", share=0.7),
    )
    vlm: SimulatedOpenVQAPolicy = SimulatedOpenVQAPolicy(
        confusion=0.1,
        unknown_rate=0.05,
        refusal_rate=0.0,
        unknown_text="unknown",
        phrasings=[
            "{answer}",
            "The person in the image is {answer}.",
            "I think it is {answer}.",
            "Answer: {answer}",
            "{answer}, I would say",
        ],
    )


class OpenBiasConfig(Strict):
    modality: Literal["t2i"] = "t2i"
    #: where captions (and, for "published", the proposals) come from
    captions: Literal["project", "coco", "flickr30k", "published"] = "project"
    caption_set: str = DEFAULT_CAPTION_SET
    #: COCO 2017: annotations/captions_*.json and instances_*.json (or person_keypoints_*.json)
    coco_captions: str | None = None
    coco_instances: str | None = None
    #: Flickr30k: captions.txt / results.csv / results_20130124.token, or their folder
    flickr30k: str | None = None
    #: the authors' released proposals (coco_train.json / flickr_30k.json): skips stage 1
    published_proposals: str | None = None
    captions_per_image: int | None = Field(CAPTIONS_PER_IMAGE, ge=1, le=MAX_SMALL)
    #: use only the first N captions (None: all); a scale knob, not in the paper
    max_captions: int | None = Field(None, ge=1, le=MAX_RECORDS)

    #: stage 1: the LLM that proposes biases: a model name of the study (``models.<name>``),
    #: an inline model config, or ``scripted`` (a labelled scripted LLM answering
    #: ``scripted_proposals``); not needed when ``captions: published``
    proposer: str | dict[str, Any] | None = None
    #: ``proposer: scripted``: fixed answers, ``{caption_id: {"bias": [...]}}`` (a JSON file
    #: or inline); a caption not listed gets ``{"bias": []}``
    scripted_proposals: str | dict[str, Any] | None = None
    #: calls per caption until its answer parses (the authors made one)
    proposal_max_attempts: int = Field(1, ge=1, le=MAX_ATTEMPTS)
    #: constrain the proposer's answers to the proposal JSON schema where its backend can
    #: (``supports_json_schema``: hf, embedded, openai); the others decode freely. False: free
    #: decoding and post-processing everywhere, as the authors did. The proposal rows'
    #: ``decoding`` column says which ran
    constrained_decoding: bool = True
    repair_trailing_commas: bool = True
    #: keep the complete bias items of an answer cut off by the token limit (small models)
    salvage_truncated: bool = False
    proposal_max_tokens: int = Field(1024, ge=64, le=MAX_TOKENS)

    knowledge_base: KnowledgeBaseConfig = KnowledgeBaseConfig()
    #: stage 2: images per caption, each with its own seed (paper: N = 10)
    images_per_caption: int = Field(10, ge=1, le=MAX_SAMPLES)
    #: a refused image is asked again up to this many times
    image_max_attempts: int = Field(1, ge=1, le=MAX_ATTEMPTS)
    #: stage 3: the VQA model (a vlm model name of the study, or an inline config) and the
    #: answer -> class similarity floor
    vqa_model: str | dict[str, Any] | None = None
    vqa_max_tokens: int = Field(16, ge=1, le=MAX_TOKENS)
    answer_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    severity: SeverityConfig = SeverityConfig()
    simulated: SimulatedPlants = SimulatedPlants()

    @model_validator(mode="after")
    def _source_paths(self) -> OpenBiasConfig:
        needed = {
            "coco": ("coco_captions", "coco_instances"),
            "flickr30k": ("flickr30k",),
            "published": ("published_proposals",),
        }.get(self.captions, ())
        missing = [key for key in needed if getattr(self, key) is None]
        if missing:
            raise ValueError(f"captions: {self.captions} needs {', '.join(missing)} (a path)")
        if self.proposer == "scripted" and self.scripted_proposals is None:
            raise ValueError(
                "proposer: scripted needs scripted_proposals (a "
                "JSON file or a mapping caption_id -> answer)"
            )
        return self
