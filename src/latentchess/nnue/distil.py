"""Static-evaluation labels for NNUE training: positions scored by Stockfish's own evaluation.

Why: the thesis trains on 48.4 billion positions; we have about 5.5 million search-labelled ones,
and a network trained on them evaluates no better than our hand-crafted evaluation (measured in
``benchmarks/results/nnue_distil/``). Stockfish's static evaluation (its ``eval`` command) costs
about 0.25 ms per position, 100-1000x less than a depth-8 search, so the same positions -- and
positions a few random plies away from them, like the odd ones a search visits -- can be labelled
by the millions. The label is what the network replaces in our search: a static score of a quiet
position (the stand-pat value of quiescence search), not a search result.

Output: the project's labelled CSV (``fen,cp_white,mate_white,win_prob_white,best_move,depth,
multipv_gap_cp``, no header) with ``depth`` 0 and ``best_move`` empty, written as gzip parts of
``chunk`` input positions each (``part-NNNNNN.csv.gz``, atomic); a killed run resumes at the first
missing part. ``--shard I/N`` takes every N-th chunk, so N processes (or machines) split the work.

Sources are labelled CSVs or the engine's own ``data selfplay`` records (``.bin`` files, or a
directory of them): their positions, relabelled by Stockfish (the records' scores and results are
not used).

Kept positions are quiet: the side to move is not in check and has no capture that wins material
by static exchange (the thesis filters captures and checks for the same reason).
"""

from __future__ import annotations

import gzip
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from latentchess.errors import DataFormatError, LatentChessError

__all__ = ["DistilConfig", "StaticEvaluator", "label_static", "iter_fens", "is_quiet"]

# Stockfish 15.1's win-probability curve of the shared data (``win_prob_white``).
_WIN_PROB_SLOPE = 0.00368208


@dataclass(frozen=True, kw_only=True)
class DistilConfig:
    """One static-labelling run.

    Attributes:
        sources: labelled CSVs (or plain FEN lists) whose first column is a FEN.
        out: output directory of ``part-NNNNNN.csv.gz`` files.
        stockfish: the Stockfish binary.
        shard: (index, count): this process takes chunks ``index, index + count, ...``.
        chunk: input positions per output part.
        random_plies: weights of playing 0, 1, 2, ... random legal moves before labelling.
        limit: stop after this many input positions, rounded up to whole chunks (a part is
            always complete, so a later run without a limit can trust every part it finds).
        seed: the random plies of input position ``i`` are seeded by ``(seed, i)``.
        progress: print rate and ETA.
    """

    sources: tuple[Path, ...]
    out: Path
    stockfish: str = "/usr/games/stockfish"
    shard: tuple[int, int] = (0, 1)
    chunk: int = 50_000
    random_plies: tuple[float, ...] = (0.5, 0.3, 0.2)
    limit: int | None = None
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        index, count = self.shard
        if count < 1 or not 0 <= index < count:
            raise LatentChessError(f"bad shard {index}/{count}; expected 0 <= I < N")
        if self.chunk < 1 or not self.random_plies or min(self.random_plies) < 0:
            raise LatentChessError("chunk must be >= 1 and random-ply weights >= 0")
        if not self.sources:
            raise LatentChessError("no position sources given")


