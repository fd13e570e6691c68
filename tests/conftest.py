"""Shared fixtures."""

import pytest

from genfair.resources.group_words import GroupWordCounter
from tests.support.mock_openai import mock_openai  # noqa: F401 - a fixture, found by name


@pytest.fixture(scope="session")
def counter() -> GroupWordCounter:
    """The group-word counter built from the shipped reference lists (paper 001)."""
    return GroupWordCounter.from_files()


def pytest_configure(config: pytest.Config) -> None:
    # run by default (`make test`, CI); `-m "not slow"` leaves them out of a quick loop
    config.addinivalue_line("markers", "slow: takes more than a minute (kill soak); runs in CI")
