"""Layers read top-down: no module imports a layer above its own (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "latentchess"

LAYERS = {
    # pure functions and error types
    "errors": 0, "encoding": 0, "winprob": 0, "squares": 0, "argtypes": 0, "provenance": 0,
    "wdl": 0, "batch_keys": 0, "resources": 0, "weights": 0, "textfiles": 0,
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


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
