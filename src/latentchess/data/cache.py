"""The training cache: a memory-mapped ``(N, 77)`` uint8 token array and float32 labels.

Built once from a dataset's Parquet shards and reused by every training run; training reads it
with random access through the page cache, so datasets larger than memory work. Layout of a cache
directory::

    tokens.u8          raw uint8, N * 77 bytes, row-major (N, 77)
    win_prob_white.f32 raw little-endian float32, N values
    meta.json          {"rows": N, "tokenizer": ..., "source": ..., ...}

``meta.json`` is written last (atomically), so a cache without it is incomplete and is rebuilt.
:func:`build_cache` makes a cache from a Parquet dataset, streaming, and reuses an up-to-date one.
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

__all__ = ["TrainingCache", "write_cache", "build_cache"]

_TOKENS = "tokens.u8"
_LABELS = "win_prob_white.f32"
_META = "meta.json"
_P_EDGE = 2.0**-24  # 1 - 2**-24 is the largest float32 below 1.0 (as in data.stockfish)


def _float32_labels(values: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Labels as little-endian float32, exact 0.0 / 1.0 only where the input is exactly that.

    ``p == 1.0`` / ``p == 0.0`` select the forced mates of the advantage axis, but a float64
    probability within 3e-8 of 1 (about 4,700 cp) rounds to exactly 1.0 in float32, and one
    below about 1e-45 to 0.0; such values are kept just inside (0, 1) instead.
    """
    wide = np.asarray(values, dtype=np.float64)
    narrow = wide.astype("<f4")
    narrow[(narrow == 1.0) & (wide < 1.0)] = 1.0 - _P_EDGE
    narrow[(narrow == 0.0) & (wide > 0.0)] = _P_EDGE
    return narrow


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
    labels = _float32_labels(win_prob_white)
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


def _dataset_fingerprint(dataset_dir: Path) -> list[list[Any]]:
    from latentchess.data.store import shard_paths

    return [[path.name, path.stat().st_size] for path in shard_paths(dataset_dir)]


def build_cache(
    dataset_dir: str | Path,
    cache_dir: str | Path,
    *,
    chunk_rows: int = 65_536,
    rebuild: bool = False,
    progress: bool = True,
) -> TrainingCache:
    """Build the training cache of a Parquet dataset, or reuse it if already built (build once).

    A complete cache in ``cache_dir`` is reused when its ``meta.json`` records the same dataset
    shards (names and sizes) as ``dataset_dir`` has now; otherwise it is rebuilt. The dataset is
    streamed in chunks of ``chunk_rows`` rows (tokens via
    :func:`latentchess.encoding.tokenize_batch`) straight into the cache files, so memory stays
    flat however large the dataset; ``meta.json`` is written last, so a killed build leaves an
    incomplete cache that the next call rebuilds.

    Args:
        dataset_dir: dataset directory of Parquet shards (see :mod:`latentchess.data.store`).
        cache_dir: cache directory (created if missing).
        chunk_rows: rows tokenized at a time.
        rebuild: rebuild even if an up-to-date cache exists.
        progress: show a progress bar on stderr.

    Raises:
        DataFormatError: no shards, an unreadable shard, or a bad FEN (named by shard and row).
    """
    import pyarrow.parquet as pq
    from tqdm import tqdm

    from latentchess.data.store import shard_paths
    from latentchess.encoding import tokenize_batch
    from latentchess.errors import InvalidFenError

    dataset_dir, cache_dir = Path(dataset_dir), Path(cache_dir)
    paths = shard_paths(dataset_dir)
    if not paths:
        raise DataFormatError("no Parquet shards found", path=dataset_dir)
    fingerprint = _dataset_fingerprint(dataset_dir)
    if not rebuild and TrainingCache.exists(cache_dir):
        try:
            cache = TrainingCache.open(cache_dir)
        except DataFormatError:
            cache = None  # inconsistent: rebuild below
        if cache is not None and cache.meta.get("dataset_shards") == fingerprint:
            return cache
    try:
        total = sum(pq.read_metadata(path).num_rows for path in paths)
    except OSError as error:
        raise DataFormatError(f"unreadable Parquet shard: {error}", path=dataset_dir) from error
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / _META).unlink(missing_ok=True)
    tmp_tokens, tmp_labels = cache_dir / (_TOKENS + ".tmp"), cache_dir / (_LABELS + ".tmp")
    rows = 0
    bar = tqdm(total=total, unit="pos", desc="build cache", disable=not progress)
    with open(tmp_tokens, "wb") as tokens_out, open(tmp_labels, "wb") as labels_out, bar:
        for path in paths:
            row_in_shard = 0
            parquet = pq.ParquetFile(path)
            for batch in parquet.iter_batches(
                batch_size=chunk_rows, columns=["fen", "win_prob_white"]
            ):
                fens = batch.column(0).to_pylist()
                labels = _float32_labels(batch.column(1).to_numpy(zero_copy_only=False))
                try:
                    tokens = tokenize_batch(fens)
                except InvalidFenError as error:
                    index = row_in_shard + fens.index(error.fen)
                    raise DataFormatError(f"row {index}: {error}", path=path) from error
                if labels.size and (
                    np.isnan(labels).any() or labels.min() < 0.0 or labels.max() > 1.0
                ):
                    raise DataFormatError("win_prob_white outside [0, 1]", path=path)
                tokens_out.write(np.ascontiguousarray(tokens, dtype=np.uint8).tobytes())
                labels_out.write(labels.tobytes())
                rows += len(fens)
                row_in_shard += len(fens)
                bar.update(len(fens))
    os.replace(tmp_tokens, cache_dir / _TOKENS)
    os.replace(tmp_labels, cache_dir / _LABELS)
    record = {
        "rows": rows,
        "tokenizer": TOKENIZER_VERSION,
        "source": str(dataset_dir),
        "dataset_shards": fingerprint,
        "label": "win_prob_white (White's perspective)",
    }
    tmp = cache_dir / (_META + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True))
    os.replace(tmp, cache_dir / _META)
    return TrainingCache.open(cache_dir)
