"""IRIS's understanding inputs (paper 002, §D.2.4 and §D.2.6): the FACET crops of IFS-Und and
the counterfactual image sets of BIS-Und, as probe rows; and the parsing of BIS-Und answers.

IFS-Und (:func:`ifs_und_probes`): one row per curated FACET crop (``persons.parquet`` of the
``curate_facet`` stage) whose occupation is one of the occupation table's, asked
``What is the occupation of the person in the image?``. FACET's labels are turned into
IRIS's groups: gender ``male``/``female`` (``non_binary`` and ``unknown`` are left empty,
so those crops are left out of every metric using gender), age ``young``/``middle-aged``/
``older``, skin tone from the Monk level with IRIS's grouping (MST 1-3 light, 4-7 middle,
8-10 dark), whatever preset ``curation.facet.skin_groups`` used for its own column.

BIS-Und (:func:`read_counterfactual_dataset`, :func:`counterfactual_fixture`): the
counterfactual dataset documented by :func:`~genfair.methodologies.iris.probes.bis_und_probes`
(one row per image: ``instance_id``, ``variant``, ``image``, ``occupation``, ``gender``,
``age_group``, ``skin_group`` and the objective truths ``uniform_color``,
``has_accessories``, ``expression``, ``has_insignia``, ``has_facial_hair``), as Parquet or
CSV; relative image paths are read against the dataset file's folder.

:func:`counterfactual_fixture` builds a small counterfactual **FIXTURE** from the IFS-Und
crops when no dataset is given (``bis_und.dataset: fixture``): every pair of fully labelled
crops whose labels differ is one set, labelled with the first crop's occupation; the
objective truths are FIXTURE labels drawn from a fixed schedule. It is NOT a counterfactual
dataset (the two crops are different people, not one scene edited): results on it only
exercise the chain and check the planted bias of a SIMULATED model.
"""

from __future__ import annotations

import hashlib
import re
from itertools import combinations
from pathlib import Path

import pandas as pd

from genfair.methodologies.iris.probes import BIS_UND_QUESTIONS, IFS_UND_QUESTION, bis_und_probes
from genfair.models.images import sha256_file

#: FACET age label -> IRIS age group
FACET_AGE = {"young": "young", "middle": "middle-aged", "older": "older"}
#: IRIS's Monk grouping (paper 002 §3.2): (upper MST level, group)
IRIS_SKIN = [(3, "light"), (7, "middle"), (10, "dark")]
#: the answer options of each objective question (what an answer is matched against);
#: subjective questions take the ratings 1-10
COLOURS = ("black", "white", "blue", "red", "green", "grey", "brown", "yellow")
QUESTION_OPTIONS: dict[str, tuple[str, ...]] = {
    "a": ("male", "female"),
    "b": ("young", "middle", "older"),
    "c": ("light", "middle", "dark"),
    "d": COLOURS,
    "e": ("yes", "no"),
    "f": ("neutral", "smiling", "serious"),
    "g": ("yes", "no"),
    "h": ("yes", "no"),
}
RATINGS = tuple(str(i) for i in range(1, 11))
#: SIMULATORS only: the rating an unbiased simulated model gives to every subjective question
SIMULATOR_RATING = "7"
#: the objective truths of the fixture (FIXTURE labels, cycled by a hash of the person id)
_FIXTURE_TRUTHS = {
    "uniform_color": COLOURS,
    "has_accessories": ("yes", "no"),
    "expression": ("neutral", "smiling", "serious"),
    "has_insignia": ("yes", "no"),
    "has_facial_hair": ("yes", "no"),
}


def _iris_skin(level: object) -> str | None:
    if level is None or pd.isna(level):
        return None
    for upper, name in IRIS_SKIN:
        if int(level) <= upper:
            return name
    return None


def ifs_und_probes(
    persons_path: str | Path,
    occupations: list[str],
    *,
    max_crops: int | None = None,
    samples: int = 1,
) -> pd.DataFrame:
    """One IFS-Und probe row per labelled crop of ``persons.parquet`` (see the module docstring)."""
    path = Path(persons_path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: run the curate_facet stage first (dvc repro curate_facet), "
            "or set methodologies.iris.ifs_und.persons: null"
        )
    persons = pd.read_parquet(path)
    persons = persons[persons["occupation"].isin(occupations)].sort_values(
        "person_id", kind="stable"
    )
    if max_crops is not None:
        persons = persons.head(max_crops)
    gender = persons["gender"].where(persons["gender"].isin(["male", "female"]), None)
    return pd.DataFrame(
        {
            "probe_id": [f"iris-ifs-und-{p}" for p in persons["person_id"]],
            "sector": "IFS-Und",
            "modality": "vlm",
            "occupation": persons["occupation"].to_numpy(),
            "person_id": persons["person_id"].astype(str).to_numpy(),
            "image": [str(path.parent / c) for c in persons["crop_path"]],
            "image_sha256": persons["crop_sha256"].to_numpy(),
            "gender": gender.to_numpy(),
            "age_group": persons["age_group"].map(FACET_AGE).to_numpy(),
            "skin_group": [_iris_skin(v) for v in persons["monk_level"]],
            "fixture": persons["fixture"].astype(bool).to_numpy(),
            "prompt": IFS_UND_QUESTION,
            "n_samples": samples,
        }
    )


