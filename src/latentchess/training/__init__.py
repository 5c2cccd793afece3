"""Training: the shared loop (``loop``) and its objectives (``objectives.supcon``: the SOLIS
encoder; ``objectives.chessformer``; ``objectives.nnue``), the SupCon loss (``losses``), positives,
the advantage axis.

Names are imported on first use (PEP 562), so ``latentchess.cli.train`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    "TrainConfig": "latentchess.training.config",
    "TrainResult": "latentchess.training.trainer",
    "train": "latentchess.training.trainer",
    "supcon_loss": "latentchess.training.losses",
    "PositiveSampler": "latentchess.training.positives",
    "select_axis_positions": "latentchess.training.axis",
    "advantage_axis": "latentchess.training.axis",
    "fit_calibration": "latentchess.training.axis",
    "AxisFallbackWarning": "latentchess.training.axis",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'latentchess.training' has no attribute {name!r}")


__all__ = list(_LAZY)
