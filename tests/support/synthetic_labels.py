"""SYNTHETIC FACT-OR-FAIR LLM labels (random answers, no model called), for the paired
comparison's coverage tests and benchmark."""

from __future__ import annotations

import numpy as np
import pandas as pd

from genfair.methodologies.fact_or_fair.data import DIRECTIONS, GROUPS
from genfair.methodologies.fact_or_fair.scoring import CONTEXT_ORDER


def fact_or_fair_labels(n: int, statistics: list, seed: int) -> pd.DataFrame:
    """``n`` label rows (one probe each, as FACT-OR-FAIR's probe ids are) over the objective
    test and the four subjective contexts: uniformly random statistics, directions and chosen
    groups, 10% refused."""
    rng = np.random.default_rng(seed)
    names = np.array([s.name for s in statistics])
    return pd.DataFrame(
        {
            "probe_id": [f"p{i}" for i in range(n)],
            "context": rng.choice(CONTEXT_ORDER, n),
            "statistic": rng.choice(names, n),
            "direction": rng.choice(DIRECTIONS, n),
            "attribute": rng.choice(["gender", "race"], n),
            "status": np.where(rng.uniform(size=n) < 0.9, "ok", "refused"),
            "chosen_gender": rng.choice(GROUPS["gender"], n),
            "chosen_race": rng.choice(GROUPS["race"], n),
        }
    )
