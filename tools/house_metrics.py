"""Issue 48's "Measure" list, read from the source tree alone (syntax trees, no import).

Run from the repository's root: ``python tools/house_metrics.py [--list]``. It prints the
extension points of each role of the methodology contract (``Methodology``, the pipeline;
``Presentation``; ``Comparison``), the size of ``methodologies/base.py``, the largest
methodology module, the file names of the five methodology packages, the functions over 50 and
100 lines, the import circles (module-level imports, then every import including those inside
functions), the back-arrows against the layers of ``tests/study/test_layers.py``, the
function-level imports of genfair's own modules and the private names imported across modules.
``--list`` also lists each long function, function-level import and private import.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "genfair"
METHODOLOGIES = PACKAGE / "methodologies"
FIVE = ("fact_or_fair", "news_bias", "iris", "lvlm_facet", "open_bias")
#: lowest first, as in tests/study/test_layers.py
LAYERS = ["base", "metrics", "resources", "curation", "models", "instruments", "methodologies"]
LAYERS += ["study", "cli"]


def module_name(path: Path) -> str:
    """``src/genfair/a/b.py`` -> ``genfair.a.b`` (a package's ``__init__`` is the package)."""
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


def modules() -> dict[str, Path]:
    """Every module of the genfair package, by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    """The layer of a module: its first part under genfair; ``base`` for a top-level module
    other than ``cli`` (the shared utilities)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] == "cli":
        return parts[-1] if len(parts) > 1 else "base"
    return parts[1] if (PACKAGE / parts[1]).is_dir() else "base"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every run-time import of a module and whether it is inside a function (not the
    ``if TYPE_CHECKING:`` ones, which never run)."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, inside)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, inside))
            funcs = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            visit(child, inside or isinstance(child, funcs))

    visit(tree, False)
    return found


def targets(node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[tuple[str, str]]:
    """The genfair modules an import loads, each with the name it takes (``""`` for a module)."""
    out: list[tuple[str, str]] = []
    if isinstance(node, ast.Import):
        return [(a.name, "") for a in node.names if a.name.split(".")[0] == "genfair"]
    if not node.module or node.module.split(".")[0] != "genfair" or node.level:
        return out
    for alias in node.names:
        sub = f"{node.module}.{alias.name}"
        out.append((sub, "") if sub in known else (node.module, alias.name))
    return out


def graph(known: dict[str, Path], trees: dict[str, ast.Module], with_functions: bool):
    """Module -> the genfair modules it imports (module level, or also inside functions)."""
    edges: dict[str, set[str]] = {m: set() for m in known}
    for module, tree in trees.items():
        for node, inside in imports(tree):
            if inside and not with_functions:
                continue
            for target, _ in targets(node, known):
                if target in known and target != module:
                    edges[module].add(target)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), excluding the
    package-to-own-submodule pairs of an ``__init__`` that re-exports its submodules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found


