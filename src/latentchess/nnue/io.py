"""NNUE model directories: ``model.safetensors`` + ``config.json``, no pickle.

``model.safetensors`` holds the float weights (``float.*``, for fine-tuning and the Python
reference) and the quantised ones the core runs: ``q.ft.weight`` int16 (N, L1), ``q.ft.bias``
int16, ``q.l2.weight`` int8 (B * L2, 2 * L1), ``q.l2.bias`` int32, ``q.out.weight`` int32
(B * L2,), ``q.out.bias`` int32 (B,), B output buckets, 1 unless the network has more;
``q.psqt.weight`` int32 (N,) with the psqt term; with a threat block, ``q.ft.threat_weight`` int8
(T, L1) holds its rows and ``q.ft.weight`` the N - T others. Its metadata holds ``feature_set``,
``l1``, ``l2``, ``psqt`` and ``output_buckets`` (strings; files without the last have one bucket),
which is all the native core reads. A *lean* file (``save_nnue(..., lean=True)``, for networks
with a large threat block) holds the quantised tensors alone; :func:`load_nnue` then rebuilds the
float weights from them (each divided by its scale), so it fine-tunes and evaluates as the integer
network does. ``config.json``::

    {"format": "latentchess-model", "format_version": 1, "kind": "nnue",
     "nnue": {"feature_set": "ALL", "l1": 256, "l2": 32, "psqt": true, "output_buckets": 1},
     "quantisation": {"l1_scale": 127, "l2_scale": 64, "output_scale": 600, "out_shift": 16},
     "training": {...}, "data": {...}, "metrics": {...}, "command": "..."}
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from safetensors.numpy import load_file, save_file

from latentchess.core.nnue import default_nnue_path, is_nnue_dir
from latentchess.errors import ModelFileError
from latentchess.nnue.model import (
    L1_SCALE,
    L2_SCALE,
    OUT_SHIFT,
    OUTPUT_SCALE,
    Nnue,
    NnueConfig,
    quantise,
)

__all__ = ["NnueModel", "save_nnue", "load_nnue", "is_nnue_dir", "default_nnue_path"]

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


@dataclass
class NnueModel:
    """A loaded network: float module, quantised tensors and the stored metadata."""

    path: Path
    network: Nnue
    quantised: dict[str, npt.NDArray[Any]]
    metadata: dict[str, Any]


def save_nnue(
    path: str | Path, network: Nnue, metadata: dict[str, Any], *, lean: bool = False
) -> Path:
    """Write a model directory atomically (temporary directory renamed into place).

    ``lean``: the quantised tensors only (the float ones are rebuilt from them on loading).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = (
        {}
        if lean
        else {f"float.{k}": v.detach().cpu().numpy() for k, v in network.state_dict().items()}
    )
    tensors |= {f"q.{k}": v for k, v in quantise(network).items()}
    document = {
        "format": "latentchess-model",
        "format_version": 1,
        "kind": "nnue",
        "nnue": network.cfg.to_dict(),
        "quantisation": {
            "l1_scale": L1_SCALE,
            "l2_scale": L2_SCALE,
            "output_scale": OUTPUT_SCALE,
            "out_shift": OUT_SHIFT,
        },
        **metadata,
    }
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        # The core reads only the safetensors file: its metadata names the shape.
        header = {k: str(v) for k, v in network.cfg.to_dict().items()}
        arrays = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
        save_file(arrays, tmp / WEIGHTS_FILE, metadata=header)
        (tmp / CONFIG_FILE).write_text(json.dumps(document, indent=2) + "\n")
        for file in (tmp / WEIGHTS_FILE, tmp / CONFIG_FILE):
            os.chmod(file, 0o644)
        os.chmod(tmp, 0o755)
        if path.exists():
            old = path.with_name(f".{path.name}.old.{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            for child in old.iterdir():
                child.unlink()
            old.rmdir()
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            for child in tmp.iterdir():
                child.unlink()
            tmp.rmdir()
    return path


def _dequantised(tensors: dict[str, npt.NDArray[Any]], network: Nnue) -> dict[str, torch.Tensor]:
    """Float weights of a lean file: each quantised tensor over its scale (:func:`quantise`)."""
    out_w_scale = OUTPUT_SCALE * OUT_SHIFT / L1_SCALE
    state = {k: v.detach().clone() for k, v in network.state_dict().items()}

    def get(name: str, scale: float) -> torch.Tensor:
        return torch.from_numpy(tensors[f"q.{name}"].astype(np.float32) / np.float32(scale))

    rows = get("ft.weight", L1_SCALE)
    if "q.ft.threat_weight" in tensors:
        rows = torch.cat([rows, get("ft.threat_weight", L1_SCALE)])
    n = len(rows)
    state["ft.weight"][:n] = rows
    state["ft.weight"][n:] = 0.0
    state["ft_bias"] = get("ft.bias", L1_SCALE)
    state["l2.weight"] = get("l2.weight", L2_SCALE)
    state["l2.bias"] = get("l2.bias", L1_SCALE * L2_SCALE)
    state["out.weight"] = get("out.weight", out_w_scale).reshape(state["out.weight"].shape)
    state["out.bias"] = get("out.bias", OUTPUT_SCALE * OUT_SHIFT)
    if "q.psqt.weight" in tensors and "psqt.weight" in state:
        state["psqt.weight"][:n, 0] = get("psqt.weight", OUTPUT_SCALE * OUT_SHIFT)
        state["psqt.weight"][n:] = 0.0
    return state


def load_nnue(path: str | Path | None = None) -> NnueModel:
    """Read a directory written by :func:`save_nnue` (``None``: the shipped network).

    Raises:
        ModelFileError: missing files, another kind, or tensors that do not match the config.
    """
    path = default_nnue_path() if path is None else Path(path)
    file = path / CONFIG_FILE
    if not file.is_file():
        raise ModelFileError(f"NNUE model config {str(file)!r} is missing")
    try:
        document = json.loads(file.read_text())
    except ValueError as error:
        raise ModelFileError(f"{str(file)!r} is not valid JSON: {error}") from error
    if not isinstance(document, dict) or document.get("kind") != "nnue":
        raise ModelFileError(f"{str(file)!r} is not an NNUE model (kind {document.get('kind')!r})")
    try:
        cfg = NnueConfig.from_dict(document["nnue"])
    except Exception as error:
        raise ModelFileError(f"{str(file)!r}: bad 'nnue' section: {error}") from error
    weights = path / WEIGHTS_FILE
    try:
        tensors = load_file(str(weights))
    except Exception as error:
        raise ModelFileError(f"cannot read {str(weights)!r}: {error}") from error
    network = Nnue(cfg)
    state = {
        k[len("float.") :]: torch.from_numpy(v.copy())
        for k, v in tensors.items()
        if k.startswith("float.")
    }
    if not state and "q.ft.weight" in tensors:  # a lean file
        try:
            state = _dequantised(tensors, network)
        except (RuntimeError, KeyError) as error:
            raise ModelFileError(
                f"{str(weights)!r} does not match {str(file)!r}: {error}"
            ) from error
    try:
        network.load_state_dict(state)
    except RuntimeError as error:
        raise ModelFileError(f"{str(weights)!r} does not match {str(file)!r}: {error}") from error
    network.eval()
    quantised = {k[2:]: v for k, v in tensors.items() if k.startswith("q.")}
    expected = quantise(network)
    for name, value in expected.items():
        if name not in quantised or quantised[name].shape != value.shape:
            raise ModelFileError(
                f"{str(weights)!r}: quantised tensor {name!r} missing or misshapen"
            )
    meta = {k: v for k, v in document.items() if k not in ("format", "format_version", "kind")}
    return NnueModel(path=path, network=network, quantised=quantised, metadata=meta)
