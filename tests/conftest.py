"""Shared fixtures."""

import pytest

from genfair.resources.group_words import GroupWordCounter
from tests.support.mock_openai import mock_openai  # noqa: F401 - a fixture, found by name


@pytest.fixture(scope="session")
def counter() -> GroupWordCounter:
    """The group-word counter built from the shipped reference lists (paper 001)."""
    return GroupWordCounter.from_files()
