"""Run an engine over many independent items (puzzles, EPD positions) on a few threads."""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import chess

from latentchess.engines.base import Engine
from latentchess.errors import EngineError

__all__ = ["map_with_engines"]

T = TypeVar("T")
R = TypeVar("R")


def map_with_engines(
    make: Callable[[], Engine],
    items: Sequence[T],
    work: Callable[[Engine, T], R],
    failed: Callable[[T, Exception], R],
    *,
    workers: int = 1,
    desc: str = "",
    progress: bool = True,
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

    Returns:
        Results in the order of ``items``.
    """
    local = threading.local()
    lock = threading.Lock()
    created: list[Engine] = []

    def engine() -> Engine:
        current = getattr(local, "engine", None)
        if current is None:
            current = make()
            with lock:
                created.append(current)
            local.engine = current
        return current

    def run(item: T) -> R:
        current = engine()
        try:
            return work(current, item)
        except (EngineError, chess.IllegalMoveError) as error:
            with contextlib.suppress(Exception):
                current.close()
            local.engine = None
            return failed(item, error)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc=desc, unit="pos")
    results: list[R | None] = [None] * len(items)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers))
    finished = False
    try:
        futures = {pool.submit(run, item): index for index, item in enumerate(items)}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()
            if bar is not None:
                bar.update(1)
        finished = True
    finally:
        pool.shutdown(wait=finished, cancel_futures=True)
        if bar is not None:
            bar.close()
        with lock:
            for current in created:
                with contextlib.suppress(Exception):
                    current.close()
    return results  # type: ignore[return-value]
