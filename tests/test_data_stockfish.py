"""The Stockfish labeller: perspective, exact labels, crash recovery (real Stockfish)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from latentchess.data.stockfish import (
    MATE_SCORE_CP,
    Labeller,
    cp_win_probability,
    find_stockfish,
    make_limit,
    terminal_label,
)
from latentchess.errors import EngineError
from latentchess.winprob import win_probability

# Black to move and clearly better (White has given up a rook): a perspective bug flips the sign.
BLACK_BETTER = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB2 b Qkq - 0 3"
WHITE_MATES_IN_2 = "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1"  # Rd8 mate is in 1; still a mate


@pytest.fixture(scope="module")
def stockfish() -> Path:
    return find_stockfish()  # fails loudly when Stockfish is missing


def test_label_matches_direct_stockfish_call_from_whites_view(stockfish: Path) -> None:
    board = chess.Board(BLACK_BETTER)
    limit = chess.engine.Limit(depth=8)
    with chess.engine.SimpleEngine.popen_uci(str(stockfish)) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        info = engine.analyse(board, limit)
    direct_white = info["score"].white().score()
    with Labeller(limit, binary=stockfish) as labeller:
        label = labeller.label(board)
    assert label.cp_white == direct_white
    assert label.cp_white is not None and label.cp_white < -200  # Black is a rook up
    assert label.win_prob_white == pytest.approx(float(win_probability(direct_white)))
    assert label.win_prob_white < 0.5
    assert label.depth == 8 and label.nodes > 0
    assert label.best_move in board.legal_moves


def test_mate_is_exactly_one_and_gap_uses_mate_score(stockfish: Path) -> None:
    with Labeller(make_limit(depth=6), binary=stockfish, multipv=3) as labeller:
        white = labeller.label(chess.Board(WHITE_MATES_IN_2))
        black = labeller.label(chess.Board(WHITE_MATES_IN_2).mirror())
    assert white.win_prob_white == 1.0 and white.mate_white == 1 and white.cp_white is None
    assert black.win_prob_white == 0.0 and black.mate_white == -1
    assert white.best_move == chess.Move.from_uci("d1d8")
    assert len(white.lines) == 3
    # Best line mates in 1, the second does not: the gap is on the mate scale.
    assert white.multipv_gap_cp is not None and white.multipv_gap_cp > MATE_SCORE_CP // 2


def test_positions_decided_by_rules_need_no_engine() -> None:
    mated = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    label = terminal_label(mated)
    assert label is not None and label.win_prob_white == 1.0 and label.mate_white == 0
    white_mated = terminal_label(chess.Board("8/8/8/8/8/6k1/6q1/7K w - - 0 1"))
    assert white_mated is not None and white_mated.win_prob_white == 0.0
    stalemate = terminal_label(chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"))
    assert stalemate is not None and stalemate.win_prob_white == 0.5 and stalemate.depth == 0
    assert terminal_label(chess.Board()) is None
    row = label.row(mated.fen(), source="test", game=3, ply=7)
    assert row["win_prob_white"] == 1.0 and row["best_move"] is None and row["game"] == 3


def test_centipawn_labels_never_reach_exact_zero_or_one_even_in_float32() -> None:
    for cp in (-20_000, -5_000, 4_600, 12_000, 20_000):
        p = cp_win_probability(cp)
        assert 0.0 < p < 1.0
        assert 0.0 < np.float32(p) < 1.0
    assert cp_win_probability(35) == pytest.approx(float(win_probability(35)))


def test_killed_stockfish_is_restarted_and_the_position_retried(stockfish: Path) -> None:
    board = chess.Board(BLACK_BETTER)
    with Labeller(make_limit(depth=6), binary=stockfish) as labeller:
        first = labeller.label(board)
        pid = labeller.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        again = labeller.label(board)
        assert labeller.restarts == 1 and labeller.pid != pid
    assert again.cp_white == first.cp_white


def _fake_engine(tmp_path: Path, crashes: int) -> Path:
    """A tiny UCI engine that dies on its first ``crashes`` searches, then answers e2e4."""
    counter = tmp_path / "crashes"
    script = tmp_path / "fake_engine.py"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        f"counter = pathlib.Path({str(counter)!r})\n"
        "for line in sys.stdin:\n"
        "    cmd = line.split()\n"
        "    if not cmd: continue\n"
        "    if cmd[0] == 'uci':\n"
        "        print('id name Fake')\n"
        "        print('option name Threads type spin default 1 min 1 max 64')\n"
        "        print('option name Hash type spin default 16 min 1 max 1024')\n"
        "        print('uciok', flush=True)\n"
        "    elif cmd[0] == 'isready': print('readyok', flush=True)\n"
        "    elif cmd[0] == 'go':\n"
        "        done = int(counter.read_text()) if counter.exists() else 0\n"
        f"        if done < {crashes}:\n"
        "            counter.write_text(str(done + 1)); sys.exit(3)\n"
        "        print('info depth 1 score cp 20 nodes 5 pv e2e4')\n"
        "        print('bestmove e2e4', flush=True)\n"
        "    elif cmd[0] == 'quit': break\n"
    )
    script.chmod(0o755)
    return script


def test_crash_then_recovery_with_a_fake_engine(tmp_path: Path) -> None:
    engine = _fake_engine(tmp_path, crashes=2)
    with Labeller(make_limit(depth=1), binary=engine, max_retries=3) as labeller:
        label = labeller.label(chess.Board())
    assert labeller.restarts == 2
    assert label.best_move == chess.Move.from_uci("e2e4") and label.cp_white == 20


def test_retries_are_bounded(tmp_path: Path) -> None:
    engine = _fake_engine(tmp_path, crashes=100)
    with (
        Labeller(make_limit(depth=1), binary=engine, max_retries=2) as labeller,
        pytest.raises(EngineError, match="failed 3 times on 'rnbqkbnr"),
    ):
        labeller.label(chess.Board())


def test_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="Stockfish not found"):
        find_stockfish(tmp_path / "no-such-stockfish")


def test_limits() -> None:
    assert make_limit().depth == 9
    assert make_limit(nodes=5000).nodes == 5000
    with pytest.raises(ValueError, match="not both"):
        make_limit(depth=3, nodes=10)
