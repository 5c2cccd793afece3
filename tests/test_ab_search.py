"""The native alpha-beta search: mates, draws, limits, MultiPV, evaluation symmetry, bench."""

from __future__ import annotations

import threading
import time

import chess
import chess.engine
import chess.polyglot
import pytest

from latentchess.core import alphabeta as core_search
from latentchess.core.alphabeta import AlphaBeta, StopSignal, native_position
from latentchess.core.bench import BENCH_POSITIONS, bench_boards, run_bench
from latentchess.engines.ab import AlphaBetaEngine
from latentchess.engines.registry import create_engine
from latentchess.errors import EngineError

MATES = [
    ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", 1),
    ("6k1/pp4p1/2p5/2bp4/8/P5Pb/1P3rrP/2BRRN1K b - - 0 1", 2),
    ("r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1", 3),
    ("r1b1k1nr/p2p1ppp/n2B4/1p1NPN1P/6P1/3P1Q2/P1P1K3/q5b1 w kq - 0 1", 3),
]


@pytest.fixture(scope="module")
def engine() -> AlphaBeta:
    return AlphaBeta("hce", hash_mb=8)


@pytest.mark.parametrize(("fen", "moves"), MATES)
def test_finds_mate_in_n_and_its_pv_mates(engine: AlphaBeta, fen: str, moves: int) -> None:
    engine.new_game()
    board = chess.Board(fen)
    outcome = engine.search(board, chess.engine.Limit(depth=2 * moves + 2))
    line = outcome.info.lines[0]
    assert line.mate == moves and line.score_cp is None
    assert outcome.best_move == line.pv[0]
    for move in line.pv[: 2 * moves - 1]:
        assert move in board.legal_moves
        board.push(move)
    assert board.is_checkmate()


def test_checkmated_side_has_no_move_and_mated_side_sees_it(engine: AlphaBeta) -> None:
    mated = chess.Board("R5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 1 1")
    outcome = engine.search(mated, chess.engine.Limit(depth=3))
    assert outcome.best_move is None and outcome.info.lines == []
    # Black's only move Kb8 is met by Rh8#: mated in one.
    board = chess.Board("k7/8/1K6/8/8/8/8/7R b - - 0 1")
    line = engine.search(board, chess.engine.Limit(depth=4)).info.lines[0]
    assert line.mate == -1 and [m.uci() for m in line.pv[:2]] == ["a8b8", "h1h8"]


def test_avoids_stalemate_and_mates(engine: AlphaBeta) -> None:
    board = chess.Board("7k/8/6K1/8/8/8/8/5Q2 w - - 0 1")  # Qf7?? is stalemate
    outcome = engine.search(board, chess.engine.Limit(depth=4))
    board.push(outcome.best_move)
    assert board.is_checkmate()


def test_stalemate_and_insufficient_material_score_zero(engine: AlphaBeta) -> None:
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert engine.search(stalemate, chess.engine.Limit(depth=3)).best_move is None
    bare = chess.Board("8/8/4k3/8/8/3NK3/8/8 w - - 0 1")
    outcome = engine.search(bare, chess.engine.Limit(depth=6))
    assert outcome.info.lines[0].score_cp == 0


def test_repetition_against_the_game_history_is_a_draw(engine: AlphaBeta) -> None:
    # White is a queen up. After 1. Qd2 Kh8 2. Qd1, Black's ...Kg8 repeats the start position.
    board = chess.Board("6k1/8/8/8/8/8/5PPP/3Q2K1 w - - 0 1")
    for uci in ("d1d2", "g8h8", "d2d1"):
        board.push_uci(uci)
    engine.new_game()
    with_history = engine.search(board, chess.engine.Limit(depth=6))
    assert with_history.best_move == chess.Move.from_uci("h8g8")
    assert with_history.info.lines[0].score_cp == 0
    engine.new_game()
    without = engine.search(chess.Board(board.fen()), chess.engine.Limit(depth=6))
    assert without.info.lines[0].score_cp is not None and without.info.lines[0].score_cp < -500


def test_native_position_keeps_key_and_history() -> None:
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8", "e2e4"):
        board.push_uci(uci)
    position = native_position(board)
    assert position.fen() == board.fen()
    assert position.key() == chess.polyglot.zobrist_hash(board)


def test_multipv_lines_are_distinct_and_ordered(engine: AlphaBeta) -> None:
    engine.new_game()
    outcome = engine.search(chess.Board(), chess.engine.Limit(depth=5), multipv=3)
    lines = outcome.info.lines
    assert [line.multipv for line in lines] == [1, 2, 3]
    assert len({line.pv[0] for line in lines}) == 3
    scores = [line.score_cp for line in lines]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


ITALIAN = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"


