"""Win probabilities from Stockfish scores, and the two perspectives they are stated in.

ChessBench labels are the win probability of the side to move, converted from Stockfish
centipawns with the logistic below (Ruoss et al. 2024). The SOLIS paper trains on White's
perspective. A mate found for a side is a certain result: exactly 1.0 or 0.0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import chess
import chess.engine

if TYPE_CHECKING:  # NumPy only for arrays: the scalar functions serve `uci` without it
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "WIN_PROB_SCALE",
    "win_probability",
    "centipawns",
    "score_win_probability",
    "white_perspective",
    "side_to_move_perspective",
]

WIN_PROB_SCALE: float = 0.00368208
"""Slope of the logistic that maps centipawns to a win probability (ChessBench)."""


def win_probability(cp: float | npt.ArrayLike) -> float | npt.NDArray[np.float64]:
    """``1 / (1 + exp(-0.00368208 * cp))``, scalar or element-wise on an array."""
    if isinstance(cp, int | float):  # a Python number: no NumPy needed
        return _win_probability(float(cp))
    import numpy as np

    if np.isscalar(cp):
        return _win_probability(float(cp))  # type: ignore[arg-type]
    array = np.asarray(cp, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(np.clip(-WIN_PROB_SCALE * array, -700.0, 700.0)))


def _win_probability(cp: float) -> float:
    x = -WIN_PROB_SCALE * cp
    # Written so that large |cp| neither overflows exp nor rounds to exactly 0/1 needlessly.
    return 1.0 / (1.0 + math.exp(x)) if x < 700 else 0.0


def centipawns(p: float) -> float:
    """Inverse of :func:`win_probability`; +-inf at exactly 1.0 / 0.0."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"win probability must lie in [0, 1], got {p!r}")
    if p in (0.0, 1.0):
        return math.inf if p == 1.0 else -math.inf
    return math.log(p / (1.0 - p)) / WIN_PROB_SCALE


def score_win_probability(score: chess.engine.Score) -> float:
    """Win probability of a python-chess :class:`~chess.engine.Score` from its own point of view.

    A mate in n for this side is 1.0, being mated (including ``Mate(0)``, i.e. checkmated) is 0.0.
    """
    mate = score.mate()
    if mate is not None:
        return 1.0 if mate > 0 else 0.0
    cp = score.score()
    assert cp is not None
    return float(win_probability(cp))


def white_perspective(p_side_to_move: float, turn: chess.Color) -> float:
    """Convert a side-to-move win probability to White's: ``p`` if White moves, else ``1 - p``."""
    return p_side_to_move if turn == chess.WHITE else 1.0 - p_side_to_move


def side_to_move_perspective(p_white: float, turn: chess.Color) -> float:
    """Convert White's win probability to the side to move's (the flip is its own inverse)."""
    return white_perspective(p_white, turn)
