"""IRIS's paired model comparison (issue 33.2): sector scores at the study's S and K over
IRIS's own units (occupation, round, crop, counterfactual set) resampled jointly. A
hand-computed case; every replicate equal to IRIS's own metrics and scoring recomputed on the
same draws; partial sectors stay partial; the interval covers a planted difference and none."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.base import StudyResult
from genfair.methodologies.comparison import HeadlineCounts
from genfair.methodologies.iris.compare import headline_name
from genfair.methodologies.iris.config import IrisConfig
from genfair.methodologies.iris.scoring import IrisScoringConfig, SectorParams, score_models
from genfair.methodologies.iris.tournament import TournamentConfig
from genfair.study.compare import _counted_statistic, _statistic, compare_pair, paired_rows
from tests.support.iris_labels import ATTRIBUTES, t2i_labels, tournament_labels

IRIS = get_methodology("iris")


def _study(scales: dict[str, tuple[float, float]]) -> StudyResult:
    rows = [{"model": "m", "sector": s, "S": S, "K": K} for s, (S, K) in scales.items()]
    return StudyResult(tables={"scores": pd.DataFrame(rows)}, summary={})


def _ifs_gen(images: dict[str, list[str]]) -> pd.DataFrame:
    """IFS-Gen labels from each occupation's genders (age and skin unread)."""
    rows = [
        {"occupation": o, "gender": g, "age_group": None, "skin_group": None}
        for o, genders in images.items()
        for g in genders
    ]
    frame = pd.DataFrame(rows)
    return frame.assign(
        sector="IFS-Gen", modality="t2i", status="ok", probe_id="iris-ifs-gen-" + frame.occupation
    )


