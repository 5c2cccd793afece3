"""Trivial in-process engines: the bottom rung of a ladder and stand-ins for tests."""

from __future__ import annotations

import random

import chess
import chess.engine

from latentchess.engines.base import Analysis, Engine
from latentchess.errors import EngineError

__all__ = ["RandomEngine", "GreedyCaptureEngine"]


class RandomEngine(Engine):
    """Plays a uniformly random legal move (seeded, so games are reproducible).

    Args:
        seed: seed of its private random generator.
        name: display name.
    """

    def __init__(self, seed: int = 0, name: str = "random") -> None:
        self.name = name
        self.seed = seed
        self._rng = random.Random(seed)

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """A random legal move; ``limit`` is ignored (it answers at once)."""
        moves = list(board.legal_moves)
        if not moves:
            raise EngineError(f"no legal move in {board.fen()!r}")
        return self._rng.choice(moves)

    def supports_chess960(self) -> bool:
        """It picks among python-chess's legal moves, in any mode."""
        return True

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """The move it would play, with no score."""
        move = self.play(board, limit)
        return Analysis(best_move=move, pv=[move], depth=1, nodes=1)


_PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


class GreedyCaptureEngine(RandomEngine):
    """A one-ply material grabber, a rung between random and any searching engine.

    It mates in one when it can, else takes the most valuable piece it can (the cheapest attacker
    first: MVV-LVA, promotions counted as captures of their piece), else plays a random legal
    move. It never looks at the reply, so it hangs pieces freely.

    Args:
        seed: seed of its private random generator (ties and quiet moves).
        name: display name.
    """

    def __init__(self, seed: int = 0, name: str = "greedy") -> None:
        super().__init__(seed=seed, name=name)

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """Mate in one, else the best capture by MVV-LVA, else a random move; no lookahead."""
        moves = list(board.legal_moves)
        if not moves:
            raise EngineError(f"no legal move in {board.fen()!r}")
        best: list[chess.Move] = []
        best_gain = 0
        for move in moves:
            board.push(move)
            mate = board.is_checkmate()
            board.pop()
            if mate:
                return move
            gain = _capture_gain(board, move)
            if gain > best_gain:
                best, best_gain = [move], gain
            elif gain == best_gain and gain > 0:
                best.append(move)
        return self._rng.choice(best or moves)


def _capture_gain(board: chess.Board, move: chess.Move) -> int:
    """MVV-LVA order key of a move (0 for a quiet move)."""
    gain = 0
    if board.is_en_passant(move):
        gain = 10 * _PIECE_VALUES[chess.PAWN]
    elif (victim := board.piece_type_at(move.to_square)) is not None:
        gain = 10 * _PIECE_VALUES[victim]
    if move.promotion is not None:
        gain += 10 * _PIECE_VALUES[move.promotion]
    if gain:
        attacker = board.piece_type_at(move.from_square)
        gain -= _PIECE_VALUES.get(attacker, 0) if attacker is not None else 0
        gain = max(gain, 1)
    return gain
