"""Run an engine over many independent items (puzzles, EPD positions) on threads or a cluster."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import chess

from latentchess.cluster import ThreadPool, WorkPool, discard_resource, new_tag, worker_resource
from latentchess.engines.base import Engine
from latentchess.errors import EngineError

__all__ = ["map_with_engines"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class _Chunk(Generic[T, R]):
    """A few items as one unit of work, on the running thread's engine of the run."""

    tag: str
    make: Callable[[], Engine]
    work: Callable[[Engine, T], R]
    failed: Callable[[T, Exception], R]

    def __call__(self, items: Sequence[T]) -> list[R]:
        results = []
        for item in items:
            engine = worker_resource(self.tag, "engine", self.make)
            try:
                results.append(self.work(engine, item))
            except (EngineError, chess.IllegalMoveError) as error:
                discard_resource(self.tag, "engine")
                results.append(self.failed(item, error))
        return results


def map_with_engines(
    make: Callable[[], Engine],
    items: Sequence[T],
    work: Callable[[Engine, T], R],
    failed: Callable[[T, Exception], R],
    *,
    workers: int = 1,
    desc: str = "",
    progress: bool = True,
    pool: WorkPool | None = None,
) -> list[R]:
    """``[work(engine, item) for item in items]`` with one engine per worker thread.

    When ``work`` raises :class:`~latentchess.errors.EngineError` or an illegal-move error, the
    item's result is ``failed(item, error)`` and that worker's engine is replaced (an external
    engine that crashed is gone; one that sent an illegal move is in an unknown state).

    Args:
        make: creates an engine (once per worker, and after each failure).
        items: the work.
        work: computes one result.
        failed: the result recorded for an item whose engine failed.
        workers: threads (engines) in parallel.
        desc: progress bar label.
        progress: show a progress bar on stderr.
        pool: run on a cluster instead (:mod:`latentchess.cluster`): items go in chunks (about
            four per worker slot, at most 64 items each), and ``make``, ``work`` and ``failed``
            must pickle (Dask pickles closures by value).

    Returns:
        Results in the order of ``items``.
    """
    own = ThreadPool(workers) if pool is None else None
    runner: WorkPool = own or pool  # type: ignore[assignment]
    size = 1 if pool is None else max(1, min(64, len(items) // (4 * runner.slots)))
    chunks = [range(start, min(start + size, len(items))) for start in range(0, len(items), size)]
    unit: _Chunk[T, R] = _Chunk(new_tag("map"), make, work, failed)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc=desc, unit="pos")
    results: list[R | None] = [None] * len(items)
    futures: dict[concurrent.futures.Future[list[R]], range] = {}
    finished = False
    try:
        for chunk in chunks:
            futures[runner.submit(unit, [items[i] for i in chunk])] = chunk
        for future in concurrent.futures.as_completed(futures):
            chunk = futures[future]
            for index, result in zip(chunk, future.result(), strict=True):
                results[index] = result
            if bar is not None:
                bar.update(len(chunk))
        finished = True
    finally:
        for future in futures:
            future.cancel()
        if own is not None:
            own.shutdown(wait=finished)
        if bar is not None:
            bar.close()
        runner.release(unit.tag)
    return results  # type: ignore[return-value]
