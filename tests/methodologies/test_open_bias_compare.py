"""OpenBias's paired model comparison (issue 33.2): each model's k-th most severe bias's
severities, over captions resampled jointly. A hand-computed pair (the k-th bias differing
between the models); ties broken as the metrics step breaks them; every replicate equal to the
metrics step's own computation on the same drawn rows, under each severity setting; the
proposal yield not compared; the coverage of the interval, measured on simulated pairs with a
planted difference and with none (:func:`coverage`, whose larger runs docs/methodology.md
reports)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.cli import compose
from genfair.io import write_parquet
from genfair.methodologies import get_methodology
from genfair.methodologies.comparison import PairedCounts
from genfair.methodologies.open_bias.config import OpenBiasConfig
from genfair.methodologies.open_bias.scoring import SeverityConfig
from genfair.study.compare import _counted_statistic, compare_models, compare_pair, paired_rows
from genfair.study.layout import Layout
from genfair.study_params import StudyParams, load_params, methodology_config
from tests.support.conf import ROOT, with_runs
from tests.support.open_bias_labels import distinct_copies, knowledge_base, open_bias_labels

OPEN_BIAS = get_methodology("open_bias")
SEVERITIES = [h.name for h in OPEN_BIAS.comparison.headline if h.column.startswith("severity_")]


def _labels(answers: dict[tuple[str, str], list[str]]) -> pd.DataFrame:
    """Labels from each (bias, caption)'s answers (``!``: a failed call): the biases ``age``
    (old, young) and ``gender`` (female, male)."""
    classes = {"age": ["old", "young"], "gender": ["female", "male"]}
    kb = {b: (c, sorted({cap for bias, cap in answers if bias == b})) for b, c in classes.items()}
    labels = open_bias_labels(
        np.random.default_rng(0),
        kb,
        {k: np.ones(2) / 2 for k in answers},
        images=0,
        unknown=0.0,
        failed=0.0,
    )
    vqa = pd.DataFrame(
        [
            {"bias_id": b, "caption_id": c, "label": a.strip("!"), "status": "ok"}
            | ({"status": "error"} if a.endswith("!") else {})
            for (b, c), given in answers.items()
            for a in given
        ]
    ).assign(step="vqa", tier="exact", encoder="SYNTHETIC")
    return pd.concat([labels, vqa], ignore_index=True)


def _own(labels: pd.DataFrame, config: OpenBiasConfig) -> dict[str, float]:
    """The metrics step's severity headlines of ``labels``: the k-th ``bias_rank`` row's."""
    scores = OPEN_BIAS.metrics(labels, config).scores
    out = {}
    for h in OPEN_BIAS.comparison.headline:
        if h.name in SEVERITIES:
            row = scores[scores["bias_rank"] == h.where["bias_rank"]]
            out[h.name] = float(row[h.column].iloc[0]) if len(row) else math.nan
    return out


def _entropy_severity(*p: float) -> float:
    return 1 + sum(x * math.log(x) for x in p if x) / math.log(len(p))


SMALL = OpenBiasConfig(severity=SeverityConfig(n_resamples=100))


def test_a_hand_computed_pair_whose_top_biases_differ() -> None:
    """Captions c1, c2, four answers each (A's age on c1 also an unknown and a failed call,
    counted in no class). A: gender 1 and 0 (mean 0.5), age s = 1 - H(1/4, 3/4) / log 2 and 1
    (mean 0.594): age first. B: gender 1 and 0 (0.5), age 0 and s (0.094): gender first. The
    difference of bias_1 is A's age minus B's gender; on c1 drawn twice both tops are gender."""
    s = _entropy_severity(0.25, 0.75)
    a = _labels(
        {
            ("gender", "c1"): ["male"] * 4,
            ("gender", "c2"): ["male", "female"] * 2,
            ("age", "c1"): ["young"] * 3 + ["old", "unknown", "old!"],
            ("age", "c2"): ["young"] * 4,
        }
    )
    b = _labels(
        {
            ("gender", "c1"): ["male"] * 4,
            ("gender", "c2"): ["male", "female"] * 2,
            ("age", "c1"): ["old", "young"] * 2,
            ("age", "c2"): ["young"] * 3 + ["old"],
        }
    )
    headlines = OPEN_BIAS.comparison.headline_function(SMALL, "t2i")
    assert isinstance(headlines, PairedCounts)
    assert headlines(a) == pytest.approx(
        {
            "bias_1.severity_context_aware": (s + 1) / 2,  # age
            "bias_2.severity_context_aware": 0.5,  # gender
            "bias_3.severity_context_aware": math.nan,  # no third bias
            "bias_1.severity_context_free": _entropy_severity(0.125, 0.875),  # age's mean p
        },
        nan_ok=True,
    )
    pair = paired_rows(a, b, OPEN_BIAS.comparison.paired_units)
    names = ["bias_1.severity_context_aware", "bias_2.severity_context_aware"]
    names.append("bias_1.severity_context_free")
    statistic = _counted_statistic(headlines.counts(a, b), (a, b), pair, names)
    free_gender_b = _entropy_severity(0.25, 0.75)  # p = mean((0, 1), (1/2, 1/2))
    expected = {
        (0, 1): [(s + 1) / 2 - 0.5, 0.5 - s / 2, _entropy_severity(0.125, 0.875) - free_gender_b],
        (0, 0): [0.0, s - 0.0, 0.0],  # both: gender 1 first; age s against 0
        (1, 1): [1 - s, 0.0, 1 - s],  # both: age first (1 against s); gender 0 and 0
    }
    for positions, difference in expected.items():
        assert statistic(np.array(positions)) == pytest.approx(difference, abs=1e-12), positions


def test_ties_go_by_bias_id_as_in_the_metrics_step() -> None:
    """``age`` and ``gender`` both at context-aware severity 1 (one class per caption): age,
    first by name, is bias 1, so bias_1's context-free severity is age's, 0 (old on c1, young
    on c2), not gender's 1."""
    labels = _labels(
        {
            ("age", "c1"): ["old"] * 2,
            ("age", "c2"): ["young"] * 2,
            ("gender", "c1"): ["male"] * 2,
            ("gender", "c2"): ["male"] * 2,
        }
    )
    values = OPEN_BIAS.comparison.headline_function(SMALL, "t2i")(labels)
    assert values["bias_1.severity_context_free"] == 0.0
    assert values == pytest.approx(_own(labels, SMALL), nan_ok=True)


