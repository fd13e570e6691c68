"""OpenBias captions: the project's caption set and the COCO / Flickr30k loaders."""

import json

import pytest

from genfair.methodologies.open_bias.captions import (
    CAPTION_COLUMNS,
    CaptionDataError,
    load_caption_set,
    load_coco_captions,
    load_flickr30k_captions,
)


def test_project_caption_set():
    frame = load_caption_set()
    assert list(frame.columns[:4]) == CAPTION_COLUMNS
    assert 40 <= len(frame) <= 60
    assert frame["caption_id"].is_unique
    assert set(frame["scene"]) == {"person", "object"}
    assert (frame["scene"] == "object").sum() >= 15 and (frame["scene"] == "person").sum() >= 15
    assert frame["image_id"].duplicated().any()  # exercises one caption per image
    text = " ".join(frame["caption"]).lower()
    for named in ("woman", "red train", "old man", "black dog"):  # some name a class outright
        assert named in text
    assert not frame["caption"].str.contains("\n").any()


def test_caption_set_errors(tmp_path):
    with pytest.raises(CaptionDataError, match="not found"):
        load_caption_set(tmp_path / "nope.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,text\n1,a dog\n")
    with pytest.raises(
        CaptionDataError, match=r"missing column\(s\) \['caption_id', 'image_id', 'caption'\]"
    ):
        load_caption_set(bad)
    dup = tmp_path / "dup.csv"
    dup.write_text("caption_id,image_id,caption\n1,a,A dog.\n1,b,A cat.\n")
    with pytest.raises(CaptionDataError, match="not unique"):
        load_caption_set(dup)
    empty = tmp_path / "empty.csv"
    empty.write_text("caption_id,image_id,caption\n1,a,A dog.\n2,b,  \n")
    with pytest.raises(CaptionDataError, match=r"empty caption in data row\(s\) \[2\]"):
        load_caption_set(empty)


def _coco(tmp_path):
    instances = {
        "categories": [{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}],
        "annotations": [
            {"image_id": 10, "category_id": 1},  # one person
            {"image_id": 10, "category_id": 18},
            {"image_id": 20, "category_id": 1},  # two people
            {"image_id": 20, "category_id": 1},
            {"image_id": 30, "category_id": 18},  # no person
            {"image_id": 40, "category_id": 1},  # one person
        ],
    }
    captions = {
        "annotations": [
            {"id": 1, "image_id": 10, "caption": "A man walking\n a dog."},
            {"id": 2, "image_id": 20, "caption": "Two people talking."},
            {"id": 3, "image_id": 10, "caption": "A person with a dog."},
            {"id": 4, "image_id": 10, "caption": "Someone and a dog."},
            {"id": 5, "image_id": 10, "caption": "A dog on a leash."},
            {"id": 6, "image_id": 30, "caption": "A dog."},
            {"id": 7, "image_id": 40, "caption": "A surfer."},
        ]
    }
    (tmp_path / "instances.json").write_text(json.dumps(instances))
    (tmp_path / "captions.json").write_text(json.dumps(captions))
    return tmp_path / "captions.json", tmp_path / "instances.json"


def test_coco_single_person_first_three(tmp_path):
    captions, instances = _coco(tmp_path)
    frame = load_coco_captions(captions, instances)
    assert list(frame.columns) == CAPTION_COLUMNS
    assert frame["caption_id"].tolist() == ["1", "3", "4", "7"]  # image 10: first three only
    assert frame["image_id"].tolist() == ["10", "10", "10", "40"]
    assert frame["caption"].iloc[0] == "A man walking a dog."
    assert len(load_coco_captions(captions, instances, captions_per_image=None)) == 5


def test_coco_wrong_layout(tmp_path):
    captions, instances = _coco(tmp_path)
    with pytest.raises(CaptionDataError, match="expected a JSON object with keys"):
        load_coco_captions(instances, captions)  # swapped
    with pytest.raises(CaptionDataError, match="no category named 'persons'"):
        load_coco_captions(captions, instances, category="persons")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(CaptionDataError, match="not valid JSON"):
        load_coco_captions(tmp_path / "broken.json", instances)
    with pytest.raises(CaptionDataError, match="not found"):
        load_coco_captions(tmp_path / "missing.json", instances)


def test_flickr_captions_txt(tmp_path):
    lines = (
        ["image,caption"]
        + [f'1000.jpg,"Caption {i}, with a comma."' for i in range(5)]
        + ["2000.jpg,A dog runs."]
    )
    (tmp_path / "captions.txt").write_text("\n".join(lines) + "\n")
    frame = load_flickr30k_captions(tmp_path)
    assert frame["caption_id"].tolist() == ["1000.jpg#0", "1000.jpg#1", "1000.jpg#2", "2000.jpg#0"]
    assert frame["caption"].iloc[1] == "Caption 1, with a comma."
    assert set(frame["source"]) == {"flickr30k"}


def test_flickr_results_csv_and_token(tmp_path):
    results = tmp_path / "results.csv"
    results.write_text(
        "image_name| comment_number| comment\n"
        "1000.jpg| 0| Two young guys outside .\n1000.jpg| 1| Two men .\n1000.jpg| 2| Guys .\n"
        "1000.jpg| 3| Friends .\n2000.jpg| 0| A girl | with a bar .\n"
    )
    frame = load_flickr30k_captions(results)
    assert frame["image_id"].tolist() == ["1000.jpg"] * 3 + ["2000.jpg"]
    assert frame["caption"].iloc[-1] == "A girl | with a bar ."
    token = tmp_path / "results_20130124.token"
    token.write_text("1000.jpg#0\tTwo young guys .\n1000.jpg#1\tTwo men .\n")
    assert load_flickr30k_captions(token)["caption"].tolist() == ["Two young guys .", "Two men ."]


def test_flickr_wrong_layout(tmp_path):
    with pytest.raises(CaptionDataError, match="no Flickr30k captions found"):
        load_flickr30k_captions(tmp_path)
    odd = tmp_path / "odd.txt"
    odd.write_text("file;text\n1.jpg;hello\n")
    with pytest.raises(CaptionDataError, match="unknown layout"):
        load_flickr30k_captions(odd)
    short = tmp_path / "results.csv"
    short.write_text("image_name| comment_number| comment\n1000.jpg only\n")
    with pytest.raises(CaptionDataError, match="line 2"):
        load_flickr30k_captions(short)
