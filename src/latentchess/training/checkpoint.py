"""Atomic training checkpoints, loaded without pickle (``torch.load(weights_only=True)``).

A checkpoint is one file holding plain containers of tensors and numbers: model, optimizer and
scheduler state dicts, the step, the torch RNG state of every rank (dropout), the elapsed training
time, the run's config and a fingerprint of its data. It is written to a temporary file, flushed to
disk and renamed over the previous one, so a kill at any moment leaves either the old or the new
checkpoint, never a torn one. The numpy data order needs no state: it is a function of
``(seed, step)`` (see :mod:`latentchess.training.data`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from latentchess.errors import ModelFileError

__all__ = ["CHECKPOINT_FILE", "save_checkpoint", "load_checkpoint", "config_differences"]

CHECKPOINT_FILE = "last.pt"


def save_checkpoint(path: str | Path, state: Mapping[str, Any]) -> Path:
    """Write ``state`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            torch.save(dict(state), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint (tensors to CPU) with the pickle-free loader.

    Raises:
        ModelFileError: the file is unreadable or not a checkpoint of this package.
    """
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a bad file
        raise ModelFileError(f"cannot read checkpoint {str(path)!r}: {error}") from error
    if not isinstance(state, dict) or "step" not in state or "model" not in state:
        raise ModelFileError(f"{str(path)!r} is not a latentchess training checkpoint")
    return state


def config_differences(
    saved: Mapping[str, Any], current: Mapping[str, Any], *, ignore: Iterable[str] = ()
) -> list[str]:
    """Keys whose values differ between two config dicts, as ``"key: old -> new"`` lines."""
    skipped = set(ignore)
    keys = sorted((set(saved) | set(current)) - skipped)
    return [
        f"{key}: {saved.get(key)!r} -> {current.get(key)!r}"
        for key in keys
        if saved.get(key) != current.get(key)
    ]
