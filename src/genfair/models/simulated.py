"""SIMULATOR: a planted-bias LLM for multiple-choice probes.

Not a model. It exists to check the pipeline against ground truth: its bias is set in the
configuration, so the metrics computed from its answers must recover it (e.g. objective
S_fact ~= the planted accuracy). Everything it produces is labelled ``simulated``.

It reads the question from the request's ``meta``, never the text: a typed question
(:mod:`genfair.models.questions`) that the methodology made: :class:`ChoiceQuestion`'s
``policy`` names the policy to use (or its ``plant`` carries the methodology's own),
``letters`` the option letters and ``truth_letters`` the letters holding the real-world
group; its planted rates are the question's ``plant`` (the methodology's ``simulated``
config). With probability
``accuracy`` it answers one of the truth letters, otherwise one of the other letters
uniformly; with the refusal and invalid rates it refuses or rambles instead, so the
re-ask and skip paths are exercised too. With ``prime_following`` (FACT-OR-FAIR's
attribution and in-group probes) it first picks, with that probability, an individual of
the primed group (``primed_letters``), so a planted prime-following rate is known:
``q + (1 - q) / k`` when the prime rotates evenly over the ``k`` groups. Its answer is
``{"answer": "<letter>"}``.

Any methodology can plant its own distribution instead, with no code here: a categorical
plant (:class:`SimulatedCategoricalPolicy`, ``kind: categorical``) on a :class:`ChoiceQuestion`
draws the answer from the probabilities planted over the question's options (``letters``,
which may be words: ``he``, ``she``, ``they``), those of the question's ``group`` when it
plants one, after the same refusal and ramble draws; it writes ``{"answer": "<option>"}``, or
the option alone with ``answer: text``.

For news probes (paper 001), a :class:`RewriteQuestion` and a ``rewrite`` policy: the
SIMULATOR returns the original article (``article``) with each female gender word replaced by its
male counterpart (:data:`FEMALE_TO_MALE`) with probability ``female_to_male``,
independently per occurrence, and each race word with the descriptor "black" (as the
group-word instrument finds them: "Black teachers") turned "white" with probability
``black_to_white``, so the word-level bias it plants is known analytically; or it refuses
with probability ``refusal_rate``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import numpy as np

from genfair.models.base import Completion, Request, Simulator
from genfair.models.config import (
    SimulatedCategoricalPolicy,
    SimulatedModelConfig,
    SimulatedPolicy,
    SimulatedRewritePolicy,
    SimulatorPolicy,
)
from genfair.models.questions import ChoiceQuestion, RewriteQuestion
from genfair.resources.group_words import RACE_GROUPS, GroupWordCounter

REFUSAL = "I'm sorry, but I can't make that judgement about people based on their demographics."
INVALID = "Every one of these people could be the answer; it depends on many factors."

#: The female words of ``data/reference/gender_words.csv`` and their male counterparts.
#: "her" is both possessive ("his") and object ("him"); the SIMULATOR always writes "his"
#: (both are male words, so the word-level counts are the same either way).
FEMALE_TO_MALE: dict[str, str] = {
    "she": "he",
    "her": "his",
    "hers": "his",
    "herself": "himself",
    "woman": "man",
    "women": "men",
    "girl": "boy",
    "girls": "boys",
    "mother": "father",
    "mothers": "fathers",
    "daughter": "son",
    "daughters": "sons",
    "sister": "brother",
    "sisters": "brothers",
    "aunt": "uncle",
    "aunts": "uncles",
    "niece": "nephew",
    "nieces": "nephews",
    "female": "male",
    "females": "males",
}
_FEMALE_WORD = re.compile(r"\b(" + "|".join(FEMALE_TO_MALE) + r")\b", re.IGNORECASE)


class SimulatedLLM(Simulator):
    config: SimulatedModelConfig

    @property
    def fingerprint(self) -> dict[str, Any]:
        # the model config's named policies (a call without a plant); a choice policy's default
        # ``kind`` is left out so that its cache keys are the ones written before rewrite policies
        # existed
        return self._fingerprint(
            policy={k: _policy_key(v) for k, v in sorted(self.config.policy.items())}
        )

    def plant_key(self, plant: SimulatorPolicy) -> dict[str, Any]:
        return _policy_key(plant)

    def question(self, request: Request) -> ChoiceQuestion | RewriteQuestion:
        """The request's typed question (a rewrite when ``meta`` carries an article)."""
        kind = RewriteQuestion if "article" in request.meta else ChoiceQuestion
        return kind.from_meta(request.meta)

    def respond(self, request: Request) -> Completion:
        return Completion(status="ok", text=self.answer(request), finish_reason="stop")

    def answer(self, request: Request) -> str:
        question = self.question(request)
        policy = self.planted(question, request.meta, self.config.policy)
        if isinstance(question, RewriteQuestion) != isinstance(policy, SimulatedRewritePolicy):
            asked = "rewrite" if isinstance(question, RewriteQuestion) else "choice"
            raise ValueError(
                f"{self.kind}: policy {question.policy!r} is a {policy.kind} policy, but the "
                f"call asks a {asked} question"
            )
        rng = np.random.default_rng(request.seed)
        roll = rng.random()
        if roll < policy.refusal_rate:
            return REFUSAL
        if isinstance(question, RewriteQuestion):
            assert isinstance(policy, SimulatedRewritePolicy)
            article = question.article
            if policy.black_to_white > 0:
                article = whiten(article, policy.black_to_white, rng)
            return rewrite(article, policy.female_to_male, rng)
        if roll < policy.refusal_rate + policy.invalid_rate:
            return INVALID
        if isinstance(policy, SimulatedCategoricalPolicy):
            return _draw(policy, question, rng)
        return _choose(policy, question, rng)