@pytest.fixture(scope="module")
def two_occupations(occupations_table: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An occupation table of o1 and o2, without real-world shares (no RFS-Gen)."""
    table = (
        pd.read_parquet(occupations_table)
        .head(2)
        .assign(occupation=["o1", "o2"], has_us=False, has_eu=False)
    )
    path = tmp_path_factory.mktemp("two") / "occupations.parquet"
    table.to_parquet(path)
    return path


@pytest.mark.parametrize("counted", [True, False])
def test_a_hand_computed_pair_at_fixed_s_and_k(two_occupations: Path, counted: bool) -> None:
    """IFS-Gen alone (age and skin unread: partial), S = 100, K = 1: A's RD is 0.5 on o1 and 0
    on o2, B's 0 and 1; the magnitude is the mean RD over the drawn occupations, an
    occupation drawn twice counting twice; RFS-Gen has no reference for o1, o2 (none).
    Counted (what ``compare`` runs for t2i) and IRIS's own scoring of the drawn rows."""
    from genfair.methodologies.iris.compare import iris_headlines
    from genfair.methodologies.iris.occupations import read_occupations, reference_from_occupations

    a = _ifs_gen({"o1": ["male"] * 3 + ["female"], "o2": ["male", "female"] * 2})
    b = _ifs_gen({"o1": ["male", "female"] * 2, "o2": ["male"] * 4})
    config = IrisConfig(occupations_table=str(two_occupations))
    study = _study({"IFS-Gen": (100.0, 1.0)})
    headlines = IRIS.comparison.paired_headline_function(config, "t2i", study)
    assert isinstance(headlines, HeadlineCounts)
    if not counted:
        reference = reference_from_occupations(read_occupations(config))
        headlines = iris_headlines(config, {"IFS-Gen": (100.0, 1.0)}, reference)
    observed = {k: v for k, v in headlines(a).items() if np.isfinite(v)}
    assert observed == {"IFS-Gen.score (partial)": pytest.approx(100 * math.exp(-0.25))}
    pair = paired_rows(a, b, IRIS.comparison.paired_units)
    make = _counted_statistic if counted else _statistic
    statistic = make(headlines, (a, b), pair, ["IFS-Gen.score (partial)"])
    expected = {
        (0, 1): 100 * (math.exp(-0.25) - math.exp(-0.5)),
        (0, 0): 100 * (math.exp(-0.5) - 1),
        (1, 1): 100 * (1 - math.exp(-1)),
        (0, 0, 1): 100 * (math.exp(-1 / 3) - math.exp(-1 / 3)),
        (1, 1, 0): 100 * (math.exp(-1 / 6) - math.exp(-2 / 3)),
    }
    for positions, difference in expected.items():
        assert statistic(np.array(positions))[0] == pytest.approx(difference, abs=1e-12)


def _vlm(rng: np.random.Generator, occupations: list[str]) -> pd.DataFrame:
    """SYNTHETIC VLM labels: tournament rounds, BIS-Und counterfactual pairs (gender varies),
    a rating and an objective answer per image, and IFS-Und crops answered twice (right,
    another occupation, or unmappable)."""
    rows = []
    for instance in range(10):
        base = {c: rng.choice(v) for c, v in ATTRIBUTES.items() if c != "gender"}
        for variant, gender in enumerate(("male", "female")):
            for question in ("1", "a"):
                rows.append(
                    {
                        "instance_id": f"set{instance}",
                        "variant": variant,
                        "gender": gender,
                        **base,
                        "occupation": occupations[instance % len(occupations)],
                        "question_id": question,
                        "kind": "subjective" if question == "1" else "objective",
                        "score": float(rng.integers(1, 11)) if question == "1" else math.nan,
                        "correct": float(rng.uniform() < 0.7) if question == "a" else math.nan,
                        "probe_id": f"iris-bis-und-{instance}-{variant}-{question}",
                    }
                )
    bis = pd.DataFrame(rows).assign(sector="BIS-Und", status="ok", fixture=False)
    crops = []
    for crop in range(40):
        truth = occupations[crop % len(occupations)]
        attributes = {c: rng.choice(v) for c, v in ATTRIBUTES.items()}
        for sample in range(2):
            answer = rng.choice([truth, truth, rng.choice(occupations), "unmappable"])
            crops.append(
                {
                    "probe_id": f"iris-ifs-und-{crop}",
                    "sample_index": sample,
                    "occupation": truth,
                    "mapped_occupation": answer,
                    **attributes,
                    "status": "refused" if answer == "unmappable" else "ok",
                }
            )
    ifs = pd.DataFrame(crops).assign(sector="IFS-Und", fixture=False, tier="exact")
    return pd.concat(
        [
            tournament_labels(rng, occupations, "vlm"),
            bis.assign(modality="vlm"),
            ifs.assign(modality="vlm"),
        ],
        ignore_index=True,
    )


def _recomputed(
    labels: pd.DataFrame,
    drawn: list[str],
    config: IrisConfig,
    scales: dict[str, tuple[float, float]],
    folder: Path,
) -> dict[str, float]:
    """IRIS's own metrics step and scoring (S, K fixed) on the drawn units' rows, the k-th
    copy of an occupation (IFS-Gen) or a counterfactual set renamed ``#k``, with its row in
    the occupation table."""
    units = IRIS.comparison.paired_units(labels)
    seen: Counter[str] = Counter()
    parts = []
    for unit in drawn:
        rows = labels[units == unit].copy()
        k = seen[unit]
        seen[unit] += 1
        if k:
            for sector, column in (("IFS-Gen", "occupation"), ("BIS-Und", "instance_id")):
                mask = rows["sector"] == sector
                if mask.any():
                    rows.loc[mask, column] = rows.loc[mask, column] + f"#{k}"
        parts.append(rows)
    replicate = pd.concat(parts, ignore_index=True)
    table = pd.read_parquet(config.occupations_table)
    copies = [
        table[table["occupation"] == o.split("#")[0]].assign(occupation=o)
        for o in set(replicate.get("occupation", pd.Series(dtype=object)).dropna())
        if "#" in o
    ]
    path = folder / f"occupations-{len(list(folder.iterdir()))}.parquet"
    pd.concat([table, *copies], ignore_index=True).to_parquet(path)
    granular = IRIS.metrics(replicate, config.model_copy(update={"occupations_table": str(path)}))
    scoring = IrisScoringConfig(
        sectors={
            s: SectorParams(S=scales.get(s, (1.0, 1.0))[0], K=scales.get(s, (1.0, 1.0))[1])
            for s in IrisScoringConfig().sectors
        }
    )
    scored = score_models(granular.scores.assign(model="m"), scoring)
    return {
        headline_name(s, p): v
        for s, p, v in zip(scored["sector"], scored["partial"], scored["score"], strict=True)
        if s in scales and np.isfinite(v)
    }


@pytest.mark.parametrize("modality", ["t2i", "llm", "llm-wins", "vlm", "vlm-workforce"])
def test_every_replicate_is_iris_own_scoring_of_the_same_draw(
    modality: str, occupations_table: Path, tmp_path: Path
) -> None:
    """Every modality's comparison is counted; ``llm-wins``: the raw-wins estimator under a
    prior given as weights; ``vlm-workforce``: the workforce prior, recomputed."""
    occupations = list(pd.read_parquet(occupations_table)["occupation"].head(6))
    rng = np.random.default_rng(7)
    modality, _, variant = modality.partition("-")

    def labels(tilt: float) -> pd.DataFrame:
        if modality == "t2i":
            return t2i_labels(rng, occupations, tilt)
        return (
            tournament_labels(rng, occupations, "llm")
            if modality == "llm"
            else _vlm(rng, occupations)
        )

    a, b = labels(0.0), labels(0.3)
    config = IrisConfig(occupations_table=str(occupations_table))
    if variant:
        prior = {"female_young_light": 3.0, "male_older_dark": 0.5, "male_young_middle": 1.0}
        tournament = (
            TournamentConfig(estimator="wins", prior=prior)
            if variant == "wins"
            else TournamentConfig(prior="workforce")
        )
        config = config.model_copy(
            update={"metrics": config.metrics.model_copy(update={"tournament": tournament})}
        )
    scales = {"IFS-Gen": (90.0, 3.0), "RFS-Gen": (130.0, 3.0), "BIS-Gen": (85.0, 1.0)}
    scales |= {"RFS-Und": (213.0, 5.0), "BIS-Und": (340.0, 1.0), "IFS-Und": (180.0, 5.0)}
    headlines = IRIS.comparison.paired_headline_function(config, modality, _study(scales))
    assert isinstance(headlines, HeadlineCounts) == (variant != "workforce")
    ha, hb = (
        {k: v for k, v in h(x).items() if np.isfinite(v)}
        for h, x in ((headlines, a), (headlines, b))
    )
    names = sorted(set(ha) & set(hb))
    assert names, (ha, hb)
    assert ha == pytest.approx(
        _recomputed(
            a, list(dict.fromkeys(IRIS.comparison.paired_units(a))), config, scales, tmp_path
        )
    )
    pair = paired_rows(a, b, IRIS.comparison.paired_units)
    common = sorted(set(IRIS.comparison.paired_units(a)) & set(IRIS.comparison.paired_units(b)))
    make = _counted_statistic if isinstance(headlines, HeadlineCounts) else _statistic
    statistic = make(headlines, (a, b), pair, names)
    for draw in range(2):
        positions = rng.integers(0, len(common), len(common))
        drawn = [common[p] for p in positions]
        ra = _recomputed(a, drawn, config, scales, tmp_path)
        rb = _recomputed(b, drawn, config, scales, tmp_path)
        expected = [ra.get(n, math.nan) - rb.get(n, math.nan) for n in names]
        assert statistic(positions) == pytest.approx(expected, abs=1e-9, nan_ok=True), draw


def test_a_partial_sector_stays_partial_and_a_missing_scale_is_not_compared(
    two_occupations: Path,
) -> None:
    a = _ifs_gen({"o1": ["male", "female"], "o2": ["male"]})
    config = IrisConfig(occupations_table=str(two_occupations))
    headlines = IRIS.comparison.paired_headline_function(
        config, "t2i", _study({"IFS-Gen": (100.0, 1.0)})
    )
    assert {k for k, v in headlines(a).items() if np.isfinite(v)} == {"IFS-Gen.score (partial)"}
    assert IRIS.comparison.paired_headline_function(config, "t2i", None) is None
    assert IRIS.comparison.paired_headline_function(config, "t2i", _study({})) is None


def test_compare_pair_runs_over_iris_units(occupations_table: Path) -> None:
    occupations = list(pd.read_parquet(occupations_table)["occupation"].head(4))
    rng = np.random.default_rng(3)
    a, b = t2i_labels(rng, occupations, 0.0), t2i_labels(rng, occupations, 0.4)
    config = IrisConfig(occupations_table=str(occupations_table))
    headlines = IRIS.comparison.paired_headline_function(
        config, "t2i", _study({"IFS-Gen": (90.0, 3.0), "RFS-Gen": (130.0, 3.0)})
    )
    results = dict(
        compare_pair(headlines, a, b, IRIS.comparison.paired_units, resamples=50, seed=1)
    )
    assert {n.split(" ")[0] for n in results} == {"IFS-Gen.score", "RFS-Gen.score"}
    assert all(r["n"] == 4 and np.isfinite(r["ci_low"]) for r in results.values())


def _occupation_study(
    rng: np.random.Generator, occupations: list[str], female: np.ndarray, tilt: float
) -> pd.DataFrame:
    """SYNTHETIC IFS-Gen labels: 8 images an occupation, female with the occupation's
    probability times ``1 - tilt``, age and skin from fixed shares."""
    n = 8 * len(occupations)
    share = np.repeat(female, 8) * (1 - tilt)
    return pd.DataFrame(
        {
            "occupation": np.repeat(occupations, 8),
            "gender": np.where(rng.uniform(size=n) < share, "female", "male"),
            "age_group": rng.choice(ATTRIBUTES["age_group"], n, p=[0.5, 0.3, 0.2]),
            "skin_group": rng.choice(ATTRIBUTES["skin_group"], n, p=[0.6, 0.25, 0.15]),
        }
    ).assign(sector="IFS-Gen", status="ok", modality="t2i", probe_id="p")


@pytest.mark.parametrize("tilt", [0.0, 0.8])
def test_the_paired_interval_covers_a_planted_difference_and_none(
    tilt: float, occupations_table: Path
) -> None:
    """30 simulated pairs of text-to-image models over 12 shared occupations (each study
    draws the occupations' female shares, which both models share; B's are ``1 - tilt`` of them):
    the 95% interval of each score's difference covers the truth (0 with no tilt; with a
    tilt, the mean difference over 40 other simulated studies) in at least 80% of them; a
    tilt of 0.8 is found in IFS-Gen (the interval excludes 0) in at least half, a difference of
    none in at most 20%."""
    table = pd.read_parquet(occupations_table)
    occupations = list(table[table["has_us"] & table["has_eu"]]["occupation"].head(12))
    config = IrisConfig(occupations_table=str(occupations_table))
    study = _study({"IFS-Gen": (90.0, 3.0), "RFS-Gen": (130.0, 3.0)})
    headlines = IRIS.comparison.paired_headline_function(config, "t2i", study)
    rng = np.random.default_rng(11)

    def pair() -> tuple[pd.DataFrame, pd.DataFrame]:
        female = rng.uniform(0.1, 0.6, len(occupations))
        return tuple(_occupation_study(rng, occupations, female, t) for t in (0.0, tilt))

    truth = {"IFS-Gen.score": 0.0, "RFS-Gen.score": 0.0}
    if tilt:
        observed = [(headlines(a), headlines(b)) for a, b in (pair() for _ in range(40))]
        truth = {n: float(np.mean([ha[n] - hb[n] for ha, hb in observed])) for n in truth}
    covered, found = Counter(), Counter()
    for seed in range(30):
        a, b = pair()
        for name, r in compare_pair(
            headlines, a, b, IRIS.comparison.paired_units, resamples=100, seed=seed
        ):
            covered[name] += r["ci_low"] <= truth[name] <= r["ci_high"]
            found[name] += not r["ci_low"] <= 0 <= r["ci_high"]
    assert set(covered) == set(truth)
    assert all(c >= 24 for c in covered.values()), (covered, truth)
    if tilt:
        assert found["IFS-Gen.score"] >= 15, found  # B's skew shows in every IFS-Gen RD
    else:
        assert all(f <= 6 for f in found.values()), found
