"""What a study selects, checked where ``conf/`` is composed (``genfair compose``, ``config``,
``exp``, ``plan``, ``try``).

The lasting selection is ``conf/study.yaml``; an override selects for one command. So:

- :func:`dropped` names what the current ``params.yaml`` has and a new composition lacks (a
  methodology added by override once, then a plain ``genfair compose``), for one line;
- :func:`partial_blocks` refuses a methodology block that lacks keys of the methodology's own
  ``conf/methodology/<name>.yaml``: such a block was made by an override of one field
  (``+methodologies.<name>.<field>=V``, Hydra's hint when the methodology is not selected),
  and every key it lacks would fall back to the code's default without a word;
- :func:`override_problem` turns Hydra's "Could not override" for a methodology's field, and
  its unresolved ``${scale}`` for a methodology added by override, into the fix that works.

Imported where used: genfair.methodologies (registers all five, with pandas: 0.5 s); the
`genfair` CLI imports this module at start.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from genfair.names import STUDY_FILE
from genfair.yaml_guard import read_yaml

__all__ = [
    "STUDY_FILE",
    "conf_file",
    "dropped",
    "held",
    "override_problem",
    "partial_blocks",
    "select_line",
    "where_to_edit",
]

#: the sections a study selects by name
SECTIONS = ("methodologies", "models")
#: the most missing keys a message lists
SHOWN = 6


def select_line(name: str) -> str:
    """The line of :data:`STUDY_FILE` that selects methodology ``name``."""
    return f"`- /methodology@methodologies.{name}: {name}`"


def held(only: Mapping[str, Any]) -> str | None:
    """One line naming the models the study holds to some methodologies (its
    ``model_methodologies``) and those they run; ``None`` when it holds none."""
    if not only:
        return None
    models = "; ".join(f"{model}: {', '.join(names)}" for model, names in only.items())
    return f"held to some methodologies ({STUDY_FILE}: model_methodologies): {models}"


def dropped(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """One line naming the methodologies and models ``before`` (the current ``params.yaml``)
    has and ``after`` (the new composition) lacks, with where a lasting selection goes; ``None``
    when nothing is dropped."""
    parts = []
    for section in SECTIONS:
        old, new = before.get(section), after.get(section)
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            gone = [str(key) for key in old if key not in new]
            if gone:
                parts.append(f"{section} {', '.join(gone)}")
    if not parts:
        return None
    # the cause is not known here: a line removed from the study file (on purpose, or not)
    # and an override that selected it for one command look the same
    return (
        f"{'; '.join(parts)} (in the current params.yaml) are dropped: {STUDY_FILE} does not "
        "select them (their line was removed from it, or an override selected them for one "
        f"command); to keep one, add its line to {STUDY_FILE}"
    )


def partial_blocks(methodologies: Mapping[str, Any], conf: Path) -> str | None:
    """One line naming the first methodology block that lacks keys of its own
    ``conf/methodology/<name>.yaml`` (``None`` when every block is whole). A methodology
    without such a file has nothing to lack."""
    for name, block in methodologies.items():
        path = conf / "methodology" / f"{name}.yaml"
        if not path.is_file() or not isinstance(block, Mapping):
            continue
        keys = [key for key in (read_yaml(path) or {}) if key != "defaults"]
        missing = [str(key) for key in keys if key not in block]
        if missing:
            return (
                f"methodologies.{name}: a partial config, without {_listed(missing)} of "
                f"conf/methodology/{name}.yaml (they would fall back to code defaults): select "
                f"the methodology whole, a line {select_line(name)} in {STUDY_FILE} (or "
                f"'+methodology@methodologies.{name}={name}' first), then set a field with "
                f"'methodologies.{name}.<field>=<value>'"
            )
    return None


def override_problem(
    message: str, overrides: Iterable[str], selected: Callable[[], Iterable[str]]
) -> str | None:
    """The fix for Hydra's "Could not override 'methodologies.<name>.<field>'" (``message``):
    Hydra's hint, ``+methodologies.<name>.<field>=V``, would replace a methodology the study
    does not select by a config of that one field. ``None`` for any other message.
    ``selected``: the methodologies the study selects (called only for such a message)."""
    if "interpolation '${scale}'" in message:
        return _added_sizes(overrides)
    found = re.search(r"Could not override '([^']+)'", message)
    if not found or not found.group(1).startswith("methodologies."):
        return None
    key = found.group(1)
    name, _, field = key.removeprefix("methodologies.").partition(".")
    value = next(
        (o.partition("=")[2] for o in overrides if o.partition("=")[0].lstrip("+") == key), "V"
    )
    if name not in set(selected()):
        return (
            f"override {key}={value}: methodology {name!r} is not in the study: select it, a line "
            f"{select_line(name)} in {STUDY_FILE} (lasting) or the override "
            f"'+methodology@methodologies.{name}={name}' before this one; then {key}={value} "
            f"sets the field ('+{key}=...' alone would make a config of that one field)"
        )
    fields = _fields(name)
    if field.partition(".")[0] in fields:
        return (
            f"override {key}={value}: {field!r} is a field of {name}'s config that "
            f"conf/methodology/{name}.yaml leaves out: '+{key}={value}' adds it (the rest of "
            "the config stays)"
        )
    return (
        f"override {key}={value}: {name}'s config has no field {field.partition('.')[0]!r}; "
        f"its fields: {_listed(fields)}"
    )


def _added_sizes(overrides: Iterable[str]) -> str | None:
    """The fix for a methodology added by override whose file picks its sizes by the scale:
    Hydra does not resolve ``${scale}`` in the defaults of a config the command line adds."""
    added = [o for o in overrides if o.startswith("+methodology@methodologies.")]
    if not added:
        return None
    name, _, file = added[0].removeprefix("+methodology@methodologies.").partition("=")
    return (
        f"override {added[0]}: its file picks its sizes by the scale, which Hydra resolves only "
        f"in conf/, not for a config the command line adds: select it with a line "
        f"`- /methodology@methodologies.{name}: {file}` in {STUDY_FILE}"
    )


def _fields(name: str) -> list[str]:
    """The fields of methodology ``name``'s config (none for an unknown methodology)."""
    from genfair.methodologies import get_methodology

    try:
        return list(get_methodology(name).Config.model_fields)
    except (KeyError, TypeError, ValueError):  # not a methodology genfair can load
        return []


