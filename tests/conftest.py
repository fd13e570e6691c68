"""Shared fixtures, and how the suite is laid out on pytest-xdist workers (docs/architecture.md,
"The test suite")."""

from pathlib import Path

import pytest

from genfair.resources.group_words import GroupWordCounter
from tests.support.conf import ROOT
from tests.support.mock_openai import mock_openai  # noqa: F401 - a fixture, found by name
from tests.support.servers import (  # noqa: F401 - fixtures
    postgres,
    postgres_db,
    s3,
    s3_bucket,
    store_url,
)
from tests.support.studies import MAX_BUILDS, ORDER, builds_of, declared


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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Count the end-to-end builds, and put the end-to-end modules first, in ``ORDER``."""
    builds = builds_of(items)
    undeclared = [i.nodeid for i in items if i.get_closest_marker("e2e") and not declared(i)]
    if undeclared:
        raise pytest.UsageError(
            f"{undeclared[0]}: an end-to-end test declares the studies it builds "
            "(@pytest.mark.builds, tests/support/studies.py)"
        )
    if len(builds) > MAX_BUILDS:
        raise pytest.UsageError(
            f"the collected tests build {len(builds)} studies, more than MAX_BUILDS = {MAX_BUILDS} "
            "(tests/support/studies.py): share a build (study_copy) or raise the ceiling there"
        )
    config.stash[_BUILDS] = builds
    # `make test` runs with --dist loadscope --no-loadscope-reorder: each module whole on one
    # worker (its module fixtures made once), in this order: the long poles start at once
    rank = {module: n for n, module in enumerate(ORDER)}

    def start(item: pytest.Item) -> int:
        if not item.get_closest_marker("e2e"):
            return len(ORDER) + 1
        return rank.get(item.nodeid.split("::")[0], len(ORDER))

    items.sort(key=start)


_BUILDS = pytest.StashKey[set]()


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    builds = config.stash.get(_BUILDS, None)
    if builds is not None:
        terminalreporter.write_line(
            f"end-to-end study builds collected: {len(builds)} of at most {MAX_BUILDS} "
            f"({', '.join(sorted(builds)) or 'none'}; tests/support/studies.py)"
        )
