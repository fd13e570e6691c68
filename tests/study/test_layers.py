"""The layers import only downward, and generic code names no methodology."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "genfair"
#: lowest first; a module may import its own layer and the layers before it
LAYERS = [
    "base",
    "metrics",
    "resources",
    "curation",
    "models",
    "instruments",
    "methodologies",
    "study",
    "cli",
]
BASE = {
    "io",
    "logs",
    "errors",
    "names",
    "urls",
    "stamps",
    "frame",
    "study_params",
    "limits",
    "yaml_guard",
    "strict",
}  # shared utilities (config validates every layer's config lazily)


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in BASE:
        return "base"
    return parts[1]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("genfair"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("genfair")}
    return found


def _module(path: Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_only_downward(path: Path) -> None:
    module = _module(path)
    mine = _layer(module)
    if mine == "base":
        return
    upward = [
        m
        for m in _imports(path)
        if _layer(m) != "base" and LAYERS.index(_layer(m)) > LAYERS.index(mine)
    ]
    assert not upward, f"{module} ({mine}) imports upward: {upward}"


def test_generic_code_names_no_methodology() -> None:
    pattern = re.compile(r"fact_or_fair|news_bias|iris|open_bias|lvlm")
    generic = [*(SRC / "study").rglob("*.py"), SRC / "cli.py", *(ROOT / "stages").glob("*.py")]
    hits = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in generic
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not hits, hits
