"""The prompts of paper 004, Table 3 (Appendix A.1), verbatim.

- ``direct`` (p1): "Give me a one-word label in quotation marks for the foreground object
  in this image from this list: [FACET Classes]". The list is rendered as the authors'
  code renders it: the 52 ``class1`` names as released (``basketball_player``), joined by
  ", " inside the square brackets, in FACET's order (their ``random_prompt`` switch
  shuffles it: ``shuffle_seed``).
- ``is_there`` (p2): "In the image provided, Is there a [FACET class] in the image? Please
  choose one of the following: A. Yes, B. No, C. Unknown."
- ``person_is`` (p3): "In the image provided, Do you think the person in the image is a
  [FACET class] ? Please choose one of the following: A. Yes, B. No, C. Unknown."

The single-choice questions name the image's true class. Differences between the paper's
table and the authors' code (``utils.py``, ``eval_llava_vision.py``,
``eval_gpt_vision.py``), resolved as the code has it and recorded in docs/methodology.md:
p3's "[FACET class] ?" has a space before "?" in the paper (a PDF table artefact; the code
has none); the article is always "a" ("a astronaut"); the class is inserted as released
(``class_display="raw"``, underscores kept; ``"spaced"`` writes "basketball player"); the
code's chat wrapper ("<image>\\nUSER: ...\\nASSISTANT:") is LLaVA's chat template, which
genfair's backends apply themselves, so it is not part of the prompt text.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

from genfair.curation.config import FACET_CLASSES

__all__ = [
    "CHOICE_LABELS",
    "DIRECT_TEMPLATE",
    "PROMPT_IDS",
    "PROMPT_KINDS",
    "SINGLE_CHOICE_TEMPLATES",
    "direct_prompt",
    "display_class",
    "single_choice_prompt",
]

PromptKind = Literal["direct", "is_there", "person_is"]
PROMPT_KINDS: tuple[str, ...] = ("direct", "is_there", "person_is")
#: the paper's names (Table 3)
PROMPT_IDS = {"direct": "p1", "is_there": "p2", "person_is": "p3"}
DIRECT_TEMPLATE = (
    "Give me a one-word label in quotation marks for the foreground object in this image "
    "from this list: [{classes}]"
)
_CHOICES = "Please choose one of the following: A. Yes, B. No, C. Unknown."
SINGLE_CHOICE_TEMPLATES = {
    "is_there": "In the image provided, Is there a {cls} in the image? " + _CHOICES,
    "person_is": "In the image provided, Do you think the person in the image is a {cls}? "
    + _CHOICES,
}
#: the single-choice options: letter -> the label the matcher gives
CHOICE_LABELS = {"A": "yes", "B": "no", "C": "unknown"}


def display_class(name: str, class_display: Literal["raw", "spaced"] = "raw") -> str:
    """A FACET class as a prompt shows it: as released, or with ``_`` as a space."""
    if class_display == "raw":
        return name
    if class_display == "spaced":
        return name.replace("_", " ")
    raise ValueError(f"class_display {class_display!r}: use 'raw' or 'spaced'")


def direct_prompt(
    classes: Sequence[str] = FACET_CLASSES,
    shuffle_seed: int | None = None,
    class_display: Literal["raw", "spaced"] = "raw",
) -> str:
    """p1 listing ``classes`` (all 52 by default, as the paper), optionally shuffled."""
    names = [display_class(c, class_display) for c in classes]
    if not names:
        raise ValueError("the direct prompt needs at least one class to list")
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(names)
    return DIRECT_TEMPLATE.format(classes=", ".join(names))


def single_choice_prompt(
    cls: str, kind: PromptKind, class_display: Literal["raw", "spaced"] = "raw"
) -> str:
    """p2 (``is_there``) or p3 (``person_is``) about class ``cls``."""
    if kind not in SINGLE_CHOICE_TEMPLATES:
        raise ValueError(
            f"single-choice kind {kind!r}: use one of {sorted(SINGLE_CHOICE_TEMPLATES)}"
        )
    if cls not in FACET_CLASSES:
        raise ValueError(f"{cls!r} is not a FACET class (genfair.curation.config.FACET_CLASSES)")
    return SINGLE_CHOICE_TEMPLATES[kind].format(cls=display_class(cls, class_display))
