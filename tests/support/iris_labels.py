"""SYNTHETIC IRIS labels (random images' readings and tournament picks, no model called), for
the paired comparison's tests and benchmark."""

from __future__ import annotations

import numpy as np
import pandas as pd

from genfair.methodologies.iris.tournament import TournamentConfig, tournament_probes

ATTRIBUTES = {
    "gender": ("male", "female"),
    "age_group": ("young", "middle-aged", "older"),
    "skin_group": ("light", "middle", "dark"),
}


def t2i_labels(
    rng: np.random.Generator,
    occupations: list[str],
    tilt: float = 0.0,
    *,
    images: int = 12,
    steered: int = 2,
    per_prompt: int = 6,
) -> pd.DataFrame:
    """A text-to-image model's labels: ``images`` IFS-Gen images an occupation (female with
    probability 0.5 + ``tilt``), and BIS-Gen images of the first ``steered`` occupations' one
    stereotypical and one counter prompt (``per_prompt`` each, a ``qps`` score)."""
    n = images * len(occupations)
    ifs = pd.DataFrame(
        {
            "occupation": np.repeat(occupations, images),
            "gender": np.where(rng.uniform(size=n) < 0.5 + tilt, "female", "male"),
            **{c: rng.choice(v, n) for c, v in ATTRIBUTES.items() if c != "gender"},
        }
    ).assign(sector="IFS-Gen", status="ok", face_status="ok")
    ifs["probe_id"] = "iris-ifs-gen-" + ifs["occupation"]
    kinds = (("stereotypical", "male"), ("counter", "female"))
    m = steered * len(kinds) * per_prompt
    bis = pd.DataFrame(
        {
            "occupation": np.repeat(occupations[:steered], len(kinds) * per_prompt),
            "prompt_type": np.tile(np.repeat([k for k, _ in kinds], per_prompt), steered),
            "expected_gender": np.tile(np.repeat([w for _, w in kinds], per_prompt), steered),
            "expected_age_group": None,
            "expected_skin_group": None,
            **{c: rng.choice(v, m) for c, v in ATTRIBUTES.items()},
            "qps": rng.uniform(size=m),
        }
    ).assign(sector="BIS-Gen", status="ok", face_status="ok")
    bis["probe_id"] = "iris-bis-gen-" + bis["occupation"] + "-" + bis["prompt_type"]
    return pd.concat([ifs, bis], ignore_index=True).assign(modality="t2i")


def tournament_labels(
    rng: np.random.Generator,
    occupations: list[str],
    modality: str,
    *,
    rounds: int = 6,
    competitors: int = 3,
) -> pd.DataFrame:
    """A model's tournament rounds (``rounds`` per profile): a random pick of the offered,
    10% refused."""
    probes = tournament_probes(
        occupations, TournamentConfig(rounds=rounds, competitors=competitors), seed=1
    )
    refused = rng.uniform(size=len(probes)) < 0.1
    choice = [
        c.split("|")[i]
        for c, i in zip(
            probes["competitors"], rng.integers(0, competitors, len(probes)), strict=True
        )
    ]
    return probes.drop(columns="prompt").assign(
        sector="RFS-Und",
        modality=modality,
        status=np.where(refused, "refused", "ok"),
        choice=np.where(refused, None, np.array(choice, dtype=object)),
    )
