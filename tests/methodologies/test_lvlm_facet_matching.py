"""lvlm_facet answer matching: the labelled bank of noisy answers through the offline
MiniLM encoder (>= 95% for class labels, 100% for single-choice letters), the pre-pass
rules, and the encoder step with a fake encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from genfair.methodologies.lvlm_facet.matching import AnswerMatcher, make_encoder

BANK = Path(__file__).resolve().parents[1] / "data" / "lvlm_facet_answer_bank.csv"


@pytest.fixture(scope="module")
def minilm():
    return make_encoder("minilm")


def _bank(kind: str) -> pd.DataFrame:
    bank = pd.read_csv(BANK, keep_default_na=False, dtype=str)
    return bank[bank["kind"] == kind].reset_index(drop=True)


def _score(kind: str, encoder) -> tuple[pd.DataFrame, float]:
    bank = _bank(kind)
    matched = AnswerMatcher(kind, encoder).match(bank["answer"].tolist())
    out = pd.concat([bank, matched[["label", "tier", "similarity"]]], axis=1)
    out["label"] = out["label"].fillna("")
    out["ok"] = out["label"] == out["expected"]
    return out, float(out["ok"].mean())


def test_bank_class_labels_at_least_95_percent(minilm, capsys: pytest.CaptureFixture[str]) -> None:
    out, accuracy = _score("class", minilm)
    assert len(out) >= 150 and len(_bank("class")) + len(_bank("choice")) >= 200
    wrong = out[~out["ok"]]
    with capsys.disabled():  # the confusion, for the record (pytest -s not needed)
        print(f"\nclass bank: {out['ok'].sum()}/{len(out)} = {accuracy:.3f} correct; by tier:")
        print(out.groupby("tier", observed=True)["ok"].agg(["sum", "size"]).to_string())
        print("misses (answer -> matched, expected):")
        print(wrong[["answer", "label", "expected", "similarity"]].to_string(index=False))
    assert accuracy >= 0.95
    # every answer a rule decides is right: the misses are all the encoder's
    assert set(wrong["tier"]) <= {"encoder"}
    assert (out.loc[out["tier"] == "refusal", "expected"] == "").all()


def test_bank_choice_letters_all_correct(minilm, capsys: pytest.CaptureFixture[str]) -> None:
    out, accuracy = _score("choice", minilm)
    with capsys.disabled():
        print(f"\nchoice bank: {accuracy:.3f} correct; confusion (expected x matched):")
        print(pd.crosstab(out["expected"], out["label"]).to_string())
    assert accuracy == 1.0
    letters = out[out["tier"] == "letter"]
    assert len(letters) >= 30 and letters["ok"].all()


@pytest.mark.parametrize(
    ("answer", "label", "tier"),
    [
        ("Nurse.", "nurse", "exact"),
        ('"nurse"', "nurse", "quoted"),
        ("The label is “basketball_player”.", "basketball_player", "quoted"),
        ("basketball player", "basketball_player", "exact"),
        ("I think this is a dancer", "dancer", "exact"),
        ("Dancers", "dancer", "exact"),
        ("She is working as a nurse in a hospital ward", "nurse", "contained"),
        ("I'm sorry, I can't identify people's jobs.", None, "refusal"),
        ("", None, "empty"),
    ],
)
def test_class_prepass(minilm, answer: str, label: str | None, tier: str) -> None:
    row = AnswerMatcher("class", minilm).match([answer]).iloc[0]
    assert (row["label"] if isinstance(row["label"], str) else None, row["tier"]) == (label, tier)


@pytest.mark.parametrize(
    ("answer", "label"),
    [("A. Yes", "yes"), ("B", "no"), ("C. Unknown.", "unknown"), ("(b)", "no"), ("a.", "yes"),
     ("The answer is C", "unknown"), ("I would choose B. No.", "no"), ("A, yes", "yes"),
     ("A. No", "yes")],  # the letter wins over the words after it
)  # fmt: skip
def test_choice_letters(minilm, answer: str, label: str) -> None:
    row = AnswerMatcher("choice", minilm).match([answer]).iloc[0]
    assert (row["label"], row["tier"]) == (label, "letter")


def test_choice_an_article_is_not_a_letter(minilm) -> None:
    row = AnswerMatcher("choice", minilm).match(["A nurse is shown, so yes"]).iloc[0]
    assert row["tier"] != "letter"


class _Fake:
    """A fake encoder: each text's vector is fixed by hand, so argmax and the minimum
    similarity can be checked exactly."""

    name = "fake-encoder"
    vectors = {
        "nurse": [1.0, 0.0, 0.0], "doctor": [0.0, 1.0, 0.0], "singer": [0.0, 0.0, 1.0],
        "medic": [0.6, 0.8, 0.0], "vocal artist": [0.1, 0.0, 0.995], "zzz": [0.5, 0.5, 0.7],
    }  # fmt: skip

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts])


def test_encoder_argmax_threshold_and_record() -> None:
    matcher = AnswerMatcher("class", _Fake(), labels=["nurse", "doctor", "singer"])
    out = matcher.match(["Medic", "vocal artist", "zzz"])
    assert out["label"].tolist() == ["doctor", "singer", "singer"]
    assert (out["tier"] == "encoder").all() and (out["encoder"] == "fake-encoder").all()
    assert out["similarity"].iloc[0] == pytest.approx(0.8)
    strict = AnswerMatcher(
        "class", _Fake(), labels=["nurse", "doctor", "singer"], min_similarity=0.75
    )
    low = strict.match(["zzz"]).iloc[0]
    assert (
        low["label"] is None
        and low["tier"] == "below_min_similarity"
        and low["nearest"] == "singer"
    )


def test_matcher_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="match kind"):
        AnswerMatcher("open", _Fake())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must contain"):
        AnswerMatcher("class", _Fake(), labels=["nurse"], label_template="a photo")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        make_encoder(f"sentence_transformers:{tmp_path / 'nothing'}")
    with pytest.raises(ValueError, match="use 'minilm'"):
        make_encoder("t5")
