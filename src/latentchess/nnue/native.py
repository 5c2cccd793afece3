"""The native core's NNUE from Python: network loading, features and evaluator names.

The search takes its evaluator by name (``SearchEngine(name, hash_mb)``); an NNUE is named
``nnue:ABSOLUTE_MODEL_DIR``, which the core loads from ``model.safetensors``.
:func:`resolve_evaluator` maps user-facing names (``nnue``, ``hce``, a model directory) to those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chess

from latentchess.errors import EngineError

__all__ = [
    "BUILTIN_EVALUATORS",
    "native_module",
    "resolve_evaluator",
    "load_network",
    "native_features",
]

BUILTIN_EVALUATORS = ("hce", "pesto")


def native_module() -> Any:
    from latentchess.core import _native

    return _native


def resolve_evaluator(name: str) -> str:
    """``hce`` / ``pesto`` unchanged; ``nnue`` -> the shipped network; a directory -> it.

    Returns the core's evaluator name (``nnue:/abs/dir`` for networks).

    Raises:
        EngineError: an unknown name, or a directory that is not an NNUE model.
    """
    from latentchess.nnue.io import default_nnue_path, is_nnue_dir

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
    from latentchess.nnue.io import default_nnue_path

    path = default_nnue_path() if path is None else Path(path)
    try:
        return native_module().NnueNetwork.load(str(path))
    except ValueError as error:
        raise EngineError(str(error)) from error


def native_features(board: chess.Board, perspective: chess.Color, feature_set: str) -> list[int]:
    """Active features from the core (equal to ``features.perspective_features``)."""
    position = native_module().Position(board.fen())
    return list(native_module().nnue_features(position, 0 if perspective else 1, feature_set))
