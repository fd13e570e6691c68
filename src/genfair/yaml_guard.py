"""YAML a user controls (``conf/**``, ``params.yaml``), checked before anything parses it.

An alias (``*a``) repeats its anchor's whole node; nine aliases deep, a 600-byte file becomes
billions of nodes once Hydra, OmegaConf or pydantic walks it ("billion laughs"). Config files
never need them, so a file with an alias is refused, as is one nested deeper than
:data:`MAX_DEPTH` (PyYAML's constructor recurses once per level). OmegaConf interpolations
(``${a}``) copy the node they name where Hydra resolves them, so they can grow the same way:
a file whose interpolations of its own keys expand past :data:`MAX_NODES` values, or build a
string longer than :data:`MAX_INTERPOLATED_CHARS` (``${.a}${.a}`` doubling per line), is
refused too. The check reads the parser's events and node graph only: linear in the file's
size, nothing is expanded. libyaml parses first (several times faster); a file it refuses is
parsed again by PyYAML's pure-Python parser, which is what OmegaConf and Hydra load with and
which accepts more (``%YAML 1.3``), so the guard sees every document a loader reads.
It runs for ``params.yaml`` wherever genfair reads it and, through genfair's Hydra plugin
(:mod:`hydra_plugins.genfair`), for every file under a config folder before Hydra loads any
(``genfair compose/config/try/exp`` and DVC's own ``dvc exp run``). What no file shows (an
interpolation across files or in an override) is bounded where OmegaConf builds the string
(:func:`bound_interpolated_strings`), and ``${oc.env:...}`` is refused there
(:func:`refuse_environment_resolvers`).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from genfair.errors import ConfigError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INTERPOLATED_CHARS",
    "MAX_NODES",
    "MAX_VALUES",
    "bound_interpolated_strings",
    "check_override",
    "check_yaml",
    "check_yaml_folder",
    "read_checked",
    "read_yaml",
    "refuse_environment_resolvers",
]

#: nesting a config may have (the composed study reaches 8)
MAX_DEPTH = 64
#: values one file may expand to through its interpolations (the composed study has ~1,500)
MAX_NODES = 1_000_000
#: bytes one config file may have (the study's params.yaml has 19 kB, its largest conf file
#: a few): PyYAML's pure-Python loader, which Hydra uses, and OmegaConf take about half a
#: millisecond a value, several passes over, so a 1.4 MB file of 100,000 keys took minutes
MAX_FILE_BYTES = 2**20
#: values (keys included) one config file may hold (the study's params.yaml has 1,229)
MAX_VALUES = 20_000
#: characters one interpolated string may reach (the study's longest is under 200)
MAX_INTERPOLATED_CHARS = 1_000_000
#: the most digits Python turns into an int (``sys.get_int_max_str_digits``; 0: no limit)
_MAX_DIGITS = sys.get_int_max_str_digits() or 10**9
_DIGITS = re.compile(r"[-+]?[0-9][0-9_]*")
#: the explicit tags a config may carry (YAML's own types); any other (``!!python/object``)
#: names a constructor no safe loader has
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "binary")
) | {"!"}
#: an OmegaConf interpolation of a key (``${a.b}``, ``${.a}``), not of a resolver (``${x:y}``)
_INTERPOLATION = re.compile(r"\$\{(\.*[\w.-]+)\}")

#: libyaml's loader where PyYAML has it (several times faster than the pure-Python one)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _events(text: str) -> Iterator[yaml.Event]:
    """The parser's events of ``text``: libyaml's, or PyYAML's pure-Python parser's (what
    OmegaConf loads with) when libyaml refuses the text, which that parser may accept."""
    try:
        yield from list(yaml.parse(text, Loader=LOADER))
    except yaml.YAMLError:
        if LOADER is yaml.SafeLoader:
            raise
        yield from yaml.parse(text, Loader=yaml.SafeLoader)


def _compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError:
        if LOADER is yaml.SafeLoader:
            raise
        return yaml.compose(text, Loader=yaml.SafeLoader)


def check_yaml(text: str, source: str) -> None:
    """:class:`ConfigError` naming ``source`` and the line when ``text`` holds a YAML alias,
    a tag other than YAML's own types (``!!python/object/apply``) or a number longer than
    Python reads, nests deeper than :data:`MAX_DEPTH`, or interpolates past
    :data:`MAX_NODES` values or :data:`MAX_INTERPOLATED_CHARS` characters; a syntax error
    is left to the reader that follows."""
    if len(text) > MAX_FILE_BYTES:  # characters: at least as many bytes
        _too_large(source, len(text.encode("utf-8", errors="replace")))
    depth = values = 0
    try:
        for event in _events(text):
            if isinstance(event, yaml.AliasEvent):
                raise ConfigError(
                    f"{source}: line {event.start_mark.line + 1}: YAML alias *{event.anchor} "
                    "refused (an alias can expand a small file into billions of values): "
                    "write the value out instead of &anchor / *alias"
                )
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in _PLAIN_TAGS:
                raise ConfigError(
                    f"{source}: line {event.start_mark.line + 1}: YAML tag {tag} refused (a "
                    "config holds plain values; such a tag asks to build an object): remove it"
                )
            if isinstance(event, yaml.ScalarEvent):
                values += 1
                if values > MAX_VALUES:
                    raise ConfigError(
                        f"{source}: line {event.start_mark.line + 1}: more than {MAX_VALUES:,} "
                        "values (keys included) in one config file: a config holds settings; "
                        "put data in a file it names"
                    )
                if len(event.value) > _MAX_DIGITS:
                    _check_number(event.value, f"{source}: line {event.start_mark.line + 1}")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ConfigError(
                        f"{source}: line {event.start_mark.line + 1}: nested deeper than "
                        f"{MAX_DEPTH} levels: flatten it (a config needs a few levels)"
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        root = _compose(text) if "${" in text else None
    except yaml.YAMLError:
        return
    if root is not None:
        nodes, chars = _expanded_size(root, source)
        if nodes > MAX_NODES:
            raise ConfigError(
                f"{source}: its interpolations (${{...}}) expand to about {nodes:,} values, more "
                f"than {MAX_NODES:,}: write the values out, or interpolate scalars only"
            )
        if chars > MAX_INTERPOLATED_CHARS:
            raise ConfigError(
                f"{source}: its interpolations (${{...}}) build a string of about {chars:,} "
                f"characters, more than {MAX_INTERPOLATED_CHARS:,}: write the value out"
            )


def _check_number(value: str, where: str) -> None:
    """Refuse ``value`` when it is a whole number longer than Python reads (its ``int()``
    would fail far from the key)."""
    if _DIGITS.fullmatch(value.strip()) and len(value.strip()) > _MAX_DIGITS:
        raise ConfigError(
            f"{where}: a number of {len(value.strip()):,} digits, more than the {_MAX_DIGITS:,} "
            "Python reads: give a smaller number"
        )


def check_override(override: str) -> None:
    """:class:`ConfigError` naming the override's key when it nests deeper than
    :data:`MAX_DEPTH` (Hydra's override parser recurses once per level: a 10,000-deep list
    ended in RecursionError) or holds a number longer than Python reads; checked before
    Hydra parses it."""
    key, _, value = override.partition("=")
    depth = deepest = 0
    for char in value:
        if char in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]})":
            depth -= 1
    where = f"override {key.strip()[:100]}"
    if deepest > MAX_DEPTH:
        raise ConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels: flatten it")
    for number in re.findall(rf"[0-9_]{{{_MAX_DIGITS + 1},}}", value):
        _check_number(number, where)


def _expanded_size(root: yaml.Node, source: str) -> tuple[int, int]:
    """How many values ``root`` holds, and how long its longest string is, once each
    interpolation (``${a.b}``) is replaced by the node of this file it names (a key path that
    ends the interpolated one; the file's place in the composed config is not known here).
    Hydra and OmegaConf copy an interpolated node where it is used and concatenate
    interpolated strings, so repeated interpolations of interpolations grow as aliases do."""
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
    sizes: dict[int, tuple[int, int]] = {}
    longest = [0]  # characters of the longest string

    def size(node: yaml.Node, open_: frozenset[int]) -> tuple[int, int]:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_:  # a cycle: OmegaConf refuses it itself
            return 1, 1
        open_ = open_ | {id(node)}
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            children = (
                [value for _, value in node.value]
                if isinstance(node, yaml.MappingNode)
                else node.value
            )
            parts = [size(value, open_) for value in children]
            total = 1 + sum(n for n, _ in parts), 2 + sum(c + 2 for _, c in parts)
        else:
            text = str(node.value)
            found = _INTERPOLATION.fullmatch(text)
            target = found and _target(found.group(1).lstrip("."), paths)
            if target is not None:
                total = size(target, open_)
            else:  # a string with interpolations in it: their text replaces each
                chars = len(text)
                for found in _INTERPOLATION.finditer(text):
                    part = _target(found.group(1).lstrip("."), paths)
                    if part is not None:
                        chars += size(part, open_)[1] - len(found.group(0))
                total = 1, chars
            longest[0] = max(longest[0], total[1])
        sizes[id(node)] = total
        return total

    try:
        return size(root, frozenset())[0], longest[0]
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


def _too_large(source: str, size: int) -> None:
    raise ConfigError(
        f"{source}: {size:,} bytes, more than the {MAX_FILE_BYTES:,} a config file may have: "
        "a config holds settings; put data in a file it names"
    )


def read_checked(path: str | Path, source: str | None = None, errors: str = "strict") -> str:
    """The text of ``path`` once :func:`check_yaml` passed; a file past
    :data:`MAX_FILE_BYTES` is refused before it is read."""
    size = Path(path).stat().st_size
    if size > MAX_FILE_BYTES:
        _too_large(source or str(path), size)
    text = Path(path).read_text(encoding="utf-8", errors=errors)
    check_yaml(text, source or str(path))
    return text


def read_yaml(path: str | Path, source: str | None = None) -> object:
    """The parsed YAML of ``path`` once :func:`check_yaml` passed (``yaml.YAMLError`` on bad
    syntax, ``OSError`` when unreadable)."""
    return yaml.load(read_checked(path, source), Loader=LOADER)


def check_yaml_folder(folder: str | Path, shown: str | None = None) -> None:
    """:func:`check_yaml` of every ``*.yaml``/``*.yml`` file under ``folder``; errors name the
    file as ``shown/<relative path>`` (default: the folder as given)."""
    folder = Path(folder)
    for path in sorted((*folder.rglob("*.yaml"), *folder.rglob("*.yml"))):
        if path.is_file():
            read_checked(path, str(Path(shown or folder) / path.relative_to(folder)), "replace")


_building = threading.local()


def bound_interpolated_strings() -> None:
    """Make OmegaConf refuse, with a :class:`ConfigError` naming the key, a string its
    interpolations would build past :data:`MAX_INTERPOLATED_CHARS` characters, before
    building it. Covers what :func:`check_yaml` cannot see: interpolations across files and
    in overrides (``-S 'a=${b}${b}'``), in every process that composes with Hydra (genfair's
    and DVC's ``dvc exp run``: genfair's Hydra plugin calls this). OmegaConf joins a
    string's parts in ``GrammarVisitor._unescape``, resolving each interpolation in it
    first: each part's length is counted as it is resolved, and the join refused once their
    sum is too long (OmegaConf has no hook for this: three of its methods are wrapped)."""
    from omegaconf.base import Container
    from omegaconf.grammar_visitor import GrammarVisitor

    if getattr(GrammarVisitor, "_genfair_bounded", False):
        return
    unescape, interpolation = GrammarVisitor._unescape, GrammarVisitor.visitInterpolation
    resolve = Container.resolve_parse_tree

    def keyed_resolve(self: Container, parse_tree: Any, node: Any, *args: Any, **kw: Any) -> Any:
        nodes = _building.__dict__.setdefault("nodes", [])
        nodes.append(node)  # the value being resolved: the refusal names its key
        try:
            return resolve(self, parse_tree, node, *args, **kw)
        finally:
            nodes.pop()

    def bounded_unescape(self: GrammarVisitor, seq: list[Any]) -> str:
        stack = _building.__dict__.setdefault("stack", [])
        stack.append([self, 0])
        try:
            return unescape(self, seq)
        finally:
            stack.pop()

    def counted_interpolation(self: GrammarVisitor, ctx: Any) -> Any:
        value = interpolation(self, ctx)
        stack = getattr(_building, "stack", None)
        if stack and stack[-1][0] is self:  # a part of the string this visitor is joining
            stack[-1][1] += len(value) if isinstance(value, str) else len(str(value))
            if stack[-1][1] > MAX_INTERPOLATED_CHARS:
                nodes = getattr(_building, "nodes", None)
                key = nodes[-1]._get_full_key(None) if nodes else ""
                raise ConfigError(
                    f"{key or 'a value'}: its interpolations (${{...}}) would build a string "
                    f"of more than {MAX_INTERPOLATED_CHARS:,} characters: write the value out"
                )
        return value

    Container.resolve_parse_tree = keyed_resolve  # type: ignore[method-assign]
    GrammarVisitor._unescape = bounded_unescape  # type: ignore[method-assign]
    GrammarVisitor.visitInterpolation = counted_interpolation  # type: ignore[method-assign]
    GrammarVisitor._genfair_bounded = True  # type: ignore[attr-defined]


def _environment_refused(name: str, *_: object) -> None:
    raise ConfigError(
        f"${{oc.env:{name}}} refused: a composed config is written to params.yaml, dvc.lock "
        "and MLflow, and a config from someone else must not choose which variable of this "
        "machine lands there: write the value into conf/ or pass it with -S"
    )


def refuse_environment_resolvers() -> None:
    """Replace OmegaConf's ``oc.env`` (the one resolver that reads the environment; the
    others of OmegaConf and Hydra read neither it nor files, genfair's record only names and
    digests) with one that refuses, in every process that composes with Hydra: a
    composed config is stored verbatim (``params.yaml``), so a variable read into it (a
    password) would be committed. Secrets reach genfair only where its code reads them
    (``api_key_env``, docs/security.md)."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("oc.env", _environment_refused, replace=True)
