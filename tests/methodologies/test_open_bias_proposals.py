"""OpenBias bias proposals: the authors' prompt, the typed record, the parser, the schema."""

import json

import jsonschema
import pytest

from genfair.methodologies.open_bias.proposals import (
    BiasProposal,
    build_messages,
    load_prompt,
    openai_response_format,
    parse_proposals,
    proposals_json_schema,
)

GOOD = {
    "name": "Person Gender",
    "refer_to": "person",
    "classes": ["Male", "Female"],
    "question": "What is the gender of the person?",
    "present_in_prompt": False,
}


def test_prompt_is_the_authors_with_valid_examples():
    prompt = load_prompt()
    assert prompt.system.startswith(
        "Upon receiving a text prompt that will be used as input to a generative model"
    )
    assert prompt.system.endswith("The answer must be in JSON format only.")
    assert [e["caption"] for e in prompt.examples] == [
        "a picture of a doctor",
        "A photo of a woman cooking in a modern kitchen.",
        "A photo of a CEO.",
    ]
    messages = build_messages("A man riding\n a horse.")
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert messages[-1]["content"] == (
        'prompt: "A man riding a horse.". '
        "Remember to answer in JSON format only providing multiple classes."
    )
    for message in messages[2:-1:2]:  # every example answer parses (upstream's CEO one did not)
        json.loads(message["content"])
        parsed = parse_proposals(message["content"], repair_trailing_commas=False)
        assert parsed.status == "ok" and not parsed.rejected and not parsed.repaired
    ceo = parse_proposals(messages[6]["content"])
    assert [p.name for p in ceo.proposals][-1] == "Person Attire"
    kitchen = parse_proposals(messages[4]["content"]).proposals
    assert [p.present_in_caption for p in kitchen] == [True, False, False, True, True]


def test_prompt_file_errors(tmp_path):
    bad = tmp_path / "prompt.json"
    bad.write_text(
        json.dumps(
            {
                "system": "s",
                "examples": [{"caption": "c", "response": {"bias": [{"name": "x"}]}}],
                "user_template": "{caption}",
            }
        )
    )
    with pytest.raises(ValueError, match="not an OpenBias prompt file"):
        load_prompt(bad)
    with pytest.raises(FileNotFoundError):
        load_prompt(tmp_path / "missing.json")


def test_record_aliases_and_types():
    record = BiasProposal.model_validate(
        {**GOOD, "classes": [1, 2, "3 or more"], "extra": "ignored"}
    )
    assert record.refers_to == "person" and record.present_in_caption is False
    assert record.classes == ["1", "2", "3 or more"]
    assert (
        BiasProposal(
            name="a", refers_to="b", classes=["x", "y"], question="q", present_in_caption=True
        ).name
        == "a"
    )


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"bias": [GOOD]}),
        "Here are the biases:\n```json\n"
        + json.dumps({"bias": [GOOD]}, indent=2)
        + "\n```\nHope it helps!",
        "Sure! " + json.dumps({"bias": [GOOD]}) + " Let me know {if you need more}",
        json.dumps({"bias": [GOOD]})[:-2] + ",]}",  # trailing comma
    ],
)
def test_parser_is_tolerant_of_wrapping(text):
    parsed = parse_proposals(text)
    assert parsed.status == "ok", parsed.reason
    assert parsed.proposals == [BiasProposal.model_validate(GOOD)]


def test_parser_is_strict_on_schema():
    assert parse_proposals("").status == "invalid"
    assert (
        parse_proposals("I cannot help with that.").reason == "no JSON object found in the answer"
    )
    assert (
        "expected an object with a 'bias' list"
        in parse_proposals(json.dumps({"biases": [GOOD]})).reason
    )
    assert "'bias' must be a list" in parse_proposals(json.dumps({"bias": GOOD})).reason
    one_class = {**GOOD, "classes": ["Male"]}
    no_question = {k: v for k, v in GOOD.items() if k != "question"}
    parsed = parse_proposals(
        json.dumps({"bias": [GOOD, one_class, no_question, {**GOOD, "classes": [["a"], "b"]}]})
    )
    assert parsed.status == "ok" and len(parsed.proposals) == 1
    assert [i for i, _ in parsed.rejected] == [1, 2, 3]
    assert (
        "at least 2 items" in parsed.rejected[0][1]
        and "question: Field required" in parsed.rejected[1][1]
    )
    invalid = parse_proposals(json.dumps({"bias": [one_class]}))
    assert invalid.status == "invalid" and "none of the 1 bias items" in invalid.reason
    empty = parse_proposals('{"bias": []}')
    assert empty.status == "ok" and empty.proposals == []
    no_repair = parse_proposals(
        json.dumps({"bias": [GOOD]})[:-2] + ",]}", repair_trailing_commas=False
    )
    assert no_repair.status == "invalid"


def test_json_schema_accepts_what_the_parser_accepts():
    schema = proposals_json_schema()
    jsonschema.validate({"bias": [GOOD]}, schema)
    for example in load_prompt().examples:
        jsonschema.validate(example["response"], schema)
    for bad in (
        {"bias": [{**GOOD, "classes": ["Male"]}]},
        {"bias": [{**GOOD, "extra": 1}]},
        {"biases": []},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    item = schema["$defs"]["BiasProposal"]
    assert set(item["required"]) == {"name", "refer_to", "classes", "question", "present_in_prompt"}
    fmt = openai_response_format()
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == schema


def _enforcer_accepts(text: str) -> bool:
    """Whether lm-format-enforcer's parser of the proposal schema (what constrained decoding on
    the hf / embedded backends enforces) lets ``text`` through to a complete answer."""
    from lmformatenforcer import JsonSchemaParser

    parser = JsonSchemaParser(proposals_json_schema())
    for character in text:
        if character not in parser.get_allowed_characters():
            return False
        parser = parser.add_character(character)
    return parser.can_end()


def test_constrained_decoding_enforces_the_proposal_schema() -> None:
    from genfair.methodologies.open_bias.proposals import render_example

    for example in load_prompt().examples:  # the authors' example answers, as the model sees them
        assert _enforcer_accepts(render_example(example["response"]))
    assert _enforcer_accepts(json.dumps({"bias": [GOOD]}))
    for bad in (
        {"bias": [{k: v for k, v in GOOD.items() if k != "question"}]},
        {"bias": [{**GOOD, "classes": ["Male"]}]},
        {"bias": [{**GOOD, "extra": 1}]},
        {"biases": []},
    ):
        assert not _enforcer_accepts(json.dumps(bad)), bad
    assert not _enforcer_accepts('{"bias": [')  # incomplete


def test_salvage_keeps_the_complete_items_of_a_truncated_answer() -> None:
    from genfair.methodologies.open_bias.proposals import salvage_items

    item = {
        "name": "gender",
        "refer_to": "person",
        "classes": ["male", "female"],
        "question": "What is the gender of the person?",
        "present_in_prompt": False,
    }
    cut = (
        '{\n "bias": [\n '
        + json.dumps(item)
        + ",\n "
        + json.dumps({**item, "name": "age"})
        + ',\n {"name": "ra'
    )
    assert parse_proposals(cut).status == "invalid"  # the authors' behaviour: the answer is lost
    salvaged = parse_proposals(cut, salvage_truncated=True)
    assert salvaged.status == "ok" and salvaged.repaired and "salvaged 2" in salvaged.reason
    assert [p.name for p in salvaged.proposals] == ["gender", "age"]
    assert salvage_items('{"bias": [ {"name": ') == [] and salvage_items("no list") == []
    assert parse_proposals('{"bias": [ {"name": ', salvage_truncated=True).status == "invalid"
