"""Lazy SMP in the native alpha-beta search: several threads over one shared transposition table.

Legal moves and sane scores with 2 and 4 threads, mates, MultiPV and ``searchmoves`` on the main
thread, the node limit counting every thread, an immediate ``stop``, the ``Threads`` option over
UCI, and ``bench`` (one thread, whatever the engine's setting) unchanged.
"""

from __future__ import annotations

import threading
import time

import chess
import chess.engine
import pytest

from latentchess.core.alphabeta import AlphaBeta, StopSignal
from latentchess.core.bench import bench_boards, run_bench
from latentchess.engines.ab import MAX_THREADS, AlphaBetaConfig, AlphaBetaEngine
from latentchess.engines.registry import create_engine
from latentchess.errors import EngineError
from test_ab_search import MATES
from test_ab_uci import Transcript

BENCH_SIGNATURE = 1640658
"""``latentchess bench`` (depth 11, one thread): the node count of the default search (ProbCut,
the singular negative extension, root LMR, capture history and the three switches of bundle2 on
since 2026-11-27), the same with Lazy SMP's code in place."""


def test_threads_are_set_and_checked() -> None:
    engine = AlphaBeta("hce", hash_mb=4, threads=3)
    assert engine.threads == 3
    engine.threads = 1
    assert engine.threads == 1
    for bad in (0, -1, 100_000):
        with pytest.raises(EngineError, match="threads must lie in"):
            AlphaBeta("hce", hash_mb=4, threads=bad)
    assert engine.threads == 1
    assert create_engine("ab:eval=hce,threads=2,hash=4").config.threads == 2  # type: ignore[attr-defined]
    with pytest.raises(EngineError, match=f"\\[1, {MAX_THREADS}\\]"):
        AlphaBetaConfig(evaluator="hce", threads=MAX_THREADS + 1)


@pytest.mark.parametrize("threads", [2, 4])
def test_several_threads_play_legal_moves_with_sane_scores(threads: int) -> None:
    single = AlphaBeta("hce", hash_mb=8)
    engine = AlphaBeta("hce", hash_mb=8, threads=threads)
    for board in bench_boards()[::3]:
        engine.new_game()
        single.new_game()
        outcome = engine.search(board, chess.engine.Limit(depth=7))
        reference = single.search(board, chess.engine.Limit(depth=7))
        assert outcome.best_move in board.legal_moves, board.fen()
        line = outcome.info.lines[0]
        assert outcome.info.depth == 7 and line.pv[0] == outcome.best_move
        scratch = board.copy()
        for move in line.pv:
            assert move in scratch.legal_moves, (board.fen(), line.pv)
            scratch.push(move)
        # Not a mate where one thread sees none, and near the one-thread score.
        assert line.mate is None and reference.info.lines[0].mate is None, board.fen()
        assert line.score_cp is not None and reference.info.lines[0].score_cp is not None
        assert abs(line.score_cp - reference.info.lines[0].score_cp) <= 150, board.fen()
        # Timed: the helpers' nodes count too.
        outcome = engine.search(board, chess.engine.Limit(time=0.2))
        assert outcome.best_move in board.legal_moves and outcome.nodes > 0
        assert outcome.info.nodes == outcome.nodes


@pytest.mark.parametrize(("fen", "moves"), MATES)
def test_two_threads_find_mate_in_n(fen: str, moves: int) -> None:
    engine = AlphaBeta("hce", hash_mb=8, threads=2)
    for limit in (chess.engine.Limit(depth=2 * moves + 2), chess.engine.Limit(time=0.5)):
        engine.new_game()
        board = chess.Board(fen)
        outcome = engine.search(board, limit)
        line = outcome.info.lines[0]
        assert line.mate == moves and outcome.best_move == line.pv[0]
        for move in line.pv[: 2 * moves - 1]:
            assert move in board.legal_moves
            board.push(move)
        assert board.is_checkmate()


def test_multipv_and_searchmoves_with_two_threads() -> None:
    engine = AlphaBeta("hce", hash_mb=8, threads=2)
    board = chess.Board()
    outcome = engine.search(board, chess.engine.Limit(depth=6), multipv=3)
    lines = outcome.info.lines
    assert [line.multipv for line in lines] == [1, 2, 3]
    assert len({line.pv[0] for line in lines}) == 3
    scores = [line.score_cp for line in lines]
    assert all(score is not None for score in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert outcome.best_move == lines[0].pv[0]
    allowed = [chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h4")]
    for limit in (chess.engine.Limit(depth=6), chess.engine.Limit(time=0.3)):
        outcome = engine.search(board, limit, search_moves=allowed)
        assert outcome.best_move in allowed


def test_the_node_limit_counts_every_thread() -> None:
    engine = AlphaBeta("hce", hash_mb=8, threads=2)
    outcome = engine.search(chess.Board(), chess.engine.Limit(nodes=50_000))
    # Every thread checks the total; each publishes its count every 256 nodes.
    assert 40_000 <= outcome.nodes <= 50_000 + 2 * 2 * 256


def test_stop_ends_an_infinite_two_thread_search_at_once() -> None:
    engine = AlphaBeta("hce", hash_mb=8, threads=2)
    for stop in (StopSignal(), threading.Event()):
        result: list[chess.Move | None] = []

        def search(signal: threading.Event = stop, found: list = result) -> None:
            outcome = engine.search(chess.Board(), chess.engine.Limit(), infinite=True, stop=signal)
            found.append(outcome.best_move)

        thread = threading.Thread(target=search)
        thread.start()
        time.sleep(0.3)
        began = time.monotonic()
        stop.set()
        thread.join(2.0)
        assert not thread.is_alive() and time.monotonic() - began < 0.5
        assert result and result[0] in chess.Board().legal_moves


def test_uci_threads_option_search_and_stop() -> None:
    t = Transcript()
    t.send("uci")
    t.wait_for("uciok")
    t.send("setoption name Threads value 2", "isready")
    t.wait_for("readyok")
    assert not [line for line in t.strings() if "refused" in line]
    engine = t.session.engine
    assert isinstance(engine, AlphaBetaEngine) and engine.config.threads == 2
    t.send("position startpos moves e2e4", "go depth 6")
    move = t.wait_for("bestmove").split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves
    assert [line for line in t.lines if line.startswith("info depth 6 ")]
    # The single-thread stop test's bound (test_ab_uci.py).
    t.send("position startpos", "go infinite")
    time.sleep(0.5)
    began = time.monotonic()
    t.send("stop")
    move = t.wait_for("bestmove", timeout=2.0).split()[1]
    assert time.monotonic() - began < 0.25
    assert chess.Move.from_uci(move) in chess.Board().legal_moves
    t.send("setoption name Threads value 1", "isready")
    t.wait_for("readyok")
    assert engine.config.threads == 1 and engine._search.threads == 1
    t.send("quit")


def test_bench_is_single_threaded_and_unchanged() -> None:
    result = run_bench()
    assert result.nodes == BENCH_SIGNATURE
