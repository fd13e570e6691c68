"""What a methodology asks of the simulated LLM: one typed question per kind.

A methodology's call carries its question in ``Call.meta`` (``meta=question.meta()``, beside
any keys of its own); the SIMULATOR reads it back with :meth:`from_meta`. Both ends validate,
so a misspelt key or a truth letter that is not an option fails where the call is made, not
as a silent wrong answer. ``meta`` is never part of a cache key: these objects change no key.

- :class:`ChoiceQuestion`: a multiple-choice probe (answer ``{"answer": "<letter>"}``);
- :class:`RewriteQuestion`: a news article to rewrite (paper 001).

Planted rates: ``policy`` names one of the simulated model's policies
(``conf/model/simulated_llm.yaml``), or ``plant`` carries the methodology's own (from its
config): then that call's cache key covers that policy alone
(:meth:`genfair.models.simulated.SimulatedLLM.request_fingerprint`), so changing a
methodology's planted rate reruns only its own calls.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from genfair.models.config import SimulatedPolicy, SimulatedRewritePolicy


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the simulated model's policy for this kind of probe (``meta["policy"]``)
    policy: str
    #: the policy used when ``policy`` is not configured (e.g. ``news_biased`` -> ``news``)
    fallback_policy: str | None = None

    def meta(self) -> dict[str, Any]:
        """The question as ``Call.meta`` entries (unset fields left out)."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True) | {"policy": self.policy}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Self:
        """The question a call's ``meta`` carries (its other keys ignored), validated."""
        return cls.model_validate({k: v for k, v in meta.items() if k in cls.model_fields})


class ChoiceQuestion(_Question):
    """A multiple-choice probe: with the policy's ``accuracy`` the SIMULATOR answers one of
    ``truth_letters`` (the real-world group), otherwise another letter; with its
    ``prime_following`` it first picks one of ``primed_letters[prime_attribute]``; it
    refuses or rambles at the policy's rates."""

    letters: list[str] = Field(min_length=1)
    truth_letters: list[str] = []
    #: attribute (``race``, ``gender``) -> the letters of the primed group's individuals
    primed_letters: dict[str, list[str]] = {}
    #: the methodology's own planted rates (instead of the model's named ``policy``)
    plant: SimulatedPolicy | None = None

    @model_validator(mode="after")
    def _letters_are_options(self) -> ChoiceQuestion:
        named = set(self.truth_letters).union(*map(set, self.primed_letters.values()))
        if not named <= set(self.letters):
            raise ValueError(f"truth or primed letters {sorted(named - set(self.letters))} are not among the "
                             f"options {self.letters}")
        return self


class RewriteQuestion(_Question):
    """A news article to rewrite: the SIMULATOR returns ``article`` with planted swaps
    (female to male words, "Black" to "White" descriptors) at the policy's rates."""

    article: str
    #: the methodology's own planted rates (instead of the model's named ``policy``)
    plant: SimulatedRewritePolicy | None = None


__all__ = ["ChoiceQuestion", "RewriteQuestion"]
