"""Trivial in-process engines: the bottom rung of a ladder and stand-ins for tests."""

from __future__ import annotations

import random

import chess
import chess.engine

from latentchess.engines.base import Analysis
from latentchess.errors import EngineError

__all__ = ["RandomEngine"]


class RandomEngine:
    """Plays a uniformly random legal move (seeded, so games are reproducible).

    Args:
        seed: seed of its private random generator.
        name: display name.
    """

    def __init__(self, seed: int = 0, name: str = "random") -> None:
        self.name = name
        self.seed = seed
        self._rng = random.Random(seed)

    def new_game(self) -> None:
        """Nothing to forget between games (the generator keeps running)."""

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """A random legal move; ``limit`` is ignored (it answers at once)."""
        moves = list(board.legal_moves)
        if not moves:
            raise EngineError(f"no legal move in {board.fen()!r}")
        return self._rng.choice(moves)

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """The move it would play, with no score."""
        move = self.play(board, limit)
        return Analysis(best_move=move, pv=[move], depth=1, nodes=1)

    def close(self) -> None:
        """Nothing to release."""
