"""Where the shipped models live (no PyTorch, no NumPy: the UCI session lists the latent model as
the ``Model`` option's default before the model is loaded, and the core finds it for
``ab:eval=latent``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "SHIPPED_WEIGHTS", "default_model_path"]

SHIPPED_WEIGHTS = Path(__file__).resolve().parent / "weights"
"""The package's ``weights/`` directory (package data: a checkout, ``pip install .``, a wheel)."""

DEFAULT_MODEL = "sparse-nnue-64"
"""The shipped latent model that ``latent`` plays with: the strongest latent model measured (the
sparse contrastive encoder on the shipped NNUE's feature transformer, against ``sparse-64``
before it: ``benchmarks/results/nnue_ft_encoder/``). ``sparse-64`` is the encoder with its own
transformer, ``gab-micro`` the transformer."""


def default_model_path() -> Path:
    """``$LATENTCHESS_MODEL`` if set, else the shipped ``weights/`` + :data:`DEFAULT_MODEL`.

    The shipped models are package data (``latentchess/weights/``), so they are found the same
    way in a checkout, after ``pip install .`` and from a wheel.
    """
    env = os.environ.get("LATENTCHESS_MODEL")
    if env:
        return Path(env).expanduser()
    return SHIPPED_WEIGHTS / DEFAULT_MODEL
