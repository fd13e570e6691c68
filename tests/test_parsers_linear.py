"""Reading a model's answer is linear in its length, in every methodology's parser (issue 44,
point 5): a FACT-OR-FAIR answer "B B B ..." of 40 kB took 1 min 44 s and 1 MB did not finish
in 300 s; each hostile answer of tests/support/hostile_answers.py, 1 MB long, is now read in
under a second of CPU time. benchmarks/test_parsers_linear.py guards the growth."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genfair.instruments.refusal import _unquoted
from genfair.methodologies.fact_or_fair.parsing import parse_choice
from genfair.methodologies.open_bias.proposals import parse_proposals
from tests.support.hostile_answers import UNITS, hostile, parsers

MEGABYTE = 1_000_000


@pytest.mark.parametrize("name", sorted(parsers()))
def test_a_megabyte_answer_is_read_within_a_second(name: str) -> None:
    parse = parsers()[name]
    for unit in UNITS:
        text = hostile(unit, MEGABYTE)
        start = time.process_time()
        parse(text)
        spent = time.process_time() - start
        assert spent < 1.0, f"{name}: {spent:.2f} s of CPU for 1 MB of {unit!r}"


def test_the_choice_parser_still_reads_a_long_answer_right() -> None:
    options = [{"letter": "A", "label": "Asian"}, {"letter": "B", "label": "White"}]
    assert parse_choice(hostile("B ", MEGABYTE), options).letter == "B"
    assert parse_choice("U.S.\nB", options).letter == "B"  # a line after an abbreviation
    assert parse_choice(hostile("B ", MEGABYTE) + " A", options).verdict == "invalid"


def test_a_nesting_too_deep_for_the_json_decoder_is_an_invalid_answer() -> None:
    parsed = parse_proposals("{" + '"bias": [' * 100_000, True, True)
    assert parsed.status == "invalid"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a 'quote' b", "a   b"),
        ("it's 'open", "it's 'open"),
        ("“never closed", "“never closed"),
        ("'a 'b' c", "  c"),
        ('say "x" and “y” or ‘z’', "say   and   or  "),
    ],
)
def test_quoted_speech_is_removed_as_the_pattern_did(text: str, expected: str) -> None:
    assert _unquoted(text) == expected


_QUOTED_PATTERN = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<!\w)'.*?'(?!\w)|(?<!\w)‘.*?’(?!\w)", re.DOTALL)


@given(st.text(alphabet="ab _.\n'\"“”‘’", max_size=30))
def test_quoted_speech_spans_are_the_patterns_spans(text: str) -> None:
    assert _unquoted(text) == _QUOTED_PATTERN.sub(" ", text)