@pytest.mark.parametrize(
    ("fen", "nodes"),
    # Node limits that stop an iteration after its first line (found by scanning limits): the
    # report used to mix that line's new-depth score with the others' older ones, e.g. at 3,500
    # nodes Nf3 cp 16 (depth 6) above Nc3 cp 39 and d4 cp 37 (depth 5).
    [
        (chess.STARTING_FEN, 3500),
        (chess.STARTING_FEN, 9500),
        (chess.STARTING_FEN, 24500),
        (ITALIAN, 18500),
    ],
)
def test_interrupted_multipv_reports_the_last_completed_depth(fen: str, nodes: int) -> None:
    """MultiPV lines come best first, all from the last completed iteration (1 thread, and a
    fresh table: deterministic)."""
    iterations: list[core_search.SearchInfo] = []
    board = chess.Board(fen)
    outcome = AlphaBeta("hce", hash_mb=8).search(
        board, chess.engine.Limit(nodes=nodes), multipv=3, on_iteration=iterations.append
    )
    assert outcome.nodes >= nodes  # the limit stopped it, inside an iteration
    scores = [line.score_cp for line in outcome.info.lines]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    last = iterations[-1]
    assert outcome.info.depth == last.depth
    assert [(ln.pv, ln.score_cp) for ln in outcome.info.lines] == [
        (ln.pv, ln.score_cp) for ln in last.lines
    ]
    assert outcome.best_move == outcome.info.lines[0].pv[0]
    # The engine's analysis reports the same lines, best first (ranks 1, 2, 3).
    analysis = AlphaBetaEngine.from_options(multipv=3, eval="hce").analyse(
        board, chess.engine.Limit(nodes=nodes)
    )
    assert [m.rank for m in analysis.moves] == [1, 2, 3]
    assert [m.move for m in analysis.moves] == [ln.pv[0] for ln in outcome.info.lines]
    assert analysis.best_move == outcome.best_move and analysis.depth == last.depth


def test_node_and_time_limits(engine: AlphaBeta) -> None:
    board = chess.Board()
    outcome = engine.search(board, chess.engine.Limit(nodes=5000))
    assert outcome.best_move in board.legal_moves and outcome.nodes <= 5000 + 64
    began = time.monotonic()
    outcome = engine.search(board, chess.engine.Limit(time=0.1))
    assert time.monotonic() - began < 0.5 and outcome.best_move in board.legal_moves
    clock = chess.engine.Limit(white_clock=0.5, black_clock=0.5, white_inc=0.0)
    began = time.monotonic()
    outcome = engine.search(board, clock, move_overhead_ms=20)
    assert time.monotonic() - began < 0.45 and outcome.best_move in board.legal_moves


@pytest.mark.parametrize("increment_s", [0.01, 0.1])
def test_clock_settles_in_the_reserve_instead_of_draining(increment_s: float) -> None:
    """A bullet game whose every move costs its budget plus a slow round trip keeps a reserve.

    The clock is simulated move by move with the native time manager's budgets: the move takes
    its soft budget, plus a round trip of half the increment (a loaded machine). The clock must
    settle in the reserve (10 move overheads), never near the flag; with no overhead there is
    no reserve and the clock drains, which is what the reserve is for.
    """
    overhead_ms, increment_ms = 30, round(increment_s * 1000)
    lowest = {}
    for overhead in (overhead_ms, 0):
        clock_ms = 1000
        lowest[overhead] = clock_ms
        for _ in range(200):
            limit = chess.engine.Limit(white_clock=clock_ms / 1000, white_inc=increment_s)
            soft, hard = core_search.time_budget_ms(limit, chess.Board(), move_overhead_ms=overhead)
            assert 1 <= soft <= hard <= max(1, clock_ms - overhead)
            clock_ms += increment_ms - soft - increment_ms // 2
            lowest[overhead] = min(lowest[overhead], clock_ms)
    assert lowest[overhead_ms] > 5 * overhead_ms  # settled well inside the 300 ms reserve
    assert lowest[0] < lowest[overhead_ms]
    # A clock that the next move refills (moves to go = 1) is spent as before, reserve or not.
    last = chess.engine.Limit(white_clock=0.5, white_inc=0.0, remaining_moves=1)
    assert core_search.time_budget_ms(last, chess.Board())[1] >= 0.8 * (500 - overhead_ms) - 1


def test_stop_signal_and_plain_event_end_an_infinite_search(engine: AlphaBeta) -> None:
    for stop in (StopSignal(), threading.Event()):
        infos: list[core_search.SearchInfo] = []

        def search(signal: threading.Event = stop, seen: list = infos) -> None:
            board, limit = chess.Board(), chess.engine.Limit()
            engine.search(board, limit, infinite=True, stop=signal, on_iteration=seen.append)

        thread = threading.Thread(target=search)
        thread.start()
        time.sleep(0.3)
        began = time.monotonic()
        stop.set()
        thread.join(2.0)
        assert not thread.is_alive() and time.monotonic() - began < 0.5
        assert infos and infos[-1].depth >= 3 and infos[-1].lines[0].pv


def test_callback_exception_propagates(engine: AlphaBeta) -> None:
    def fail(info: core_search.SearchInfo) -> None:
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        engine.search(chess.Board(), chess.engine.Limit(depth=20), on_iteration=fail)


