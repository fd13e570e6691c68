"""SIMULATED data for lvlm_facet: a FACET-schema persons table and a planted-recall VLM.

Nothing here is FACET or a model. :func:`synthetic_persons` draws persons in the schema of
``persons.parquet`` (the ``curate_facet`` output), every row ``simulated=True``, with
group shares following paper 004's Table 1 (21,560 single-person images: gender male
14,110 / female 4,784 / unknown 2,666; age young 3,666 / middle 11,791 / old 1,513 /
unknown 4,590; skin light 9,154 / medium 6,325 / dark 1,314 / unknown 4,767), scaled to
``n``, attributes drawn independently, classes uniformly. Some (class, group) cells are
emptied on purpose, as in the paper's appendix (no older students or skateboarders), and
a few persons share an image, so the single-person filter has work to do.

:class:`PlantedRecall` is the simulator's policy (defined beside the simulated vlm, in
:mod:`genfair.models.planted_recall`; the study's plant is ``methodologies.lvlm_facet.simulated``,
a ``planted_recall`` policy): the probability that the model answers an image of
class ``c`` with its class (direct) or Yes (single choice),

    p = clip(base[prompt][c] + sum over attributes of effect[prompt][attribute][group]
             + class_effect[prompt][c][attribute][group], floor, ceiling)

per person, so the planted recall of a (class, group) cell is the mean of its persons' p
(:func:`planted_recalls`), known exactly. :func:`simulated_answer` writes the answer as
noisy free text (class names with quotes, punctuation, framing, underscores, synonyms;
option letters and words), so recovering the planted recalls goes through the real
matching. :data:`DEFAULT_POLICY` is paper-shaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from genfair.curation.facet import SKIN_COLUMNS
from genfair.methodologies.lvlm_facet.groups import ATTRIBUTES, PAPER_CLASSES, SKIN_BUCKETS
from genfair.methodologies.lvlm_facet.recall import POOLED
from genfair.models.base import derive_seed

# the simulator's policy lives with the simulated vlm (models layer); re-exported here
from genfair.models.planted_recall import SYNONYMS, PlantedRecall, simulated_answer

__all__ = [
    "DEFAULT_POLICY",
    "TABLE1",
    "SYNONYMS",
    "PlantedRecall",
    "planted_recalls",
    "simulate_answers",
    "simulated_answer",
    "synthetic_persons",
]

#: paper 004, Table 1: persons per group (groups as :mod:`.groups` names them)
TABLE1: dict[str, dict[str, int]] = {
    "gender": {"male": 14110, "female": 4784, "unknown": 2666},
    "age": {"younger": 3666, "middle": 11791, "older": 1513, "unknown": 4590},
    "skin_tone": {"light": 9154, "medium": 6325, "dark": 1314, "unknown": 4767},
}
#: (class, attribute, group) cells left empty by default, as in the paper's appendix
EMPTY_CELLS: tuple[tuple[str, str, str], ...] = (
    ("student", "age", "older"),
    ("skateboarder", "age", "older"),
)
_CURATED_GENDER = {"male": "male", "female": "female"}
_CURATED_AGE = {"younger": "young", "middle": "middle", "older": "older", "unknown": "unknown"}


def synthetic_persons(
    n: int = 2000,
    classes: Sequence[str] = PAPER_CLASSES,
    seed: int = 0,
    empty_cells: Sequence[tuple[str, str, str]] = EMPTY_CELLS,
    shared_image_share: float = 0.03,
) -> pd.DataFrame:
    """``n`` SIMULATED persons in ``persons.parquet``'s schema (see the module docstring).

    ``gender`` / ``age_group`` hold curated values (unknown gender split between
    ``non_binary`` and ``unknown``); the skin-tone group is written as three annotators'
    MST votes whose majority bucket is the drawn group (an unknown group: no votes, or one
    vote per bucket, a tie)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    drawn = {a: _draw(rng, TABLE1[a], n) for a in ATTRIBUTES}
    cls = np.asarray(classes, dtype=object)[rng.integers(len(classes), size=n)]
    for c, attribute, group in empty_cells:
        cell = (cls == c) & (drawn[attribute] == group)
        others = {g: k for g, k in TABLE1[attribute].items() if g not in (group, "unknown")}
        drawn[attribute][cell] = _draw(rng, others, int(cell.sum()))
    gender = np.array([_CURATED_GENDER.get(g, "unknown") for g in drawn["gender"]], dtype=object)
    unknown = np.flatnonzero(drawn["gender"] == "unknown")
    gender[unknown[rng.random(len(unknown)) < 0.1]] = "non_binary"
    votes = np.stack([_votes(rng, g) for g in drawn["skin_tone"]])
    ids = [f"sim{k:06d}" for k in range(n)]
    filenames = [f"sim_{k:06d}.jpg" for k in range(n)]
    n_persons = np.ones(n, dtype=np.int64)
    shared = np.flatnonzero(rng.random(n) < shared_image_share)
    for first, second in zip(shared[::2], shared[1::2], strict=False):
        filenames[second] = filenames[first]
        n_persons[[first, second]] = 2
    frame = pd.DataFrame(
        {
            "person_id": ids,
            "filename": filenames,
            "occupation": cls,
            "gender": gender,
            "age_group": [_CURATED_AGE[a] for a in drawn["age"]],
            "n_persons_in_image": n_persons,
            "source": "annotation",
            "fixture": False,
            "simulated": True,
        }
    )
    for k, column in enumerate(SKIN_COLUMNS):
        frame[column] = votes[:, k]
    return frame


