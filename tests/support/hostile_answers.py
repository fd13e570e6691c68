"""Every parser of model text, and answers built to make a parser superlinear (issue 44, point
5): shared by tests/test_parsers_linear.py (1 MB within a second) and
benchmarks/test_parsers_linear.py (100 kB vs 1 MB)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

#: repeated to any length: each once made some parser rescan the text from every repeat
UNITS = (
    "B ",  # FACT-OR-FAIR: one backward cue search per letter token (1 MB did not finish)
    "a ",  # the answer mapper: one copy of the text per "a " prefix stripped
    "'a ",  # refusal: a quote opened and never closed, rescanned from every apostrophe
    "“",  # the same with curly quotes
    "A. ",  # sentence splitting and the article "A"
    "B" + " " * 50,  # adjacent \s* in LVLM-FACET's letter rules
    '{"bias": [',  # OpenBias: nesting deep enough to overflow the JSON decoder
    "[",
    "the ",
    '"answer": "B", ',
)


class _Encoder:
    """A deterministic stand-in encoder: the rule pre-pass is timed, not an embedding."""

    name = "stand-in"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.random.default_rng(0).normal(size=(len(texts), 8))


@cache
def parsers() -> dict[str, Callable[[str], Any]]:
    """name -> a callable reading one model answer, for every methodology's parser."""
    from genfair.instruments.answer_mapper import clean_answer
    from genfair.instruments.refusal import is_refusal, opening
    from genfair.methodologies.fact_or_fair.parsing import parse_choice
    from genfair.methodologies.iris.probes import parse_rating
    from genfair.methodologies.iris.tournament import parse_tournament_answer
    from genfair.methodologies.iris.understanding import objective_choice
    from genfair.methodologies.lvlm_facet.matching import AnswerMatcher
    from genfair.methodologies.open_bias.proposals import parse_proposals
    from genfair.resources.group_words import GroupWordCounter

    options = [
        {"letter": "A", "label": "Asian"},
        {"letter": "B", "label": "White"},
        {"letter": "C", "label": "Carlos Garcia"},
    ]
    classes, choice = AnswerMatcher("class", _Encoder()), AnswerMatcher("choice", _Encoder())
    words = GroupWordCounter.from_files()
    return {
        "fact_or_fair choice": lambda t: parse_choice(t, options),
        "iris rating": parse_rating,
        "iris tournament": lambda t: parse_tournament_answer(t, ["nurse", "doctor"]),
        "iris objective choice": lambda t: objective_choice(t, ["yes", "no"]),
        "answer mapper (iris, open_bias vqa)": clean_answer,
        "lvlm_facet class rules": classes.prepass,
        "lvlm_facet choice rules": choice.prepass,
        "open_bias proposals": lambda t: parse_proposals(t, True, True),
        "news_bias refusal": is_refusal,
        "news_bias refusal opening": opening,
        "news_bias gender words": lambda t: words.find(t, "gender"),
        "news_bias race words": lambda t: words.find(t, "race"),
    }


def parsers_and_splitter() -> dict[str, Callable[[str], Any]]:
    """:func:`parsers` and news_bias's sentence splitter (nupunkt): linear too, but 0.9 s of
    CPU for 1 MB of "A. A. A." here, too close to a second for a test; the benchmark only."""
    from genfair.instruments.sentences import split_sentences

    return {**parsers(), "news_bias sentences": split_sentences}


def hostile(unit: str, size: int) -> str:
    """``unit`` repeated to exactly ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]