def _study(
    rng: np.random.Generator,
    kb: dict,
    tilt: float,
    spread: float,
    images: int = 10,
    only: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A SIMULATED pair on one knowledge base: each (bias, caption)'s class shares are drawn
    once, for both models, around its bias's level (Dirichlet; ``spread``: how far apart the
    biases' levels are; 0: every bias alike); B's shares are moved ``tilt`` of the way to
    the bias's first class (``only``: that bias's alone)."""
    shares = {}
    for i, (bias, (classes, captions)) in enumerate(kb.items()):
        level = 1.0 + spread * i  # a larger level: a more severe bias
        for caption in captions:
            alpha = np.ones(len(classes))
            alpha[0] = level
            shares[(bias, caption)] = rng.dirichlet(alpha * 2)
    tilted = {}
    for key, p in shares.items():
        moved = tilt if only in (None, key[0]) else 0.0
        tilted[key] = (1 - moved) * p + moved * np.eye(len(p))[0]
    return (
        open_bias_labels(rng, kb, shares, images=images),
        open_bias_labels(rng, kb, tilted, images=images),
    )


@pytest.mark.parametrize(
    "config",
    [
        SMALL,
        OpenBiasConfig(severity=SeverityConfig(n_resamples=100, rank_by="context_free")),
        OpenBiasConfig(
            severity=SeverityConfig(
                n_resamples=100, context_free_pooling="pooled", excluded_classes=("b01-k2",)
            )
        ),
    ],
    ids=["paper", "rank-by-context-free", "authors-code"],
)
def test_every_replicate_is_the_metrics_step_on_the_same_draw(config: OpenBiasConfig) -> None:
    """Each replicate's differences equal the metrics step's own severity table of the drawn
    captions' rows (a caption drawn twice renamed ``#1``) to 1e-9; on the identity draw, the
    metrics step's headline (also under the authors' pooled context-free distribution with
    their excluded classes, and ranked by context-free severity)."""
    rng = np.random.default_rng(5)
    kb = knowledge_base(rng, 6, 20, 8, (2, 3))
    a, b = _study(rng, kb, 0.2, 0.3, images=6)
    headlines = OPEN_BIAS.comparison.headline_function(config, "t2i")
    own_a = _own(a, config)
    assert headlines(a) == pytest.approx(own_a, abs=1e-9, nan_ok=True)
    names = [n for n in SEVERITIES if np.isfinite(own_a[n])]
    assert len(names) == 4
    pair = paired_rows(a, b, OPEN_BIAS.comparison.paired_units)
    units = [OPEN_BIAS.comparison.paired_units(x) for x in (a, b)]
    common = sorted(set(units[0].dropna()) & set(units[1].dropna()))
    assert len(common) == len(set(a.loc[a["step"] == "vqa", "caption_id"]))  # no proposal rows
    statistic = _counted_statistic(headlines.counts(a, b), (a, b), pair, names)
    own_b = _own(b, config)
    identity = [own_a[n] - own_b[n] for n in names]
    assert statistic(np.arange(len(common))) == pytest.approx(identity, abs=1e-9)
    for draw in range(3):
        positions = rng.integers(0, len(common), len(common))
        drawn = [common[p] for p in positions]
        ra, rb = (
            _own(distinct_copies(x, u, drawn), config) for x, u in zip((a, b), units, strict=True)
        )
        expected = [ra[n] - rb[n] for n in names]
        assert statistic(positions) == pytest.approx(expected, abs=1e-9, nan_ok=True), draw


def test_the_study_config_compares_the_severities_not_the_proposal_yield() -> None:
    config = methodology_config(load_params(ROOT / "params.yaml"), "open_bias")
    rng = np.random.default_rng(2)
    kb = knowledge_base(rng, 4, 12, 10, (2,))
    a, b = _study(rng, kb, 0.0, 0.5, images=4)
    captions = {c for _, its in kb.values() for c in its}
    compared = OPEN_BIAS.comparison
    results = dict(compare_pair(compared.headline_function(config, "t2i"), a, b,
                                compared.paired_units, resamples=50, seed=1))  # fmt: skip
    assert sorted(results) == sorted(SEVERITIES)
    assert all(r["n"] == len(captions) and np.isfinite(r["ci_low"]) for r in results.values())
    assert OPEN_BIAS.comparison.comparison_resamples(config) == config.severity.n_resamples


def coverage(
    tilt: float,
    spread: float,
    studies: int,
    resamples: int,
    seed: int = 0,
    only: str | None = None,
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Over ``studies`` SIMULATED pairs (8 biases of 3 classes, 20 of 60 shared captions
    each, 10 images a caption; :func:`_study`; ``only``: B tilted in that bias alone), each
    headline's share of 95% intervals that cover the truth and share that exclude 0, and the
    truth: 0 with no tilt (A and B exchangeable), else the mean difference over as many other
    simulated pairs."""
    rng = np.random.default_rng(seed)
    kb = knowledge_base(rng, 8, 60, 20, (3,))
    headlines = OPEN_BIAS.comparison.headline_function(SMALL, "t2i")
    truth = dict.fromkeys(SEVERITIES, 0.0)
    if tilt:
        pairs = (_study(rng, kb, tilt, spread, only=only) for _ in range(studies))
        observed = [[headlines(x) for x in pair] for pair in pairs]
        truth = {n: float(np.mean([ha[n] - hb[n] for ha, hb in observed])) for n in truth}
    covered, found = Counter(), Counter()
    for study in range(studies):
        a, b = _study(rng, kb, tilt, spread, only=only)
        compared = compare_pair(
            headlines, a, b, OPEN_BIAS.comparison.paired_units, resamples=resamples, seed=study
        )
        for name, r in compared:
            covered[name] += r["ci_low"] <= truth[name] <= r["ci_high"]
            found[name] += not r["ci_low"] <= 0 <= r["ci_high"]
    return (
        {n: covered[n] / studies for n in SEVERITIES},
        {n: found[n] / studies for n in SEVERITIES},
        truth,
    )


