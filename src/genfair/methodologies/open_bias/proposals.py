"""Stage 1 of OpenBias: asking an LLM which biases a caption could show (paper 003, §3.1).

- The prompt is the authors' (``data/reference/open_bias_prompt.json``, facts from their
  ``utils/config.py`` ``std_domain`` and ``utils/llama_wrapper.py``): a system message, three
  in-context examples (user: the bare caption; assistant: the JSON answer) and the user
  template ``prompt: "{caption}". Remember to answer in JSON format only providing multiple
  classes.``. The examples are stored as JSON objects and rendered with ``json.dumps``, so
  they are valid JSON: upstream, the third example ("A photo of a CEO.") has a trailing comma
  and is invalid JSON, teaching the model to write invalid JSON.
- :class:`BiasProposal` is one proposed bias, typed; the LLM writes the authors' keys
  (``name``, ``refer_to``, ``classes``, ``question``, ``present_in_prompt``).
- :func:`parse_proposals` turns raw LLM output into records with a status: ``ok`` or
  ``invalid`` plus the reason. It is tolerant of code fences and text around the JSON object
  (and optionally of trailing commas) but strict on the schema: the top level must be an
  object with a ``bias`` list; a bias item that breaks the schema is rejected with its reason
  while the valid items of the same answer are kept.
- :func:`proposals_json_schema` / :func:`openai_response_format`: the answer's JSON schema,
  for constrained decoding (a request's ``json_schema``: the hf / embedded backends enforce it
  with ``lm-format-enforcer``, the openai backend sends it as ``response_format``).

Imported where used: :mod:`genfair.models.openai` (the OpenAI client), for its schema helper
alone.
"""

from __future__ import annotations

import json
import re
from copy import deepcopy
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "DEFAULT_PROMPT",
    "BiasProposal",
    "ParsedProposals",
    "ProposalPrompt",
    "ProposalList",
    "build_messages",
    "render_example",
    "load_prompt",
    "openai_response_format",
    "parse_proposals",
    "proposals_from_object",
    "proposals_json_schema",
    "salvage_items",
]

DEFAULT_PROMPT = (
    Path(__file__).resolve().parents[4] / "data" / "reference" / "open_bias_prompt.json"
)


class BiasProposal(BaseModel):
    """One bias the LLM proposes for one caption (paper §3.1: bias b, classes C, question q,
    plus what it refers to and whether the caption already answers q)."""

    model_config = ConfigDict(
        populate_by_name=True,
        extra="ignore",
        str_strip_whitespace=True,
        json_schema_extra={"additionalProperties": False},
    )

    name: str = Field(min_length=1, description="the bias, e.g. 'Person Gender'")
    refers_to: str = Field(
        alias="refer_to", min_length=1, description="what it is about, e.g. 'person'"
    )
    classes: list[str] = Field(min_length=2, description="the possible classes (at least two)")
    question: str = Field(
        min_length=1, description="one question that identifies the class in an image"
    )
    present_in_caption: bool = Field(
        alias="present_in_prompt", description="whether the caption already answers the question"
    )

    @field_validator("classes", mode="before")
    @classmethod
    def _scalar_classes(cls, value: Any) -> Any:
        # numbers are fine as classes ("1", "2", "3 or more" people); nested objects are not
        if isinstance(value, list):
            return [
                str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                for v in value
            ]
        return value

    @field_validator("classes")
    @classmethod
    def _non_empty_classes(cls, value: list[str]) -> list[str]:
        value = [v.strip() for v in value]
        if any(not v for v in value):
            raise ValueError("classes must be non-empty strings")
        return value


class ProposalList(BaseModel):
    """The whole answer for one caption: ``{"bias": [...]}``."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"additionalProperties": False})

    bias: list[BiasProposal]


class ProposalPrompt(BaseModel):
    """The system message, in-context examples and user template."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    system: str
    examples: list[dict[str, Any]]
    user_template: str = Field(pattern=r"\{caption\}")
    source: str = ""

    @field_validator("examples")
    @classmethod
    def _valid_examples(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, example in enumerate(value):
            if not isinstance(example.get("caption"), str):
                raise ValueError(f"example {i} lacks a 'caption' string")
            ProposalList.model_validate(example.get("response"))  # the examples obey the schema
        return value


@lru_cache(maxsize=4)
def _load(path: str) -> ProposalPrompt:
    file = Path(path)
    try:
        return ProposalPrompt.model_validate(json.loads(file.read_text(encoding="utf-8")))
    except FileNotFoundError as error:
        raise FileNotFoundError(f"{file}: OpenBias prompt file not found") from error
    except (json.JSONDecodeError, ValidationError) as error:
        raise ValueError(
            f"{file}: not an OpenBias prompt file (keys system, examples[caption, response], "
            f"user_template with {{caption}}): {error}"
        ) from error


def load_prompt(path: str | Path = DEFAULT_PROMPT) -> ProposalPrompt:
    """The prompt file (default: the authors' prompt, ``data/reference/open_bias_prompt.json``)."""
    return _load(str(Path(path).resolve()))


def build_messages(caption: str, prompt: ProposalPrompt | None = None) -> list[dict[str, str]]:
    """The chat for one caption: system, the examples (user: bare caption, assistant: JSON, as
    upstream), then the user template filled with the caption (newlines removed, as upstream)."""
    prompt = prompt or load_prompt()
    messages = [{"role": "system", "content": prompt.system}]
    for example in prompt.examples:
        messages.append({"role": "user", "content": example["caption"]})
        messages.append({"role": "assistant", "content": render_example(example["response"])})
    caption = re.sub(r"\s+", " ", str(caption)).strip()
    messages.append({"role": "user", "content": prompt.user_template.replace("{caption}", caption)})
    return messages


def render_example(response: dict[str, Any]) -> str:
    """An example answer laid out as upstream (one key per line, classes inline, each line
    after the first indented by one space) but always valid JSON."""
    items = []
    for bias in response["bias"]:
        lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in bias.items()]
        items.append(" {\n" + ",\n".join(lines) + "\n }")
    return '{\n "bias": [\n' + ",\n".join(items) + "\n ]\n }"


