"""Shared fixtures."""

from pathlib import Path

import pytest

from genfair.resources.group_words import GroupWordCounter
from tests.support.conf import ROOT
from tests.support.mock_openai import mock_openai  # noqa: F401 - a fixture, found by name
from tests.support.servers import postgres, postgres_db, s3, s3_bucket  # noqa: F401 - fixtures


@pytest.fixture(scope="session")
def counter() -> GroupWordCounter:
    """The group-word counter built from the shipped reference lists (paper 001)."""
    return GroupWordCounter.from_files()


@pytest.fixture(scope="session")
def occupations_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The study's occupation table (``map_occupations`` over ``data/reference``), as parquet."""
    from genfair.curation.occupations import OccupationsConfig, map_occupations

    reference = ROOT / "data" / "reference"
    config = OccupationsConfig(
        occupations=reference / "facet_occupations.csv",
        us_statistics=reference / "iris_real_world_us.csv",
        eu_statistics=reference / "iris_real_world_eu.csv",
    )
    path = tmp_path_factory.mktemp("occ") / "occupations.parquet"
    map_occupations(config).to_parquet(path)
    return path


def pytest_configure(config: pytest.Config) -> None:
    # run by default (`make test`, CI); `-m "not slow"` leaves them out of a quick loop
    config.addinivalue_line("markers", "slow: takes more than a minute (kill soak); runs in CI")
