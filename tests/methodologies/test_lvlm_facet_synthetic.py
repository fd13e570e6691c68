"""lvlm_facet on SIMULATED data: the synthetic FACET-schema table follows paper Table 1,
and the planted recalls and disparity signs are recovered through the real selection,
matching (offline MiniLM) and recall metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genfair.methodologies.lvlm_facet.groups import PAPER_CLASSES, lvlm_persons
from genfair.methodologies.lvlm_facet.matching import AnswerMatcher, make_encoder
from genfair.methodologies.lvlm_facet.recall import MACRO, POOLED
from genfair.methodologies.lvlm_facet.scoring import headline, recall_tables
from genfair.methodologies.lvlm_facet.synthetic import (
    DEFAULT_POLICY,
    TABLE1,
    planted_recalls,
    simulate_answers,
    synthetic_persons,
)

PROMPTS = ("direct", "is_there", "person_is")
N = 7000  # about a third of the paper's 21,560 images


@pytest.fixture(scope="module")
def persons() -> pd.DataFrame:
    return lvlm_persons(synthetic_persons(N, seed=7), classes="paper")


@pytest.fixture(scope="module")
def measured(persons: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    answers = simulate_answers(persons, PROMPTS, DEFAULT_POLICY, seed=11)
    encoder = make_encoder("minilm")
    labels = pd.Series(index=answers.index, dtype=object)
    for kind, rows in (
        ("class", answers["prompt"] == "direct"),
        ("choice", answers["prompt"] != "direct"),
    ):
        labels[rows] = (
            AnswerMatcher(kind, encoder)
            .match(answers.loc[rows, "answer"].tolist())["label"]
            .to_numpy()
        )
    answers = answers.assign(label=labels)
    return answers, recall_tables(answers, PAPER_CLASSES)


def test_table_follows_paper_table1_and_is_labelled_simulated() -> None:
    raw = synthetic_persons(N, seed=7)
    assert raw["simulated"].all()
    table = lvlm_persons(raw, classes="paper")
    assert 0 < len(raw) - len(table) < 0.05 * N  # persons sharing an image are dropped
    for attribute, counts in TABLE1.items():
        expected = pd.Series(counts, dtype=float) / sum(counts.values())
        shares = table[attribute].value_counts(normalize=True).reindex(expected.index, fill_value=0)
        assert np.allclose(shares, expected, atol=0.02), (attribute, shares.to_dict())
    for cls in ("student", "skateboarder"):  # emptied as in the paper's appendix
        assert not ((table["class"] == cls) & (table["age"] == "older")).any()


def test_planted_recalls_recovered_within_binomial_bounds(measured) -> None:
    answers, tables = measured
    planted = planted_recalls(answers, PAPER_CLASSES)
    got = tables["recalls"].merge(planted, on=["prompt", "attribute", "class", "group"], how="left")
    got = got[got["class"] != MACRO]  # a mean of recalls, not a count: checked via its parts
    cells = got[got["n_x"] > 0]
    assert (cells["n_x"] == cells["n_y"]).all()  # every image counted once
    # two-sided 99% over all cells together (Bonferroni); p per image varies within a
    # cell, and a Poisson-binomial count is tighter than Binomial(n, mean p)
    alpha = 0.01 / len(cells)
    lo = stats.binom.ppf(alpha / 2, cells["n_x"], cells["planted_recall"])
    hi = stats.binom.ppf(1 - alpha / 2, cells["n_x"], cells["planted_recall"])
    inside = (cells["hits"] >= lo) & (cells["hits"] <= hi)
    assert inside.all(), cells.loc[
        ~inside, ["prompt", "attribute", "class", "group", "hits", "n_x", "planted_recall"]
    ]
    assert len(cells) > 3 * 3 * 13 * 2  # many cells, not a handful
    empty = got[got["n_x"] == 0]
    assert set(empty.loc[empty["class"] != POOLED, "class"]) == {"student", "skateboarder"}
    assert empty["recall"].isna().all()  # n/a by default


def test_disparity_signs_recovered(measured) -> None:
    answers, tables = measured
    planted = planted_recalls(answers, PAPER_CLASSES).set_index(
        ["prompt", "attribute", "class", "group"]
    )
    d = tables["disparities"]
    checked = 0
    for r in d.itertuples():
        if r.n_a < 100 or r.n_b < 100 or r._1 == MACRO:
            continue
        gap = (
            planted.loc[(r.prompt, r.attribute, r._1, r.group_a), "planted_recall"]
            - planted.loc[(r.prompt, r.attribute, r._1, r.group_b), "planted_recall"]
        )
        if abs(gap) >= 0.1:
            assert np.sign(r.difference) == np.sign(gap), (r, gap)
            checked += 1
    assert checked >= 20
    heads = headline(tables)
    assert heads["disparity_skin_tone_direct"] > 0.2 and heads["disparity_age_direct"] > 0.15
    assert heads["disparity_gender_person_is"] > 0.15
    nurse = d[(d["class"] == "nurse") & (d["prompt"] == "direct") & (d["attribute"] == "gender")]
    assert nurse["difference"].item() < -0.2  # planted: nurses recalled more often when female


def test_per_request_hook_matches_the_table_policy(persons: pd.DataFrame) -> None:
    """The simulator's per-request answer (from probe meta) is the one simulate_answers
    writes for the same person, prompt and seed."""
    from genfair.models.base import derive_seed

    sample = persons.head(40)
    table = simulate_answers(sample, PROMPTS, DEFAULT_POLICY, seed=5)
    for row in table.to_dict("records"):
        meta = {k: row[k] for k in ("class", "prompt", "gender", "skin_tone", "age")}
        assert (
            DEFAULT_POLICY.answer(meta, derive_seed(5, row["person_id"], row["prompt"]))
            == row["answer"]
        )
    with pytest.raises(KeyError, match="needs meta"):
        DEFAULT_POLICY.answer({"class": "nurse"}, 0)


@pytest.mark.parametrize(("base", "expected"), [(1.0, 1.0), (0.0, 0.0)])
def test_fixture_chain_with_certain_answers(tmp_path, base: float, expected: float) -> None:
    """The FACET fixture through curation, selection, probes, the SIMULATED answers,
    matching and the tables: a model planted always right (or always wrong) has recall 1
    (or 0) in every non-empty cell."""
    from genfair.curation.facet import FacetConfig, curate_facet
    from genfair.curation.facet_fixture import build_facet_fixture
    from genfair.methodologies.lvlm_facet.probes import probe_rows
    from genfair.methodologies.lvlm_facet.synthetic import PlantedRecall
    from genfair.models.base import derive_seed

    release = build_facet_fixture(tmp_path / "release")
    curate_facet(FacetConfig(release_dir=release), tmp_path / "out", progress=False)
    chosen = lvlm_persons(pd.read_parquet(tmp_path / "out" / "persons.parquet"), classes="all")
    probes = probe_rows(chosen, release / "images")
    policy = PlantedRecall(default_base=base, floor=0.0, ceiling=1.0)
    probes["answer"] = [
        policy.answer(row, derive_seed(1, row["probe_id"])) for row in probes.to_dict("records")
    ]
    encoder = make_encoder("minilm")
    probes["label"] = None
    for kind, rows in (
        ("class", probes["prompt"] == "direct"),
        ("choice", probes["prompt"] != "direct"),
    ):
        probes.loc[rows, "label"] = (
            AnswerMatcher(kind, encoder)
            .match(probes.loc[rows, "answer"].tolist())["label"]
            .to_numpy()
        )
    tables = recall_tables(probes, sorted(chosen["class"].unique()))
    defined = tables["recalls"].dropna(subset=["recall"])
    assert len(defined) > 0 and (defined["recall"] == expected).all()
