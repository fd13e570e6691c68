"""The smoke studies of the end-to-end tests: each built once per test session, then shared.

A *build* is a ``dvc repro`` from nothing: a copy of the project composed with some
overrides, every stage run. Builds dominate the suite's time, so:

- the studies in :data:`SHARED` are built once per session, by whichever pytest-xdist worker
  asks first, in a folder every worker sees and under a file lock (another worker that asks
  waits for that build instead of making its own). :func:`shared_study` returns it: a test
  that takes it only *reads* it;
- a test that changes a study (reproduces it with another model, edits a config or the code,
  runs an experiment) works on :func:`study_copy`, a copy of the built workspace made in a
  second or two: files and git history copied, DVC's cache hard-linked (DVC never changes a
  file in its cache); the MLflow store in it follows the copy by itself at its first
  ``dvc repro`` (``genfair.study.store.follow_checkout``), as a user's ``cp -a`` does;
- every build a test makes, shared or its own, is declared with ``@pytest.mark.builds(name)``
  (a name of :data:`BUILDS`); collecting more distinct builds than :data:`MAX_BUILDS` fails
  the session (tests/conftest.py), so a new end-to-end test reuses a build or says why not.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.project import LIGHT_SMOKE, copy_study, run, study_env

#: every study an end-to-end test builds from nothing, and what it is
BUILDS: dict[str, str] = {
    "smoke": "SHARED: the smoke study, every methodology on every model, SmolLM2 included",
    "capped": "the smoke study again, numpy's and torch's kernels capped to the x86-64 baseline",
    "team": "the smoke study without SmolLM2, tracked on a team MLflow server, pushed to S3",
    "toy_quiz": "an installed toy package (the quiz, its pipeline alone) on the simulated LLM",
    **{
        f"only_{name}": f"{name} alone on the simulators"
        for name in ("fact_or_fair", "news_bias", "iris", "lvlm_facet", "open_bias")
    },
    "external": "curation of a FACET release outside the repository (two stages)",
}
#: the ceiling on distinct builds among the collected tests: adding one means raising this
#: number in the same change, with its cost (a smoke build is 2-5 min on 2 cores)
MAX_BUILDS = len(BUILDS)

#: the shared studies: the overrides they are composed with
SHARED: dict[str, tuple[str, ...]] = {"smoke": ("scale=smoke",)}

#: the order the end-to-end modules start in (``make test``: each module runs whole on one
#: xdist worker, ``--dist loadscope``): the two workers begin with independent long builds (the
#: shared smoke study; the one-methodology studies), then the modules that wait for the smoke
#: study, while the unit tests fill the gaps. A module not listed starts after these.
ORDER = (
    "tests/e2e/test_pipeline.py",
    "tests/e2e/test_one_package_one_config.py",
    "tests/e2e/test_pipeline_changes.py",
    "tests/e2e/test_authoring.py",
    "tests/e2e/test_cpu_identical.py",
    "tests/e2e/test_team.py",
    "tests/e2e/test_external_inputs.py",
)

__all__ = ["BUILDS", "LIGHT_SMOKE", "MAX_BUILDS", "ORDER", "SHARED", "Study", "builds_of",
           "declared", "shared_study", "study_copy"]  # fmt: skip


@dataclass(frozen=True)
class Study:
    """A built study: its folder, the environment its commands run in, ``dvc repro``'s output."""

    work: Path
    env: dict[str, str]
    output: str


def declared(node: pytest.Item | pytest.Collector) -> set[str]:
    """The builds ``node`` declares (``@pytest.mark.builds``, on it or its module)."""
    return {name for mark in node.iter_markers("builds") for name in mark.args}


def builds_of(items: Iterable[pytest.Item]) -> set[str]:
    """The distinct builds the collected ``items`` make; a name outside :data:`BUILDS` is an
    error (pytest.UsageError): every build is declared there, with what it is."""
    names = set().union(*(declared(item) for item in items))
    unknown = names - set(BUILDS)
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.builds names no build of tests/support/studies.py: {sorted(unknown)}"
        )
    return names


def check_declared(node: pytest.Item | pytest.Collector, name: str) -> None:
    """A test building ``name`` must declare it: the session's count of builds is what the
    tests declare."""
    assert name in BUILDS, f"{name}: not a build of tests/support/studies.py"
    assert name in declared(node), f"{node.nodeid}: builds {name!r}: add @pytest.mark.builds"


def _studies_folder(factory: pytest.TempPathFactory) -> Path:
    """Where the shared studies are built: a folder every xdist worker of this session sees
    (their base temp folders' parent), or ``GENFAIR_TEST_STUDIES``, kept between sessions
    for a quick loop on one end-to-end test (delete it after changing what the study runs)."""
    if os.environ.get("GENFAIR_TEST_STUDIES"):
        return Path(os.environ["GENFAIR_TEST_STUDIES"]).resolve()
    base = factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "studies"


def shared_study(request: pytest.FixtureRequest, name: str) -> Study:
    """The shared study ``name``, built now unless this session built it already. Read it;
    to change it, take a :func:`study_copy`."""
    from filelock import FileLock

    check_declared(request.node, name)
    folder = _studies_folder(request.getfixturevalue("tmp_path_factory"))
    folder.mkdir(parents=True, exist_ok=True)
    work, done = folder / name, folder / f"{name}.built.json"
    with FileLock(folder / f"{name}.lock"):
        if not done.exists():
            if work.exists():  # a build that failed in this session: fail again, fast
                pytest.fail(f"the shared {name} study failed to build earlier in this session")
            work.mkdir()
            env = study_env(work)
            started = time.monotonic()
            copy_study(work, env, *SHARED[name])
            output = run(["dvc", "repro"], work, env)
            done.write_text(json.dumps({"output": output, "seconds": time.monotonic() - started}))
    return Study(work, study_env(work), json.loads(done.read_text())["output"])


def study_copy(study: Study, dest: Path) -> Study:
    """A copy of ``study`` in ``dest`` (which must not exist) to change as a test likes."""
    cache = Path(".dvc") / "cache"

    def not_the_cache(folder: str, _: list[str]) -> list[str]:
        return ["cache"] if Path(folder) == study.work / ".dvc" else []

    shutil.copytree(study.work, dest, symlinks=True, ignore=not_the_cache)
    if (study.work / cache).exists():
        shutil.copytree(study.work / cache, dest / cache, copy_function=os.link)
    return Study(dest, study_env(dest), study.output)
