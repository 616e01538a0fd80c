"""The package's shape (issue 23): no import cycle inside src/gpucost, no module over 800 lines.

Imports are read from the source (ast), at module level and inside functions alike: a function-level
import that closes a loop is still a loop (it only hides it until that function runs).
``from package import name`` is an edge to ``package.name`` when that is a module, else to
``package``; importing a submodule is not counted as importing its package's ``__init__``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "gpucost"
MAX_LINES = 800


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of this package it imports (anywhere in its source)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package
                    anchor = name.split(".")
                    anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    edges.add(sub if sub in modules else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_loop_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import run\n")
    (pkg / "b.py").write_text("def run():\n    from pkg import a\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    modules = {
        f"pkg.{p.stem}" if p.stem != "__init__" else "pkg": p for p in sorted(pkg.glob("*.py"))
    }
    graph = import_graph(modules)
    assert graph["pkg.b"] == {"pkg.a"}  # `from pkg import a`: the module, not the package
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    (pkg / "b.py").write_text("def run():\n    return 1\n")
    assert cycles(import_graph(modules)) == []


def test_no_import_cycle_inside_the_package():
    modules = _modules()
    assert len(modules) > 40  # the walk found the package
    graph = import_graph(modules)
    assert "gpucost.commands.project" in graph["gpucost.commands.cli"]
    assert cycles(graph) == []


@pytest.mark.parametrize("name", sorted(_modules()))
def test_every_module_is_under_800_lines(name):
    lines = _modules()[name].read_text(encoding="utf-8").count("\n")
    assert lines < MAX_LINES, f"{name}: {lines} lines"
