"""Training data: opening the token cache, the held-out split, the anchor order and batches made
ahead in worker processes.

The data order of a run is a pure function of ``(seed, step)``: anchors come from a per-epoch
permutation seeded by ``(seed, epoch)`` and positives from a generator seeded by ``(seed, step)``.
A resumed run therefore needs only the step number to continue with exactly the batches the
uninterrupted run would have seen, and every rank of a distributed run computes the same global
batch without communicating.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from latentchess.data.cache import TrainingCache, build_cache
from latentchess.errors import DataFormatError

__all__ = [
    "HOLDOUT_BLOCK",
    "Split",
    "AnchorOrder",
    "open_training_data",
    "split_holdout",
    "label_fingerprint",
    "step_rng",
    "StepPrefetcher",
]

HOLDOUT_BLOCK = 256
"""Held-out rows are whole blocks of this many consecutive cache rows. The data pipeline stores a
game's positions consecutively, so blocks keep most of a game on one side of the split and the
held-out metrics are not flattered by near-duplicate neighbours of training positions."""

# Stream ids of step_rng, so that no two uses of the seed share a random stream.
_STREAM_EPOCH = 1
_STREAM_POSITIVES = 2
_STREAM_HOLDOUT = 3


def step_rng(seed: int, stream: int, index: int) -> np.random.Generator:
    """An independent generator for ``(seed, stream, index)`` (a ``SeedSequence`` entropy tuple)."""
    return np.random.default_rng([seed, stream, index])


def open_training_data(
    path: str | Path, cache_dir: str | Path, *, progress: bool = True
) -> TrainingCache:
    """Open ``path`` as a training cache, building one in ``cache_dir`` if it is a dataset.

    Args:
        path: a cache directory (with ``meta.json``) or a dataset directory of Parquet shards.
        cache_dir: where to build (or find, from an earlier run) the cache of a dataset.
        progress: show the cache build's progress bar.

    Raises:
        DataFormatError: ``path`` is neither, or the data is unusable.
    """
    path = Path(path)
    if TrainingCache.exists(path):
        return TrainingCache.open(path)
    if not path.is_dir() or not any(path.glob("*.parquet")):
        raise DataFormatError(
            "expected a training cache (meta.json) or a dataset directory of Parquet shards",
            path=path,
        )
    return build_cache(path, cache_dir, progress=progress)


def label_fingerprint(labels: npt.ArrayLike) -> str:
    """A short hash of the label array, stored in checkpoints to detect a change of data."""
    array = np.ascontiguousarray(labels, dtype="<f4")
    return hashlib.sha256(array.tobytes()).hexdigest()[:16]


@dataclass(frozen=True)
class Split:
    """Cache rows of the training and held-out sets (sorted ascending, disjoint)."""

    train: npt.NDArray[np.int64]
    holdout: npt.NDArray[np.int64]


def split_holdout(rows: int, *, fraction: float, maximum: int, seed: int) -> Split:
    """Deterministic held-out split: random whole blocks of :data:`HOLDOUT_BLOCK` rows.

    Args:
        rows: cache size.
        fraction: share of rows held out (the last block chosen is trimmed to hit it exactly).
        maximum: cap on held-out rows.
        seed: the run's seed.

    Raises:
        DataFormatError: too few rows to hold any out and still train.
    """
    size = min(maximum, max(1, round(fraction * rows)))
    if rows < 2 or size >= rows:
        raise DataFormatError(f"{rows} rows are too few to hold out {size} and train on the rest")
    n_blocks = -(-rows // HOLDOUT_BLOCK)
    blocks = step_rng(seed, _STREAM_HOLDOUT, 0).permutation(n_blocks)
    chosen: list[npt.NDArray[np.int64]] = []
    taken = 0
    for block in blocks:
        start = int(block) * HOLDOUT_BLOCK
        block_rows = np.arange(start, min(start + HOLDOUT_BLOCK, rows), dtype=np.int64)
        chosen.append(block_rows[: size - taken])
        taken += len(chosen[-1])
        if taken >= size:
            break
    holdout = np.sort(np.concatenate(chosen))
    keep = np.ones(rows, dtype=bool)
    keep[holdout] = False
    return Split(train=np.flatnonzero(keep).astype(np.int64), holdout=holdout)


class AnchorOrder:
    """Anchors of every step: epochs over the training set, each in its own seeded order.

    Step ``s`` takes the global anchor positions ``[s * B, (s + 1) * B)`` of the concatenated
    epochs (a batch may straddle two epochs).

    Args:
        size: number of training positions.
        batch_size: anchors per step (global, over all ranks).
        seed: the run's seed.
    """

    def __init__(self, size: int, batch_size: int, seed: int) -> None:
        if size < 1:
            raise ValueError("cannot draw anchors from an empty training set")
        self.size = size
        self.batch_size = batch_size
        self.seed = seed
        self._epoch = -1
        self._permutation = np.empty(0, dtype=np.int64)

    def _epoch_order(self, epoch: int) -> npt.NDArray[np.int64]:
        if epoch != self._epoch:
            self._permutation = step_rng(self.seed, _STREAM_EPOCH, epoch).permutation(self.size)
            self._epoch = epoch
        return self._permutation

    def anchors(self, step: int) -> npt.NDArray[np.int64]:
        """``(batch_size,)`` training-set positions of step ``step``."""
        parts: list[npt.NDArray[np.int64]] = []
        start = step * self.batch_size
        stop = start + self.batch_size
        while start < stop:
            epoch, offset = divmod(start, self.size)
            take = min(stop - start, self.size - offset)
            parts.append(self._epoch_order(epoch)[offset : offset + take])
            start += take
        return np.concatenate(parts)

    def positives_rng(self, step: int) -> np.random.Generator:
        """The generator that draws step ``step``'s positives."""
        return step_rng(self.seed, _STREAM_POSITIVES, step)


