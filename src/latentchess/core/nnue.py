"""The native core's NNUE from Python: where networks live, loading, evaluator names.

This module is light (no torch): the alpha-beta engine and ``latentchess uci`` read networks
through it; training and export live in :mod:`latentchess.nnue`.

The search takes its evaluator by name (``SearchEngine(name, hash_mb)``); an NNUE is named
``nnue:ABSOLUTE_MODEL_DIR``, which the core loads from ``model.safetensors``.
:func:`resolve_evaluator` maps user-facing names (``nnue``, ``hce``, a model directory) to those.

``latent`` (``ab:eval=latent``) is the shipped sparse latent model's axis score as the search's
evaluation, or ``latent:DIR`` / a sparse model directory for another: the core name is
``latent:ABSOLUTE_MODEL_DIR``, registered with the core (weights, axis, calibration from
``config.json``) by :func:`resolve_evaluator` itself, so that every name it returns is one the
core can build. The score is mapped to centipawns as the latent engine reports it (the model's
calibration, then :func:`latentchess.winprob.centipawns`; ``latent_encoder.h``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from latentchess.errors import EngineError, ModelFileError

__all__ = [
    "default_nnue_path",
    "is_nnue_dir",
    "BUILTIN_EVALUATORS",
    "native_module",
    "resolve_evaluator",
    "load_network",
    "is_sparse_latent_dir",
]

BUILTIN_EVALUATORS = ("hce", "pesto")

_REGISTERED_LATENT: dict[str, float] = {}
"""Core latent evaluator keys already registered, with their config.json's and weights' mtime."""

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


def _latent_config(path: Path) -> dict[str, Any] | None:
    """A latentchess model config whose encoder is the sparse one, else None."""
    try:
        document = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != "latentchess-model":
        return None
    encoder = document.get("encoder")
    if not isinstance(encoder, dict) or encoder.get("kind") != "sparse":
        return None
    return document


def is_sparse_latent_dir(path: str | Path) -> bool:
    """Whether ``path`` is a latent model directory with the sparse encoder (``ab:eval=DIR``)."""
    return _latent_config(Path(path)) is not None


_latent_assembler: Callable[[Path], Any] | None = None
"""Builds the core's encoder of a sparse model whose feature transformer is an NNUE's (its
``ft_from``): that needs the model files' Python side, a layer above this one, which registers
it (:func:`set_latent_assembler`, called by ``latentchess.search.native``)."""


def set_latent_assembler(assemble: Callable[[Path], Any]) -> None:
    """Register the function that builds the core's encoder of a model directory (it raises
    ``ModelFileError`` or ``ValueError`` for one that does not load)."""
    global _latent_assembler
    _latent_assembler = assemble


def _register_latent(path: Path) -> str:
    """Register the sparse model in ``path`` with the core (once per file version); its name."""
    key = str(path.resolve())
    document = _latent_config(path)
    if document is None:
        raise EngineError(f"{str(path)!r} is not a latent model directory with the sparse encoder")
    try:
        stamp = max((path / f).stat().st_mtime for f in ("config.json", "model.safetensors"))
    except OSError as error:
        raise EngineError(f"latent model {str(path)!r}: {error}") from error
    if _REGISTERED_LATENT.get(key) == stamp:
        return f"latent:{key}"
    axis = document.get("axis")
    if not isinstance(axis, list) or not axis:
        raise EngineError(f"latent model {str(path)!r}: config.json has no axis")
    calibration = document.get("calibration") or {}
    slope = float(calibration.get("slope", 0.0)) if isinstance(calibration, dict) else 0.0
    intercept = float(calibration.get("intercept", 0.0)) if isinstance(calibration, dict) else 0.0
    # The latent engine's rule (engines.latent.calibration): a logistic that is not increasing
    # in the axis score falls back to the linear (s + 1) / 2.
    logistic = isinstance(calibration, dict) and calibration.get("kind") == "logistic" and slope > 0
    try:
        if document["encoder"].get("ft_from") is not None:  # on an NNUE's transformer: assembled
            if _latent_assembler is None:
                raise EngineError(
                    f"latent model {str(path)!r} uses the feature transformer of the NNUE "
                    f"{document['encoder']['ft_from']!r}, which latentchess.search.native "
                    "assembles: import it (the engines do) before naming this model"
                )
            encoder = _latent_assembler(path)
            encoder.register_evaluator(key, logistic, slope, intercept)
        else:
            native_module().register_latent_evaluator(
                key,
                str(path / "model.safetensors"),
                str(document["encoder"].get("feature_set", "ALL")),
                [float(value) for value in axis],
                logistic,
                slope,
                intercept,
            )
    except (ValueError, TypeError, ModelFileError) as error:
        raise EngineError(f"latent model {str(path)!r}: {error}") from error
    _REGISTERED_LATENT[key] = stamp
    return f"latent:{key}"


def native_module() -> Any:
    from latentchess.core import _native

    return _native


def resolve_evaluator(name: str) -> str:
    """``hce`` / ``pesto`` unchanged; ``nnue`` -> the shipped network; ``latent`` -> the shipped
    latent model (``LATENTCHESS_MODEL`` if set, as the latent engine); a directory -> it.

    Returns the core's evaluator name (``nnue:/abs/dir`` for networks, ``latent:/abs/dir`` for
    sparse latent models, which this registers with the core).

    Raises:
        EngineError: an unknown name, or a directory that is neither an NNUE nor a sparse latent
            model.
    """
    if name in BUILTIN_EVALUATORS:
        return name
    if name == "latent" or name.startswith("latent:"):
        from latentchess.paths import default_model_path

        directory = name[len("latent:") :] if name != "latent" else ""
        return _register_latent(Path(directory).expanduser() if directory else default_model_path())
    named_nnue = name == "nnue" or name.startswith("nnue:")
    if not named_nnue and is_sparse_latent_dir(Path(name).expanduser()):
        return _register_latent(Path(name).expanduser())
    path = default_nnue_path() if name == "nnue" else Path(name).expanduser()
    if name.startswith("nnue:"):
        path = Path(name[len("nnue:") :]).expanduser()
    if not is_nnue_dir(path):
        known = ", ".join((*BUILTIN_EVALUATORS, "nnue", "latent"))
        raise EngineError(
            f"unknown evaluator {name!r}: not one of {known} and not an NNUE or sparse latent "
            "model directory"
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
