"""YAML a user controls (``conf/**``, ``params.yaml``), checked before anything parses it.

An alias (``*a``) repeats its anchor's whole node; nine aliases deep, a 600-byte file becomes
billions of nodes once Hydra, OmegaConf or pydantic walks it ("billion laughs"). Config files
never need them, so a file with an alias is refused, as is one nested deeper than
:data:`MAX_DEPTH` (PyYAML's constructor recurses once per level). OmegaConf interpolations
(``${a}``) copy the node they name where Hydra resolves them, so they can grow the same way:
a file whose interpolations of its own keys expand past :data:`MAX_NODES` values is refused
too. The check reads the parser's events and node graph only (libyaml where PyYAML has it):
linear in the file's size, nothing is expanded.
It runs for ``params.yaml`` wherever genfair reads it and, through genfair's Hydra plugin
(:mod:`hydra_plugins.genfair`), for every file under a config folder before Hydra loads any
(``genfair compose/config/try/exp`` and DVC's own ``dvc exp run``).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from genfair.errors import ConfigError

__all__ = ["MAX_DEPTH", "MAX_NODES", "check_yaml", "check_yaml_folder", "read_yaml"]

#: nesting a config may have (the composed study reaches 8)
MAX_DEPTH = 64
#: values one file may expand to through its interpolations (the composed study has ~1,500)
MAX_NODES = 1_000_000
#: a value that is one OmegaConf interpolation of a key (``${a.b}``, ``${.a}``)
_INTERPOLATION = re.compile(r"\$\{(\.*[\w.-]+)\}")

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
        root = yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError:
        return
    if root is not None and "${" in text:
        total = _expanded_size(root, source)
        if total > MAX_NODES:
            raise ConfigError(
                f"{source}: its interpolations (${{...}}) expand to about {total:,} values, more "
                f"than {MAX_NODES:,}: write the values out, or interpolate scalars only"
            )


def _expanded_size(root: yaml.Node, source: str) -> int:
    """How many values ``root`` holds once each value that is one interpolation (``${a.b}``)
    is replaced by the node of this file it names (a key path that ends the interpolated
    one; the file's place in the composed config is not known here). Hydra and OmegaConf copy
    an interpolated node where it is used, so repeated interpolations of interpolations grow
    as aliases do."""
    paths: dict[str, yaml.Node] = {}

    def index(node: yaml.Node, path: str) -> None:
        paths[path] = node
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                index(value, f"{path}.{key.value}" if path else str(key.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                index(value, f"{path}.{i}" if path else str(i))

    index(root, "")
    sizes: dict[int, int] = {}

    def size(node: yaml.Node, open_: frozenset[int]) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_:  # a cycle: OmegaConf refuses it itself
            return 1
        open_ = open_ | {id(node)}
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(value, open_) for _, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(value, open_) for value in node.value)
        else:
            found = _INTERPOLATION.fullmatch(str(node.value))
            target = found and _target(found.group(1).lstrip("."), paths)
            total = size(target, open_) if target is not None else 1
        sizes[id(node)] = total
        return total

    try:
        return size(root, frozenset())
    except RecursionError:  # a chain of hundreds of interpolations: no config needs one
        raise ConfigError(
            f"{source}: interpolations chained too deep: write the values out"
        ) from None


def _target(key: str, paths: dict[str, yaml.Node]) -> yaml.Node | None:
    """The node of ``paths`` whose key path ends ``key`` (the longest such path)."""
    parts = key.split(".")
    for start in range(len(parts)):  # longest suffix first
        node = paths.get(".".join(parts[start:]))
        if node is not None:
            return node
    return None


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
