"""Win probabilities: the ChessBench logistic, mates, and perspective flips."""

from __future__ import annotations

import math

import chess
import chess.engine
import numpy as np
import pytest

from latentchess import (
    centipawns,
    score_win_probability,
    side_to_move_perspective,
    white_perspective,
    win_probability,
)


def test_logistic_values() -> None:
    assert win_probability(0) == 0.5
    assert win_probability(100) == pytest.approx(1 / (1 + math.exp(-0.368208)))
    assert win_probability(-100) == pytest.approx(1 - win_probability(100))
    assert 0.0 < win_probability(-5000) < 1e-7
    array = win_probability(np.array([-100.0, 0.0, 100.0]))
    assert isinstance(array, np.ndarray)
    np.testing.assert_allclose(array, [1 - win_probability(100), 0.5, win_probability(100)])
    assert win_probability(-1e6) == 0.0 and win_probability(1e6) == 1.0


def test_centipawns_inverts() -> None:
    for cp in (-700, -35, 0, 12, 400):
        assert centipawns(float(win_probability(cp))) == pytest.approx(cp)
    assert centipawns(1.0) == math.inf and centipawns(0.0) == -math.inf
    with pytest.raises(ValueError):
        centipawns(1.5)


def test_mates_are_exact() -> None:
    assert score_win_probability(chess.engine.Mate(3)) == 1.0
    assert score_win_probability(chess.engine.Mate(-2)) == 0.0
    assert score_win_probability(chess.engine.Mate(0)) == 0.0  # checkmated
    assert score_win_probability(chess.engine.Cp(0)) == 0.5


def test_perspective_flip() -> None:
    assert white_perspective(0.8, chess.WHITE) == 0.8
    assert white_perspective(0.8, chess.BLACK) == pytest.approx(0.2)
    assert white_perspective(1.0, chess.BLACK) == 0.0
    for p in (0.0, 0.3, 1.0):
        for turn in (chess.WHITE, chess.BLACK):
            assert side_to_move_perspective(white_perspective(p, turn), turn) == pytest.approx(p)
