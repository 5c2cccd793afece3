"""``data label``: Stockfish labels for the positions of the user's PGN, EPD or FEN-list file.

Positions are read in file order (optionally ``per_game`` sampled per PGN game), deduplicated
against the dataset by :func:`~latentchess.data.resume.ResumableWriter.claim` before any
Stockfish time is spent on them, labelled in batches by ``workers`` Stockfish processes and
committed in file order; the cursor counts positions read, so a rerun after a crash skips what is
already stored. Malformed records are reported with file and line and skipped (or fatal when
``strict``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import chess
import chess.engine

from latentchess.data._pool import JobContext, LabellerSpec, run_ordered
from latentchess.data.positions import (
    InputFormat,
    Position,
    detect_format,
    estimate_positions,
    read_positions,
)
from latentchess.data.problems import ProblemLog
from latentchess.data.resume import ResumableWriter
from latentchess.data.stockfish import Labeller, limit_to_dict, make_limit
from latentchess.errors import DataFormatError
from latentchess.textfiles import strip_compression

__all__ = ["LabelResult", "label_file"]

_BATCH = 32  # positions per worker task: long enough to amortise IPC, short enough to balance


@dataclass(frozen=True, kw_only=True)
class LabelResult:
    """What a labelling run did.

    Attributes:
        out: the dataset directory.
        rows: rows of this input file's run in the dataset (from this and earlier invocations).
        new_rows: rows added by this invocation.
        duplicates: positions skipped because the dataset already had them.
        malformed: malformed records skipped.
        seconds: wall time of this invocation.
    """

    out: Path
    rows: int
    new_rows: int
    duplicates: int
    malformed: int
    seconds: float


def _label_batch(
    labeller: Labeller, payload: tuple[str, int, list[tuple[str, int | None, int | None]]],
    context: JobContext,
) -> list[dict[str, Any]]:  # fmt: skip
    source, multipv, batch = payload
    rows = []
    for fen, game, ply in batch:
        if context.stopped():
            return []
        label = labeller.label(chess.Board(fen), multipv=multipv)
        rows.append(label.row(fen, source=source, game=game, ply=ply))
        context.tick()
    return rows


def _prefix_for(path: Path) -> str:
    stem = strip_compression(path.name)
    for suffix in (".pgn", ".epd", ".fen", ".txt"):
        stem = stem.removesuffix(suffix)
    return "label_" + (re.sub(r"[^A-Za-z0-9_.]", "_", stem) or "input")


def label_file(
    path: str | Path,
    out: str | Path,
    *,
    fmt: InputFormat | None = None,
    per_game: int | None = None,
    seed: int = 0,
    limit: chess.engine.Limit | None = None,
    multipv: int = 2,
    workers: int | None = None,
    strict: bool = False,
    shard_rows: int = 10_000,
    flush_seconds: float = 300.0,
    stockfish: str | Path | None = None,
    progress: bool = True,
) -> LabelResult:
    """Label every position of a file (or ``per_game`` per PGN game) into the dataset ``out``.

    Args:
        path: PGN (plain, ``.gz``, ``.xz``, ``.zst``), EPD or FEN-list file.
        out: dataset directory; shards are named ``label_<file stem>-<k>.parquet``.
        fmt: input format, or None to detect it.
        per_game: positions sampled per PGN game (None: all).
        seed: seed of that sampling.
        limit: Stockfish limit per position (default depth 9).
        multipv: lines per position (2 gives ``multipv_gap_cp``).
        workers: Stockfish processes (default: ``os.cpu_count()``).
        strict: stop at the first malformed record instead of skipping it.
        shard_rows: rows per Parquet shard.
        flush_seconds: write a shard at least this often.
        stockfish: Stockfish binary (default: found automatically).
        progress: show a progress bar on stderr.

    Raises:
        DataFormatError: a malformed record with ``strict``, or a resume with other settings.
    """
    from tqdm import tqdm

    started = time.monotonic()
    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such file", path=path)
    if per_game is not None and per_game < 1:
        raise ValueError(f"per_game must be >= 1, got {per_game!r}")
    fmt = detect_format(path) if fmt is None else fmt
    limit = make_limit() if limit is None else limit
    workers = workers or os.cpu_count() or 1
    source = f"label:{path.name}"
    identity = {
        "command": "label",
        "input": path.name,
        "input_bytes": path.stat().st_size,
        "format": fmt,
        "per_game": per_game,
        "seed": seed,
        "limit": limit_to_dict(limit),
        "multipv": multipv,
    }
    problems = ProblemLog(strict=strict)
    stream = read_positions(path, fmt=fmt, per_game=per_game, seed=seed, problems=problems)
    writer = ResumableWriter(
        out, _prefix_for(path), identity, shard_rows=shard_rows, flush_seconds=flush_seconds
    )
    start_rows = writer.rows
    counters = {"duplicates": 0}
    total = estimate_positions(path, fmt, per_game) if progress else None
    bar = tqdm(
        total=total, initial=writer.cursor, unit="pos", desc=f"label {path.name}",
        disable=not progress, dynamic_ncols=True,
    )  # fmt: skip

    def tasks() -> Iterator[tuple[int, tuple[str, int, list[tuple[str, int | None, int | None]]]]]:
        consumed = writer.cursor
        positions: Iterator[Position] = islice(stream, writer.cursor, None)
        while True:
            window = list(islice(positions, _BATCH))
            if not window:
                return
            consumed += len(window)
            batch = []
            for position in window:
                if writer.claim(position.fen):
                    batch.append((position.fen, position.game, position.ply))
                else:
                    counters["duplicates"] += 1
            yield consumed, (source, multipv, batch)

    def on_result(cursor: int, rows: list[dict[str, Any]]) -> bool:
        bar.update(cursor - writer.cursor)  # positions handled, repeats included
        writer.commit(rows, cursor=cursor)
        return True

    spec = LabellerSpec(limit=limit, binary=stockfish, multipv=multipv)
    try:
        run_ordered(
            _label_batch,
            spec,
            tasks(),
            workers=workers,
            on_result=on_result,
        )
    finally:
        writer.close()
        bar.close()
    return LabelResult(
        out=Path(out),
        rows=writer.rows,
        new_rows=writer.rows - start_rows,
        duplicates=counters["duplicates"],
        malformed=problems.count,
        seconds=time.monotonic() - started,
    )
