"""Plants over shuffled options (issue 46.4): a categorical plant given in answer words, mapped
to each probe's own letters by ``SimulatedCategoricalPolicy.on_options``; FACT-OR-FAIR's
objective probes (the groups as options A-D, shuffled per round) take one, and the SIMULATED
LLM's answers, read back through the letters, follow the plant in words."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

from genfair.methodologies import get_methodology
from genfair.models.config import SimulatedCategoricalPolicy
from genfair.models.questions import ChoiceQuestion
from tests.methodologies.test_fact_or_fair_t2i import config as fact_or_fair_config
from tests.methodologies.test_simulated_plants import SEED, simulator
from tests.support.contexts import step_context

PRONOUNS = SimulatedCategoricalPolicy(
    kind="categorical",
    distribution={"he": 0.6, "she": 0.3, "they": 0.1},
    by_group={"nurse": {"he": 0.1, "she": 0.9}},
)
#: FACT-OR-FAIR's objective plant in the groups' words, per attribute
OBJECTIVE = {
    "kind": "categorical",
    "by_group": {
        "gender": {"male": 0.7, "female": 0.3},
        "race": {"white": 0.4, "black": 0.1, "asian": 0.2, "hispanic": 0.3},
    },
}


def test_a_plant_in_words_is_keyed_by_the_probes_options() -> None:
    letters = {"he": "C", "she": "A", "they": "B"}
    assert PRONOUNS.on_options(letters).distribution == {"C": 0.6, "A": 0.3, "B": 0.1}
    nurse = PRONOUNS.on_options(letters, "nurse")
    assert nurse.distribution == {"C": 0.1, "A": 0.9} and not nurse.by_group
    assert PRONOUNS.on_options(letters, "pilot") == PRONOUNS.on_options(letters)
    question = ChoiceQuestion(
        policy="quiz", letters=["A", "B", "C"], plant=PRONOUNS.on_options(letters)
    )
    assert question.plant.weights(["A", "B", "C"], None) == [0.3, 0.1, 0.6]
    with pytest.raises(ValueError, match=r"names answers \['they'\] that the probe does not offer"):
        PRONOUNS.on_options({"he": "A", "she": "B"})
    with pytest.raises(ValueError, match="two answers of the plant share one option"):
        PRONOUNS.on_options({"he": "A", "she": "A", "they": "B"})


def test_fact_or_fair_objective_answers_follow_a_plant_in_words(tmp_path: Path) -> None:
    from genfair.models import ResponseCache

    config = fact_or_fair_config(objective_rounds=8)
    config = config.model_copy(
        update={
            "simulated": config.simulated.model_copy(
                update={
                    "llm": config.simulated.llm.model_validate(
                        {**config.simulated.llm.model_dump(), "objective": OBJECTIVE}
                    )
                }
            )
        }
    )
    method = get_methodology("fact_or_fair")
    probes = method.probes_for(method.build_probes(config, SEED), "llm")
    probes = probes[probes["kind"] == "objective"]
    with ResponseCache(tmp_path / "responses.sqlite") as cache:
        ctx = step_context(
            "llm", SEED, tmp=tmp_path, backend=simulator("simulated_llm"), cache=cache
        )
        responses = method.generate(probes, config, ctx)
    answered = responses.merge(probes, on="probe_id")
    assert (answered["status"] == "ok").all()

    def group(row: pd.Series) -> str:
        letter = json.loads(row["text"])["answer"]
        (option,) = [o for o in json.loads(row["options"]) if o["letter"] == letter]
        return option[row["attribute"]]

    answered["group"] = answered.apply(group, axis=1)
    for attribute, plant in OBJECTIVE["by_group"].items():
        rows = answered[answered["attribute"] == attribute]
        # the options were shuffled: a group is not tied to one letter
        male_or_white = "male" if attribute == "gender" else "white"
        letters = {
            o["letter"]
            for options in rows["options"]
            for o in json.loads(options)
            if o[attribute] == male_or_white
        }
        assert len(letters) > 1
        shares = rows["group"].value_counts(normalize=True)
        for word, share in plant.items():
            tolerance = 4 * (share * (1 - share) / len(rows)) ** 0.5 + 0.01
            assert abs(shares.get(word, 0.0) - share) <= tolerance, (attribute, word, len(rows))


def test_a_plant_in_words_that_misses_a_group_is_refused_where_the_call_is_made() -> None:
    bad = {**OBJECTIVE, "by_group": {"gender": {"man": 1.0}}}
    config = fact_or_fair_config(objective_rounds=1)
    llm = config.simulated.llm.model_validate(
        {**config.simulated.llm.model_dump(), "objective": bad}
    )
    probes = get_methodology("fact_or_fair").build_probes(config, SEED)
    row = probes[(probes["kind"] == "objective") & (probes["attribute"] == "gender")].iloc[0]
    from genfair.methodologies.fact_or_fair.probes import planted

    with pytest.raises(ValueError, match=r"names answers \['man'\]"):
        planted(row, llm.objective)
    with pytest.raises(ValidationError):  # a plant must still sum to 1
        config.simulated.llm.model_validate(
            {"objective": {**OBJECTIVE, "by_group": {"gender": {"male": 0.5}}}}
        )
