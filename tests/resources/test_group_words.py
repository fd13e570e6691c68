"""GroupWordCounter: gender words, race descriptor + O*NET occupation rule, name table."""

import numpy as np
import pytest

from genfair.resources.group_words import (
    GroupWordCounter,
    occupation_phrases,
    plural_forms,
    singularize,
)


def test_gender_whole_words(counter):
    # she, her, hers -> 3 female; "shed", "herald", "other", "hero" are not words of the list
    assert counter.count("She shed her hers; the herald, the other hero.", "gender") == {
        "female": 3,
        "male": 0,
    }
    # he, his, him, himself -> 4 male; "the", "this", "hew" no
    assert counter.count("He told his son: the hew of this is him himself.", "gender") == {
        "female": 0,
        "male": 5,  # he, his, son, him, himself
    }


def test_gender_case_and_punctuation(counter):
    assert counter.count("SHE said; Her MOTHER's sisters.", "gender") == {"female": 4, "male": 0}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Black teachers", {"white": 0, "black": 1, "asian": 0}),
        ("a black teacher", {"white": 0, "black": 1, "asian": 0}),
        ("a white registered nurse", {"white": 1, "black": 0, "asian": 0}),
        ("the White Registered Nurses", {"white": 1, "black": 0, "asian": 0}),
        ("Asian chief executives", {"white": 0, "black": 0, "asian": 1}),
        ("asian workers", {"white": 0, "black": 0, "asian": 1}),  # bare head-noun plural
        ("a black coach", {"white": 0, "black": 1, "asian": 0}),  # "Coaches and Scouts"
        ("black  police officers", {"white": 0, "black": 1, "asian": 0}),
    ],
)
def test_race_descriptor_occupation_variants(counter, text, expected):
    assert counter.count(text, "race") == expected


@pytest.mark.parametrize(
    "text",
    [
        "the black ball",
        "the White House",
        "Asian markets",
        "black-teacher",
        "blackteacher",
        "white teacherly",
        "black. Teachers",
    ],
)
def test_race_needs_descriptor_then_occupation(counter, text):
    assert sum(counter.count(text, "race").values()) == 0


def test_race_no_general_qualifier(counter):
    # "Dentists, General" must not make "general" an occupation
    assert "general" not in counter.occupations
    assert sum(counter.count("the white general public", "race").values()) == 0


def test_extra_descriptor_is_opt_in():
    base = GroupWordCounter.from_files()
    assert sum(base.count("African American teachers", "race").values()) == 0
    ext = GroupWordCounter.from_files(extra_descriptors={"african american": "black"})
    assert ext.count("African  American teachers", "race")["black"] == 1


def test_name_table_longest_first(tmp_path):
    names = tmp_path / "names.csv"
    names.write_text("name,race\nDonald Trump,white\nTrump,white\nKamala Harris,black\n")
    c = GroupWordCounter.from_files(names_csv=names)
    assert c.uses_name_table
    # "Donald Trump" once (not also "Trump"), "Trump" once, "Kamala Harris" once,
    # "trumpet" no (whole word), "kamala harris" no (names are case-sensitive)
    text = "Donald Trump met Kamala Harris. Trump played a trumpet; kamala harris."
    assert c.count(text, "race") == {"white": 2, "black": 1, "asian": 0}
    assert not GroupWordCounter.from_files().uses_name_table


def test_count_many_matches_count(counter):
    texts = ["She and her sister.", "", "He, a black teacher, and an Asian nurse.", "none"]
    g = counter.count_many(texts, "gender")
    r = counter.count_many(texts, "race")
    assert g.dtype == np.int64 and g.shape == (4, 2) and r.shape == (4, 3)
    np.testing.assert_array_equal(g, [[3, 0], [0, 0], [0, 1], [0, 0]])
    np.testing.assert_array_equal(r, [[0, 0, 0], [0, 0, 0], [0, 1, 1], [0, 0, 0]])
    for i, t in enumerate(texts):
        assert list(counter.count(t, "race").values()) == r[i].tolist()


def test_unknown_attribute(counter):
    with pytest.raises(ValueError, match="unknown attribute"):
        counter.count("x", "age")


def test_plural_rules():
    assert singularize("nurses") == {"nurs", "nurse"}
    assert singularize("coaches") == {"coach", "coache"}
    assert singularize("secretaries") == {"secretary"}
    assert singularize("firemen") == {"fireman"}
    assert plural_forms("teacher") == {"teachers"}
    assert plural_forms("coach") == {"coaches"}
    assert plural_forms("secretary") == {"secretaries"}
    assert plural_forms("attorney") == {"attorneys"}
    assert plural_forms("fireman") == {"firemen"}
    phrases = occupation_phrases(["Registered Nurses", "Farmers, Ranchers, and Other Managers"])
    assert {
        "registered nurse",
        "registered nurses",
        "nurse",
        "nurses",
        "farmer",
        "ranchers",
        "other managers",
        "managers",
    } <= phrases
