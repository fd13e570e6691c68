"""The IRIS occupation table (paper 002: Table 20-22, §C.5, §D.2.4 tier-1 aliases)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pydantic import ValidationError

from genfair.curation.occupations import (
    AGE_BUCKETS,
    OccupationsConfig,
    ReferenceDataError,
    build_occupation_tables,
    normalize_term,
    write_occupations,
)

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "data" / "reference"
SECTION_C5 = {"student", "patient", "backpacker"}  # named by the paper


def config(**changes) -> OccupationsConfig:
    paths = {
        "occupations": REFERENCE / "facet_occupations.csv",
        "us_statistics": REFERENCE / "iris_real_world_us.csv",
        "eu_statistics": REFERENCE / "iris_real_world_eu.csv",
    }
    return OccupationsConfig(**(paths | changes))


@pytest.fixture(scope="module")
def tables():
    return build_occupation_tables(config())


@pytest.fixture(scope="module")
def table(tables) -> pd.DataFrame:
    return tables.table.set_index("occupation")


def test_one_row_per_facet_class(tables) -> None:
    facet = pd.read_csv(REFERENCE / "facet_occupations.csv")["occupation"].tolist()
    assert len(facet) == 52
    assert tables.table["occupation"].tolist() == sorted(facet)


def test_non_occupational_identities_have_no_statistics(table: pd.DataFrame) -> None:
    excluded = set(table.index[~table["is_occupation"]])
    assert SECTION_C5 <= excluded
    assert excluded == set(OccupationsConfig().non_occupational)
    assert table.loc[list(excluded), ["has_us", "has_eu"]].eq(False).all().all()
    assert table.loc[list(excluded), "exclusion_reason"].notna().all()
    assert table.loc[table["is_occupation"], "exclusion_reason"].isna().all()


def test_statistics_match_the_reference_files(table: pd.DataFrame) -> None:
    us = pd.read_csv(REFERENCE / "iris_real_world_us.csv").set_index("occupation")
    eu = pd.read_csv(REFERENCE / "iris_real_world_eu.csv").set_index("occupation")
    assert int(table["has_us"].sum()) == len(us) == 32
    assert int(table["has_eu"].sum()) == len(eu) == 11
    for name, row in us.iterrows():
        assert table.at[name, "us_female_pct"] == row["female_pct"]
        assert table.at[name, "us_skin_dark_pct"] == row["skin_dark_pct"]
        assert table.at[name, "us_age_older_pct"] == row["age_older_pct"]
    for name, row in eu.iterrows():
        assert table.at[name, "eu_female_pct"] == row["female_pct"]
        assert table.at[name, "eu_age_young_pct"] == row["age_young_pct"]
    assert (table.at["doctor", "soc_code"], table.at["doctor", "soc_title"]) == (
        "29-1210/20",
        "Physicians",
    )
    assert (table.at["nurse", "isco_code"], table.at["nurse", "isco_title"]) == (
        "222/322",
        "Nursing Professionals",
    )
    # no SOC code was given for the military: none is made up
    assert (
        pd.isna(table.at["soldier", "soc_code"])
        and table.at["soldier", "soc_title"] == "Military Occupations"
    )
    assert (
        pd.isna(table.at["seller", "us_female_pct"]) and table.at["seller", "eu_female_pct"] == 64.3
    )


def test_distributions_are_proportions(table: pd.DataFrame) -> None:
    for column in (
        "us_gender_dist",
        "us_age_dist",
        "us_skin_dist",
        "eu_gender_dist",
        "eu_age_dist",
    ):
        region = "has_" + column[:2]
        values = table.loc[table[region], column]
        assert values.map(lambda d: abs(sum(d) - 1.0) < 1e-9).all(), column
        assert table.loc[~table[region], column].isna().all()
    # astronaut's published skin proxies add up to 96.6 %: normalised, in proportion
    light, middle, dark = table.at["astronaut", "us_skin_dist"]
    assert light == pytest.approx(66.8 / 96.6) and dark == pytest.approx(6.5 / 96.6)
    assert table.at["doctor", "us_gender_dist"] == pytest.approx([0.436, 0.564])


def test_aliases_from_wordnet(table: pd.DataFrame) -> None:
    def of(name: str) -> set[str]:
        return set(table.at[name, "aliases"])

    assert {"physician", "physicians", "doc", "md", "surgeon"} <= of("doctor")  # synonyms, hyponym
    assert {"firefighter", "firefighters", "fire fighter"} <= of("fireman")  # curated sense n.04
    assert {"police officer", "policeman", "sheriff"} <= of("lawman")
    assert {"disc jockey", "dj"} <= of("disk_jockey")
    assert {"stylist", "barber"} & of("hairdresser") == {"stylist"}  # barber: not its first sense
    assert "hand" not in of("laborer") and "voice" not in of("singer")  # not the usual meaning
    assert "jack" not in of("laborer") and "jacks" not in of("laborer")  # dropped, with plural
    assert not of("speaker") & {"mutterer", "whisperer"}  # no_hyponyms
    assert "stoker" not in of("fireman")  # the wrong sense of fireman is not used
    assert table.at["basketball_player", "forms"] == ["basketball player", "basketball players"]
    assert table.at["fireman", "forms"] == ["fireman", "firemen"]


def test_no_alias_maps_to_two_occupations(tables) -> None:
    owner: dict[str, str] = {}
    for row in tables.table.itertuples():
        for term in [*row.forms, *row.aliases]:
            assert term == normalize_term(term)
            assert owner.setdefault(term, row.occupation) == row.occupation, term


def test_collisions_are_resolved_and_reported(tables, table: pd.DataFrame) -> None:
    report = tables.collisions.set_index("alias")
    # an occupation's own name beats another's hyponym (hairdresser.n.01 is a craftsman.n.03)
    assert report.at["hairdresser", "winner"] == "hairdresser"
    assert "craftsman:hyponym" in report.at["hairdresser", "claimants"]
    assert "hairdresser" not in table.at["craftsman", "aliases"]
    # a synonym beats a hyponym: "mechanic" is machinist.n.01's lemma, and a craftsman kind
    assert report.at["mechanic", "winner"] == "machinist"
    # equal claims: dropped from both, reported with no winner
    assert pd.isna(report.at["dancing master", "winner"])
    assert "dancing master" not in table.at["dancer", "aliases"] + table.at["teacher", "aliases"]


def test_age_bucket_scheme_changes_the_boundaries_not_the_figures(table: pd.DataFrame) -> None:
    assert (
        tuple(table.loc["doctor", ["age_young_range", "age_middle_range", "age_older_range"]])
        == AGE_BUCKETS["paper"]
    )
    assert AGE_BUCKETS["paper"] == ("0-39", "40-64", "65+")
    release = build_occupation_tables(config(age_buckets="release")).table.set_index("occupation")
    assert tuple(
        release.loc["doctor", ["age_young_range", "age_middle_range", "age_older_range"]]
    ) == ("0-39", "40-59", "60+")
    assert (release["age_bucket_scheme"] == "release").all()
    assert release["us_age_young_pct"].equals(table["us_age_young_pct"])
    assert release.at["doctor", "inputs_sha256"] != table.at["doctor", "inputs_sha256"]


def test_output_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the default config's relative paths
    first = write_occupations(OccupationsConfig(), tmp_path / "a")
    second = write_occupations(OccupationsConfig(), tmp_path / "b")
    for key in first:
        assert first[key].read_bytes() == second[key].read_bytes()
    assert pd.read_parquet(first["occupations"])["table_version"].eq(1).all()


def test_shipped_config_is_valid_and_matches_the_defaults() -> None:
    data = yaml.safe_load((ROOT / "conf" / "curation" / "occupations.yaml").read_text())
    assert OccupationsConfig.model_validate(data) == OccupationsConfig()


def _copy_reference(tmp_path: Path) -> dict[str, Path]:
    for name in ("facet_occupations.csv", "iris_real_world_us.csv", "iris_real_world_eu.csv"):
        shutil.copy(REFERENCE / name, tmp_path / name)
    return {
        "occupations": tmp_path / "facet_occupations.csv",
        "us_statistics": tmp_path / "iris_real_world_us.csv",
        "eu_statistics": tmp_path / "iris_real_world_eu.csv",
    }


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_bad_percentage_names_file_line_and_column(tmp_path: Path) -> None:
    paths = _copy_reference(tmp_path)
    _edit(
        paths["us_statistics"],
        "bartender,35-3011: Bartenders,60.20",
        "bartender,35-3011: Bartenders,160.20",
    )
    with pytest.raises(
        ReferenceDataError,
        match=r"iris_real_world_us\.csv:3 \(bartender\): female_pct=160\.2 outside 0-100",
    ):
        build_occupation_tables(OccupationsConfig(**paths))


def test_group_not_adding_up_is_refused(tmp_path: Path) -> None:
    paths = _copy_reference(tmp_path)
    _edit(
        paths["eu_statistics"],
        "waiter,5131: Waiters,58.10,68.50",
        "waiter,5131: Waiters,58.10,88.50",
    )
    with pytest.raises(
        ReferenceDataError,
        match=r"iris_real_world_eu\.csv:8 \(waiter\): age percentages add up to 120\.0",
    ):
        build_occupation_tables(OccupationsConfig(**paths))


def test_unknown_occupation_in_statistics_is_refused(tmp_path: Path) -> None:
    paths = _copy_reference(tmp_path)
    _edit(paths["eu_statistics"], "guard,5414", "bodyguard,5414")
    with pytest.raises(
        ReferenceDataError, match=r"\(bodyguard\): not one of the FACET occupations"
    ):
        build_occupation_tables(OccupationsConfig(**paths))


def test_statistics_for_a_non_occupation_are_refused() -> None:
    with pytest.raises(
        ReferenceDataError,
        match=r"iris_real_world_us\.csv:10 \(doctor\): listed as non-occupational",
    ):
        build_occupation_tables(config(non_occupational={"doctor": "test"}))


@pytest.mark.parametrize(
    ("senses", "message"),
    [
        ({"doctor": ("doctor.n.99",)}, r"senses\.doctor: no WordNet 3\.0 synset 'doctor\.n\.99'"),
        ({"doctor": ("physician.n.01",)}, None),  # same synset as doctor.n.01: accepted
        (
            {"nurse": ("doctor.n.01",)},
            r"senses\.nurse: doctor\.n\.01 does not have 'nurse' as a lemma",
        ),
        (
            {"runner": ("runner.n.08",)},
            r"senses\.runner: runner\.n\.08 is noun\.\w+, not noun\.person",
        ),
        ({"pilot": ("pilot.n.01",)}, r"unknown occupations: \['pilot'\]"),
    ],
)
def test_bad_senses_are_refused(senses: dict, message: str | None) -> None:
    if message is None:
        build_occupation_tables(config(senses=senses))
        return
    with pytest.raises(ReferenceDataError, match=message):
        build_occupation_tables(config(senses=senses))


def test_unknown_config_key_is_refused() -> None:
    with pytest.raises(ValidationError, match="age_bucket"):
        OccupationsConfig.model_validate({"age_bucket": "paper"})
    with pytest.raises(ValidationError):
        OccupationsConfig(age_buckets="c5")
