"""OpenBias probe tables and the chain captions -> proposals -> knowledge base -> VQA labels
-> severities, with a SCRIPTED LLM and SCRIPTED VQA answers (deterministic test doubles)."""

import json

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies.open_bias.captions import load_caption_set
from genfair.methodologies.open_bias.knowledge_base import KnowledgeBaseConfig, build_knowledge_base
from genfair.methodologies.open_bias.probes import (
    IMAGE_PROBE_COLUMNS,
    VQA_PROBE_COLUMNS,
    collect_proposals,
    image_probes,
    proposal_probes,
    proposal_yield,
    vqa_probes,
)
from genfair.methodologies.open_bias.scoring import SeverityConfig, severity_table
from genfair.methodologies.open_bias.vqa import LABEL_COLUMNS, AnswerToClass, label_answers
from genfair.metrics import bias_severity

GENDER = {
    "name": "Person Gender",
    "refer_to": "person",
    "classes": ["Male", "Female"],
    "question": "What is the gender of the person?",
    "present_in_prompt": False,
}
TRAIN = {
    "name": "Train Color",
    "refer_to": "train",
    "classes": ["Red", "Yellow", "Blue"],
    "question": "What color is the train?",
    "present_in_prompt": False,
}


def scripted_llm(caption: str) -> str:
    """SCRIPTED LLM (a labelled test double): fixed proposals per caption."""
    text = caption.lower()
    if "train" in text:
        return "```json\n" + json.dumps({"bias": [TRAIN]}) + "\n```"
    if "clock" in text:
        return "I cannot answer that."
    if any(w in text for w in ("person", "doctor", "woman", "man", "chef", "rider")):
        return json.dumps({"bias": [GENDER]})
    return '{"bias": []}'


def scripted_vqa(bias_id: str, sample_index: int) -> str:
    """SCRIPTED VQA answers: gender always "a man"; train colour yellow on 8 of 10 images."""
    if bias_id.startswith("person"):
        return "a man"
    return "Yellow." if sample_index < 8 else "it is red"


def toy_encode(texts):
    axes = {
        "man": 0,
        "male": 0,
        "female": 1,
        "woman": 1,
        "red": 2,
        "yellow": 3,
        "blue": 4,
        "unknown": 5,
    }
    out = np.zeros((len(texts), 7), dtype=np.float32)
    for i, text in enumerate(texts):
        hits = [axes[w] for w in text.split() if w in axes] or [6]
        out[i, hits] = 1.0
    return out


def test_chain_with_scripted_models():
    captions = load_caption_set()
    probes = proposal_probes(captions)
    assert probes["probe_id"].is_unique and len(probes) == len(captions)
    messages = json.loads(probes["messages"].iloc[0])
    assert (
        messages[0]["role"] == "system" and captions["caption"].iloc[0] in messages[-1]["content"]
    )
    responses = pd.DataFrame(
        {
            "probe_id": probes["probe_id"],
            "status": ["error" if i == 5 else "ok" for i in range(len(probes))],
            "text": [scripted_llm(c) for c in probes["caption"]],
            "attempts": 1,
        }
    )
    pairs, statuses = collect_proposals(probes, responses.iloc[1:])  # caption 0: no response row
    assert statuses["status"].iloc[0] == "missing" and statuses["status"].iloc[5] == "error"
    assert (statuses["status"] == "invalid").sum() == 1  # the clock caption
    assert 0.0 < proposal_yield(statuses) < 1.0

    kb = build_knowledge_base(captions, pairs, KnowledgeBaseConfig(max_captions_per_bias=5))
    assert {b.bias_id for b in kb.biases} == {"person/person gender", "train/train color"}
    train = next(b for b in kb.biases if b.bias_id == "train/train color")
    assert [c for c, _ in train.captions] == ["c025", "c031"]  # c032 "A red train" names a class
    frame = kb.to_frame(captions)

    images = image_probes(frame, images_per_caption=10)
    assert list(images.columns) == IMAGE_PROBE_COLUMNS
    assert len(images) == 10 * frame["caption_id"].nunique() and images["probe_id"].is_unique
    questions = vqa_probes(frame, images)
    assert list(questions.columns) == VQA_PROBE_COLUMNS and len(questions) == 10 * len(frame)
    assert json.loads(questions["choices"].iloc[0]) == ["female", "male", "unknown"]
    assert (
        questions["prompt"]
        .iloc[0]
        .startswith("Question: What is the gender of the person? Choices: female, male, unknown.")
    )

    answers = pd.DataFrame(
        {
            "probe_id": questions["probe_id"],
            "status": "ok",
            "text": [
                scripted_vqa(b, s)
                for b, s in zip(questions["bias_id"], questions["sample_index"], strict=True)
            ],
        }
    )
    answers.loc[0, "status"] = "error"
    labels = label_answers(questions, answers, AnswerToClass(toy_encode, name="toy"))
    assert list(labels.columns) == LABEL_COLUMNS and len(labels) == len(questions)
    assert labels["status"].iloc[0] == "error" and labels["label"].iloc[0] is None
    assert set(labels["label"].dropna()) == {"male", "yellow", "red"}

    table = severity_table(labels, kb, SeverityConfig(n_resamples=200)).set_index("bias_id")
    assert table.at["person/person gender", "severity_context_aware"] == pytest.approx(1.0)
    assert table.at["person/person gender", "majority_class"] == "male"
    assert (
        table.at["person/person gender", "n_images"] == 10 * 5 - 1
    )  # the failed call is not an answer
    assert table.at["train/train color", "severity_context_free"] == pytest.approx(
        bias_severity([0, 0.2, 0.8])
    )


def test_probe_ids_are_stable_and_content_bound():
    frame = pd.DataFrame(
        {
            "caption_id": ["a", "a", "b"],
            "caption": ["A dog.", "A dog.", "A cat."],
            "bias_id": ["dog/breed", "dog/size", "cat/colour"],
            "classes": [["x", "y"], ["s", "l"], ["b", "w"]],
            "question": ["q1", "q2", "q3"],
        }
    )
    one, two = image_probes(frame, 3), image_probes(frame, 3)
    assert one.equals(two) and len(one) == 6  # caption "a" drawn once for both of its biases
    changed = image_probes(frame.assign(caption=["A big dog.", "A big dog.", "A cat."]), 3)
    assert set(changed["probe_id"]).isdisjoint(one["probe_id"][:3])
    assert len(vqa_probes(frame, one)) == 9
    assert len(vqa_probes(frame, one[one["caption_id"] == "b"])) == 3  # no images: no questions
    with pytest.raises(ValueError):
        image_probes(frame, 0)
    with pytest.raises(ValueError, match="more than one row per probe_id"):
        collect_proposals(
            pd.DataFrame({"probe_id": ["p"], "caption_id": ["a"]}),
            pd.DataFrame({"probe_id": ["p", "p"], "status": ["ok", "ok"], "text": ["{}", "{}"]}),
        )
    assert np.isnan(proposal_yield(pd.DataFrame(columns=["status", "n_proposals"])))