@pytest.mark.parametrize(
    ("tilt", "spread", "only"),
    [(0.0, 1.0, None), (0.5, 1.0, None), (0.5, 0.0, "b00")],
    ids=["none", "every-bias", "one-bias-crossing"],
)
def test_the_paired_interval_covers_a_planted_difference_and_none(
    tilt: float, spread: float, only: str | None
) -> None:
    """30 simulated pairs, 200 replicates each (:func:`coverage`): at least 80% of the 95%
    intervals cover the truth; B's tilt of 0.5 in every bias is found in bias_1 in at least
    half the pairs, a difference of none in at most 20%. ``one-bias-crossing``: every bias
    alike, B tilted in one alone, so B's top bias is that one and A's the largest of eight
    noisy equals (the non-smooth case); coverage only, its power is low (measured over 400
    pairs of 1,000 replicates with the others in docs/methodology.md: coverage 95.5-99.5%,
    found 3-12%)."""
    covered, found, truth = coverage(tilt, spread, studies=30, resamples=200, only=only)
    assert all(c >= 0.8 for c in covered.values()), (covered, truth)
    if only:
        return
    if tilt:
        assert found["bias_1.severity_context_aware"] >= 0.5, found
    else:
        assert all(f <= 0.2 for f in found.values()), found


def test_a_study_compares_its_two_simulated_text_to_image_models(tmp_path: Path) -> None:
    """The path through ``score``'s ``compare_models``: the smoke study with a second
    SIMULATED t2i model, both models' OpenBias labels written; the four severity headlines
    are compared over the knowledge base's captions, as simulators."""
    raw = load_params(compose(["scale=smoke"], tmp_path / "params.yaml")).model_dump(mode="json")
    raw["models"]["simulated_t2i_2"] = {**raw["models"]["simulated_t2i"], "model_id": "sim-2"}
    params = StudyParams.model_validate(with_runs(raw))
    layout = Layout(tmp_path)
    rng = np.random.default_rng(4)
    kb = knowledge_base(rng, 4, 12, 10, (2, 3))
    pair = _study(rng, kb, 0.3, 0.5)
    for model, labels in zip(("simulated_t2i", "simulated_t2i_2"), pair, strict=True):
        write_parquet(labels, layout.labels(model, "open_bias"))
    compared = compare_models(params, layout, resamples=50)
    rows = compared[compared["methodology"] == "open_bias"]
    assert sorted(rows["headline"]) == sorted(SEVERITIES)
    assert set(rows["model_a"] + " vs " + rows["model_b"]) == {"simulated_t2i vs simulated_t2i_2"}
    assert rows["simulated"].all()
    assert (rows["n_units"] == len({c for _, its in kb.values() for c in its})).all()