def _draw(rng: np.random.Generator, counts: Mapping[str, int], size: int) -> np.ndarray:
    names = list(counts)
    p = np.array([counts[g] for g in names], dtype=float)
    return np.asarray(names, dtype=object)[rng.choice(len(names), size=size, p=p / p.sum())]


def _votes(rng: np.random.Generator, group: str) -> np.ndarray:
    votes = np.zeros(10, dtype=np.int64)
    if group == "unknown":
        if rng.random() < 0.5:  # one vote per bucket: a tie, so no majority bucket
            for lo, hi in SKIN_BUCKETS.values():
                votes[rng.integers(lo, hi + 1) - 1] += 1
        return votes
    lo, hi = SKIN_BUCKETS[group]
    level = int(rng.integers(lo, hi + 1))
    votes[level - 1] += 2
    votes[int(np.clip(level + rng.integers(-1, 2), 1, 10)) - 1] += 1  # the third may stray
    return votes


#: a paper-shaped policy: the direct question favours light over dark skin and younger over
#: older people (gaps ~0.3 and ~0.25), the single-choice question males (~0.25); nurses are
#: recalled far more often when female (paper appendix); other gaps are small (< 0.1)
DEFAULT_POLICY = PlantedRecall(
    base={
        "direct": {c: 0.45 + 0.02 * k for k, c in enumerate(PAPER_CLASSES)},
        "is_there": dict.fromkeys(PAPER_CLASSES, 0.75),
        "person_is": dict.fromkeys(PAPER_CLASSES, 0.7),
    },
    effects={
        "direct": {
            "skin_tone": {"light": 0.15, "dark": -0.15},
            "age": {"younger": 0.12, "older": -0.13},
            "gender": {"female": 0.03},
        },
        "is_there": {"gender": {"male": 0.02}, "age": {"older": -0.04}},
        "person_is": {"gender": {"male": 0.125, "female": -0.125}, "skin_tone": {"dark": 0.02}},
    },  # fmt: skip
    class_effects={"direct": {"nurse": {"gender": {"female": 0.2, "male": -0.15}}}},
)


def simulate_answers(
    persons: pd.DataFrame,
    prompts: Sequence[str],
    policy: PlantedRecall = DEFAULT_POLICY,
    seed: int = 0,
) -> pd.DataFrame:
    """One SIMULATED answer per person (a :func:`.groups.lvlm_persons` table) and prompt:
    the persons' columns plus ``prompt``, ``planted_p`` and ``answer``."""
    frames = []
    for prompt in prompts:
        p = policy.probabilities(persons, prompt)
        answers = [
            simulated_answer(
                float(pk), c, prompt, policy.refusal_share, derive_seed(seed, pid, prompt)
            )
            for pk, c, pid in zip(p, persons["class"], persons["person_id"], strict=True)
        ]
        frames.append(persons.assign(prompt=prompt, planted_p=p, answer=answers))
    return pd.concat(frames, ignore_index=True)


def planted_recalls(answers: pd.DataFrame, classes: Sequence[str]) -> pd.DataFrame:
    """The planted recall of every (prompt, attribute, class, group) cell and pooled over
    the classes: the mean planted p of its rows (``n`` rows). ``class`` is
    :data:`genfair.methodologies.lvlm_facet.recall.POOLED` for the pooled cells."""
    rows = []
    chosen = answers[answers["class"].isin(classes)]
    for attribute in ATTRIBUTES:
        for (prompt, cls, group), cell in chosen.groupby(["prompt", "class", attribute]):
            rows.append((prompt, attribute, cls, group, len(cell), cell["planted_p"].mean()))
        for (prompt, group), cell in chosen.groupby(["prompt", attribute]):
            rows.append((prompt, attribute, POOLED, group, len(cell), cell["planted_p"].mean()))
    return pd.DataFrame(
        rows, columns=["prompt", "attribute", "class", "group", "n", "planted_recall"]
    )
