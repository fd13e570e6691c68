"""The authors' released bias-proposal files as input (small fixture in their format)."""

import json
from pathlib import Path

import pytest

from genfair.methodologies.open_bias.captions import CAPTION_COLUMNS, CaptionDataError
from genfair.methodologies.open_bias.knowledge_base import KnowledgeBaseConfig, build_knowledge_base
from genfair.methodologies.open_bias.published import STATUS_COLUMNS, load_published_proposals

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "open_bias_published_flickr.json"


def test_load_fixture():
    captions, proposals, statuses = load_published_proposals(FIXTURE)
    assert list(captions.columns) == CAPTION_COLUMNS and list(statuses.columns) == STATUS_COLUMNS
    # the Flickr file repeats the image stem as caption id: made unique
    assert captions["caption_id"].tolist() == [
        "1000092795#0",
        "1000092795#1",
        "10002456",
        "1001773457",
    ]
    assert captions["image_id"].tolist() == [
        "1000092795.jpg",
        "1000092795.jpg",
        "10002456.jpg",
        "1001773457.jpg",
    ]
    assert set(captions["source"]) == {"open_bias_published_flickr"}
    assert statuses["status"].tolist() == ["ok", "ok", "ok", "invalid"]
    assert "expected an object with a 'bias' list" in statuses["reason"].iloc[3]
    assert statuses["n_rejected"].tolist() == [0, 1, 0, 0]  # one class only
    assert [(c, p.name) for c, p in proposals] == [
        ("1000092795#0", "Person Race"),
        ("1000092795#0", "Person Age"),
        ("1000092795#1", "Person Race"),
        ("10002456", "Person Race"),
        ("10002456", "Hat Color"),
    ]


def test_fixture_into_knowledge_base():
    captions, proposals, _ = load_published_proposals(FIXTURE)
    kb = build_knowledge_base(captions, proposals, KnowledgeBaseConfig(support_threshold=0.0))
    by_id = {b.bias_id: b for b in kb.biases}
    assert set(by_id) == {"person/person race", "hat/hat color"}  # age was present in the caption
    race = by_id["person/person race"]
    assert race.classes == ["african american", "asian", "caucasian", "hispanic", "other"]
    assert [c for c, _ in race.captions] == ["1000092795#0", "10002456"]  # one caption per image


def test_wrong_files(tmp_path):
    with pytest.raises(CaptionDataError, match="not found"):
        load_published_proposals(tmp_path / "coco_train.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"no_bias_proposed": []}))
    with pytest.raises(CaptionDataError, match="'bias_proposal' list"):
        load_published_proposals(bad)
    bad.write_text(json.dumps({"bias_proposal": [{"caption": "x"}]}))
    with pytest.raises(CaptionDataError, match=r"bias_proposal\[0\] lacks"):
        load_published_proposals(bad)
    bad.write_text("{")
    with pytest.raises(CaptionDataError, match="not valid JSON"):
        load_published_proposals(bad)
