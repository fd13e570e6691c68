"""What an MLflow run came from: the versioned data (DVC) and the experiment (DVC ``exp run``).

A run logs each data file or folder its stages read or wrote as an MLflow dataset input
(``mlflow.log_input``): the digest is the DVC hash recorded in ``dvc.lock`` (``md5``, with
``.dir`` for a folder), the source the DVC path at the git commit, so ``dvc get``,
``dvc.api.open`` or :meth:`DvcDatasetSource.load` fetch exactly those bytes.

A study run says which experiment it is: ``dvc exp run`` sets ``DVC_EXP_NAME`` and
``DVC_EXP_BASELINE_REV`` for the stages it runs, and the params that differ from the
committed study (``params.yaml`` at the baseline commit) go into tags and the description.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from mlflow.data.dataset_source import DatasetSource

from genfair.names import flatten, mlflow_key
from genfair.study.selection import COMPUTED
from genfair.yaml_guard import check_yaml, read_yaml

#: libyaml's loader where PyYAML has it (a study's dvc.lock has thousands of lines)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
LOCK_FILES = ("dvc.lock", "always/dvc.lock")


class DvcDatasetSource(DatasetSource):
    """A path of a DVC repository at a git revision (``repo``: a URL, or ``""`` for the
    repository the run was logged from)."""

    def __init__(self, path: str, rev: str, repo: str = "") -> None:
        self.path, self.rev, self.repo = path, rev, repo

    @staticmethod
    def _get_source_type() -> str:
        return "dvc"

    def load(self, dst_path: str | None = None) -> str:
        """Fetch the data (from the DVC cache or remote) to ``dst_path``; returns its path."""
        from dvc.api import DVCFileSystem

        target = Path(dst_path or ".") / Path(self.path).name
        rev = self.rev.removesuffix("-dirty") or None
        DVCFileSystem(self.repo or None, rev=rev).get(self.path, str(target), recursive=True)
        return str(target)

    @staticmethod
    def _can_resolve(raw_source: Any) -> bool:
        return False  # made only from a dict (:meth:`from_dict`), never guessed from a string

    @classmethod
    def _resolve(cls, raw_source: Any) -> DvcDatasetSource:
        raise NotImplementedError("a DVC source is made from its dict (from_dict)")

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "rev": self.rev, "repo": self.repo}

    @classmethod
    def from_dict(cls, source_dict: dict[Any, Any]) -> DvcDatasetSource:
        return cls(source_dict["path"], source_dict["rev"], source_dict.get("repo", ""))


@dataclass(frozen=True)
class DataFile:
    """A DVC-tracked path a run's stages read (``input``) or wrote (``output``)."""

    path: str
    md5: str
    role: str


def locked_stages(root: Path) -> dict[str, Any]:
    """Every stage of the study's lock files (``dvc.lock``, ``always/dvc.lock``) by name;
    empty where DVC has not run (e.g. the steps called from Python)."""
    stages: dict[str, Any] = {}
    for name in LOCK_FILES:
        path = root / name
        if path.is_file():
            stages.update(
                (yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or {}).get(
                    "stages", {}
                )
            )
    return stages


def stage_data(stages: dict[str, Any], names: list[str]) -> list[DataFile]:
    """The data paths (under ``data/``) of the named stages in ``dvc.lock``, each once:
    ``output`` when one of them writes it, else ``input``. Stages not locked are skipped."""
    outs: dict[str, str] = {}
    deps: dict[str, str] = {}
    for name in names:
        entry = stages.get(name) or {}
        for kind, found in (("outs", outs), ("deps", deps)):
            for item in entry.get(kind, []):
                if item.get("path", "").startswith("data/") and item.get("md5"):
                    found[item["path"]] = item["md5"]
    return [DataFile(path, md5, "output") for path, md5 in sorted(outs.items())] + [
        DataFile(path, md5, "input") for path, md5 in sorted(deps.items()) if path not in outs
    ]


def log_data(mlflow: Any, files: list[DataFile], commit: str) -> None:
    """Log ``files`` to the active run as dataset inputs (digest: the DVC hash; source: the
    DVC path at ``commit``; context: ``input`` or ``output``)."""
    from mlflow.data.meta_dataset import MetaDataset

    for file in files:
        dataset = MetaDataset(DvcDatasetSource(file.path, commit), name=file.path, digest=file.md5)
        mlflow.log_input(dataset, context=file.role)


