"""OpenBias labels -> severity table and ranking."""

import math

import pandas as pd
import pytest

from genfair.methodologies.open_bias.knowledge_base import KnowledgeBase, KnowledgeBias
from genfair.methodologies.open_bias.scoring import SeverityConfig, bias_counts, severity_table
from genfair.metrics import bias_severity

FAST = SeverityConfig(n_resamples=200)


def rows(bias_id, caption_id, labels):
    return [
        {"bias_id": bias_id, "caption_id": caption_id, "image": i, "label": lab}
        for i, lab in enumerate(labels)
    ]


def test_issue_worked_example_through_the_table():
    labels = pd.DataFrame(
        rows("person/gender", "c1", ["male"] * 10)
        + rows("person/gender", "c2", ["female"] * 2 + ["unknown"] * 8)
    )
    kb = {"person/gender": ["male", "female"]}
    mean = severity_table(labels, kb, FAST).iloc[0]
    assert mean["severity_context_free"] == pytest.approx(0.0, abs=1e-12)
    assert mean["severity_context_aware"] == pytest.approx(1.0)
    assert mean["n_images"] == 20 and mean["n_images_known"] == 12 and mean["n_captions"] == 2
    pooled = severity_table(
        labels, kb, SeverityConfig(n_resamples=200, context_free_pooling="pooled")
    ).iloc[0]
    assert round(pooled["severity_context_free"], 3) == 0.350
    assert pooled["majority_class"] == "male"


def test_never_predicted_class_counts_and_excluded_classes():
    labels = pd.DataFrame(
        rows("p/g", "c1", ["male"] * 5 + ["female"] * 5)
        + rows("p/g", "c2", ["non-binary"] * 2 + ["male"] * 4 + ["female"] * 4)
    )
    classes = {"p/g": ["female", "male", "non-binary"]}
    counts, other, captions, kept = bias_counts(labels, classes["p/g"])
    assert (
        kept == ["female", "male", "non-binary"]
        and captions == ["c1", "c2"]
        and other.tolist() == [0, 0]
    )
    paper = severity_table(labels, classes, FAST).iloc[0]
    assert paper["n_classes"] == 3
    assert paper["severity_context_free"] == pytest.approx(bias_severity([0.45, 0.45, 0.1]))
    code = severity_table(
        labels, classes, SeverityConfig(n_resamples=200, excluded_classes=("other", "non-binary"))
    ).iloc[0]
    assert code["n_classes"] == 2 and code["severity_context_free"] == pytest.approx(0.0, abs=1e-12)
    assert code["unknown_share"] == pytest.approx(2 / 20)
    with pytest.raises(ValueError, match="neither a class"):
        bias_counts(pd.DataFrame(rows("p/g", "c1", ["robot"])), classes["p/g"])


def test_same_name_under_two_subjects_stays_apart_and_statuses():
    kb = KnowledgeBase(
        biases=[
            KnowledgeBias(
                bias_id="person/gender",
                refers_to="person",
                name="gender",
                classes=["female", "male"],
                support=2,
                captions=[],
            ),
            KnowledgeBias(
                bias_id="child/gender",
                refers_to="child",
                name="gender",
                classes=["female", "male"],
                support=2,
                captions=[],
            ),
            KnowledgeBias(
                bias_id="bed/type",
                refers_to="bed",
                name="type",
                classes=["double", "single"],
                support=1,
                captions=[],
            ),
            KnowledgeBias(
                bias_id="car/colour",
                refers_to="car",
                name="colour",
                classes=["red", "unknown"],
                support=1,
                captions=[],
            ),
            KnowledgeBias(
                bias_id="cat/colour",
                refers_to="cat",
                name="colour",
                classes=["black", "white"],
                support=1,
                captions=[],
            ),
        ],
        steps=[],
    )
    labels = pd.DataFrame(
        rows("person/gender", "c1", ["male"] * 10)
        + rows("child/gender", "c1", ["male"] * 5 + ["female"] * 5)
        + rows("cat/colour", "c3", ["unknown"] * 4)
    )
    table = severity_table(labels, kb, FAST).set_index("bias_id")
    assert table.at["person/gender", "severity_context_aware"] == pytest.approx(1.0)
    assert table.at["child/gender", "severity_context_aware"] == pytest.approx(0.0, abs=1e-12)
    assert table.at["bed/type", "status"] == "no_answers"
    assert table.at["car/colour", "status"] == "too_few_classes"
    assert table.at["cat/colour", "status"] == "no_known_answers"
    assert math.isnan(table.at["cat/colour", "severity_context_aware"])
    ordered = severity_table(labels, kb, FAST)
    assert ordered["bias_id"].tolist()[:2] == ["person/gender", "child/gender"]
    assert (
        ordered["rank_context_aware"].tolist()[:2] == [1, 2]
        and ordered["rank_context_aware"].isna().sum() == 3
    )
    with pytest.raises(ValueError, match="not in the knowledge base"):
        severity_table(pd.DataFrame(rows("dog/breed", "c9", ["x"])), kb, FAST)
    with pytest.raises(ValueError, match="lack columns"):
        severity_table(labels.drop(columns="caption_id"), kb, FAST)


def test_planted_severities_recovered_exactly_without_noise():
    """SIMULATED answers with exact planted per-caption counts (10 images each)."""
    planted = {
        "everywhere": [[9, 1], [9, 1], [9, 1]],  # biased in every caption, same direction
        "within": [[10, 0], [0, 10], [10, 0], [0, 10]],  # biased only within a caption (Fig. 9)
        "none": [[5, 5], [5, 5]],
    }
    labels = pd.DataFrame(
        [
            r
            for bias, per_caption in planted.items()
            for t, (a, b) in enumerate(per_caption)
            for r in rows(bias, f"{bias}{t}", ["a"] * a + ["b"] * b)
        ]
    )
    table = severity_table(labels, {k: ["a", "b"] for k in planted}, FAST).set_index("bias_id")
    assert table.at["everywhere", "severity_context_aware"] == pytest.approx(
        bias_severity([0.9, 0.1])
    )
    assert table.at["everywhere", "severity_context_free"] == pytest.approx(
        bias_severity([0.9, 0.1])
    )
    assert table.at["within", "severity_context_aware"] == pytest.approx(1.0)
    assert table.at["within", "severity_context_free"] == pytest.approx(0.0, abs=1e-12)
    assert table.at["none", "severity_context_aware"] == pytest.approx(0.0, abs=1e-12)
    for bias in planted:
        assert (
            table.at[bias, "context_aware_ci_low"]
            <= table.at[bias, "severity_context_aware"]
            <= table.at[bias, "context_aware_ci_high"]
        )
