"""The native core's NNUE from Python: where networks live, loading, evaluator names.

This module is light (no torch): the alpha-beta engine and ``latentchess uci`` read networks
through it; training and export live in :mod:`latentchess.nnue`.

The search takes its evaluator by name (``SearchEngine(name, hash_mb)``); an NNUE is named
``nnue:ABSOLUTE_MODEL_DIR``, which the core loads from ``model.safetensors``.
:func:`resolve_evaluator` maps user-facing names (``nnue``, ``hce``, a model directory) to those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from latentchess.errors import EngineError

__all__ = [
    "default_nnue_path",
    "is_nnue_dir",
    "BUILTIN_EVALUATORS",
    "native_module",
    "resolve_evaluator",
    "load_network",
]

BUILTIN_EVALUATORS = ("hce", "pesto")

_PACKAGE_WEIGHTS = Path(__file__).resolve().parents[1] / "weights"


def default_nnue_path() -> Path:
    """The shipped network, ``latentchess/weights/nnue-default``."""
    return _PACKAGE_WEIGHTS / "nnue-default"


def is_nnue_dir(path: str | Path) -> bool:
    """Whether ``path`` is a model directory of kind ``nnue`` (its ``config.json`` says so)."""
    file = Path(path) / "config.json"
    try:
        return json.loads(file.read_text()).get("kind") == "nnue"
    except (OSError, ValueError, AttributeError):
        return False


def native_module() -> Any:
    from latentchess.core import _native

    return _native


def resolve_evaluator(name: str) -> str:
    """``hce`` / ``pesto`` unchanged; ``nnue`` -> the shipped network; a directory -> it.

    Returns the core's evaluator name (``nnue:/abs/dir`` for networks).

    Raises:
        EngineError: an unknown name, or a directory that is not an NNUE model.
    """
    if name in BUILTIN_EVALUATORS:
        return name
    path = default_nnue_path() if name == "nnue" else Path(name).expanduser()
    if name.startswith("nnue:"):
        path = Path(name[len("nnue:") :]).expanduser()
    if not is_nnue_dir(path):
        known = ", ".join((*BUILTIN_EVALUATORS, "nnue"))
        raise EngineError(
            f"unknown evaluator {name!r}: not one of {known} and not an NNUE model directory"
            + (" (no network ships in this installation)" if name == "nnue" else "")
        )
    return f"nnue:{path.resolve()}"


def load_network(path: str | Path | None = None) -> Any:
    """The core's quantised network from a model directory (``None``: the shipped one)."""
    path = default_nnue_path() if path is None else Path(path)
    try:
        return native_module().NnueNetwork.load(str(path))
    except ValueError as error:
        raise EngineError(str(error)) from error
