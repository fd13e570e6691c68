"""Fuzzed configs (issue 21.8): arbitrary values anywhere in the study's params, and arbitrary
overrides through ``genfair config``, either load or fail with one line per problem naming
the file and key; nothing raises an unexpected exception, and every path a loaded config
gives stays inside its output root."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genfair.cli import main
from genfair.errors import ConfigError
from genfair.frame import read_params
from genfair.study.layout import Layout
from genfair.study_params import params_from

ROOT = Path(__file__).resolve().parents[1]
RAW = read_params(ROOT / "params.yaml")


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of ``node`` (dicts only), inner ones included."""
    if not isinstance(node, dict):
        return []
    found = []
    for key, value in node.items():
        found.append((*prefix, key))
        found += _paths(value, (*prefix, key))
    return found


PATHS = [p for p in _paths(RAW) if p[0] != "runs"]
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=6,
)


def _problems(error: ConfigError) -> list[str]:
    lines = str(error).splitlines()
    return lines[1:] if lines[0] == "invalid configuration:" else lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(PATHS), value=VALUES, new_key=st.one_of(st.none(), st.text(max_size=20))
)
def test_any_value_anywhere_loads_or_fails_naming_the_key(
    path: tuple[str, ...], value: Any, new_key: str | None
) -> None:
    raw = copy.deepcopy(RAW)
    raw.pop("runs")  # composed from models x methodologies; not a user's input
    parent = raw
    for key in path[:-1]:
        parent = parent[key]
    if new_key is not None and isinstance(parent.get(path[-1]), dict):
        parent[path[-1]][new_key] = value  # a key a user added (a model, a methodology...)
    else:
        parent[path[-1]] = value
    try:
        params = params_from(raw, "params.yaml")
    except ConfigError as exc:
        for line in _problems(exc):  # one line per problem, naming the file and a key
            assert line.strip().startswith("params.yaml"), str(exc)
        return
    root = Path("/srv/study")
    layout = Layout(root)
    for model in params.models:
        for methodology in params.methodologies:
            for out in (
                layout.responses(model, methodology),
                layout.labels(model, methodology),
                layout.metrics(model, methodology),
                layout.study(methodology),
            ):
                assert os.path.commonpath([str(root), os.path.normpath(out)]) == str(root)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    key=st.sampled_from(
        [
            "scale",
            "seed",
            "models.smollm2.base_url",
            "models.smollm2.batch_size",
            "+model@models.extra",
            "tracking.uri",
            "cache.dir",
            "methodologies.iris.bogus",
        ]
    ),
    value=st.text(max_size=30),
)
def test_any_override_through_genfair_config_loads_or_fails_in_one_line(
    key: str, value: str, capsys
) -> None:
    code = main(["config", "-o", f"{key}={value}"])
    err = capsys.readouterr().err
    assert code in (0, 2), err  # 1 is an unexpected exception
    if code == 2:
        assert err.startswith("genfair: error: ") and "Traceback" not in err


# ---- issue 44.3: any YAML document is checked as every loader reads it

#: pieces of hostile YAML: version directives libyaml refuses and PyYAML reads, aliases,
#: tags, interpolations (doubling, cross-key, resolvers), long numbers, deep nesting
_DIRECTIVES = st.sampled_from(["", "%YAML 1.1\n---\n", "%YAML 1.3\n---\n", "%YAML 1.9\n---\n"])
_SCALARS = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).map(repr),
    st.integers().map(str),
    st.sampled_from(
        [
            "*a",
            "&a [x, x]",
            "CHAIN",  # four copies of the key above: 4^n characters n keys down
            "'${k0} and ${k2}'",
            "${oc.env:HOME}",
            "!!python/object/apply:os.system ['true']",
            "!!str 1",
            "9" * 4400,
            "[" * 70 + "]" * 70,
        ]
    ),
)


@st.composite
def yaml_documents(draw: st.DrawFn) -> str:
    lines = [
        f"k{i}: {draw(_SCALARS)}".replace("CHAIN", f"${{.k{max(i - 1, 0)}}}" * 4)
        for i in range(draw(st.integers(1, 14)))
    ]
    return draw(_DIRECTIVES) + "\n".join(lines) + "\n"


@settings(max_examples=200, deadline=None)
@given(text=yaml_documents())
def test_any_yaml_document_is_refused_in_one_line_or_loads_bounded(text: str) -> None:
    """What passes the guard loads, with OmegaConf's own loader too, into few values whose
    interpolations resolve within the string bound (or fail as OmegaConf errors)."""
    import yaml
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from genfair.yaml_guard import (
        MAX_INTERPOLATED_CHARS,
        bound_interpolated_strings,
        check_yaml,
        refuse_environment_resolvers,
    )

    bound_interpolated_strings()
    refuse_environment_resolvers()
    try:
        check_yaml(text, "doc.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("doc.yaml: ") and "\n" not in str(exc)
        return
    try:
        data = yaml.load(text, Loader=yaml.SafeLoader)  # OmegaConf's loader: pure Python
    except yaml.YAMLError:
        return
    if not isinstance(data, dict):
        return
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
    except OmegaConfBaseException:  # OmegaConf's own refusals, and the guard's inside it
        return
    assert len(str(resolved)) < 10 * MAX_INTERPOLATED_CHARS