class ParsedProposals(BaseModel):
    """What one LLM answer yields: status ``ok`` (the answer had the right shape: its valid
    items are in ``proposals``, possibly none) or ``invalid`` (``reason`` says why).
    ``rejected`` lists ``(item index, reason)`` of bias items that broke the schema."""

    model_config = ConfigDict(frozen=True)

    status: Literal["ok", "invalid"]
    reason: str = ""
    proposals: list[BiasProposal] = []
    rejected: list[tuple[int, str]] = []
    repaired: bool = False  # trailing commas were removed to parse it


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[\]}])")


def _candidates(text: str) -> list[str]:
    """Texts that may hold the JSON object, most specific first."""
    found = [m.group(1) for m in _FENCE.finditer(text)]
    found.append(text)
    out = []
    for chunk in found:
        start, end = chunk.find("{"), chunk.rfind("}")
        if start != -1 and end > start:
            out.append(chunk[start : end + 1])
    return out


def _decode(text: str, repair: bool) -> tuple[Any, bool] | None:
    decoder = json.JSONDecoder()
    for candidate in _candidates(text):
        for attempt, repaired in (
            (candidate, False),
            (_TRAILING_COMMA.sub(r"\1", candidate), True),
        ):
            if repaired and (not repair or attempt == candidate):
                continue
            try:
                return json.loads(attempt), repaired
            except (json.JSONDecodeError, RecursionError):  # too deep a nesting is no answer
                pass
            try:  # an object followed by more text ("{...} I hope this helps {")
                return decoder.raw_decode(attempt)[0], repaired
            except (json.JSONDecodeError, RecursionError):
                pass
    return None


def _error_text(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'item'}: {e['msg']}" for e in error.errors()
    )


_BIAS_LIST = re.compile(r'"bias"\s*:\s*\[')


def salvage_items(text: str) -> list[Any]:
    """The complete items of a ``"bias": [`` list whose answer was cut off (a small model
    that runs out of tokens mid-list): each ``{...}`` that decodes, in order, up to the first
    that does not."""
    match = _BIAS_LIST.search(text)
    if match is None:
        return []
    decoder, items, at = json.JSONDecoder(), [], match.end()
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            item, at = decoder.raw_decode(text, at)
        except (json.JSONDecodeError, RecursionError):
            return items
        items.append(item)


def parse_proposals(
    text: str, repair_trailing_commas: bool = True, salvage_truncated: bool = False
) -> ParsedProposals:
    """Parse one LLM answer into :class:`BiasProposal` records (see the module docstring).
    ``salvage_truncated``: an answer with no complete JSON object keeps the complete items of
    its ``bias`` list (:func:`salvage_items`; flagged ``repaired``, reason says so)."""
    if not isinstance(text, str) or not text.strip():
        return ParsedProposals(status="invalid", reason="empty answer")
    decoded = _decode(text, repair_trailing_commas)
    if decoded is None:
        items = salvage_items(text) if salvage_truncated else []
        if items:
            parsed = proposals_from_object({"bias": items}, repaired=True)
            return parsed.model_copy(
                update={"reason": f"salvaged {len(items)} complete item(s) of a truncated answer"}
            )
        return ParsedProposals(status="invalid", reason="no JSON object found in the answer")
    data, repaired = decoded
    return proposals_from_object(data, repaired)


def proposals_from_object(data: Any, repaired: bool = False) -> ParsedProposals:
    """Validate an already decoded answer (``{"bias": [...]}``) item by item."""
    if not isinstance(data, dict) or "bias" not in data:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        return ParsedProposals(
            status="invalid",
            reason=f"expected an object with a 'bias' list, got {keys}",
            repaired=repaired,
        )
    items = data["bias"]
    if not isinstance(items, list):
        return ParsedProposals(
            status="invalid",
            reason=f"'bias' must be a list, got {type(items).__name__}",
            repaired=repaired,
        )
    proposals, rejected = [], []
    for index, item in enumerate(items):
        try:
            proposals.append(BiasProposal.model_validate(item))
        except ValidationError as error:
            rejected.append((index, _error_text(error)))
    if items and not proposals:
        return ParsedProposals(
            status="invalid",
            reason=f"none of the {len(items)} bias items fits the schema: {rejected[0][1]}",
            rejected=rejected,
            repaired=repaired,
        )
    return ParsedProposals(status="ok", proposals=proposals, rejected=rejected, repaired=repaired)


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def proposals_json_schema() -> dict[str, Any]:
    """JSON schema of one answer (``{"bias": [{name, refer_to, classes, question,
    present_in_prompt}]}``, every key required, no others), for constrained decoding."""
    schema = ProposalList.model_json_schema(by_alias=True, mode="validation")
    return _strip_titles(deepcopy(schema))


def openai_response_format(
    name: str = "open_bias_proposals", strict: bool = False
) -> dict[str, Any]:
    """The schema as an OpenAI-compatible ``response_format`` (structured outputs; vLLM
    accepts it too), as the openai backend sends a request's ``json_schema``
    (:func:`genfair.models.openai.response_format`). ``strict=True`` asks OpenAI to enforce it
    exactly; its strict mode refuses some keywords (minLength, minItems) on some models, hence
    off by default."""
    from genfair.models.openai import response_format

    return response_format(proposals_json_schema(), name, strict)
