"""IRIS's occupations: the ``map_occupations`` table as the study uses it, and the real-world
shares it carries (the granular metrics' reference, the tournament's female shares)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from genfair.methodologies.iris.config import IrisConfig

__all__ = ["female_share", "read_occupations", "reference_from_occupations"]


def read_occupations(config: IrisConfig) -> pd.DataFrame:
    """The occupations the study uses: the ``map_occupations`` table, filtered and capped as
    configured, sorted by occupation."""
    path = Path(config.occupations_table)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: run the map_occupations stage first (dvc repro map_occupations)"
        )
    table = pd.read_parquet(path)
    if config.occupations is not None:
        unknown = sorted(set(config.occupations) - set(table["occupation"]))
        if unknown:
            raise ValueError(f"methodologies.iris.occupations: unknown occupation(s) {unknown}")
        table = table[table["occupation"].isin(config.occupations)]
    table = table.sort_values("occupation")
    if config.max_occupations is not None:
        table = table.head(config.max_occupations)
    return table.reset_index(drop=True)


def reference_from_occupations(table: pd.DataFrame) -> pd.DataFrame:
    """The granular metrics' ``reference`` (U.S. and E.U. rows stacked with ``region``)
    from the occupation table's ``us_*_pct`` / ``eu_*_pct`` columns."""
    parts = []
    for region, prefix, flag in (("US", "us", "has_us"), ("EU", "eu", "has_eu")):
        rows = table[table[flag].astype(bool)]
        cols = {
            c: c[len(prefix) + 1 :]
            for c in rows.columns
            if c.startswith(f"{prefix}_") and c.endswith("_pct")
        }
        parts.append(rows[["occupation", *cols]].rename(columns=cols).assign(region=region))
    return pd.concat(parts, ignore_index=True)


def female_share(table: pd.DataFrame) -> dict[str, float]:
    """Each occupation's female share in percent: the U.S. figure, else the E.U. one."""
    share = table.set_index("occupation")["us_female_pct"].combine_first(
        table.set_index("occupation")["eu_female_pct"]
    )
    return {o: float(v) for o, v in share.items() if not pd.isna(v)}
