"""The one interface every engine shares, ours in each mode and external UCI engines alike.

Limits are python-chess's :class:`chess.engine.Limit` (time, depth, nodes, clock), so any engine
plugs into matches, puzzles and benchmarks the same way (as in DeepMind's searchless_chess).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import chess
import chess.engine

__all__ = ["Engine", "Analysis", "MoveScore"]


@dataclass(frozen=True, kw_only=True)
class MoveScore:
    """One root move as an engine sees it.

    Attributes:
        move: the move.
        score: engine-specific score from White's view (ours: axis cosine; UCI engines: cp).
        rank: 1 for the move the engine would play.
        win_prob_white: calibrated White win probability after the move, if known.
    """

    move: chess.Move
    score: float
    rank: int
    win_prob_white: float | None = None


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """What an engine reports about a position.

    Attributes:
        best_move: the move it would play (None only when there is no legal move).
        pv: principal variation starting with ``best_move``.
        score_cp: centipawns from the side to move's view (UCI convention), if known.
        mate: moves to mate from the side to move's view (positive: it mates), if known.
        win_prob_white: White's win probability, if known.
        depth: search depth reached, in plies.
        nodes: positions evaluated (ours: positions embedded).
        time_s: wall time spent.
        moves: per-root-move scores, best first, when the engine reports them.
        wdl: (win, draw, loss) permille of the side to move, when the engine has a WDL head.
    """

    best_move: chess.Move | None
    pv: list[chess.Move] = field(default_factory=list)
    score_cp: int | None = None
    mate: int | None = None
    win_prob_white: float | None = None
    depth: int = 0
    nodes: int = 0
    time_s: float = 0.0
    moves: list[MoveScore] = field(default_factory=list)
    wdl: tuple[int, int, int] | None = None


@runtime_checkable
class Engine(Protocol):
    """A chess engine: picks a move under a limit and can explain a position."""

    name: str

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """Return a legal move for ``board`` (which must have one) within ``limit``."""
        ...

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """Search ``board`` within ``limit`` and report the result."""
        ...

    def close(self) -> None:
        """Release processes and memory; the engine is unusable afterwards."""
        ...