class StaticEvaluator:
    """A Stockfish process answering ``eval`` (its static evaluation, White's view, centipawns).

    python-chess's engine API has no ``eval`` command, so this speaks UCI over a pipe itself;
    use it in a ``with`` block (the process is closed on exit).
    """

    def __init__(self, binary: str) -> None:
        try:
            self._process = subprocess.Popen(
                [binary],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
        except OSError as error:
            raise LatentChessError(f"cannot start Stockfish {binary!r}: {error}") from error
        self._send("uci\nsetoption name Threads value 1\nisready")
        self._read_until("readyok")

    def __enter__(self) -> StaticEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._send("quit")
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()

    def _send(self, text: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(text + "\n")
        self._process.stdin.flush()

    def _read_until(self, prefix: str) -> str:
        assert self._process.stdout is not None
        while True:
            line = self._process.stdout.readline()
            if not line:
                raise LatentChessError("Stockfish exited while answering")
            if line.startswith(prefix):
                return line

    def evaluate(self, fen: str) -> int | None:
        """Stockfish's final static evaluation of ``fen`` (White's view, cp); ``None`` in check."""
        self._send(f"position fen {fen}\neval")
        line = self._read_until("Final evaluation")
        # "Final evaluation  +0.44 (white side) [with scaled NNUE, ...]", "... none (in check)"
        value = line.split()[2]
        if value == "none":
            return None
        return round(float(value) * 100)


def iter_fens(sources: tuple[Path, ...]) -> Iterator[tuple[Path, int, str]]:
    """(file, line or record number, FEN) of every position of the sources: the first
    comma-separated field of each line of a CSV file (gzip or not; lines count from 1), and
    otherwise the positions of what the feature cache reads
    (:func:`~latentchess.nnue.dataset.labelled_rows`): ``data selfplay`` ``.bin`` records (counted
    from 0, as ``read_records`` and its errors number them, at byte offset 40 x number),
    ``data label``'s Parquet shards (rows from 1), or a directory of these and labelled CSVs."""
    from latentchess.nnue.dataset import labelled_rows

    for path in sources:
        if not path.exists():
            raise LatentChessError(f"position source {str(path)!r} does not exist")
        if path.is_file() and path.suffix not in (".bin", ".parquet"):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
                for number, line in enumerate(handle, start=1):
                    fen = line.split(",", 1)[0].strip()
                    if fen:
                        yield path, number, fen
            continue
        found = False
        for file, number, fields, _ in labelled_rows(path):
            found = True
            yield file, number, fields[0]
        if not found and path.is_dir():
            raise LatentChessError(
                f"position source {str(path)!r} holds no .bin, .parquet or labelled CSV files"
            )


def _perturb(fen: str, plies: int, rng: random.Random) -> object | None:
    """The position ``plies`` random legal moves after ``fen`` (core board), or ``None``."""
    from latentchess.core import _native

    position = _native.Position(fen)
    for _ in range(plies):
        moves = position.legal_moves()
        if not moves:
            return None
        position.push(rng.choice(moves))
    return position


def is_quiet(position: object) -> bool:
    """Not in check and no capture winning material by static exchange for the side to move."""
    from latentchess.core import _native

    if position.in_check() or not position.has_legal_move():  # type: ignore[attr-defined]
        return False
    for bits in position.legal_captures():  # type: ignore[attr-defined]
        uci = _native.move_to_uci(bits)
        if _native.see_at_least(position, uci, 1):
            return False
    return True


def _write_part(path: Path, rows: list[str]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as handle:
        handle.writelines(rows)
    os.replace(tmp, path)


def label_static(cfg: DistilConfig) -> dict[str, int]:
    """Label the sources' positions (perturbed by random plies) with Stockfish's static eval.

    Returns the verdict counts of this invocation (``kept``, ``not_quiet``, ``no_move``).
    """
    cfg.out.mkdir(parents=True, exist_ok=True)
    index, count = cfg.shard
    weights = list(cfg.random_plies)
    counts = {"kept": 0, "not_quiet": 0, "no_move": 0, "skipped_done": 0}
    started, done_here = time.monotonic(), 0
    # The part being filled and its rows; None while in a chunk of another shard or already done.
    rows: list[str] | None = None
    chunk_id = -1
    part: Path | None = None
    with StaticEvaluator(cfg.stockfish) as stockfish:
        for i, (path, number, fen) in enumerate(iter_fens(cfg.sources)):
            if cfg.limit is not None and i >= cfg.limit and i % cfg.chunk == 0:
                break
            if i // cfg.chunk != chunk_id:  # a chunk boundary: flush the previous part
                if part is not None and rows is not None:
                    _write_part(part, rows)
                chunk_id = i // cfg.chunk
                part = cfg.out / f"part-{chunk_id:06d}.csv.gz"
                mine = chunk_id % count == index
                rows = [] if mine and not part.exists() else None
                if mine and part.exists():
                    counts["skipped_done"] += 1
                if rows is None:
                    part = None
            if rows is None:
                continue
            rng = random.Random(f"{cfg.seed}:{i}")
            plies = rng.choices(range(len(weights)), weights=weights)[0]
            try:
                position = _perturb(fen, plies, rng)
            except ValueError as error:
                problem = f"bad FEN {fen!r}: {error}"
                if path.suffix == ".bin":
                    raise DataFormatError(
                        f"record {number}: {problem}", path=path, offset=number * 40
                    ) from error
                raise DataFormatError(problem, path=path, line=number) from error
            if position is None:
                counts["no_move"] += 1
                continue
            if not is_quiet(position):
                counts["not_quiet"] += 1
                continue
            board_fen = position.fen()  # type: ignore[attr-defined]
            cp = stockfish.evaluate(board_fen)
            if cp is None:
                counts["not_quiet"] += 1
                continue
            win = 1.0 / (1.0 + math.exp(-_WIN_PROB_SLOPE * cp))
            rows.append(f"{board_fen},{cp},,{win:.6f},,0,\n")
            counts["kept"] += 1
            done_here += 1
            if cfg.progress and done_here % 20_000 == 0:
                rate = done_here / (time.monotonic() - started)
                total = f" of ~{cfg.limit // count}" if cfg.limit else ""
                eta = (
                    f", ETA {(cfg.limit // count - done_here) / rate / 60:.1f} min"
                    if cfg.limit
                    else ""
                )
                print(
                    f"nnue label-static [{index}/{count}]: {done_here}{total} labelled, "
                    f"{rate:.0f}/s{eta}",
                    file=sys.stderr,
                    flush=True,
                )
        if part is not None and rows is not None:
            _write_part(part, rows)
    return counts
