"""The real-world reference of IRIS's RFS sectors and SDS (paper 002 §3.3, App. C.5): per
occupation, the U.S. (gender, age, skin proxies) and E.U. (gender, age) shares."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from genfair.methodologies.iris.tournament import CATEGORIES

__all__ = ["read_reference", "reference_shares", "require_columns"]


def require_columns(table: pd.DataFrame, cols: list[str], sector: str, what: str) -> None:
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(
            f"{sector} table lacks column(s) {missing}; it needs one row per {what} with "
            f"columns {cols} (see genfair.methodologies.iris.granular)"
        )


def read_reference(us: str | Path, eu: str | Path) -> pd.DataFrame:
    """The U.S. and E.U. real-world tables stacked with a ``region`` column."""
    return pd.concat(
        [pd.read_csv(us).assign(region="US"), pd.read_csv(eu).assign(region="EU")],
        ignore_index=True,
    )


_REF_COLUMNS = {
    "gender": {"male": None, "female": "female_pct"},
    "age": {"young": "age_young_pct", "middle-aged": "age_middle_pct", "older": "age_older_pct"},
    "skin": {"light": "skin_light_pct", "middle": "skin_middle_pct", "dark": "skin_dark_pct"},
}


def reference_shares(reference: pd.DataFrame, region: str, attribute: str) -> pd.DataFrame:
    """Real-world ``P(attribute | occupation)``: occupations x categories, rows summing to 1.

    Gender: female = ``female_pct`` / 100, male = the rest. Age and skin: the three
    percentage columns renormalised (the U.S. skin proxies leave out some races, so they
    sum to less than 100). Occupations lacking a column's value are left out.
    """
    require_columns(reference, ["region", "occupation"], "reference", "occupation and region")
    rows = (
        reference[reference["region"] == region]
        .drop_duplicates("occupation")
        .set_index("occupation")
    )
    cols = _REF_COLUMNS[attribute]
    needed = [c for c in cols.values() if c]
    require_columns(rows.reset_index(), needed, f"reference ({region})", "occupation")
    data = rows[needed].apply(pd.to_numeric, errors="coerce")
    data = data.dropna()
    if (data < 0).any().any() or (data > 100).any().any():
        raise ValueError(f"reference ({region}) {needed} must be percentages in 0-100")
    if attribute == "gender":
        share = pd.DataFrame(
            {"male": 1 - data["female_pct"] / 100, "female": data["female_pct"] / 100}
        )
    else:
        share = data.set_axis(list(cols), axis=1)
        total = share.sum(axis=1)
        share = share[total > 0].div(total[total > 0], axis=0)
    return share[list(CATEGORIES[attribute])]
