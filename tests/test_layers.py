"""Layers read top-down: no module imports a layer above its own (docs/architecture.md), and no
group of modules imports each other in a loop."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "latentchess"

LAYERS = {
    # pure functions and error types
    "errors": 0, "encoding": 0, "winprob": 0, "squares": 0, "argtypes": 0, "provenance": 0,
    "wdl": 0, "batch_keys": 0, "resources": 0, "weights": 0, "textfiles": 0, "paths": 0,
    "cluster": 0,  # where units of work run (threads or a Dask cluster): only errors, argtypes
    "core": 1,  # the C++ extension and its Python side (alpha-beta, NNUE lookup)
    "data": 2,
    "models": 3, "nnue": 3,  # networks and model files
    "training": 4, "search": 4,  # the one loop and its objectives; the latent search
    "engines": 5,
    "uci": 6,  # pure parsers and the one session over the Engine interface
    "evaluation": 7, "explain": 7, "latent_view": 7, "plots": 7,
    "web": 8, "cli": 9, "__main__": 9, "__init__": 9,
}  # fmt: skip
"""Each top-level module or package of ``latentchess`` and its layer (higher may import lower)."""


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a file's syntax tree (parsed once for all tests here)."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in _nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            if node.module == "latentchess":
                names += [f"latentchess.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [name for name in names if name.startswith("latentchess.")]


def test_every_module_has_a_layer() -> None:
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert modules | packages <= set(LAYERS), sorted((modules | packages) - set(LAYERS))


def test_nothing_imports_upward() -> None:
    upward = []
    for path in PACKAGE.rglob("*.py"):
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for name in _imports(path):  # function-level imports count too
            target = name.split(".")[1]
            if target in LAYERS and LAYERS[target] > LAYERS[own]:
                upward.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert upward == []


EXTENSIONS = {"latentchess.core._native"}
"""Compiled modules (no ``.py`` file): ``from latentchess.core import _native`` names one."""


def _module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``package`` (a package is its
    ``__init__.py``)."""
    files = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its file (top level, functions,
    ``if TYPE_CHECKING:``); ``from P import M`` counts as importing the module ``P.M`` when
    there is one, else ``P``."""
    files = _module_files(package)
    known = set(files) | EXTENSIONS
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        for node in _nodes(path):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package upwards
                    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join([*here, *([node.module] if node.module else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in known else base)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {target for target in targets if target in files and target != name}
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each loop of modules importing each other (strongly connected components of two modules
    or more, Tarjan), written as a path ``a -> b -> ... -> a`` through the component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return [_cycle(graph, component) for component in components]


def _cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A closed path through ``component`` from its first module (breadth-first: the shortest)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start]
                if target not in parents:
                    parents[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no loop through {sorted(component)}")  # not strongly connected


def test_no_import_loops() -> None:
    loops = import_loops(import_graph(PACKAGE))
    assert loops == [], "modules importing each other (move the shared code down):\n" + "\n".join(
        " -> ".join(loop) for loop in loops
    )


def test_a_planted_loop_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from pkg.sub.c import g\n")
    (package / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n"
    )
    (package / "d.py").write_text("import pkg.a\n")  # into the loop, not part of it
    graph = import_graph(package)
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert import_loops(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]]
