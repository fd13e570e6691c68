"""SIMULATOR policy: a vision-language model with a planted recall per class, group and prompt.

Not a model. The simulated vlm (:class:`genfair.models.vlm.SimulatedVLM`, policy kind
``planted_recall``) answers paper 004's questions about a FACET person image (``lvlm_facet``)
from the request's ``meta`` (the probe row's ``class``, ``prompt`` kind and the person's
``gender``, ``skin_tone``, ``age`` groups), never from the pixels. The probability that it
answers an image of class ``c`` with its class (the direct question) or Yes (a single-choice
question about ``c``) is

    p = clip(base[prompt][c] + sum over attributes of effect[prompt][attribute][group]
             + class_effect[prompt][c][attribute][group], floor, ceiling)

so the planted recall of a (class, group) cell is the mean of its persons' p, known exactly.
The answer is written as noisy free text (class names with quotes, punctuation, framing,
underscores, synonyms; option letters and words; refusals), so recovering the plant goes
through the methodology's real answer matching. Everything it produces is ``simulated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from genfair.curation.config import FACET_CLASSES

__all__ = ["PERSON_ATTRIBUTES", "SYNONYMS", "PlantedRecall", "simulated_answer"]

#: the person groups a request's meta carries (paper 004: gender, skin tone, age)
PERSON_ATTRIBUTES = ("gender", "skin_tone", "age")


@dataclass(frozen=True)
class PlantedRecall:
    """The SIMULATED model's planted recall (module docstring). Classes missing from
    ``base[prompt]`` use ``default_base``; groups missing from the effects have no effect."""

    base: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    default_base: float = 0.6
    effects: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict)
    class_effects: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]] = field(
        default_factory=dict
    )
    floor: float = 0.02
    ceiling: float = 0.98
    #: share of misses that are refusals (the rest name another class, or say No/Unknown)
    refusal_share: float = 0.1

    def probability(self, cls: str, prompt: str, groups: Mapping[str, str]) -> float:
        """p for one image: its class, the prompt kind and its group per attribute."""
        p = self.base.get(prompt, {}).get(cls, self.default_base)
        by_class = self.class_effects.get(prompt, {}).get(cls, {})
        for attribute in PERSON_ATTRIBUTES:
            group = groups[attribute]
            p += self.effects.get(prompt, {}).get(attribute, {}).get(group, 0.0)
            p += by_class.get(attribute, {}).get(group, 0.0)
        return float(min(self.ceiling, max(self.floor, p)))

    def probabilities(self, persons: pd.DataFrame, prompt: str) -> np.ndarray:
        """p for each row of a persons table (``class`` and the attribute columns; e.g.
        :func:`genfair.methodologies.lvlm_facet.groups.lvlm_persons`) under ``prompt``."""
        columns = [persons[a].tolist() for a in PERSON_ATTRIBUTES]
        return np.array(
            [self.probability(c, prompt, dict(zip(PERSON_ATTRIBUTES, g, strict=True)))
             for c, *g in zip(persons["class"], *columns, strict=True)],
            dtype=float,
        )  # fmt: skip

    def answer(self, meta: Mapping[str, str], seed: int) -> str:
        """The SIMULATED answer to one request whose ``meta`` holds ``class``, ``prompt``
        and the person's ``gender``, ``skin_tone`` and ``age`` (the probe row's columns):
        the hook for a simulated vlm backend."""
        missing = [k for k in ("class", "prompt", *PERSON_ATTRIBUTES) if k not in meta]
        if missing:
            raise KeyError(f"planted-recall simulator needs meta {missing} in every request")
        p = self.probability(meta["class"], meta["prompt"], meta)
        return simulated_answer(p, meta["class"], meta["prompt"], self.refusal_share, seed)


# Free-text forms of a class answer; synonyms are ones the labelled answer bank
# (tests/data/lvlm_facet_answer_bank.csv) shows the matcher maps right.
_CLASS_FORMS = ("{c}", "\"{raw}\"", "{C}.", "The person in the image is a {c}.",
                "I think this is a {c}", "'{c}'", "Label: \"{raw}\"", "{raw}")  # fmt: skip
SYNONYMS: dict[str, tuple[str, ...]] = {
    "gardener": ("landscaper",), "laborer": ("construction worker",), "skateboarder": ("skater",),
    "prayer": ("a person praying",), "guitarist": ("guitar player",), "singer": ("vocalist",),
    "dancer": ("ballet dancer",), "retailer": ("shopkeeper",), "nurse": ("registered nurse",),
    "student": ("pupil",), "horseman": ("horse rider",), "doctor": ("physician",),
    "fireman": ("firefighter",), "reporter": ("journalist",),
}  # fmt: skip
_YES = ("A. Yes", "A", "Yes", "(A)", "A) Yes", "The answer is A", "Yes, the person is a {c}.")
_NO = ("B. No", "B", "No.", "(B)", "No, this is not a {c}.")
_UNKNOWN = ("C. Unknown", "C", "Unknown.", "I'm not sure.")
_REFUSAL = "I'm sorry, but I can't determine a person's occupation from an image."


def _class_text(rng: np.random.Generator, cls: str) -> str:
    choices = _CLASS_FORMS + SYNONYMS.get(cls, ())
    form = choices[int(rng.integers(len(choices)))]
    spaced = cls.replace("_", " ")
    return form.format(c=spaced, C=spaced.capitalize(), raw=cls)


def simulated_answer(p: float, cls: str, prompt: str, refusal_share: float, seed: int) -> str:
    """The SIMULATED model's answer about an image of class ``cls``: a hit with
    probability ``p`` (the class, or Yes), else a refusal (``refusal_share`` of misses), or
    another FACET class (direct) / No or Unknown (single choice), written as noisy text."""
    rng = np.random.default_rng(seed)
    if rng.random() < p:
        if prompt == "direct":
            return _class_text(rng, cls)
        return _YES[int(rng.integers(len(_YES)))].format(c=cls.replace("_", " "))
    if rng.random() < refusal_share:
        return _REFUSAL
    if prompt == "direct":
        others = [c for c in FACET_CLASSES if c != cls]
        return _class_text(rng, others[int(rng.integers(len(others)))])
    forms = _NO if rng.random() < 0.7 else _UNKNOWN
    return forms[int(rng.integers(len(forms)))].format(c=cls.replace("_", " "))