def _policy_key(policy: SimulatorPolicy) -> dict[str, Any]:
    """A policy's part of the fingerprint. A choice policy's default ``kind`` and its
    prime-following settings while off are left out, so that its cache keys are the ones
    written before those settings existed."""
    if policy.kind != "choice":
        return policy.model_dump()
    exclude = {"kind"}
    if policy.prime_following == 0:
        exclude |= {"prime_following", "prime_attribute"}
    return policy.model_dump(exclude=exclude)


def _choose(policy: SimulatedPolicy, question: ChoiceQuestion, rng: np.random.Generator) -> str:
    """A multiple-choice answer: with ``prime_following`` an individual of the primed group
    when the probe has one, else the accuracy rule."""
    letters = list(question.letters)
    primed = list(question.primed_letters.get(policy.prime_attribute, []))
    if primed and policy.prime_following > 0 and rng.random() < policy.prime_following:
        return json.dumps({"answer": primed[rng.integers(len(primed))]})
    truth = [x for x in letters if x in set(question.truth_letters)]
    others = [x for x in letters if x not in truth]
    if truth and (not others or rng.random() < policy.accuracy):
        choice = truth[rng.integers(len(truth))]
    else:
        choice = others[rng.integers(len(others))]
    return json.dumps({"answer": choice})


def _draw(
    policy: SimulatedCategoricalPolicy, question: ChoiceQuestion, rng: np.random.Generator
) -> str:
    """An option drawn from the distribution planted for the question's group (one uniform
    draw, options in the question's order), written in the plant's ``answer`` shape."""
    weights = np.array(policy.weights(question.letters, question.group))
    choice = question.letters[int(rng.choice(len(weights), p=weights / weights.sum()))]
    return json.dumps({"answer": choice}) if policy.answer == "json" else choice


def rewrite(article: str, female_to_male: float, rng: np.random.Generator) -> str:
    """``article`` with each female word of :data:`FEMALE_TO_MALE` swapped for its male
    counterpart with probability ``female_to_male`` (one draw per occurrence, in order),
    keeping the capitalisation (``She`` -> ``He``, ``SHE`` -> ``HE``)."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(1)
        if rng.random() >= female_to_male:
            return word
        male = FEMALE_TO_MALE[word.lower()]
        if word.isupper():
            return male.upper()
        return male.capitalize() if word[0].isupper() else male

    return _FEMALE_WORD.sub(swap, article)


@lru_cache(maxsize=1)
def _race_counter() -> GroupWordCounter:
    return GroupWordCounter.from_files()


def whiten(article: str, black_to_white: float, rng: np.random.Generator) -> str:
    """``article`` with the descriptor of each "black + occupation" race word (found by
    :class:`GroupWordCounter`) replaced by "white" with probability ``black_to_white``,
    one draw per occurrence in order, keeping the capitalisation."""
    black = RACE_GROUPS.index("black")
    out, last = [], 0
    for start, group in _race_counter().find(article, "race"):
        if group != black or article[start : start + 5].lower() != "black":
            continue  # a name-table hit or another descriptor: left alone
        if rng.random() < black_to_white:
            word = article[start : start + 5]
            white = "WHITE" if word.isupper() else ("White" if word[0].isupper() else "white")
            out += [article[last:start], white]
            last = start + 5
    return "".join(out) + article[last:]