def committed_params(root: Path, rev: str) -> dict[str, Any] | None:
    """``params.yaml`` at git revision ``rev``; ``None`` outside git or where it has none."""
    try:
        text = subprocess.run(
            ["git", "show", f"{rev}:params.yaml"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    check_yaml(text, f"params.yaml at {rev}")
    return yaml.load(text, Loader=_LOADER) or {}


def changed_params(current: dict[str, Any], committed: dict[str, Any] | None) -> dict[str, str]:
    """``key -> "new (was old)"`` for each param that differs from the committed study (the
    ``runs`` list is derived from the others and left out)."""
    if committed is None:
        return {}
    now = {k: v for k, v in flatten(current).items() if not k.startswith("runs.")}
    before = {k: v for k, v in flatten(committed).items() if not k.startswith("runs.")}
    return {
        key: f"{now.get(key, '<unset>')} (was {before.get(key, '<unset>')})"
        for key in sorted(now.keys() | before.keys())
        if now.get(key) != before.get(key)
    }


#: the longest name a study run gets (MLflow's limit is 500; a run table shows about 60)
MAX_RUN_NAME = 80
#: where a study run's description begins its key-by-key list of the changed params
PARAMS_CHANGED = "\n\nparams changed:"
#: the changed params a study run's description lists (all are its ``genfair.changed.*`` tags)
MAX_LISTED = 40
#: the blocks of params.yaml whose keys name a model, methodology, curation or instrument
_NAMED = {
    "models": "model",
    "methodologies": "methodology",
    "curation": "curation",
    "instruments": "instrument",
}


def in_words(changes: dict[str, str]) -> list[str]:
    """What ``changes`` (:func:`changed_params`) did to the study, a phrase each: a model or
    methodology added (``+ model m``), removed (``- model m``) or changed (with its keys),
    another param with its value; params.yaml's computed blocks (``digests``, ``runs``...) only
    where nothing the user sets explains them (a methodology's code changed)."""
    named: dict[tuple[str, str], list[str]] = {}
    plain, computed = [], set()
    for key, value in changes.items():
        head, _, rest = key.partition(".")
        if head in _NAMED and rest:
            name, _, sub = rest.partition(".")
            named.setdefault((head, name), []).append(f"{sub or name}={value}")
        elif head in COMPUTED:
            parts = key.split(".")
            if head == "digests" and len(parts) > 2 and parts[1] in _NAMED:
                computed.add((parts[1], parts[2]))
        else:
            plain.append(f"{key} {value}")
    phrases = []
    for (head, name), subs in named.items():
        kind = _NAMED[head]
        if all(sub.endswith("(was <unset>)") for sub in subs):
            phrases.append(f"+ {kind} {name}")
        elif all("=<unset> (was " in sub for sub in subs):
            phrases.append(f"- {kind} {name}")
        elif len(subs) == 1:
            key, _, value = subs[0].partition("=")
            phrases.append(f"{kind} {name}: {key} {value}")
        else:
            phrases.append(f"{kind} {name}: {', '.join(sub.partition('=')[0] for sub in subs)}")
    phrases += plain
    phrases += [
        f"{_NAMED[head]} {name}: its code or inputs"
        for head, name in sorted(computed)
        if (head, name) not in named
    ]
    return phrases


@dataclass(frozen=True)
class Experiment:
    """The DVC experiment a study run belongs to (``name`` empty outside ``dvc exp run``) and
    the params it changed."""

    name: str
    changes: dict[str, str]
    #: the git revision whose params.yaml the changes are from (None: none to compare with)
    baseline: str | None = "HEAD"

    def tags(self) -> dict[str, str]:
        # a changed key is a config key (an extra_body key is the endpoint's): mapped to a tag
        # key MLflow takes
        tags = {
            mlflow_key(f"genfair.changed.{key}"): value[:5000]
            for key, value in self.changes.items()
        }
        if self.name:
            tags["genfair.experiment"] = self.name
        return tags

    def run_name(self, base: str, key: str) -> str:
        """``base``, then the experiment's name (or the changed keys when it has none, cut to
        fit), then the first 8 characters of the run's content ``key``: at most
        :data:`MAX_RUN_NAME` characters, and two runs of different content never share a name
        (an uncommitted edit's keys alone once made a 597-character name, and two committed
        studies were both ``study-default``)."""
        tail = f" {key[:8]}"
        room = MAX_RUN_NAME - len(base) - len(tail)
        words = in_words(self.changes)
        label = self.name or (f"({'; '.join(words)})" if words else "")
        if len(label) > room - 1:  # the space before the label
            label = label[: room - 2] + "…" if room > 2 else ""
        return f"{base} {label}{tail}" if label else f"{base}{tail}"

    def description(self) -> str:
        """What the study run is: its DVC experiment, and how its params differ from the
        study committed at :attr:`baseline`, in words, then key by key (bounded)."""
        lines = [f"DVC experiment {self.name}"] if self.name else []
        if self.baseline is None:
            lines.append("params.yaml has no committed version to compare with (not in git)")
        elif not self.changes:
            lines.append(f"the study committed at {self.baseline}: no param changed")
        else:
            lines.append(f"the study changed from the one committed at {self.baseline}:")
            lines += [f"- {_inert(phrase)}" for phrase in in_words(self.changes)]
            lines += ["", PARAMS_CHANGED.strip()]
            listed = list(self.changes.items())[:MAX_LISTED]
            lines += [f"- {_inert(key)}: {_inert(value)}" for key, value in listed]
            if len(self.changes) > MAX_LISTED:
                lines.append(
                    f"- … and {len(self.changes) - MAX_LISTED} more (tags genfair.changed.*)"
                )
        return "\n".join(lines)


#: what MLflow's UI would read as markup in a description (a link, an image, HTML, emphasis)
_MARKUP = re.compile(r"([\\`*_\[\]<!#|~])")


def _inert(text: str) -> str:
    """``text`` (a param's key or value: config text) shown as it is in MLflow's Markdown
    description: ``<unset>`` is no HTML tag, a model's ``![x](http://...)`` no image."""
    return _MARKUP.sub(r"\\\1", text)


def current_experiment(root: Path, params_file: Path) -> Experiment:
    """The experiment this process runs in (``DVC_EXP_NAME``), and the params of
    ``params_file`` that differ from ``params.yaml`` at ``DVC_EXP_BASELINE_REV`` (else HEAD)."""
    current = read_yaml(params_file) if params_file.is_file() else {}
    rev = os.environ.get("DVC_EXP_BASELINE_REV") or "HEAD"
    committed = committed_params(root, rev)
    return Experiment(
        os.environ.get("DVC_EXP_NAME", ""),
        changed_params(current or {}, committed),
        rev if committed is not None else None,
    )
