"""What a methodology asks of a SIMULATOR: one typed question per kind.

A methodology's call carries its question in ``Call.meta`` (``meta=question.meta()``, beside
any keys of its own); the SIMULATOR reads it back with :meth:`from_meta`. Both ends validate,
so a misspelt key or a truth that is not an option fails where the call is made, not as a
silent wrong answer. ``meta`` is never part of a cache key: these objects change no key.

The simulated LLM (:mod:`genfair.models.simulated`):

- :class:`ChoiceQuestion`: a multiple-choice probe (answer ``{"answer": "<letter>"}``, or
  the option alone under a categorical plant that says so), answered by the accuracy rule
  or by a categorical plant (a distribution over its options, optionally per ``group``);
- :class:`RewriteQuestion`: a news article to rewrite (paper 001).

The simulated text-to-image model (:mod:`genfair.models.simulated_images`):

- :class:`ImageQuestion`: a picture of one person with the policy's planted attributes;
- :class:`OpenSetImageQuestion`: a picture for a caption, with a planted class for each
  open-set bias asked about it (:class:`AskedBias`; OpenBias, paper 003).

The simulated VLM (:class:`genfair.models.vlm.SimulatedVLM`):

- :class:`ImageChoiceQuestion`: one of ``options`` about the pictured person, right with the
  accuracy planted for their ``group``;
- :class:`RecallQuestion`: a FACET person's class asked with one prompt kind, answered with
  the recall planted for their groups (paper 004; :mod:`genfair.models.planted_recall`);
- :class:`OpenVQAQuestion`: an open-set bias's question about a simulated image, answered in
  free text from its planted class (OpenBias, paper 003).

One call may carry questions for several simulators (IRIS's tournament asks the LLM a
:class:`ChoiceQuestion` and the VLM an :class:`ImageChoiceQuestion` with one ``meta``).

Planted rates are the methodology's own: each question's ``plant`` carries the simulator
policy that answers it, from the ``simulated`` section of the methodology's config (meta key
``llm_plant``, ``t2i_plant`` or ``vlm_plant``, one per simulator, so one call may carry two).
That call's cache key covers the simulator's model-level settings and that policy alone
(:meth:`genfair.models.base.Simulator.request_fingerprint`), so changing a methodology's
planted rate reruns only its own simulated calls. ``policy`` names the kind of probe (the
methodology's own label); a question without a ``plant`` is answered by the simulated model
config's policy of that name, for a study that configures its own simulator that way.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from genfair.limits import MAX_SAMPLES
from genfair.models.config import (
    ChoicePolicy,
    SimulatedCategoricalPolicy,
    SimulatedOpenSetPolicy,
    SimulatedOpenVQAPolicy,
    SimulatedRewritePolicy,
    SimulatedT2IPolicy,
    SimulatedVLMPolicy,
    SimulatedVLMRecallPolicy,
)
from genfair.strict import Strict

#: each plant's meta form by identity (with the plant, so that the id stays its own)
_DUMPS: dict[int, tuple[BaseModel, dict[str, Any]]] = {}


def _shared_dump(plant: BaseModel) -> dict[str, Any]:
    """``plant`` dumped as a call's ``meta`` carries it, once per plant object: a study's calls
    carry a few plants, so their calls share a few dicts (never mutated)."""
    hit = _DUMPS.get(id(plant))
    if hit is None or hit[0] is not plant:
        if len(_DUMPS) >= 256:  # configs validated again and again in one process
            _DUMPS.clear()
        hit = _DUMPS[id(plant)] = (
            plant,
            plant.model_dump(mode="json", exclude_none=True, exclude_defaults=True),
        )
    return hit[1]


class _Question(Strict):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    #: the simulated model's policy for this kind of probe (``meta["policy"]``)
    policy: str
    #: the policy used when ``policy`` is not configured (e.g. ``news_biased`` -> ``news``)
    fallback_policy: str | None = None

    def meta(self) -> dict[str, Any]:
        """The question as ``Call.meta`` entries (unset fields left out); its plant is one dict
        shared by every call that carries it (4.6 kB a call for lvlm_facet's, once per call)."""
        meta = self.model_dump(
            mode="json", exclude_none=True, exclude_defaults=True, exclude={"plant"}
        )
        plant = getattr(self, "plant", None)
        if plant is not None:
            meta[type(self).model_fields["plant"].alias or "plant"] = _shared_dump(plant)
        return meta | {"policy": self.policy}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Self:
        """The question a call's ``meta`` carries (its other keys ignored), validated."""
        names = {f.alias or k for k, f in cls.model_fields.items()}
        return cls.model_validate({k: v for k, v in meta.items() if k in names})


class ChoiceQuestion(_Question):
    """A multiple-choice probe (its answer: ``{"answer": "<letter>"}``). With a choice plant
    (:class:`~genfair.models.config.SimulatedPolicy`), with its ``accuracy`` the SIMULATOR
    answers one of ``truth_letters`` (the real-world group), otherwise another letter; with
    its ``prime_following`` it first picks one of ``primed_letters[prime_attribute]``. With a
    categorical plant (:class:`~genfair.models.config.SimulatedCategoricalPolicy`) it draws a
    letter from the distribution planted for ``group`` (options may be words: ``he``,
    ``she``). Either refuses or rambles at the plant's rates."""

    letters: list[str] = Field(min_length=1)
    truth_letters: list[str] = []
    #: attribute (``race``, ``gender``) -> the letters of the primed group's individuals
    primed_letters: dict[str, list[str]] = {}
    #: the probe's group, which a categorical plant may plant a distribution for
    group: str | None = None
    #: the methodology's planted rates for this probe
    plant: ChoicePolicy | None = Field(None, alias="llm_plant")

    @model_validator(mode="after")
    def _letters_are_options(self) -> ChoiceQuestion:
        named = set(self.truth_letters).union(*map(set, self.primed_letters.values()))
        if not named <= set(self.letters):
            raise ValueError(
                f"truth or primed letters {sorted(named - set(self.letters))} are not among the "
                f"options {self.letters}"
            )
        if isinstance(self.plant, SimulatedCategoricalPolicy):
            self.plant.weights(self.letters, self.group)  # planted for these options and group
        return self


class RewriteQuestion(_Question):
    """A news article to rewrite: the SIMULATOR returns ``article`` with planted swaps
    (female to male words, "Black" to "White" descriptors) at the policy's rates."""

    article: str
    #: the methodology's planted rates for this probe
    plant: SimulatedRewritePolicy | None = Field(None, alias="llm_plant")


class ImageQuestion(_Question):
    """A picture of one person: the SIMULATOR draws each attribute from the policy's planted
    distributions (or refuses, or draws nobody, at its rates) and records the draw."""

    #: the methodology's planted distributions for this prompt
    plant: SimulatedT2IPolicy | None = Field(None, alias="t2i_plant")


class AskedBias(Strict):
    """An open-set bias asked about an image: its id, the names the simulator's plants are
    matched against, and its classes."""

    bias_id: str
    name: str = ""
    label: str = ""
    classes: list[str] = Field(min_length=1)


class OpenSetImageQuestion(_Question):
    """A picture for caption ``caption_id``: for each of ``biases`` the SIMULATOR draws a class
    from the distribution planted for (bias, caption), and records it; image ``i`` of
    ``n_images`` takes quantile ``(i + 0.5) / n_images`` under stratified sampling."""

    caption_id: str
    biases: list[AskedBias] = Field(min_length=1)
    n_images: int = Field(1, ge=1, le=MAX_SAMPLES)
    #: the methodology's planted open-set biases
    plant: SimulatedOpenSetPolicy | None = Field(None, alias="t2i_plant")


class ImageChoiceQuestion(_Question):
    """One of ``options`` about the pictured person: the SIMULATOR answers ``truth`` with the
    accuracy its policy plants for ``group`` (the person's demographic group, never read
    from the pixels), otherwise another option uniformly."""

    options: list[str] = Field(min_length=1)
    truth: str
    group: str
    #: the methodology's planted accuracies per group
    plant: SimulatedVLMPolicy | None = Field(None, alias="vlm_plant")

    @model_validator(mode="after")
    def _truth_is_an_option(self) -> ImageChoiceQuestion:
        if self.truth not in self.options:
            raise ValueError(f"truth {self.truth!r} is not among the options {self.options[:5]}...")
        return self


class RecallQuestion(_Question):
    """A FACET person's class (``class``) asked with prompt kind ``prompt``: the SIMULATOR
    recalls it with the probability its policy plants for the class, the prompt and the
    person's ``gender``, ``skin_tone`` and ``age`` groups."""

    cls: str = Field(alias="class")
    prompt: str
    gender: str
    skin_tone: str
    age: str
    #: the methodology's planted recall
    plant: SimulatedVLMRecallPolicy | None = Field(None, alias="vlm_plant")


class OpenVQAQuestion(_Question):
    """An open-set bias's question about a simulated image: the SIMULATOR answers from the
    image's planted class ``truth`` (recorded by the simulated t2i model; None for any other
    image, which it cannot answer) in free text, confusing it with another of ``options`` at
    its policy's rate."""

    options: list[str] = Field(min_length=1)
    truth: str | None = None
    #: the methodology's planted confusion, unknown rate and phrasings
    plant: SimulatedOpenVQAPolicy | None = Field(None, alias="vlm_plant")


__all__ = [
    "AskedBias",
    "ChoiceQuestion",
    "ImageChoiceQuestion",
    "ImageQuestion",
    "OpenSetImageQuestion",
    "OpenVQAQuestion",
    "RecallQuestion",
    "RewriteQuestion",
]
