"""Every methodology estimates its largest table before any probe is built: an absurd count
(within its bound) is refused with the estimate, the committed study fits, and a curated
table's row count caps the estimate (no probe is built here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from genfair.frame import read_params
from genfair.methodologies import get_methodology
from genfair.study.footprint import check_footprint
from genfair.study_params import ConfigError, methodology_config, params_from
from tests.test_names import ROOT

GIB2 = 2 << 30
#: COCO captions are not counted before they are read: only max_captions bounds them
COCO = {"captions": "coco", "coco_captions": "c.json", "coco_instances": "i.json"}

ABSURD = [  # methodology, key of the message, bytes per row, overrides of the committed config
    ("news_bias", "articles", 4_000, {"articles": 10_000_000, "corpus": "absent.parquet"}),
    (
        "news_bias",
        "documents.num_topics_grid",
        48_000,
        {"documents": {"num_topics_grid": [200, 10_000_000]}},
    ),
    ("iris", "tournament.rounds", 1_000, {"tournament": {"rounds": 10_000_000}}),
    ("lvlm_facet", "max_persons", 800, {"max_persons": 10_000_000, "persons": "absent.parquet"}),
    (
        "open_bias",
        "severity.n_resamples",
        54_000,  # 2,000 captions x (2 classes + 1) x 9 bytes
        {**COCO, "max_captions": 2_000, "severity": {"n_resamples": 1_000_000}},
    ),
    (
        "open_bias",
        "images_per_caption",
        250,
        {**COCO, "max_captions": 10_000_000, "images_per_caption": 10_000},
    ),
]  # fmt: skip


def committed(name: str, **overrides: Any) -> Any:
    raw = read_params(ROOT / "params.yaml")
    block = raw["methodologies"][name]
    for key, value in overrides.items():
        block[key] = {**block[key], **value} if isinstance(value, dict) else value
    return methodology_config(params_from(raw, "params.yaml"), name)


@pytest.mark.parametrize("name, key, per_row, overrides", ABSURD)
def test_an_absurd_count_is_refused_with_the_estimate(
    name: str, key: str, per_row: int, overrides: dict[str, Any]
) -> None:
    method = get_methodology(name)
    with pytest.raises(ConfigError) as error:
        check_footprint(method, committed(name, **overrides), available=GIB2)
    message = str(error.value)
    assert message.startswith(f"params.yaml: methodologies.{name}.{key}: ")
    assert f"rows x {per_row:,} bytes =" in message
    assert "more than the 2.0 GiB this machine has available" in message


@pytest.mark.parametrize("name", sorted({row[0] for row in ABSURD}))
def test_the_committed_study_fits(name: str) -> None:
    check_footprint(get_methodology(name), committed(name), available=GIB2)


def test_a_curated_table_caps_the_estimate(tmp_path: Path) -> None:
    corpus, persons = tmp_path / "news.parquet", tmp_path / "persons.parquet"
    pd.DataFrame({"article_id": ["a", "b", "c"]}).to_parquet(corpus)
    pd.DataFrame({"person_id": range(5)}).to_parquet(persons)
    news = committed("news_bias", articles=10_000_000, corpus=str(corpus))
    facet = committed("lvlm_facet", max_persons=10_000_000, persons=str(persons))
    project = committed("open_bias", max_captions=None, images_per_caption=10_000)
    assert [f.rows for f in get_methodology("news_bias").footprint(news)][0] == (
        3 * len(set(news.prompt_types))
    )
    assert [f.rows for f in get_methodology("lvlm_facet").footprint(facet)] == [
        5 * len(facet.prompts)
    ]
    captions = len(pd.read_csv(project.caption_set))
    assert [f.rows for f in get_methodology("open_bias").footprint(project)][0] == (
        captions * 10_000
    )
    # without a readable corpus and a bound, its probes are not estimated (building them
    # fails, in one line)
    (tmp_path / "broken.parquet").write_text("not parquet")
    for corpus in ("absent.parquet", "broken.parquet"):
        config = committed("news_bias", articles=None, corpus=str(tmp_path / corpus))
        assert [f.key for f in get_methodology("news_bias").footprint(config)] == [
            "documents.num_topics_grid"
        ]
