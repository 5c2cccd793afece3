"""Positions from the user's files: PGN games (plain, ``.gz``, ``.xz``, ``.zst``), EPD, one FEN a
line, or the positions of Stockfish ``.bin`` training records (``data selfplay``'s output).

Every reader streams, checks each record and reports a bad one with its file and line through a
:class:`~latentchess.data.problems.ProblemLog` (skip and count, or raise with ``strict``). A PGN
game with any error (an illegal move, a bad ``FEN`` header, a variant) is skipped whole; an EPD or
FEN line must hold a legal position (Stockfish may crash on an impossible one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

import chess
import chess.pgn
import numpy as np

from latentchess.data.problems import ProblemLog
from latentchess.textfiles import open_text, strip_compression

__all__ = [
    "Position",
    "InputFormat",
    "open_text",
    "detect_format",
    "read_positions",
    "estimate_positions",
]

InputFormat = Literal["pgn", "epd", "fen", "bin"]


@dataclass(frozen=True, kw_only=True)
class Position:
    """One position read from a file.

    Attributes:
        fen: full FEN.
        line: line of the record, or of the first line of its PGN game.
        game: game index in the file (PGN only, counting skipped games too).
        ply: ply number of the position (from its FEN's move counters).
    """

    fen: str
    line: int
    game: int | None = None
    ply: int | None = None


def detect_format(path: str | Path) -> InputFormat:
    """Guess a file's format from its name (``.pgn``, ``.epd``, ``.fen``, ``.txt``, after any
    ``.gz``/``.xz``/``.zst``; ``.bin``), else from its first non-empty line (``[`` or a move
    number means PGN)."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".bin"):
        return "bin"
    name = strip_compression(name)
    if name.endswith(".pgn"):
        return "pgn"
    if name.endswith(".epd"):
        return "epd"
    if name.endswith((".fen", ".txt")):
        return "fen"
    with open_text(path) as handle:
        for line in handle:
            text = line.strip()
            if text and not text.startswith("#"):
                return "pgn" if text.startswith("[") or text[0].isdigit() else "fen"
    return "fen"


class _CountingReader:
    """Gives python-chess's PGN parser lines while remembering where each game began."""

    def __init__(self, handle: TextIO) -> None:
        self.handle = handle
        self.line = 0
        self.game_line: int | None = None

    def readline(self) -> str:
        text = self.handle.readline()
        if text:
            self.line += 1
            if self.game_line is None and text.strip():
                self.game_line = self.line
        return text


def _sample_plies(count: int, per_game: int | None, seed: int, game: int) -> list[int]:
    if per_game is None or per_game >= count:
        return list(range(count))
    rng = np.random.default_rng([seed, game])
    return sorted(int(i) for i in rng.choice(count, size=per_game, replace=False))


def _read_pgn(
    path: Path, problems: ProblemLog, per_game: int | None, seed: int
) -> Iterator[Position]:
    with open_text(path) as handle:
        reader = _CountingReader(handle)
        game_index = 0
        while True:
            reader.game_line = None
            try:
                game = chess.pgn.read_game(reader)  # type: ignore[arg-type]
            except Exception as error:  # python-chess's parser itself can fail (IndexError
                # on an unbalanced ')'): report the game, read on from where it stopped
                problems.report(
                    f"unreadable PGN game #{game_index + 1}: {type(error).__name__}: {error}",
                    path=path,
                    line=reader.game_line or reader.line,
                )
                game_index += 1
                continue
            if game is None:
                return
            line = reader.game_line or reader.line
            index, game_index = game_index, game_index + 1
            if game.errors:  # before game.board(), which raises again on a bad FEN header
                problems.report(
                    f"broken PGN game #{index + 1}: {game.errors[0]}", path=path, line=line
                )
                continue
            try:
                board = game.board()
            except ValueError as error:
                problems.report(f"broken PGN game #{index + 1}: {error}", path=path, line=line)
                continue
            if board.uci_variant != "chess":
                problems.report(
                    f"game #{index + 1} is a {board.uci_variant!r} game, not standard chess",
                    path=path,
                    line=line,
                )
                continue
            if not board.is_valid():
                problems.report(
                    f"game #{index + 1} starts from an impossible position {board.fen()!r}",
                    path=path,
                    line=line,
                )
                continue
            fens = [board.fen()]
            plies = [board.ply()]
            for move in game.mainline_moves():
                board.push(move)
                fens.append(board.fen())
                plies.append(board.ply())
            for i in _sample_plies(len(fens), per_game, seed, index):
                yield Position(fen=fens[i], line=line, game=index, ply=plies[i])


def _parse_line(text: str, fmt: InputFormat) -> chess.Board:
    if fmt == "epd":
        board, _ops = chess.Board.from_epd(text)
        return board
    return chess.Board(text)


def _read_lines(path: Path, fmt: InputFormat, problems: ProblemLog) -> Iterator[Position]:
    with open_text(path) as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            try:
                board = _parse_line(text, fmt)
            except ValueError as error:
                problems.report(f"bad {fmt.upper()} {text!r}: {error}", path=path, line=number)
                continue
            if not board.is_valid():
                problems.report(
                    f"impossible position {text!r} ({board.status()!r})", path=path, line=number
                )
                continue
            yield Position(fen=board.fen(), line=number, ply=board.ply())


def _read_bin(path: Path) -> Iterator[Position]:
    """The positions of ``.bin`` records; ``line`` is the record number, from 0 as ``data
    show-bin`` and :func:`~latentchess.data.packed_sfen.read_records` count them. A malformed
    record raises :class:`~latentchess.errors.DataFormatError` naming it (binary: no skipping)."""
    from latentchess.data.packed_sfen import read_records

    for number, record in read_records(path):
        yield Position(fen=record.fen, line=number, ply=record.ply)


def read_positions(
    path: str | Path,
    *,
    fmt: InputFormat | None = None,
    per_game: int | None = None,
    seed: int = 0,
    problems: ProblemLog | None = None,
) -> Iterator[Position]:
    """Stream the positions of a PGN, EPD, FEN-list or ``.bin`` file.

    Args:
        path: the file (``.gz`` / ``.xz`` / ``.zst`` are decompressed).
        fmt: ``"pgn"``, ``"epd"``, ``"fen"`` or ``"bin"``; None detects it
            (:func:`detect_format`).
        per_game: PGN only: keep this many positions per game, drawn without replacement from
            the seed and the game index (so reruns draw the same ones); None keeps all.
        seed: seed of that draw.
        problems: where malformed records go (default: skip and print them).

    Raises:
        FileNotFoundError: if the file does not exist.
        DataFormatError: a malformed record when ``problems`` is strict.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    if per_game is not None and per_game < 1:
        raise ValueError(f"per_game must be >= 1, got {per_game!r}")
    problems = ProblemLog() if problems is None else problems
    fmt = detect_format(path) if fmt is None else fmt
    if fmt == "pgn":
        yield from _read_pgn(path, problems, per_game, seed)
    elif fmt in ("epd", "fen"):
        yield from _read_lines(path, fmt, problems)
    elif fmt == "bin":
        yield from _read_bin(path)
    else:
        raise ValueError(f"unknown input format {fmt!r}; expected 'pgn', 'epd', 'fen' or 'bin'")


def estimate_positions(path: str | Path, fmt: InputFormat, per_game: int | None) -> int | None:
    """A quick count of what :func:`read_positions` will yield, for a progress bar's ETA.

    Exact for EPD and FEN lists (before malformed lines are dropped) and ``.bin`` files; for PGN
    it is games times ``per_game`` (an upper bound), or None without ``per_game``.
    """
    if fmt == "bin":
        from latentchess.data.packed_sfen import RECORD_SIZE

        return Path(path).stat().st_size // RECORD_SIZE
    if fmt == "pgn" and per_game is None:
        return None
    count = 0
    with open_text(path) as handle:
        for line in handle:
            if fmt == "pgn":
                count += line.startswith("[Event ")
            else:
                text = line.strip()
                count += bool(text) and not text.startswith("#")
    return count * per_game if fmt == "pgn" and per_game is not None else count
