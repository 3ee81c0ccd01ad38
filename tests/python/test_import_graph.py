"""The package imports downward only: no import cycle (STYLE.md section 1).

The graph is built from the source: every module of the installed package is
parsed, and every import in it -- at module level, under ``if TYPE_CHECKING:``
and inside functions alike -- becomes an edge to the module it loads
(relative imports resolved; ``from pkg import name`` points at ``pkg.name``
when that is a module, else at ``pkg``; importing ``a.b.c`` also loads the
packages ``a.b`` on the way, except those the importer sits in). A type-only
or lazy import still ties two modules together, so it counts: a cycle is
broken by moving code, not by hiding an import.
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
from pathlib import Path

import mulligan


# Compiled modules (mulligan._core) import nothing of the package's Python;
# they are leaves of the graph, known by their file (or their stub).
_LEAF_SUFFIXES = (*importlib.machinery.EXTENSION_SUFFIXES, ".pyi")


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package at ``root``: dotted name -> file (the
    source, or for a compiled module its extension file or stub)."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        rel = path.relative_to(root)
        if path.suffix == ".py":
            parts = list(rel.with_suffix("").parts)
        elif path.name.endswith(_LEAF_SUFFIXES):
            suffix = next(s for s in _LEAF_SUFFIXES if path.name.endswith(s))
            parts = [*rel.parts[:-1], path.name[: -len(suffix)]]
        else:
            continue
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join([package, *parts])
        if path.suffix == ".py" or name not in modules:
            modules[name] = path
    return modules


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _loaded(target: str, importer: str, package: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules that importing ``target`` loads, seen from ``importer``."""
    loaded = set()
    parts = target.split(".")
    for i in range(2, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in modules:
            break
        # A package the importer is inside of is being initialised already.
        if i < len(parts) and (importer == name or importer.startswith(name + ".")):
            continue
        loaded.add(name)
    if target == package:
        loaded.add(package)
    return loaded


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its source)."""
    modules = module_files(root, package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        if path.suffix != ".py":
            continue  # a compiled module
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = name if _is_package(name, modules) else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = here.split(".")
                    base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target == package or target.startswith(package + "."):
                    graph[name] |= _loaded(target, name, package, modules)
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
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


def test_the_package_has_no_import_cycle() -> None:
    root = Path(os.path.dirname(mulligan.__file__))
    graph = import_graph(root, "mulligan")
    assert len(graph) > 30  # the whole package was read
    assert cycles(graph) == []


def test_the_drivers_and_errors_import_downward() -> None:
    # The three cycles of before the split, each now one way.
    graph = import_graph(Path(os.path.dirname(mulligan.__file__)), "mulligan")
    assert "mulligan._retry.async_driver" in graph["mulligan._retry.decorator"]
    assert "mulligan._retry.decorator" not in graph["mulligan._retry.async_driver"]
    assert "mulligan._retry.block" not in graph["mulligan._retry.async_driver"]
    assert graph["mulligan._errors"] == set()
    assert "mulligan.testing" not in graph["mulligan._retry.state"]
    assert "mulligan._retry.state" in graph["mulligan.testing"]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_graph_sees_function_level_type_only_and_relative_imports(tmp_path: Path) -> None:
    # A made-up package with one cycle of each kind the old mulligan had.
    _write(tmp_path / "pkg", {
        "__init__.py": "from .a import f\n",
        "a.py": "from . import b\n\ndef f():\n    from .sub import c\n",
        "b.py": "import os\n",
        "sub/__init__.py": "",
        "sub/c.py": "def g():\n    from ..a import f\n",  # a -> sub.c -> a, inside functions
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import E\n",
        "e.py": "from pkg.d import x\n",  # d <-> e, one side type-only, one absolute
    })
    graph = import_graph(tmp_path / "pkg", "pkg")
    assert graph["pkg.a"] == {"pkg.b", "pkg.sub", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert graph["pkg.b"] == set()
    assert sorted(cycles(graph)) == [["pkg.a", "pkg.sub.c"], ["pkg.d", "pkg.e"]]


def test_compiled_modules_are_leaves(tmp_path: Path) -> None:
    _write(tmp_path / "pkg", {
        "__init__.py": "from ._native import f\n",
        "_native.pyi": "def f() -> None: ...\n",
        "errors.py": "def g():\n    from . import _native\n",
    })
    graph = import_graph(tmp_path / "pkg", "pkg")
    assert graph == {"pkg": {"pkg._native"}, "pkg._native": set(), "pkg.errors": {"pkg._native"}}


def test_importing_a_submodule_loads_the_packages_on_the_way(tmp_path: Path) -> None:
    # x imports p.q.r: p/__init__ and p/q/__init__ run first, so a cycle
    # through a package's __init__ is a cycle.
    _write(tmp_path / "pkg", {
        "__init__.py": "",
        "x.py": "import pkg.p.q.r\n",
        "p/__init__.py": "from .. import x\n",
        "p/q/__init__.py": "",
        "p/q/r.py": "from . import s\n",  # a module of its own package: no edge to p.q
        "p/q/s.py": "",
    })
    graph = import_graph(tmp_path / "pkg", "pkg")
    assert graph["pkg.x"] == {"pkg.p", "pkg.p.q", "pkg.p.q.r"}
    assert graph["pkg.p.q.r"] == {"pkg.p.q.s"}
    assert cycles(graph) == [["pkg.p", "pkg.x"]]
