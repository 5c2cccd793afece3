"""The training cache: a memory-mapped ``(N, 77)`` uint8 token array and float32 labels.

Built once from a dataset's Parquet shards and reused by every training run; training reads it
with random access through the page cache, so datasets larger than memory work. Layout of a cache
directory::

    tokens.u8          raw uint8, N * 77 bytes, row-major (N, 77)
    win_prob_white.f32 raw little-endian float32, N values
    meta.json          {"rows": N, "tokenizer": ..., "source": ..., ...}

``meta.json`` is written last (atomically), so a cache without it is incomplete and is rebuilt.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from latentchess.encoding import SEQUENCE_LENGTH, TOKENIZER_VERSION
from latentchess.errors import DataFormatError

__all__ = ["TrainingCache", "write_cache"]

_TOKENS = "tokens.u8"
_LABELS = "win_prob_white.f32"
_META = "meta.json"


@dataclass(frozen=True)
class TrainingCache:
    """Read-only view of a cache directory.

    Attributes:
        path: the directory.
        tokens: ``(N, 77)`` uint8 memmap.
        win_prob_white: ``(N,)`` float32 memmap, White's win probability.
        meta: the ``meta.json`` contents.
    """

    path: Path
    tokens: npt.NDArray[np.uint8]
    win_prob_white: npt.NDArray[np.float32]
    meta: dict[str, Any]

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    @classmethod
    def exists(cls, path: str | Path) -> bool:
        return (Path(path) / _META).is_file()

    @classmethod
    def open(cls, path: str | Path) -> TrainingCache:
        """Open a complete cache; raise :class:`DataFormatError` if missing or inconsistent."""
        path = Path(path)
        meta_path = path / _META
        if not meta_path.is_file():
            raise DataFormatError("not a training cache (no meta.json; build it first)", path=path)
        meta = json.loads(meta_path.read_text())
        rows = int(meta["rows"])
        if meta.get("tokenizer") != TOKENIZER_VERSION:
            raise DataFormatError(
                f"cache tokenizer {meta.get('tokenizer')!r} != {TOKENIZER_VERSION!r}", path=path
            )
        for name, itemsize in ((_TOKENS, SEQUENCE_LENGTH), (_LABELS, 4)):
            size = (path / name).stat().st_size if (path / name).exists() else -1
            if size != rows * itemsize:
                raise DataFormatError(
                    f"{name} has {size} bytes, expected {rows * itemsize} for {rows} rows",
                    path=path,
                )
        if rows == 0:
            tokens = np.zeros((0, SEQUENCE_LENGTH), dtype=np.uint8)
            labels = np.zeros((0,), dtype=np.float32)
        else:
            tokens = np.memmap(
                path / _TOKENS, dtype=np.uint8, mode="r", shape=(rows, SEQUENCE_LENGTH)
            )
            labels = np.memmap(path / _LABELS, dtype="<f4", mode="r", shape=(rows,))
        return cls(path=path, tokens=tokens, win_prob_white=labels, meta=meta)


def write_cache(
    path: str | Path,
    tokens: npt.ArrayLike,
    win_prob_white: npt.ArrayLike,
    **meta: Any,
) -> TrainingCache:
    """Write a cache from in-memory arrays (atomically: ``meta.json`` last) and open it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    token_array = np.ascontiguousarray(tokens, dtype=np.uint8)
    labels = np.ascontiguousarray(win_prob_white, dtype="<f4")
    if token_array.ndim != 2 or token_array.shape[1] != SEQUENCE_LENGTH:
        raise ValueError(
            f"expected tokens of shape (N, {SEQUENCE_LENGTH}), got {token_array.shape}"
        )
    if labels.shape != (token_array.shape[0],):
        raise ValueError(f"expected {token_array.shape[0]} labels, got shape {labels.shape}")
    if labels.size and (np.isnan(labels).any() or labels.min() < 0.0 or labels.max() > 1.0):
        raise ValueError("win probabilities must lie in [0, 1]")
    (path / _META).unlink(missing_ok=True)
    for name, array in ((_TOKENS, token_array), (_LABELS, labels)):
        tmp = path / (name + ".tmp")
        array.tofile(tmp)
        os.replace(tmp, path / name)
    record = {"rows": int(token_array.shape[0]), "tokenizer": TOKENIZER_VERSION, **meta}
    tmp = path / (_META + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True))
    os.replace(tmp, path / _META)
    return TrainingCache.open(path)
