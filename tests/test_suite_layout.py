"""The suite's cost stays visible and bounded: every end-to-end build is declared, and a session
that collects more distinct builds than ``MAX_BUILDS`` fails at collection (tests/conftest.py,
tests/support/studies.py). A count, not a timed test."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

import tests.conftest as suite
from tests.support import studies
from tests.support.conf import ROOT


@dataclass
class _Item:
    """Just enough of a pytest item for the collection hook."""

    nodeid: str
    marks: list[pytest.Mark] = field(default_factory=list)
    module: object = field(default_factory=lambda: SimpleNamespace(__name__="tests.e2e.test_x"))

    def iter_markers(self, name: str) -> list[pytest.Mark]:
        return [m for m in self.marks if m.name == name]

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next(iter(self.iter_markers(name)), None)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.marks.append(marker.mark)


def _e2e(nodeid: str, *builds: str) -> _Item:
    return _Item(nodeid, [pytest.mark.e2e.mark, pytest.mark.builds(*builds).mark])


def _config() -> SimpleNamespace:
    return SimpleNamespace(stash=pytest.Stash())


def test_the_collected_builds_are_counted_and_e2e_tests_go_first() -> None:
    unit = _Item("tests/test_unit.py::test_a")
    items = [unit, _e2e("tests/e2e/test_a.py::t", "smoke"), _e2e("tests/e2e/test_b.py::t", "smoke")]
    config = _config()
    suite.pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]
    assert config.stash[suite._BUILDS] == {"smoke"}
    assert items[-1] is unit  # the end-to-end tests first


def test_the_end_to_end_modules_start_in_the_stated_order() -> None:
    unit = _Item("tests/test_unit.py::test_a")
    listed = [_e2e(f"{module}::t", "smoke") for module in studies.ORDER]
    unlisted = _e2e("tests/e2e/test_new.py::t", "smoke")
    items = [unit, unlisted, *reversed(listed)]
    suite.pytest_collection_modifyitems(_config(), items)  # type: ignore[arg-type]
    assert items == [*listed, unlisted, unit]


def test_more_builds_than_the_ceiling_fail_the_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [_e2e(f"tests/e2e/test_{name}.py::t", name) for name in studies.BUILDS]
    suite.pytest_collection_modifyitems(_config(), list(items))  # type: ignore[arg-type]
    monkeypatch.setattr(suite, "MAX_BUILDS", len(studies.BUILDS) - 1)
    with pytest.raises(pytest.UsageError, match="more than MAX_BUILDS"):
        suite.pytest_collection_modifyitems(_config(), list(items))  # type: ignore[arg-type]


def test_an_undeclared_or_unknown_build_fails_the_collection() -> None:
    undeclared = _Item("tests/e2e/test_x.py::t", [pytest.mark.e2e.mark])
    with pytest.raises(pytest.UsageError, match="declares the studies it builds"):
        suite.pytest_collection_modifyitems(_config(), [undeclared])  # type: ignore[arg-type]
    with pytest.raises(pytest.UsageError, match="names no build"):
        suite.pytest_collection_modifyitems(_config(), [_e2e("t", "nightly")])  # type: ignore[arg-type]


def test_the_suite_collects_no_more_builds_than_stated() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/e2e", "benchmarks"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("end-to-end study builds"))
    count, ceiling = (int(word) for word in line.split(":")[1].split()[:5:4])
    assert count <= ceiling == studies.MAX_BUILDS, line
