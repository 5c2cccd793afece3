"""Syzygy endgame tablebases at the root of a search (UCI ``SyzygyPath``), via ``chess.syzygy``.

When the root position is in the tables (few enough pieces, no castling rights), every root move is
ranked by its DTZ as Stockfish's root probing ranks it (a win the 50-move rule cannot spoil first,
then wins it may spoil, draws, losses it may save, losses) and only the best ones are searched: in
a won position the moves that reach the next zeroing move (capture, pawn move, mate) fastest, so
the engine always makes progress and wins within the 50-move rule; in a drawn position every
drawing move; in a lost one the moves that resist longest. The score reported is the tables':
``TB_WIN_CP - plies`` to the zeroing move for a win, 0 for a draw (a cursed win or a blessed loss
too: the 50-move rule draws them), the negative for a loss; a mate the search proves is kept.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.syzygy

from latentchess.core.alphabeta import SearchInfo, SearchLine, SearchOutcome
from latentchess.errors import EngineError

__all__ = ["TB_WIN_CP", "TablebaseRoot", "open_tablebases", "root_probe"]

TB_WIN_CP = 20_000
"""Centipawns of a tablebase win (minus the plies to its next zeroing move), below mate scores."""

_MAX_DTZ = 1 << 18  # above any DTZ: ranks of certain wins and losses


def open_tablebases(path: str) -> chess.syzygy.Tablebase | None:
    """The tables in ``path`` (directories joined by ``os.pathsep``, as UCI's ``SyzygyPath``);
    None for ``""`` or ``<empty>``.

    Raises:
        EngineError: a directory that does not exist or holds no ``.rtbw``/``.rtbz`` table.
    """
    path = path.strip()
    if path in ("", "<empty>"):
        return None
    tablebase = chess.syzygy.Tablebase()
    for directory in (part for part in path.split(os.pathsep) if part):
        if not Path(directory).is_dir():
            tablebase.close()
            raise EngineError(f"SyzygyPath: {directory!r} is not a directory")
        if tablebase.add_directory(directory) == 0:
            tablebase.close()
            raise EngineError(f"SyzygyPath: no Syzygy tables (.rtbw/.rtbz) in {directory!r}")
    return tablebase


@dataclass(frozen=True, kw_only=True)
class TablebaseRoot:
    """What the tables say about a root position.

    Attributes:
        moves: the root moves worth searching (best DTZ rank), python-chess's order.
        dtz: DTZ of the position by its best move, in plies (positive: the side to move wins).
        wdl: -2 loss, -1 blessed loss, 0 draw, 1 cursed win, 2 win (50-move rule counted).
        score_cp: the score to report, from the side to move's view.
    """

    moves: list[chess.Move]
    dtz: int
    wdl: int
    score_cp: int

    def rescore_line(self, line: SearchLine) -> SearchLine:
        """``line`` with the tables' score (a proven mate is kept)."""
        if line.mate is not None:
            return line
        return dataclasses.replace(line, score_cp=self.score_cp, bound="exact")

    def rescore_info(self, info: SearchInfo) -> SearchInfo:
        """Every line of ``info`` rescored."""
        return dataclasses.replace(info, lines=[self.rescore_line(x) for x in info.lines])

    def rescore(self, outcome: SearchOutcome) -> SearchOutcome:
        """The search's outcome with the tables' score."""
        return dataclasses.replace(outcome, info=self.rescore_info(outcome.info))

    def describe(self) -> str:
        """One line for ``info string``."""
        names = {2: "win", 1: "cursed win", 0: "draw", -1: "blessed loss", -2: "loss"}
        return f"syzygy: {names[self.wdl]}, dtz {self.dtz}, {len(self.moves)} root move(s) kept"


def _move_dtz(tablebase: chess.syzygy.Tablebase, board: chess.Board, move: chess.Move) -> int:
    """DTZ of the root by ``move``, counted from the root (Stockfish's root_probe)."""
    zeroing = board.is_zeroing(move)
    board.push(move)
    try:
        if board.is_checkmate():
            return 1
        if zeroing:  # the counter restarts: only the result of the new position matters
            return {2: 1, 1: 101, 0: 0, -1: -101, -2: -1}[-tablebase.probe_wdl(board)]
        if board.is_repetition(2):
            return 0
        dtz = -tablebase.probe_dtz(board)
        return dtz + 1 if dtz > 0 else dtz - 1 if dtz < 0 else 0
    finally:
        board.pop()


def _rank(dtz: int, halfmove_clock: int) -> tuple[int, int]:
    """Stockfish's rank of a move (certain wins equal, then the 50-move rule's verdicts), with a
    tie-break: the fastest zeroing move among wins, the longest resistance among losses."""
    if dtz > 0:
        certain = dtz + halfmove_clock <= 99
        return (_MAX_DTZ if certain else _MAX_DTZ - (dtz + halfmove_clock), -dtz)
    if dtz < 0:
        certain = -dtz * 2 + halfmove_clock < 100
        return (-_MAX_DTZ if certain else -_MAX_DTZ + (-dtz + halfmove_clock), -dtz)
    return (0, 0)


def root_probe(
    tablebase: chess.syzygy.Tablebase | None,
    board: chess.Board,
    moves: Iterable[chess.Move] | None = None,
) -> TablebaseRoot | None:
    """The tables' verdict on ``board`` and its best root moves (among ``moves``, default all
    legal moves); None without tables, with castling rights, or when a table is missing."""
    if tablebase is None or board.castling_rights or board.is_game_over():
        return None
    candidates = list(moves) if moves else list(board.legal_moves)
    probe = board.copy(stack=False)
    try:
        ranked = [
            (_rank(dtz, board.halfmove_clock), dtz, move)
            for move in candidates
            for dtz in [_move_dtz(tablebase, probe, move)]
        ]
    except (KeyError, chess.syzygy.MissingTableError):
        return None  # too many pieces, or a table that is not there
    if not ranked:
        return None
    best_rank = max(rank for rank, _, _ in ranked)
    kept = [(dtz, move) for rank, dtz, move in ranked if rank == best_rank]
    dtz = kept[0][0]
    clock = board.halfmove_clock
    if dtz > 0:
        wdl = 2 if dtz + clock <= 99 else 1
    elif dtz < 0:
        wdl = -2 if -dtz + clock <= 100 else -1
    else:
        wdl = 0
    score = {2: TB_WIN_CP - dtz, -2: -TB_WIN_CP - dtz}.get(wdl, 0)
    return TablebaseRoot(moves=[move for _, move in kept], dtz=dtz, wdl=wdl, score_cp=score)
