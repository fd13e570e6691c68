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
from genfair.config import params_from
from genfair.errors import ConfigError
from genfair.params import read_params
from genfair.study.layout import Layout

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