def test_evaluation_is_colour_symmetric() -> None:
    native = core_search._native()
    for board in bench_boards():
        mirrored = board.mirror()
        value = native.evaluate(native.Position(board.fen()), "hce")
        assert value == native.evaluate(native.Position(mirrored.fen()), "hce"), board.fen()


def test_see_on_simple_exchanges() -> None:
    native = core_search._native()
    position = native.Position("4k3/8/3p4/4p3/3P4/8/8/4K3 w - - 0 1")  # dxe5 dxe5: pawn for pawn
    assert native.see_at_least(position, "d4e5", 0)
    assert not native.see_at_least(position, "d4e5", 1)
    queen = native.Position("4k3/8/3p4/4p3/8/8/8/4QK2 w - - 0 1")  # Qxe5 dxe5 loses the queen
    assert not native.see_at_least(queen, "e1e5", 0)
    assert native.see_at_least(queen, "e1e5", 100 - 950)


def test_engine_spec_and_protocol() -> None:
    engine = create_engine("ab:eval=hce,depth=3,hash=4")
    assert isinstance(engine, AlphaBetaEngine) and engine.config.depth == 3
    board = chess.Board()
    move = engine.play(board, chess.engine.Limit(depth=10))  # capped at 3 by the spec
    assert move in board.legal_moves
    analysis = engine.analyse(board, chess.engine.Limit(depth=10))
    assert analysis.depth == 3 and analysis.pv[0] == analysis.best_move
    assert analysis.score_cp is not None and analysis.moves[0].rank == 1
    engine.close()
    for bad in ("ab:eval=nope", "ab:threads=0", "ab:hash=0", "ab:speed=3", "ab:depth=x"):
        with pytest.raises(EngineError):
            create_engine(bad)


def test_bench_signature_is_stable() -> None:
    first = run_bench(5)
    second = run_bench(5)
    assert first.positions == len(BENCH_POSITIONS) == 32
    assert first.nodes == second.nodes and first.moves == second.moves
    assert first.nodes > 10_000


def test_a_stop_before_the_search_still_completes_depth_one(engine: AlphaBeta) -> None:
    stop = StopSignal()
    stop.set()
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4")
    outcome = engine.search(board, chess.engine.Limit(), infinite=True, stop=stop)
    assert outcome.info.depth == 1 and outcome.best_move == chess.Move.from_uci("h5f7")


def test_new_game_clears_the_move_ordering_history_with_the_table() -> None:
    """Histories (butterfly, continuation, counter-moves) carry over between the searches of one
    game; new_game must forget them with the table, or the same search would take another tree."""
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4")
    later = board.copy()
    later.push_uci("e1g1")
    engine = AlphaBeta("hce", hash_mb=8)

    def nodes(position: chess.Board) -> int:
        return engine.search(position, chess.engine.Limit(depth=7)).info.nodes

    engine.new_game()
    fresh = nodes(later)
    for _ in range(2):
        engine.new_game()
        nodes(board)  # fills the table and the histories
        engine.new_game()
        assert nodes(later) == fresh


def _bench_nodes(engine: AlphaBeta, disabled: frozenset[str]) -> int:
    """Nodes of depth-9 searches of the first 8 bench positions, each from a new game."""
    total = 0
    for board in bench_boards()[:8]:
        engine.new_game()
        limit = chess.engine.Limit(depth=9)
        total += engine.search(board, limit, disabled_pruning=disabled).info.nodes
    return total


def test_the_prunings_together_shrink_the_tree() -> None:
    """With every pruning off (the singular extension, which also extends, left on) the same
    searches visit more than twice the nodes."""
    engine = AlphaBeta("hce", hash_mb=8)
    pruning = frozenset(core_search.PRUNING) - {"se"}
    assert _bench_nodes(engine, pruning) > 2 * _bench_nodes(engine, frozenset())


@pytest.mark.parametrize("name", sorted(core_search.PRUNING))
def test_each_pruning_switched_off_changes_the_tree_and_still_mates(name: str) -> None:
    """Every pruning changes the tree on the bench positions (so its switch is wired), and with
    it off the search stays correct. One pruning off need not grow the tree: what it pruned also
    fed the histories and reductions that order and shorten the rest (futility pruning off
    searches fewer nodes here since threats order the quiet moves); all of them off together
    must (see the next test)."""
    engine = AlphaBeta("hce", hash_mb=8)
    off = _bench_nodes(engine, frozenset({name}))
    on = _bench_nodes(engine, frozenset())
    assert off != on
    fen, moves = MATES[2]
    engine.new_game()
    limit = chess.engine.Limit(depth=2 * moves + 2)
    outcome = engine.search(chess.Board(fen), limit, disabled_pruning=frozenset({name}))
    assert outcome.info.lines[0].mate == moves
    with pytest.raises(EngineError):
        create_engine("ab:eval=hce,nope=0")
