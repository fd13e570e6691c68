"""Read one file of ``conf/`` as the dict it contributes (without Hydra's ``defaults`` list)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def copy_conf(folder: Path) -> Path:
    """The study's ``conf/``, ``dvc.yaml`` and ``params.yaml`` copied into ``folder``: a study
    to compose in (``genfair compose`` writes its ``params.yaml``, not the repository's)."""
    import shutil

    shutil.copytree(ROOT / "conf", folder / "conf")
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy2(ROOT / name, folder / name)
    return folder


def read_conf(relative: str) -> dict[str, Any]:
    """``conf/<relative>`` as a dict, its ``defaults`` list (e.g. the per-scale sizes) dropped."""
    data = yaml.safe_load((ROOT / "conf" / relative).read_text(encoding="utf-8")) or {}
    data.pop("defaults", None)
    return data


def with_runs(raw: dict[str, Any]) -> dict[str, Any]:
    """Composed params edited by hand (models or methodologies swapped), with ``runs``,
    ``methodology_code``, ``study_steps``, ``plots`` and ``digests`` made again from them as
    composing would (``score`` and every loader check them)."""
    from genfair.study.runs import (
        compose_code,
        compose_digests,
        compose_plots,
        compose_runs,
        compose_study_steps,
    )

    return {
        **raw,
        "runs": compose_runs(raw["models"], raw["methodologies"], raw.get("model_methodologies")),
        "methodology_code": compose_code(raw["methodologies"]),
        "study_steps": compose_study_steps(
            raw["models"], raw["methodologies"], raw.get("model_methodologies")
        ),
        "plots": compose_plots(raw["methodologies"]),
        "digests": compose_digests(
            raw["models"], raw["methodologies"], raw.get("instruments") or {}
        ),
    }


def stage_params(folder: Path) -> dict[str, dict[str, Any]]:
    """Stage -> the values of the params it depends on, as DVC reads them from ``folder``'s
    ``dvc.yaml`` and ``params.yaml`` (a DVC repository is made there, without git, if it has
    none): a stage reruns when one of these changes."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    if not (folder / ".dvc").is_dir():
        # in a subprocess: DVC's in-process logger may still write to a stream an earlier
        # test's capture closed ("I/O operation on closed file" on its "Initialized" line)
        subprocess.run(
            [sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=folder, check=True
        )
    with Repo(str(folder)) as repo:
        return {
            stage.addressing: {
                k: v
                for d in stage.deps
                if isinstance(d, ParamsDependency)
                for k, v in d.read_params().items()
            }
            for stage in repo.index.stages
        }
