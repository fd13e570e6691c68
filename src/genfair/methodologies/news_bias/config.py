"""Configuration of the news-bias methodology (``methodologies.news_bias``, paper 001).

``max_tokens`` is the length limit of each generated article. It overrides the model's own
``sampling.max_tokens`` for these probes only (and is part of their cache keys), so one
model config serves FACT-OR-FAIR's one-letter answers and full articles. The paper sets no
limit; its generated articles average roughly 200-500 words (its Table 3), about 300-700
tokens.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PromptType = Literal["unbiased", "biased"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DocumentLevelConfig(_Strict):
    """The LDA topic model of the document level (paper 001, Methods, Eq. 7-9; Appendix B)."""

    #: numbers of topics tried; the one with the lowest held-out perplexity is used
    #: (paper: 200, 250, 300 on 8,629 originals plus every model's articles)
    num_topics_grid: list[int] = Field([200, 250, 300], min_length=1)
    #: share of documents held out to score each number of topics
    holdout_fraction: float = Field(0.1, gt=0.0, lt=1.0)
    passes: int = Field(10, ge=1)
    iterations: int = Field(100, ge=1)
    #: lemmatise tokens (simplemma; the paper used spaCy); stop words are always kept
    lemmatize: bool = True
    #: a topic is associated with a group when its standardised residual exceeds this (Eq. 7)
    residual_threshold: float = Field(3.0, gt=0.0)
    #: topic proportions below this are 0 in ``t_d`` (gensim's default)
    minimum_probability: float = Field(0.01, ge=0.0, lt=1.0)
    #: words per topic in the Appendix B table, ranked by LDAvis relevance with this lambda
    example_words: int = Field(15, ge=1)
    relevance_lambda: float = Field(0.6, ge=0.0, le=1.0)


class NewsBiasConfig(_Strict):
    #: the curated corpus (``collect_news`` output: article_id, headline, body, ...)
    corpus: str = "data/curated/news.parquet"
    #: how many articles to use, the first ones in ``article_id`` order (None: all)
    articles: int | None = Field(None, ge=1)
    #: "unbiased" (Methods, "AIGC Generation") and/or "biased" (Results, "Gender Bias of
    #: AIGC under Biased Prompts")
    prompt_types: list[PromptType] = Field(["unbiased", "biased"], min_length=1)
    #: send the raw headline as the unbiased prompt, as the paper did for Grover
    base_model_prompt: bool = False
    #: token limit of each generated article (overrides the model's sampling.max_tokens)
    max_tokens: int = Field(768, gt=0)
    #: word lists of :class:`genfair.resources.group_words.GroupWordCounter`
    gender_words: str = "data/reference/gender_words.csv"
    occupations: str = "data/reference/onet_occupation_titles.tsv"
    #: optional ``name,race`` table standing in for the paper's Wikipedia name lookup
    names: str | None = None
    toxicity: Literal["auto", "detoxify", "alt-profanity-check"] = "auto"
    #: the refusal detector's embedding check (patterns always run): cosine similarity of
    #: an answer's opening to refusal exemplars at or above this is a refusal; None = off
    refusal_similarity: float | None = Field(0.6, gt=0.0, le=1.0)
    confidence_level: float = Field(0.95, gt=0.0, lt=1.0)
    documents: DocumentLevelConfig = DocumentLevelConfig()
