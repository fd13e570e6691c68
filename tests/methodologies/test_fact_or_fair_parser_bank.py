"""The FACT-OR-FAIR parser on a bank of real SmolLM2-135M answers, each judged by hand.

tests/data/fact_or_fair_parser_bank.csv: one row per distinct (answer, options) pair from
the embedded model on default-scale probes (scripts/fact_or_fair_parser_candidates.py;
``run`` says greedy 16 tokens, the study's settings, or sampled at temperature 0.8 with 48
tokens), with the letter a careful reader takes as the choice, or ``invalid``/``refused``,
and a note. The parser before this bank existed read echoed option lists as a choice of A
and letter/name contradictions as the letter (accuracy in docs/methodology.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from genfair.methodologies.fact_or_fair.parsing import parse_choice

BANK = pd.read_csv(
    Path(__file__).parents[1] / "data" / "fact_or_fair_parser_bank.csv", keep_default_na=False
)
#: measured 0.993 (objective) and 0.991 (subjective) when the bank was labelled
#: (docs/methodology.md); two more misses in either kind fail
MIN_ACCURACY = 0.98


def read(row) -> str:
    parsed = parse_choice(row.text, json.loads(row.options))
    return parsed.letter if parsed.verdict == "ok" else parsed.verdict


@pytest.fixture(scope="module")
def bank() -> pd.DataFrame:
    return BANK.assign(read=[read(row) for row in BANK.itertuples()])


def test_the_bank_is_real_varied_and_labelled() -> None:
    assert len(BANK) >= 100
    assert set(BANK["kind"]) == {"objective", "subjective"}
    assert set(BANK["expected"]) <= {"A", "B", "C", "D", "invalid", "refused"}
    assert (BANK["note"] != "").all()
    assert not BANK.duplicated(["text", "options"]).any()
    for row in BANK.itertuples():
        letters = [o["letter"] for o in json.loads(row.options)]
        assert row.expected in {*letters, "invalid", "refused"}, row


def test_accuracy_on_the_bank(bank: pd.DataFrame) -> None:
    for kind, part in bank.groupby("kind"):
        accuracy = float((part["read"] == part["expected"]).mean())
        assert accuracy >= MIN_ACCURACY, (kind, accuracy, part[part["read"] != part["expected"]])


def test_no_echoed_list_or_contradiction_is_a_choice(bank: pd.DataFrame) -> None:
    """The two failure classes of issue 12.4 are never read as a choice."""
    bad = bank[
        bank["note"].str.contains("echoes the option list|but the name is option|two options|mixes")
    ]
    assert len(bad) >= 20
    assert (bad["read"] == "invalid").all(), bad[bad["read"] != "invalid"]


def test_no_accepted_answer_is_wrong(bank: pd.DataFrame) -> None:
    """Precision: every answer read as a letter is the letter a reader sees."""
    accepted = bank[bank["read"].isin(list("ABCD"))]
    assert (accepted["read"] == accepted["expected"]).mean() >= MIN_ACCURACY
