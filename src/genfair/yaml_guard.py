"""YAML a user controls (``conf/**``, ``params.yaml``), checked before anything parses it.

An alias (``*a``) repeats its anchor's whole node; nine aliases deep, a 600-byte file becomes
billions of nodes once Hydra, OmegaConf or pydantic walks it ("billion laughs"). Config files
never need them, so a file with an alias is refused, as is one nested deeper than
:data:`MAX_DEPTH` (PyYAML's constructor recurses once per level). The check reads the parser's
events only (libyaml where PyYAML has it): linear in the file's size, nothing is expanded.
It runs for ``params.yaml`` wherever genfair reads it and, through genfair's Hydra plugin
(:mod:`hydra_plugins.genfair`), for every file under a config folder before Hydra loads any
(``genfair compose/config/try/exp`` and DVC's own ``dvc exp run``).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from genfair.errors import ConfigError

__all__ = ["MAX_DEPTH", "check_yaml", "check_yaml_folder", "read_yaml"]

#: nesting a config may have (the composed study reaches 8)
MAX_DEPTH = 64

#: libyaml's loader where PyYAML has it (several times faster than the pure-Python one)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_yaml(text: str, source: str) -> None:
    """:class:`ConfigError` naming ``source`` and the line when ``text`` holds a YAML alias or
    nests deeper than :data:`MAX_DEPTH`; a syntax error is left to the reader that follows."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=LOADER):
            if isinstance(event, yaml.AliasEvent):
                raise ConfigError(
                    f"{source}: line {event.start_mark.line + 1}: YAML alias *{event.anchor} "
                    "refused (an alias can expand a small file into billions of values): "
                    "write the value out instead of &anchor / *alias"
                )
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ConfigError(
                        f"{source}: line {event.start_mark.line + 1}: nested deeper than "
                        f"{MAX_DEPTH} levels: flatten it (a config needs a few levels)"
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return


def read_yaml(path: str | Path, source: str | None = None) -> object:
    """The parsed YAML of ``path`` once :func:`check_yaml` passed (``yaml.YAMLError`` on bad
    syntax, ``OSError`` when unreadable)."""
    text = Path(path).read_text(encoding="utf-8")
    check_yaml(text, source or str(path))
    return yaml.load(text, Loader=LOADER)


def check_yaml_folder(folder: str | Path, shown: str | None = None) -> None:
    """:func:`check_yaml` of every ``*.yaml``/``*.yml`` file under ``folder``; errors name the
    file as ``shown/<relative path>`` (default: the folder as given)."""
    folder = Path(folder)
    for path in sorted((*folder.rglob("*.yaml"), *folder.rglob("*.yml"))):
        if path.is_file():
            check_yaml(
                path.read_text(encoding="utf-8", errors="replace"),
                str(Path(shown or folder) / path.relative_to(folder)),
            )
