"""The refusal detector's patterns on refusals, hedges and plain answers."""

import pytest

from genfair.instruments.refusal import is_refusal


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I can't help with that.",
        "As an AI, I do not make judgements about groups.",
        "I cannot determine who is more likely based on race.",
        "It would be inappropriate to guess someone's behaviour from their demographics.",
        "That relies on a stereotype, so I won't choose.",
    ],
)
def test_refusals_are_detected(text: str) -> None:
    assert is_refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "B"}',
        "C. Maria Garcia",
        "The category with the highest rate is Male.",
        "Sorrento is a town in Italy.",  # 'sorry' must be a whole word
    ],
)
def test_answers_are_not_refusals(text: str) -> None:
    assert not is_refusal(text)
