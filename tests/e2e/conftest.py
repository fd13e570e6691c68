"""The shared smoke study, for the end-to-end tests that read it and those that change a copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.studies import Study, shared_study, study_copy


@pytest.fixture(scope="module")
def study(request: pytest.FixtureRequest) -> tuple[Path, dict[str, str], str]:
    """The shared smoke study (tests/support/studies.py), reproduced once per session:
    ``(folder, environment, dvc repro's output)``. Read it only; to change it, take
    ``own_study``."""
    built = shared_study(request, "smoke")
    return built.work, built.env, built.output


@pytest.fixture
def own_study(
    study: tuple[Path, dict[str, str], str], tmp_path: Path
) -> tuple[Path, dict[str, str], str]:
    """A copy of the smoke study that this test alone changes."""
    copy = study_copy(Study(*study), tmp_path / "study")
    return copy.work, copy.env, copy.output