def _listed(names: list[str]) -> str:
    """``names``, the first :data:`SHOWN` of them and how many more."""
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


#: params.yaml's blocks computed when conf/ is composed: never set by hand
COMPUTED = frozenset(
    {"runs", "digests", "methodology_code", "study_steps", "plots", "sizes", "external_inputs"}
)
#: a message line naming a key of params.yaml: ``params.yaml: <key>: ...``
#: (or of the composed config, ``genfair config``'s and ``compose``'s errors)
_KEY_LINE = re.compile(
    r"^(\s*)(?:params\.yaml|composed config \(conf/ \+ overrides\)): "
    r"([A-Za-z0-9_][A-Za-z0-9_.-]*): "
)


def conf_file(key: str, conf: Path = Path("conf")) -> str | None:
    """Where params.yaml's ``key`` is set in ``conf`` (a file the user edits, then
    ``genfair compose``); ``None`` for a computed block."""
    head, _, rest = key.partition(".")
    name = rest.partition(".")[0]
    if head in COMPUTED:
        return None
    if head == "model_methodologies":
        return STUDY_FILE
    if head == "models" and name:
        study = conf / "study.yaml"
        text = study.read_text(encoding="utf-8") if study.is_file() else ""
        chosen = re.search(rf"^\s*-\s*/model@models\.{re.escape(name)}:\s*(\S+)\s*$", text, re.M)
        return (
            f"conf/model/{chosen.group(1)}.yaml" if chosen else f"the model file {STUDY_FILE} names"
        )
    if head == "methodologies" and name:
        sizes = (
            " or its sizes, conf/sizes/" + name + "/" if (conf / "sizes" / name).is_dir() else ""
        )
        return f"conf/methodology/{name}.yaml{sizes}"
    if head == "instruments" and name and (conf / "instrument" / f"{name}.yaml").is_file():
        return f"conf/instrument/{name}.yaml"
    if head == "curation":
        return "its file in conf/curation/ (conf/config.yaml names it)"
    return "conf/config.yaml"


def where_to_edit(text: str, conf: Path = Path("conf")) -> str:
    """``text`` with each line that names a key of params.yaml (a composed file) told where the
    key is set, unless it says so already."""
    lines = []
    for line in text.split("\n"):
        found = _KEY_LINE.match(line)
        where = conf_file(found.group(2), conf) if found else None
        said = line[found.end() :] if found else line  # the message after its key
        if where and "conf/" not in said and "genfair compose" not in said:
            line = f"{line} (params.yaml is composed: set it in {where}, then `genfair compose`)"
        lines.append(line)
    return "\n".join(lines)
