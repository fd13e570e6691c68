"""OpenBias VQA: choices, prompt, and the answer -> class mapping."""

import numpy as np
import pytest

from genfair.methodologies.open_bias.vqa import (
    MAPPING_COLUMNS,
    AnswerToClass,
    vqa_choices,
    vqa_prompt,
)

# a toy encoder: one axis per concept, so similarities are known exactly
AXES = {
    "female": 0,
    "woman": 0,
    "lady": 0,
    "male": 1,
    "man": 1,
    "guy": 1,
    "unknown": 2,
    "tell": 2,
    "aged": 3,
}


def toy_encode(texts):
    out = np.zeros((len(texts), 5), dtype=np.float32)
    for i, text in enumerate(texts):
        hits = [AXES[w] for w in text.split() if w in AXES]
        for axis in hits:
            out[i, axis] += 1.0
        if not hits:
            out[i, 4] = 1.0  # unrelated to every choice
    return out


def test_choices_are_deterministic_with_unknown_last():
    assert vqa_choices(["Young", "Old", "Middle-Aged", "young"]) == [
        "middle-aged",
        "old",
        "young",
        "unknown",
    ]
    assert vqa_choices({"b", "a", "unknown"}) == ["a", "b", "unknown"]
    with pytest.raises(ValueError, match="at least 2 classes"):
        vqa_choices(["only", "unknown"])


def test_prompt_format():
    prompt = vqa_prompt(" What is the gender of the doctor? ", ["female", "male", "unknown"])
    assert (
        prompt
        == "Question: What is the gender of the doctor? Choices: female, male, unknown. Answer:"
    )


def test_exact_then_encoder():
    mapper = AnswerToClass(toy_encode, name="toy")
    choices = ["female", "male", "unknown"]
    out = mapper.map(
        [
            "Male.",
            "FEMALE",
            "The person in the image is a woman",
            "a guy",
            "I can't tell",
            "",
            None,
            "zebra",
        ],
        choices,
    )
    assert list(out.columns) == MAPPING_COLUMNS
    assert out["label"].tolist() == [
        "male",
        "female",
        "female",
        "male",
        "unknown",
        "unknown",
        "unknown",
        "female",
    ]
    assert out["tier"].tolist() == [
        "exact",
        "exact",
        "embedding",
        "embedding",
        "embedding",
        "empty",
        "empty",
        "embedding",
    ]
    assert out["similarity"].iloc[2] == pytest.approx(1.0)
    assert set(out["encoder"]) == {"toy"}
    assert mapper.cache.encoded == 3 + 4  # choices once, each distinct pending answer once


def test_threshold_and_cleaned_choices():
    mapper = AnswerToClass(toy_encode, threshold=0.5, name="toy")
    out = mapper.map(
        ["zebra", "lady", "middle aged", "Middle-Aged"], ["middle-aged", "lady", "unknown"]
    )
    assert out["label"].tolist() == ["unknown", "lady", "middle-aged", "middle-aged"]
    assert out["tier"].tolist() == ["below_threshold", "exact", "exact", "exact"]
    with pytest.raises(ValueError, match="must include 'unknown'"):
        mapper.map(["x"], ["a", "b"])
    with pytest.raises(ValueError, match="the same once cleaned"):
        mapper.map(["x"], ["middle-aged", "middle aged", "unknown"])
    with pytest.raises(ValueError, match="threshold"):
        AnswerToClass(toy_encode, threshold=2.0)
    with pytest.raises(TypeError):
        AnswerToClass(42)


def test_embedding_cache_on_disk(tmp_path):
    path = tmp_path / "emb.npz"
    AnswerToClass(toy_encode, cache_path=path, name="toy").map(
        ["a guy"], ["female", "male", "unknown"]
    )
    again = AnswerToClass(toy_encode, cache_path=path, name="toy")
    again.map(["a guy"], ["female", "male", "unknown"])
    assert again.cache.encoded == 0


def test_packaged_encoder_maps_plain_synonyms():
    """The default encoder (all-MiniLM-L6-v2 from PyPI, offline) on unambiguous answers."""
    mapper = AnswerToClass()
    assert "MiniLM" in mapper.encoder_name
    out = mapper.map(["woman", "a guy", "teenager"], ["female", "male", "young", "unknown"])
    assert out["label"].tolist() == ["female", "male", "young"]
