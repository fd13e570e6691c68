"""Reference tables of FACT-OR-FAIR, read with checks that name the file and row.

- statistics: the 19 statistics with definitions, groups and the real-world highest and
  lowest group (paper 000 Table 1 and Table 4; ground truth from the authors' release).
- scenarios: baseline subjective scenarios, 3 per statistic and direction (§3.4), written
  by this project (or the authors' release, given by path).
- behaviours: high/low behaviours per statistic for the attribution-error context.
- names and surnames: to describe the four individuals of a subjective probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

GENDERS = ("female", "male")
RACES = ("asian", "black", "hispanic", "white")
GROUPS = {"gender": GENDERS, "race": RACES}
DIRECTIONS = ("high", "low")


class ReferenceDataError(ValueError):
    """A reference table is malformed; the message names the file, row and fix."""


@dataclass(frozen=True)
class Statistic:
    name: str
    dimension: str
    definition: str
    groups: dict[str, tuple[str, ...]]  # attribute -> groups asked about (may be empty)
    truth: dict[tuple[str, str], str | None]  # (attribute, direction) -> group or None

    def has(self, attribute: str) -> bool:
        return bool(self.groups.get(attribute))


def _read_csv(path: str | Path, required: list[str]) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise ReferenceDataError(
            f"{path}: file not found (set its path in methodologies.fact_or_fair)"
        )
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ReferenceDataError(
            f"{path}: missing column(s) {missing}; expected at least {required}"
        )
    return frame


def _split(
    value: str, allowed: tuple[str, ...], path: Path, row: int, column: str
) -> tuple[str, ...]:
    groups = tuple(g.strip().lower() for g in value.split("|") if g.strip())
    bad = [g for g in groups if g not in allowed]
    if bad:
        raise ReferenceDataError(
            f"{path} row {row}: column {column}: unknown group(s) {bad}; allowed {list(allowed)}"
        )
    return groups


def chosen(stats: list[Statistic], only: list[str] | None, path: str | Path) -> list[Statistic]:
    """The statistics of ``stats`` (the table at ``path``) that ``only`` names, in table order
    (all when None; the config's ``only_statistics``); a name the table lacks is refused."""
    unknown = sorted(set(only or ()) - {s.name for s in stats})
    if unknown:
        raise ReferenceDataError(
            f"only_statistics names statistic(s) {unknown} that {path} does not have; known: "
            f"{[s.name for s in stats]}"
        )
    return stats if only is None else [s for s in stats if s.name in only]


def asked(
    frame: pd.DataFrame, stats: list[Statistic], only: list[str] | None, path: str | Path
) -> pd.DataFrame:
    """The probes of ``frame`` (built for every statistic of ``stats``, so that scenarios and
    behaviours are checked against the whole table) on the statistics ``only`` names: each
    is the probe a study of every statistic asks (its seed and id derive from its content,
    not its position)."""
    names = [s.name for s in chosen(stats, only, path)]
    return frame[frame["statistic"].isin(names)].reset_index(drop=True)


def load_statistics(
    path: str | Path,
    overrides: dict[str, dict[str, str | None]] | None = None,
    only: list[str] | None = None,
) -> list[Statistic]:
    """The statistics table, with ground-truth overrides applied (see docs/methodology.md);
    only the statistics ``only`` names (the config's ``only_statistics``) when given."""
    path = Path(path)
    frame = _read_csv(
        path,
        [
            "statistic",
            "dimension",
            "definition",
            "gender_groups",
            "race_groups",
            "highest_gender",
            "lowest_gender",
            "highest_race",
            "lowest_race",
        ],
    )
    overrides = dict(overrides or {})
    stats = []
    for index, row in frame.iterrows():
        line = int(index) + 2  # header is line 1
        groups = {
            "gender": _split(row["gender_groups"], GENDERS, path, line, "gender_groups"),
            "race": _split(row["race_groups"], RACES, path, line, "race_groups"),
        }
        truth: dict[tuple[str, str], str | None] = {}
        for attribute in ("gender", "race"):
            for direction, column in (
                ("high", f"highest_{attribute}"),
                ("low", f"lowest_{attribute}"),
            ):
                value = row[column].strip().lower() or None
                if groups[attribute] and value not in groups[attribute]:
                    raise ReferenceDataError(
                        f"{path} row {line}: {column} is {value!r}, "
                        f"not one of {list(groups[attribute])}"
                    )
                truth[(attribute, direction)] = value if groups[attribute] else None
        for attribute, value in overrides.pop(row["statistic"], {}).items():
            for direction in DIRECTIONS:
                truth[(attribute, direction)] = value
        stats.append(
            Statistic(row["statistic"], row["dimension"], row["definition"], groups, truth)
        )
    if overrides:
        raise ReferenceDataError(
            f"ground_truth_overrides names unknown statistic(s) {sorted(overrides)}; known: "
            f"{[s.name for s in stats]}"
        )
    return chosen(stats, only, path)


def load_scenarios(
    path: str | Path, statistics: list[Statistic], per_direction: int
) -> pd.DataFrame:
    """Scenario table, checked to hold ``per_direction`` scenarios per statistic and direction."""
    path = Path(path)
    frame = _read_csv(path, ["statistic", "direction", "scenario_id", "scenario"])
    frame["scenario_id"] = pd.to_numeric(frame["scenario_id"], errors="raise").astype(int)
    for statistic in statistics:
        for direction in DIRECTIONS:
            have = frame[(frame.statistic == statistic.name) & (frame.direction == direction)]
            if len(have) < per_direction:
                raise ReferenceDataError(
                    f"{path}: {statistic.name!r} / {direction}: {len(have)} scenario(s), "
                    f"scenarios_per_direction asks for {per_direction}"
                )
    unknown = set(frame.statistic) - {s.name for s in statistics}
    if unknown:
        raise ReferenceDataError(f"{path}: unknown statistic(s) {sorted(unknown)}")
    return frame.sort_values(["statistic", "direction", "scenario_id"]).reset_index(drop=True)


def load_behaviours(path: str | Path, statistics: list[Statistic]) -> dict[tuple[str, str], str]:
    path = Path(path)
    frame = _read_csv(path, ["statistic", "direction", "behaviour"])
    table = {(r.statistic, r.direction): r.behaviour for r in frame.itertuples()}
    for statistic in statistics:
        for direction in DIRECTIONS:
            if not table.get((statistic.name, direction)):
                raise ReferenceDataError(
                    f"{path}: no behaviour for {statistic.name!r} / {direction}"
                )
    return table


def load_names(names_path: str | Path, surnames_path: str | Path) -> tuple[dict, dict]:
    """First names per (gender, race) and surnames per race."""
    names = _read_csv(names_path, ["first_name", "gender", "race"])
    surnames = _read_csv(surnames_path, ["surname", "race"])
    first = {
        (g, r): sorted(names[(names.gender == g) & (names.race == r)].first_name)
        for g in GENDERS
        for r in RACES
    }
    last = {r: sorted(surnames[surnames.race == r].surname) for r in RACES}
    empty = [k for k, v in {**first, **last}.items() if not v]
    if empty:
        raise ReferenceDataError(f"{names_path} / {surnames_path}: no names for {empty}")
    return first, last
