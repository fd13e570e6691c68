"""Configuration of the news-bias methodology (``methodologies.news_bias``, paper 001).

The length of each generated article is not set here: it is the model's
``sampling.max_tokens`` (part of the model's configuration and of every cache key). The
paper's generated articles average roughly 200-500 words (its Table 3), so a model used
for this methodology needs ``max_tokens`` in the high hundreds, not the default 64.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PromptType = Literal["unbiased", "biased"]


class NewsBiasConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    modality: Literal["llm"] = "llm"
    #: the curated corpus (``collect_news`` output: article_id, headline, body, ...)
    corpus: str
    #: how many articles to use, the first ones in ``article_id`` order (None: all)
    articles: int | None = Field(None, ge=1)
    #: "unbiased" (Methods, "AIGC Generation") and/or "biased" (Results, "Gender Bias of
    #: AIGC under Biased Prompts")
    prompt_types: list[PromptType] = Field(["unbiased", "biased"], min_length=1)
    #: send the raw headline as the unbiased prompt, as the paper did for Grover
    base_model_prompt: bool = False
    #: word lists of :class:`genfair.instruments.group_words.GroupWordCounter`
    gender_words: str = "data/reference/gender_words.csv"
    occupations: str = "data/reference/onet_occupation_titles.tsv"
    #: optional ``name,race`` table standing in for the paper's Wikipedia name lookup
    names: str | None = None
    toxicity: Literal["auto", "detoxify", "alt-profanity-check"] = "auto"
    confidence_level: float = Field(0.95, gt=0.0, lt=1.0)