class _StepBatches:
    """A map-style dataset whose item ``i`` is the batch of step ``start + i``."""

    def __init__(self, make: Callable[[int], dict[str, Any]], start: int, stop: int) -> None:
        self.make, self.start, self.stop = make, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.make(self.start + index)


class StepPrefetcher:
    """The batches of the coming steps, made by ``workers`` processes while the model trains.

    ``make(step)`` must be a pure function of the step (as the loop's data order is), returning
    NumPy arrays; the batches come back as tensors in shared memory (a torch ``DataLoader`` over
    the steps, ``prefetch`` batches ahead per worker, forked so that the workers share the
    parent's data without copying it), in step order, and are the arrays ``make`` returns, so a
    run trains bit-identically with or without workers. Asking for another step than the next
    one (a resumed run, an evaluation in between does not count) restarts the workers there.

    Args:
        make: step -> this rank's batch as a dict of arrays.
        stop: the run's last step + 1.
        workers: worker processes (at least 1).
        prefetch: batches made ahead per worker.
        pin_memory: page-locked batches for fast, asynchronous copies to a GPU.
    """

    def __init__(
        self,
        make: Callable[[int], dict[str, Any]],
        stop: int,
        workers: int,
        *,
        prefetch: int = 4,
        pin_memory: bool = False,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a prefetcher needs at least one worker, got {workers}")
        self.make, self.stop, self.workers = make, stop, workers
        self.prefetch, self.pin_memory = prefetch, pin_memory
        self._next: int | None = None
        self._iterator: Any = None

    def _start(self, step: int) -> None:
        import multiprocessing

        from torch.utils.data import DataLoader

        self.close()
        loader = DataLoader(
            _StepBatches(self.make, step, self.stop),
            batch_size=None,
            num_workers=self.workers,
            prefetch_factor=self.prefetch,
            pin_memory=self.pin_memory,
            multiprocessing_context=multiprocessing.get_context("fork"),
        )
        self._iterator, self._next = iter(loader), step

    def get(self, step: int) -> dict[str, Any]:
        """Step ``step``'s batch (tensors)."""
        if not 0 <= step < self.stop:
            raise IndexError(f"step {step} outside the run's steps [0, {self.stop})")
        if step != self._next:
            self._start(step)
        batch = next(self._iterator)
        self._next = step + 1
        return batch  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop the workers (they also stop after the last step, or when garbage-collected)."""
        if self._iterator is not None and hasattr(self._iterator, "_shutdown_workers"):
            self._iterator._shutdown_workers()
        self._iterator, self._next = None, None