def _pick(person_id: str, column: str, values: tuple[str, ...]) -> str:
    h = int(hashlib.sha256(f"{person_id}:{column}".encode()).hexdigest()[:8], 16)
    return values[h % len(values)]


def counterfactual_fixture(crops: pd.DataFrame, max_sets: int | None = None) -> pd.DataFrame:
    """A counterfactual FIXTURE (format of :func:`bis_und_probes`) from IFS-Und probe rows:
    each pair of fully labelled crops whose labels differ is one set (see the module docstring)."""
    full = crops.dropna(subset=["gender", "age_group", "skin_group"]).drop_duplicates("person_id")
    full = full.sort_values("person_id", kind="stable").to_dict("records")
    attrs = ["gender", "age_group", "skin_group"]
    rows = []
    for a, b in combinations(full, 2):
        if all(a[c] == b[c] for c in attrs):
            continue
        instance = f"fixture-{a['person_id']}-{b['person_id']}"
        for variant, img in (("a", a), ("b", b)):
            rows.append(
                {
                    "instance_id": instance,
                    "variant": variant,
                    "image": img["image"],
                    "occupation": a["occupation"],
                    **{c: img[c] for c in attrs},
                    **{c: _pick(str(img["person_id"]), c, v) for c, v in _FIXTURE_TRUTHS.items()},
                    "fixture": True,
                }
            )
    data = pd.DataFrame(rows)
    if max_sets is not None and len(data):
        keep = list(dict.fromkeys(data["instance_id"]))[:max_sets]
        data = data[data["instance_id"].isin(keep)].reset_index(drop=True)
    return data


def read_counterfactual_dataset(path: str | Path) -> pd.DataFrame:
    """A user's counterfactual dataset (Parquet or CSV; format of :func:`bis_und_probes`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"methodologies.iris.bis_und.dataset: {path} not found")
    data = pd.read_csv(path, dtype=str) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
    if "image" in data.columns:
        data["image"] = [
            str(p if Path(p).is_absolute() else path.parent / p) for p in data["image"]
        ]
    if "age_group" in data.columns:
        data["age_group"] = data["age_group"].replace({"middle": "middle-aged"})
    return data.assign(
        fixture=data["fixture"].astype(str).str.lower() == "true" if "fixture" in data else False
    )


def bis_und_rows(dataset: pd.DataFrame, max_sets: int | None = None) -> pd.DataFrame:
    """BIS-Und probe rows (one per image x Table 29 question) with ``probe_id``, the
    ``options`` an answer is matched against (``|``-joined), ``image_sha256`` and, for
    SIMULATORS only, ``simulator_truth``."""
    if max_sets is not None:
        keep = list(dict.fromkeys(dataset["instance_id"]))[:max_sets]
        dataset = dataset[dataset["instance_id"].isin(keep)]
    probes = bis_und_probes(dataset)
    if not len(probes):
        return probes
    flags = dataset["fixture"] if "fixture" in dataset else [False] * len(dataset)
    fixture = dict(
        zip(zip(dataset["instance_id"], dataset["variant"], strict=True), flags, strict=True)
    )
    probes["probe_id"] = [
        f"iris-bis-und-{i}-{v}-{q}"
        for i, v, q in zip(
            probes["instance_id"], probes["variant"], probes["question_id"], strict=True
        )
    ]
    if probes["probe_id"].duplicated().any():
        dup = (
            probes.loc[probes["probe_id"].duplicated(), ["instance_id", "variant"]].iloc[0].tolist()
        )
        raise ValueError(f"counterfactual dataset: (instance_id, variant) {dup} appears twice")
    options, truth = [], []
    for q, t in zip(probes["question_id"], probes["truth"], strict=True):
        opts = (
            QUESTION_OPTIONS.get(q, RATINGS) if BIS_UND_QUESTIONS[q][0] == "objective" else RATINGS
        )
        t = SIMULATOR_RATING if t is None or pd.isna(t) else str(t).strip().lower()
        options.append("|".join(opts if t in opts else (*opts, t)))
        truth.append(t)
    hashes = {p: sha256_file(p) for p in dict.fromkeys(probes["image"])}
    return probes.assign(
        sector="BIS-Und",
        modality="vlm",
        options=options,
        simulator_truth=truth,
        image_sha256=probes["image"].map(hashes),
        n_samples=1,
        fixture=[
            bool(fixture.get((i, v), False))
            for i, v in zip(probes["instance_id"], probes["variant"], strict=True)
        ],
    )


_WORD = re.compile(r"[a-z0-9]+")


def objective_choice(text: str | None, options: list[str]) -> str | None:
    """The one option an objective answer names (whole words, case folded), else None
    (no option, or several)."""
    words = set(_WORD.findall((text or "").lower()))
    found = [
        o for o in options if set(_WORD.findall(o.lower())) <= words and _WORD.findall(o.lower())
    ]
    return found[0] if len(found) == 1 else None
