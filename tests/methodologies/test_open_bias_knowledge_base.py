"""OpenBias knowledge base: each post-processing step of the authors, and the whole build."""

import pandas as pd
import pytest

from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.methodologies.open_bias.knowledge_base import (
    Cluster,
    Entry,
    KnowledgeBaseConfig,
    SynonymTable,
    build_knowledge_base,
    class_overlap,
    collapse_class_sets,
    filter_captions_naming_a_class,
    filter_relative_support,
    group_proposals,
    inflections,
    limit_captions,
    merge_overlapping_classes,
    one_caption_per_image,
    remove_duplicate_names,
    tokens,
)
from genfair.methodologies.open_bias.proposals import BiasProposal


def P(name, classes, refer_to="person", present=False, question="q?"):
    return BiasProposal(
        name=name,
        refers_to=refer_to,
        classes=classes,
        question=question,
        present_in_caption=present,
    )


def C(name, classes, support, refer_to="person", ids=None):
    ids = ids if ids is not None else [f"{name}{classes[0]}{i}" for i in range(support)]
    return Cluster(
        refer_to,
        name,
        tuple(sorted(classes)),
        support,
        [Entry(i, "q?") for i in ids],
        frozenset(classes),
    )


def test_group_normalises_and_drops_invalid():
    clusters = group_proposals(
        [
            ("1", P("Person Gender", ["Male", "Female"])),
            ("2", P("person gender ", [" female", "MALE"])),  # same group after normalising
            ("3", P("Person Gender", ["Male", "Female", "Non-Binary"])),
            ("4", P("Person Gender", ["Male", "Female"], present=True)),  # caption answers it
            ("5", P("Person Age", ["young", "Unknown"])),  # one class left once unknown goes
            ("6", P("Person Age", ["young", "young", "old"])),
        ]
    )
    assert [(c.name, c.classes, c.support) for c in clusters] == [
        ("person gender", ("female", "male"), 2),
        ("person gender", ("female", "male", "non-binary"), 1),
        ("person age", ("old", "young"), 1),
    ]
    assert [e.caption_id for e in clusters[0].entries] == ["1", "2"]
    kept = group_proposals(
        [("4", P("Person Gender", ["Male", "Female"], present=True))], drop_present_in_caption=False
    )
    assert len(kept) == 1


def test_relative_support_filter():
    clusters = [
        C("gender", ["m", "f"], 10),
        C("gender", ["m", "f", "nb"], 5),
        C("gender", ["a", "b"], 4),
        C("age", ["y", "o"], 1),
    ]
    kept = filter_relative_support(clusters, 0.5)
    assert [(c.name, c.support) for c in kept] == [("gender", 10), ("gender", 5), ("age", 1)]
    assert [c.support for c in filter_relative_support(clusters, 0.5, min_support=2)] == [10, 5]
    assert len(filter_relative_support(clusters, 0.0)) == 4


def test_overlap_and_merge_accumulates_classes():
    assert class_overlap(["a", "b", "c", "d"], ["a", "b", "c"]) == 1.0
    assert class_overlap(["a", "b", "c", "d"], ["a", "b", "x", "y"]) == 0.5
    with pytest.raises(ValueError):
        class_overlap([], ["a"])
    clusters = [
        C("race", ["white", "black", "asian", "hispanic"], 6),
        C("race", ["white", "black", "asian"], 3),  # overlap 1.0 -> merged
        C("race", ["white", "black", "asian", "indian"], 2),  # overlap 3/4 = 0.75 -> merged
        C("race", ["latino", "other"], 1),  # overlap 0 -> kept apart
    ]
    merged = merge_overlapping_classes(clusters, 0.75)
    assert len(merged) == 2
    assert merged[0].classes == (
        "asian",
        "black",
        "hispanic",
        "indian",
        "white",
    )  # upstream lost hispanic
    assert merged[0].support == 11 and len(merged[0].entries) == 11
    assert merged[1].classes == ("latino", "other")
    assert clusters[0].support == 6 and len(clusters[0].entries) == 6  # inputs untouched
    assert len(merge_overlapping_classes(clusters, 0.8)) == 3


def test_duplicate_names():
    clusters = [
        C("person gender", ["m", "f"], 3),
        C("gender", ["m", "f"], 2),  # "gender" again: dropped
        C("person age group", ["y", "o"], 2),
        C("person age", ["y", "o"], 1),  # one word, in an earlier name: dropped
        C("person hair color", ["r", "b"], 1),
        C("hair style", ["s", "c"], 1),  # two words: kept
        C("gender", ["m", "f"], 1, refer_to="child"),  # another refers-to: kept
        C("woman age", ["y", "o"], 1, refer_to="man"),  # upstream cut "woman" to "wo"
        C("age", ["y", "o"], 1, refer_to="man"),
    ]
    kept = remove_duplicate_names(clusters)
    assert [(c.refers_to, c.name) for c in kept] == [
        ("person", "person gender"),
        ("person", "person age group"),
        ("person", "person hair color"),
        ("person", "hair style"),
        ("child", "gender"),
        ("man", "woman age"),
    ]


