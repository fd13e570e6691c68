"""``methodologies.lvlm_facet`` (conf/methodology/lvlm_facet.yaml): validated settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from genfair.limits import MAX_RECORDS, MAX_TOKENS
from genfair.methodologies.lvlm_facet.groups import SkinRule, resolve_classes
from genfair.methodologies.lvlm_facet.prompts import PROMPT_KINDS
from genfair.models.config import SimulatedVLMRecallPolicy
from genfair.strict import Strict

__all__ = ["LvlmFacetConfig"]

PromptKind = Literal["direct", "is_there", "person_is"]


class LvlmFacetConfig(Strict):
    """What paper 004's study asks, of which images, and how answers become recalls."""

    #: ``persons.parquet`` of the curate_facet stage (one row per annotated FACET person)
    persons: str = "data/curated/facet/persons.parquet"
    #: the FACET release's image folder (``image: image``); a crop's folder is the persons
    #: table's own (``image: crop``)
    images_dir: str = "data/curated/facet_fixture/images"
    #: what the model sees: the whole image (the paper) or curation's person crop
    image: Literal["image", "crop"] = "image"
    #: ``paper`` (the 13 classes of Table 2), ``all`` (FACET's 52) or a list of class names
    classes: Literal["paper", "all"] | list[str] = "paper"
    #: how the annotators' Monk votes become light / medium / dark (docs/methodology.md)
    skin_rule: SkinRule = "majority_bucket"
    #: prompt kinds asked (Table 3): p1 ``direct``, p2 ``is_there``, p3 ``person_is``
    prompts: list[PromptKind] = Field(default_factory=lambda: list(PROMPT_KINDS), min_length=1)
    #: the direct question's class list order: None = FACET's order; a seed shuffles it
    #: (the authors' ``random_prompt``)
    shuffle_seed: int | None = None
    #: a class inside the prompts: ``raw`` (released name, as the authors' code) or ``spaced``
    class_display: Literal["raw", "spaced"] = "raw"
    #: keep at most this many persons (a seeded sample; None = every selected person)
    max_persons: int | None = Field(None, ge=1, le=MAX_RECORDS)
    #: answer length cap sent with every call (the answer is one label or one letter)
    max_tokens: int = Field(64, ge=1, le=MAX_TOKENS)
    #: answer-matching text encoder: ``minilm``, ``sentence_transformers:<path>``,
    #: ``clip_text:<path>`` (lvlm_facet.matching.make_encoder)
    encoder: str = "minilm"
    #: an encoder match below this cosine similarity maps to no label (None: argmax, as the paper)
    min_similarity: float | None = Field(None, ge=-1.0, le=1.0)
    #: interval level of recalls and disparities
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    #: an empty (class, group) cell's recall: None = n/a; 0 = the paper's appendix tables
    empty_group_recall: Literal[0] | None = None
    #: what the SIMULATED VLM plants when it answers (each call carries it; a real model never
    #: reads it): paper-shaped, the direct question favours light over dark skin (+0.3) and
    #: younger over older people (+0.25), single choice p3 males (+0.25)
    simulated: SimulatedVLMRecallPolicy = SimulatedVLMRecallPolicy(
        kind="planted_recall",
        default_base=0.6,
        effects={
            "direct": {
                "skin_tone": {"light": 0.15, "dark": -0.15},
                "age": {"younger": 0.12, "older": -0.13},
                "gender": {"female": 0.03},
            },
            "is_there": {"gender": {"male": 0.02}, "age": {"older": -0.04}},
            "person_is": {"gender": {"male": 0.125, "female": -0.125}, "skin_tone": {"dark": 0.02}},
        },
        class_effects={"direct": {"nurse": {"gender": {"female": 0.2, "male": -0.15}}}},
        floor=0.02,
        ceiling=0.98,
        refusal_share=0.1,
    )

    @field_validator("classes")
    @classmethod
    def _classes(cls, value: str | list[str]) -> str | list[str]:
        resolve_classes(value)  # a clear error naming unknown classes
        return value

    @field_validator("prompts")
    @classmethod
    def _prompts(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"prompts {value}: each prompt kind once")
        return value