def back_arrows(edges: dict[str, set[str]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Imports from a lower layer into a higher one: those tests/study/test_layers.py forbids,
    and those of the shared utilities (``base``, which it exempts: ``genfair.study_params``
    validates every layer's config lazily)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    forbidden, exempt = [], []
    for module, imported in edges.items():
        for target in imported:
            if rank[layer(target)] > rank[layer(module)]:
                (exempt if layer(module) == "base" else forbidden).append((module, target))
    return sorted(forbidden), sorted(exempt)


def long_functions(trees: dict[str, ast.Module], limit: int) -> list[tuple[int, str]]:
    """Functions (and methods) longer than ``limit`` lines, with their length."""
    out = []
    for module, tree in trees.items():
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        length = (child.end_lineno or child.lineno) - child.lineno + 1
                        if length > limit:
                            out.append((length, f"{module}:{name}"))
                    stack.append((child, f"{name}."))
    return sorted(out, reverse=True)


def extension_points(tree: ast.Module, name: str = "Methodology") -> dict[str, list[str]]:
    """A contract class's abstract methods, other public methods and class settings (a cached
    property, such as a role built from its class setting, is built, not overridden)."""
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    points: dict[str, list[str]] = {"abstract": [], "overridable": [], "settings": []}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("_"):
                continue
            marks = {ast.unparse(d) for d in node.decorator_list}
            if any("cached_property" in m for m in marks):
                continue
            kind = "abstract" if any("abstractmethod" in m for m in marks) else "overridable"
            points[kind].append(node.name)
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            names = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            for target in names:
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    points["settings"].append(target.id)
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every item counted")
    full = parser.parse_args().list
    known = modules()
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in known.items()}
    lines = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in known.items()}

    base = "genfair.methodologies.base"
    roles = {
        "pipeline (Methodology, required)": (base, "Methodology"),
        "presentation (optional)": ("genfair.methodologies.presentation", "Presentation"),
        "comparison (optional)": ("genfair.methodologies.comparison", "Comparison"),
    }
    for role, (module, name) in roles.items():
        points = extension_points(trees[module], name)
        total = sum(len(v) for v in points.values())
        print(
            f"extension points, {role}: {total} ({len(points['abstract'])} abstract, "
            f"{len(points['overridable'])} overridable methods, "
            f"{len(points['settings'])} class settings)"
        )
        if full:
            for kind, names in points.items():
                print(f"  {kind}: {', '.join(names)}")
    print(f"lines of methodologies/base.py: {lines[base]}")

    package_modules = {
        m: n for m, n in lines.items() if m.split(".")[2:3] and m.split(".")[2] in FIVE
    }
    biggest = max(package_modules, key=lambda m: package_modules[m])
    print(f"largest methodology module: {biggest} ({package_modules[biggest]} lines)")
    per_package = {}
    for name in FIVE:
        folder = METHODOLOGIES / name
        per_package[name] = {p.name for p in folder.glob("*.py")}
        size = sum(lines[module_name(p)] for p in folder.glob("*.py"))
        print(f"  {name}: {len(per_package[name])} files, {size} lines")
    counts = Counter(f for names in per_package.values() for f in names)
    shared = sorted(f for f, c in counts.items() if c == len(FIVE))
    once = sorted(f for f, c in counts.items() if c == 1)
    print(
        f"distinct file names across the five packages: {len(counts)} "
        f"(in all five: {len(shared)}, {', '.join(shared)}; in one only: {len(once)})"
    )

    for limit in (50, 100):
        found = long_functions(trees, limit)
        print(f"functions over {limit} lines: {len(found)}")
        if limit == 100 or full:
            for length, name in found:
                print(f"  {length:4d} {name}")

    for label, with_functions in (("module-level imports", False), ("every import", True)):
        edges = graph(known, trees, with_functions)
        found = circles(edges)
        print(f"import circles ({label}): {len(found)}")
        for group in found:
            print(f"  {' <-> '.join(group)}")
        arrows, exempt = back_arrows(edges)
        print(
            f"back-arrows ({label}): {len(arrows)} "
            f"(and {len(exempt)} from the shared utilities, which test_layers exempts)"
        )
        for source, target in arrows + (exempt if full else []):
            print(f"  {source} -> {target}")

    inside = []
    private = []
    for module, tree in trees.items():
        for node, in_function in imports(tree):
            found = targets(node, known)
            if in_function and found:
                inside.append(f"{module}:{node.lineno} {', '.join(t for t, _ in found)}")
            for target, name in found:
                if name.startswith("_") and target != module:
                    private.append(f"{module}:{node.lineno} {target}.{name}")
    print(f"function-level imports of genfair modules: {len(inside)}")
    if full:
        for item in inside:
            print(f"  {item}")
    print(f"private names imported across modules: {len(private)}")
    for item in private:
        print(f"  {item}")


if __name__ == "__main__":
    main()