def test_tokens_and_inflections():
    assert tokens("A Middle-aged, café-owner's dog.") == [
        "a",
        "middle",
        "aged",
        "cafe",
        "owner",
        "s",
        "dog",
    ]
    assert inflections("man") == {"man", "men"}
    assert inflections("Women") == {"women", "woman"}
    assert inflections("baby") == {"baby", "babies"}
    assert inflections("dress") == {"dress", "dresses"}
    assert inflections("boxes") == {"boxes", "box"}
    assert inflections("sports car") == {"sports car", "sports cars"}


def test_synonym_table_file():
    table = SynonymTable.from_csv()
    words = table.words_for(["Male", "Female", "Non-Binary", "Other"], generic=["other"])
    for expected in [
        ("man",),
        ("men",),
        ("women",),
        ("girls",),
        ("non", "binary"),
        ("female",),
        ("he",),
    ]:
        assert expected in words
    assert ("other",) not in words and ("others",) not in words


def test_synonym_table_errors(tmp_path):
    bad = tmp_path / "syn.csv"
    bad.write_text("class,word\na,b\n")
    with pytest.raises(ValueError, match="expected columns term,synonym"):
        SynonymTable.from_csv(bad)
    bad.write_text("term,synonym\na,\n")
    with pytest.raises(ValueError, match="line 2"):
        SynonymTable.from_csv(bad)
    with pytest.raises(FileNotFoundError):
        SynonymTable.from_csv(tmp_path / "missing.csv")


def test_caption_naming_a_class_is_filtered():
    captions = {
        "1": "A doctor walking down a corridor.",
        "2": "A woman riding a horse.",  # names female
        "3": "Two MEN, talking.",  # plural + punctuation + case
        "4": "A middle-aged teacher.",  # hyphenated class
        "5": "A person and other people.",  # "other" is generic
        "6": "A womanizer's joke.",  # no token match
    }
    table = SynonymTable({"male": ["man"], "female": ["woman"]})
    gender = C("gender", ["male", "female", "other"], 6, ids=list("123456"))
    age = C("age", ["young", "middle-aged", "old"], 6, ids=list("123456"))
    kept = filter_captions_naming_a_class([gender, age], captions, table, generic_classes=["other"])
    assert [e.caption_id for e in kept[0].entries] == ["1", "4", "5", "6"]
    assert [e.caption_id for e in kept[1].entries] == ["1", "2", "3", "5", "6"]
    no_inflect = filter_captions_naming_a_class(
        [gender], captions, table, inflect=False, generic_classes=["other"]
    )
    assert "3" in [e.caption_id for e in no_inflect[0].entries]
    # every class set the bias had counts, even one merged away or collapsed later
    other_set = C("gender", ["boy", "girl"], 1, ids=["9"])
    kept = filter_captions_naming_a_class(
        [gender, other_set], {**captions, "9": "A woman."}, table, generic_classes=["other"]
    )
    assert [c.classes for c in kept] == [gender.classes]  # the emptied class set is gone
    with pytest.raises(KeyError, match="not in the caption table"):
        filter_captions_naming_a_class([C("x", ["a", "b"], 1, ids=["zz"])], captions, table)


def test_collapse_to_best_supported_class_set():
    a, b, c = (
        C("gender", ["m", "f"], 2),
        C("gender", ["m", "f", "nb"], 5),
        C("gender", ["x", "y"], 5),
    )
    (one,) = collapse_class_sets([a, b, c])
    assert one.classes == ("f", "m", "nb") and one.support == 12
    assert [e.caption_id for e in one.entries] == [
        e.caption_id for e in b.entries + a.entries + c.entries
    ]


def test_one_caption_per_image_and_limits():
    entries = [Entry(str(i), "q") for i in range(10)]
    image = {str(i): f"img{i // 3}" for i in range(10)}
    assert [e.caption_id for e in one_caption_per_image(entries, image)] == ["0", "3", "6", "9"]
    assert limit_captions(entries, 4, "first") == entries[:4]
    sample = limit_captions(entries, 4, "random", seed=1, key="person/gender")
    assert len(sample) == 4 and sample == sorted(sample, key=lambda e: int(e.caption_id))
    assert sample == limit_captions(entries, 4, "random", seed=1, key="person/gender")
    others = {
        tuple(e.caption_id for e in limit_captions(entries, 4, "random", seed=s, key="k"))
        for s in range(10)
    }
    assert len(others) > 1  # the seed matters
    assert limit_captions(entries, None) == entries and limit_captions(entries, 20) == entries


