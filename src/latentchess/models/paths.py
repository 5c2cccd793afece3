"""Where the shipped latent model lives (no PyTorch here: the UCI session lists it as the
``Model`` option's default before the model is loaded)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SHIPPED_WEIGHTS", "default_model_path"]

SHIPPED_WEIGHTS = Path(__file__).resolve().parents[1] / "weights"
"""The package's ``weights/`` directory (package data: a checkout, ``pip install .``, a wheel)."""


def default_model_path() -> Path:
    """``$LATENTCHESS_MODEL`` if set, else the model shipped in the package, ``weights/default``.

    The shipped model is package data (``latentchess/weights/default``), so it is found the same
    way in a checkout, after ``pip install .`` and from a wheel.
    """
    env = os.environ.get("LATENTCHESS_MODEL")
    if env:
        return Path(env).expanduser()
    return SHIPPED_WEIGHTS / "default"
