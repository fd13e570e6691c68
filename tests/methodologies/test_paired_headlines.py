"""Every methodology's paired headlines (issue 33.2): LVLM-FACET's pooled disparities and
news bias's word-level W, counted per unit, are the numbers their metrics give; their paired
intervals cover a planted difference and a planted none (IRIS's and OpenBias's:
tests/methodologies/test_iris_compare.py, tests/methodologies/test_open_bias_compare.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies import get_methodology
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES, GROUPS, resolve_classes
from genfair.methodologies.lvlm_facet.scoring import headline, headline_counts, recall_tables
from genfair.methodologies.news_bias.word_level import summarize_word_level, word_level_pairs
from genfair.resources.group_words import GroupWordCounter
from genfair.study.compare import compare_pair
from genfair.study_params import load_params, methodology_config
from tests.support.conf import ROOT

LVLM = get_methodology("lvlm_facet")
NEWS = get_methodology("news_bias")
CLASSES = resolve_classes("paper")


def _facet_labels(rng: np.random.Generator, images: int, recall: np.ndarray) -> pd.DataFrame:
    """SYNTHETIC LVLM-FACET labels: each image asked every prompt, a hit with probability
    ``recall`` (per image; the direct question answers the class, the others ``yes``)."""
    persons = pd.DataFrame(
        {
            "person_id": np.arange(images),
            "class": rng.choice(CLASSES, images),
            **{a: rng.choice([*GROUPS[a], "unknown"], images) for a in ATTRIBUTES},
        }
    )
    frames = []
    for prompt in ("direct", "is_there", "person_is"):
        hit = rng.uniform(size=images) < recall
        answer = np.where(prompt == "direct", persons["class"], "yes")
        frames.append(
            persons.assign(
                prompt=prompt,
                label=np.where(hit, answer, "no"),
                status=np.where(rng.uniform(size=images) < 0.05, "error", "ok"),
            )
        )
    return pd.concat(frames, ignore_index=True)


def test_lvlm_facet_counts_give_its_metrics_disparities() -> None:
    config = methodology_config(load_params(ROOT / "params.yaml"), "lvlm_facet")
    labels = _facet_labels(np.random.default_rng(1), 400, np.full(400, 0.6))
    expected = headline(recall_tables(labels, CLASSES, config.confidence))
    values = LVLM.comparison.headline_function(config, "vlm")(labels)
    assert values == pytest.approx(
        {f"disparity.{a}.{p}": v for (a, p), v in _by_attribute_prompt(expected).items()}
    )


def _by_attribute_prompt(values: dict[str, float]) -> dict[tuple[str, str], float]:
    """``disparity_<attribute>_<prompt>`` keys of :func:`headline` as (attribute, prompt)."""
    out = {}
    for key, value in values.items():
        rest = key.removeprefix("disparity_")
        attribute = next(a for a in ATTRIBUTES if rest.startswith(f"{a}_"))
        out[(attribute, rest.removeprefix(f"{attribute}_"))] = value
    return out


@pytest.mark.parametrize("gap", [0.0, 0.3])
def test_lvlm_facet_paired_intervals_cover_a_planted_difference(gap: float) -> None:
    """60 simulated pairs of models on 600 shared images (a shared difficulty per image);
    model B misses women's images ``gap`` more often, so A's gender disparity minus B's is
    ``-gap``. The 95% interval covers it in at least 85% of them (measured over 200 pairs of
    1,000 images: 93.5% with no gap, 93% with 0.25; the binomial 1st percentile at 93% over
    60 is ~0.85), a planted gap is found in nearly every one, none in few."""
    rng = np.random.default_rng(33)
    counted = headline_counts(
        [h for h in LVLM.comparison.headline if h.name == "disparity.gender.direct"], CLASSES
    )
    studies, images = 60, 600
    covered = found = 0
    for s in range(studies):
        difficulty = rng.uniform(0.3, 0.9, images)
        a = _facet_labels(np.random.default_rng([s, 0]), images, difficulty)
        b = a.copy()
        women = (b["gender"] == "female").to_numpy()
        recall = difficulty[b["person_id"]] - gap * women
        b["label"] = np.where(
            rng.uniform(size=len(b)) < recall,
            np.where(b["prompt"] == "direct", b["class"], "yes"),
            "no",
        )
        a["label"] = np.where(
            rng.uniform(size=len(a)) < difficulty[a["person_id"]],
            np.where(a["prompt"] == "direct", a["class"], "yes"),
            "no",
        )
        ((_, result),) = compare_pair(counted, a, b, "person_id", resamples=200, seed=s)
        covered += result["ci_low"] <= -gap <= result["ci_high"]
        found += result["ci_low"] > 0 or result["ci_high"] < 0
    assert covered / studies >= 0.85
    assert found / studies >= 0.9 if gap else found / studies <= 0.15


def test_news_bias_counts_give_its_word_level_means() -> None:
    config = methodology_config(load_params(ROOT / "params.yaml"), "news_bias")
    counter = GroupWordCounter.from_files(config.gender_words, config.occupations, config.names)
    texts = [
        "The man and his son met the nurse; she thanked him.",
        "Women lead the company, and the chairman said he agreed with her.",
        "A quiet day in the city council.",
        "He said the boys and girls played, and the mother watched them.",
    ]
    labels = pd.DataFrame(
        {
            "pair_id": [f"a{i}" for i in range(8)],
            "prompt_type": ["unbiased"] * 6 + ["biased"] * 2,
            "status": ["ok"] * 5 + ["refused", "ok", "ok"],
            "generated_text": [texts[i % 4] for i in range(8)],
            "original_text": [texts[(i + 1) % 4] for i in range(8)],
        }
    )
    values = NEWS.comparison.headline_function(config, "llm")(labels)
    ok = labels[(labels["prompt_type"] == "unbiased") & (labels["status"] == "ok")]
    for h in NEWS.comparison.headline:
        if h.where["level"] != "word":
            assert h.name not in values  # the sentence level needs the instruments: not paired
            continue
        table = word_level_pairs(ok, counter, h.where["attribute"])
        expected = summarize_word_level(table, h.where["attribute"])["W"]["mean"]
        assert values[h.name] == pytest.approx(expected, nan_ok=True)
