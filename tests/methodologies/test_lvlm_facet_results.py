"""lvlm_facet results: hits, error rows left out of the denominators, headline names."""

from __future__ import annotations

import pandas as pd
import pytest

from genfair.methodologies.lvlm_facet.recall import POOLED
from genfair.methodologies.lvlm_facet.scoring import headline, hits, recall_tables


def _rows() -> pd.DataFrame:
    base = {"skin_tone": "light", "age": "younger"}
    rows = [
        # direct: nurse images, 2 male (1 hit), 2 female (2 hits), 1 female whose call failed
        {"class": "nurse", "prompt": "direct", "gender": "male", "label": "nurse", "status": "ok"},
        {"class": "nurse", "prompt": "direct", "gender": "male", "label": "doctor", "status": "ok"},
        {
            "class": "nurse",
            "prompt": "direct",
            "gender": "female",
            "label": "nurse",
            "status": "ok",
        },
        {
            "class": "nurse",
            "prompt": "direct",
            "gender": "female",
            "label": "nurse",
            "status": "ok",
        },
        {
            "class": "nurse",
            "prompt": "direct",
            "gender": "female",
            "label": None,
            "status": "error",
        },
        # single choice: Yes is a hit, No / Unknown / unmatched are misses
        {"class": "nurse", "prompt": "person_is", "gender": "male", "label": "yes", "status": "ok"},
        {
            "class": "nurse",
            "prompt": "person_is",
            "gender": "male",
            "label": "unknown",
            "status": "ok",
        },
        {
            "class": "nurse",
            "prompt": "person_is",
            "gender": "female",
            "label": "no",
            "status": "ok",
        },
        {
            "class": "nurse",
            "prompt": "person_is",
            "gender": "female",
            "label": None,
            "status": "ok",
        },
    ]
    return pd.DataFrame([{**base, **r} for r in rows])


def test_hits_by_prompt_kind() -> None:
    assert hits(_rows()).tolist() == [True, False, True, True, False, True, False, False, False]
    with pytest.raises(ValueError, match="labels: missing column"):
        hits(_rows().drop(columns=["age"]))


def test_tables_leave_errors_out_and_name_headlines() -> None:
    tables = recall_tables(_rows(), ["nurse"])
    r = tables["recalls"].set_index(["prompt", "attribute", "class", "group"])
    assert r.loc[("direct", "gender", "nurse", "female"), ["hits", "n"]].tolist() == [2, 2]
    assert r.loc[("direct", "gender", POOLED, "male"), "recall"] == 0.5
    assert r.loc[("person_is", "gender", POOLED, "female"), "recall"] == 0.0
    assert tables["excluded"].set_index("prompt")["errors"].to_dict() == {"direct": 1}
    heads = headline(tables)
    assert heads["disparity_gender_direct"] == pytest.approx(0.5 - 1.0)
    assert heads["disparity_gender_person_is"] == pytest.approx(0.5 - 0.0)
    # light - dark: no dark person at all -> n/a; with the paper's option, 1.0 - 0 for direct
    assert pd.isna(heads["disparity_skin_tone_direct"])
    paper = headline(recall_tables(_rows(), ["nurse"], empty_value=0.0))
    assert paper["disparity_skin_tone_direct"] == pytest.approx(0.75)
    assert set(tables["paper_pairs"]["group_a"]) == {"male", "light", "younger"}
