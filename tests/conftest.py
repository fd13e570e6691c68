"""Shared fixtures."""

from tests.support.mock_openai import mock_openai  # noqa: F401 - a fixture, found by name
