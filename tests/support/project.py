"""A git + DVC copy of the project in a temporary folder, for the end-to-end tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.conf import ROOT

#: what a study needs: the pipeline, its configuration, the stage scripts, the shipped facts, the
#: code, and data/curated/external, which always/dvc.yaml's curation_inputs depends on (its
#: committed README keeps it present while a study has no input outside the repository)
COPY = [
    ".dvc/config",
    ".dvc/.gitignore",
    "dvc.yaml",
    "always/dvc.yaml",
    "conf",
    "stages",
    "data/reference",
    "data/curated/external",
    "src",
]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
#: the authors' published OpenBias proposals for the Flickr captions (a test fixture)
_PUBLISHED_PROPOSALS = ROOT / "tests/support/open_bias_published_flickr.json"
#: the smoke study without the embedded LLM (every methodology and modality, in less time):
#: OpenBias, whose proposer it is, takes the authors' published proposals instead
LIGHT_SMOKE = (
    "scale=smoke",
    "~model@models.smollm2",
    "methodologies.open_bias.captions=published",
    f"methodologies.open_bias.published_proposals={_PUBLISHED_PROPOSALS}",
)

__all__ = [
    "COPY",
    "GIT",
    "LIGHT_SMOKE",
    "ROOT",
    "always_changed",
    "commit",
    "copy_project",
    "copy_study",
    "install_methodology",
    "run",
    "stale_after_code_edit",
    "status_stages",
    "study_env",
]


def run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run a command; its output, or a failed assertion with the output's tail."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{output[-4000:]}"
    return output


def study_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a study in ``work``: this venv's tools, offline, DVC's site cache and
    the response cache inside ``work``, the default MLflow store unless ``extra`` names one."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_SITE_CACHE_DIR": str(work / ".site-cache"),
        "GENFAIR_CACHE_DIR": str(work / ".genfair-cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    return {**env, **extra}


def copy_project(work: Path) -> None:
    """The project's pipeline, config, stage scripts, shipped facts and code in ``work``."""
    for item in COPY:
        source, target = ROOT / item, work / item
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)


def commit(work: Path, env: dict[str, str], message: str = "study") -> None:
    """Everything in ``work`` committed (a new git repository the first time)."""
    if not (work / ".git").exists():
        run(["git", "init", "-q"], work, env)
    run(["git", "add", "-A"], work, env)
    run([*GIT, "commit", "-qm", message], work, env)


def copy_study(work: Path, env: dict[str, str], *overrides: str) -> None:
    """:func:`copy_project`, composed with ``overrides`` (e.g. ``scale=smoke``) and committed."""
    copy_project(work)
    run(
        ["genfair", "compose", *[arg for override in overrides for arg in ("-o", override)]],
        work,
        env,
    )
    commit(work, env)


def install_methodology(module: Path, entry: str, where: Path, *also: str) -> Path:
    """The methodology class ``entry`` (``<name>=<Class>``) of ``module`` (one file, or a
    package folder) made a distribution of its own (``genfair-<name>``: its ``pyproject.toml``
    declares the entry point, as docs/architecture.md's "Adding a methodology" says, and one
    for each further methodology of the package in ``also``), installed with ``pip install
    --target`` into ``where/site`` (the shared venv stays as it is); the folder to put on the
    study's ``PYTHONPATH``."""
    name, cls = entry.split("=")
    package, site = where / "package", where / "site"
    if module.is_dir():  # a package: __init__.py, config.py, methodology.py, report.py
        shutil.copytree(
            module, package / f"genfair_{name}", ignore=shutil.ignore_patterns("__pycache__")
        )
    else:  # one file
        (package / f"genfair_{name}").mkdir(parents=True)
        (package / f"genfair_{name}/__init__.py").write_text(module.read_text())
    (package / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        f'\n[project]\nname = "genfair-{name}"\nversion = "0.1.0"\ndependencies = ["genfair"]\n'
        '\n[project.entry-points."genfair.methodologies"]\n'
        + "".join(
            f'{n} = "genfair_{name}:{c}"\n' for n, c in (e.split("=") for e in (entry, *also))
        )
    )
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "--no-index", "--target", str(site), str(package)], check=True, capture_output=True
    )
    return site


def always_changed(work: Path) -> set[str]:
    """The stages that run on every repro (always/dvc.yaml), by the names DVC prints."""
    import yaml

    stages = yaml.safe_load((work / "always/dvc.yaml").read_text())["stages"]
    assert all(stage.get("always_changed") for stage in stages.values())
    return {f"always/dvc.yaml:{name}" for name in stages}


def status_stages(work: Path, env: dict[str, str]) -> set[str]:
    """The stages `dvc status` lists as changed, but those that always run."""
    output = run(["dvc", "status"], work, env)
    return {
        line.rstrip(":")
        for line in output.splitlines()
        if line and not line[0].isspace() and line.endswith(":")
    } - always_changed(work)


def stale_after_code_edit(
    work: Path, env: dict[str, str], source: Path, *methodologies: str
) -> tuple[set[str], set[str]]:
    """What `dvc status` lists once a comment is added to ``source`` (a file of the code of
    ``methodologies``, one package): at once, and after their ``code@`` fingerprints are
    rebuilt (what the cross-model stages depend on). The edit is undone and the fingerprints
    rebuilt before returning, so the study is up to date again."""
    text, fingerprints = source.read_text(), [f"code@{m}" for m in methodologies]
    try:
        source.write_text(text + "# an edit\n")
        edited = status_stages(work, env)
        run(["dvc", "repro", *fingerprints], work, env)
        fingerprinted = status_stages(work, env)
    finally:
        source.write_text(text)
        run(["dvc", "repro", *fingerprints], work, env)
    return edited, fingerprinted