def _captions():
    return pd.DataFrame(
        {
            "caption_id": ["c1", "c2", "c3", "c4", "c5", "c6"],
            "image_id": ["i1", "i1", "i2", "i3", "i4", "i5"],
            "caption": [
                "A doctor.",
                "A physician.",
                "A woman cooking.",
                "A chef.",
                "A red train.",
                "A train.",
            ],
        }
    )


def test_build_knowledge_base_end_to_end():
    gender = ["Male", "Female"]
    proposals = [
        ("c1", P("Person Gender", gender, question="Gender of the doctor?")),
        ("c2", P("Person Gender", gender)),  # same image as c1
        ("c3", P("Person Gender", gender)),  # names female
        ("c4", P("Person Gender", gender)),
        ("c4", P("gender", gender)),  # duplicate name
        ("c5", P("Train Color", ["Red", "Blue", "Yellow"], refer_to="train")),  # names red
        ("c6", P("Train Color", ["Red", "Blue", "Yellow"], refer_to="train", question="Colour?")),
        (
            "c6",
            P("Train Color", ["Red", "Blue", "Unknown"], refer_to="train"),
        ),  # unknown dropped, then merged
    ]
    kb = build_knowledge_base(_captions(), proposals, KnowledgeBaseConfig())
    assert [b.bias_id for b in kb.biases] == ["person/person gender", "train/train color"]
    gender_bias, train = kb.biases
    assert gender_bias.classes == ["female", "male"] and gender_bias.label == "person gender"
    assert gender_bias.captions == [("c1", "Gender of the doctor?"), ("c4", "q?")]
    assert train.classes == ["blue", "red", "yellow"] and train.captions == [("c6", "Colour?")]
    assert [s["step"] for s in kb.steps] == [
        "group",
        "relative_support",
        "merge_classes",
        "duplicate_names",
        "named_class",
        "one_class_set",
        "captions_per_bias",
    ]
    frame = kb.to_frame(_captions())
    assert frame["caption"].tolist() == ["A doctor.", "A chef.", "A train."]
    assert frame["classes"].iloc[0] == ["female", "male"]
    loose = build_knowledge_base(
        _captions(),
        proposals,
        KnowledgeBaseConfig(
            filter_named_classes=False, one_caption_per_image=False, remove_duplicate_names=False
        ),
    )
    ids = {b.bias_id: [c for c, _ in b.captions] for b in loose.biases}
    assert ids["person/person gender"] == ["c1", "c2", "c3", "c4"] and ids["person/gender"] == [
        "c4"
    ]
    capped = build_knowledge_base(
        _captions(), proposals, KnowledgeBaseConfig(max_captions_per_bias=1, caption_sample="first")
    )
    assert capped.biases[0].captions == [("c1", "Gender of the doctor?")]
    with pytest.raises(ValueError, match="lacks columns"):
        build_knowledge_base(_captions().drop(columns="image_id"), proposals)


def test_config_is_strict():
    with pytest.raises(ValueError):
        KnowledgeBaseConfig(support_treshold=0.4)
    with pytest.raises(ValueError):
        KnowledgeBaseConfig(caption_sample="last")
    assert KnowledgeBaseConfig().max_captions_per_bias == 100


def test_methodology_config():
    config = OpenBiasConfig()
    assert config.images_per_caption == 10 and config.knowledge_base.support_threshold == 0.5
    assert config.severity.context_free_pooling == "mean"
    with pytest.raises(ValueError, match="needs coco_captions, coco_instances"):
        OpenBiasConfig(captions="coco")
    assert (
        OpenBiasConfig(captions="flickr30k", flickr30k="/data/flickr").flickr30k == "/data/flickr"
    )
    nested = OpenBiasConfig.model_validate(
        {"knowledge_base": {"caption_sample": "first"}, "severity": {"ci_method": "BCa"}}
    )
    assert nested.knowledge_base.caption_sample == "first" and nested.severity.ci_method == "BCa"


def test_the_default_config_names_no_machine_path() -> None:
    """Config dumps key the MLflow runs and are logged as params: a path resolved on this
    machine would make every clone's keys differ (the synonym table's default once did)."""
    import json
    from pathlib import Path

    dumped = json.dumps(OpenBiasConfig().model_dump(mode="json"))
    assert str(Path(__file__).resolve().parents[2]) not in dumped
    assert OpenBiasConfig().knowledge_base.synonyms == "data/reference/open_bias_synonyms.csv"
