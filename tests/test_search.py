"""Embedding-guided search with fake scorers: terminals, repetitions, alpha-beta, beam, limits."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence

import chess
import chess.engine
import chess.polyglot
import numpy as np
import pytest

from latentchess.search import (
    MATE_VALUE,
    EmbeddingCache,
    SearchConfig,
    Searcher,
    is_mate_value,
    mate_in,
    pov_score,
)

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}

MIDDLEGAMES = [
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # Qxf7# available
    "r2q1rk1/pp2bppp/2n1pn2/3p4/3P1B2/2PBPN2/PP1N1PPP/R2QK2R b KQ - 3 9",
    "2r3k1/5ppp/p3p3/1p1nP3/3P4/P4N2/1P3PPP/2R3K1 w - - 0 25",  # Rxc8#
    "6k1/5p2/6p1/8/7p/8/6PP/6K1 b - - 0 1",
]


class CountingScorer:
    """A fake scorer: ``score(board)`` for each board, counting calls and positions."""

    def __init__(self, score: Callable[[chess.Board], float]) -> None:
        self.score = score
        self.calls = 0
        self.positions = 0

    def __call__(self, boards: Sequence[chess.Board]) -> np.ndarray:
        self.calls += 1
        self.positions += len(boards)
        return np.array([self.score(b) for b in boards], dtype=np.float32)


def material(board: chess.Board) -> float:
    """White's material lead squashed into (-1, 1)."""
    total = 0
    for piece_type, value in PIECE_VALUES.items():
        total += value * (
            len(board.pieces(piece_type, chess.WHITE)) - len(board.pieces(piece_type, chess.BLACK))
        )
    return float(np.tanh(total / 10))


def random_scorer(seed: int) -> Callable[[chess.Board], float]:
    """A deterministic pseudo-random score per position (ties practically impossible)."""

    def score(board: chess.Board) -> float:
        return random.Random(chess.polyglot.zobrist_hash(board) ^ seed).uniform(-0.95, 0.95)

    return score


def decoy_scorer(board: chess.Board, decoy: chess.Move) -> Callable[[chess.Board], float]:
    """Loves the position after ``decoy`` for the side that plays it; indifferent otherwise."""
    after = board.copy()
    after.push(decoy)
    target = chess.polyglot.zobrist_hash(after)
    best = 0.99 if board.turn == chess.WHITE else -0.99

    def score(position: chess.Board) -> float:
        return best if chess.polyglot.zobrist_hash(position) == target else 0.0

    return score


def search(board: chess.Board, score: Callable[[chess.Board], float], **config) -> object:
    depth = config.pop("depth", 3)
    searcher = Searcher(CountingScorer(score), SearchConfig(depth=depth, **config))
    return searcher.search(board)


# -- a plain reference implementation, written independently of latentchess.search ---------------


def reference_minimax(
    board: chess.Board,
    score: Callable[[chess.Board], float],
    depth: int,
    width: int,
    ply: int = 0,
) -> tuple[float, chess.Move | None]:
    """Top-k pruned minimax, no cutoffs, python-chess's own game-over rules, draws at 0."""
    children = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            value = (MATE_VALUE - (ply + 1)) * (1 if board.turn == chess.BLACK else -1)
            terminal = True
        elif (
            board.is_stalemate()
            or board.is_insufficient_material()
            or board.halfmove_clock >= 100
            or board.is_repetition(3)
        ):
            value, terminal = 0.0, True
        else:
            value, terminal = score(board), False
        board.pop()
        children.append((value, terminal, move))
    white = board.turn == chess.WHITE
    children.sort(key=lambda c: c[0], reverse=white)
    top = children[:width]
    if depth == 1:
        return top[0][0], top[0][2]
    best, best_move = (-np.inf if white else np.inf), None
    for value, terminal, move in top:
        if not terminal:
            board.push(move)
            value, _ = reference_minimax(board, score, depth - 1, width, ply + 1)
            board.pop()
        if (value > best) if white else (value < best):
            best, best_move = value, move
    return best, best_move


def reference_beam(
    board: chess.Board, score: Callable[[chess.Board], float], depth: int, width: int
) -> tuple[float, chess.Move]:
    """The paper's beam on boards with full move stacks (terminal lines stop and stay)."""

    def children(line: list[chess.Move]) -> list[tuple[float, bool, list[chess.Move]]]:
        b = board.copy()
        for move in line:
            b.push(move)
        out = []
        for move in b.legal_moves:
            b.push(move)
            if b.is_checkmate():
                value = (MATE_VALUE - len(line) - 1) * (1 if b.turn == chess.BLACK else -1)
                out.append((value, True, [*line, move]))
            elif b.is_stalemate() or b.is_insufficient_material() or b.is_repetition(3):
                out.append((0.0, True, [*line, move]))
            else:
                out.append((score(b), False, [*line, move]))
            b.pop()
        return out

    root_white = board.turn == chess.WHITE
    level = sorted(children([]), key=lambda c: c[0], reverse=root_white)[:width]
    finished = [c for c in level if c[1]]
    beam = [c for c in level if not c[1]]
    for depth_reached in range(2, depth + 1):
        if not beam:
            break
        candidates = [c for line in beam for c in children(line[2])]
        mover_white = (depth_reached % 2 == 1) == root_white
        kept = sorted(candidates, key=lambda c: c[0], reverse=mover_white)[:width]
        finished += [c for c in kept if c[1]]
        beam = [c for c in kept if not c[1]]
    best = sorted(finished + beam, key=lambda c: c[0], reverse=root_white)[0]
    return best[0], best[2][0]


# -- terminals ------------------------------------------------------------------------------------

MATES_IN_ONE = [
    ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "a1a8", "g1f1"),
    ("r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "h5f7", "h5h4"),
    ("6rk/6pp/7N/8/8/8/8/6K1 w - - 0 1", "h6f7", "h6g4"),
    ("r5k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1", "a8a1", "a8a2"),
    ("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2", "d8h4", "d8g5"),
]


@pytest.mark.parametrize(("fen", "mate", "decoy"), MATES_IN_ONE)
@pytest.mark.parametrize("mode", ["minimax", "beam"])
def test_mate_in_one_always_found(fen: str, mate: str, decoy: str, mode: str) -> None:
    board = chess.Board(fen)
    assert board.is_legal(chess.Move.from_uci(decoy))
    score = decoy_scorer(board, chess.Move.from_uci(decoy))
    # Without terminal handling the decoy wins: it is the only position the scorer likes.
    sign = 1 if board.turn == chess.WHITE else -1
    liked = [m for m in board.legal_moves if sign * score(_after(board, m)) > 0]
    assert liked == [chess.Move.from_uci(decoy)]
    for depth in (1, 2, 3):
        for width in (1, 2, 3):
            result = search(board, score, mode=mode, depth=depth, width=width)
            assert result.move == chess.Move.from_uci(mate), (mode, depth, width)
            assert result.value == pytest.approx(
                (MATE_VALUE - 1) * (1 if board.turn == chess.WHITE else -1)
            )
            assert mate_in(result.value, board.turn) == 1
            assert result.pv[0] == result.move


def test_opponent_mate_among_children_found_when_pruned_statically() -> None:
    # White's Qxb7?? (the decoy) stops guarding g2 and allows ...Qxg2#; the scorer loves it.
    board = chess.Board("6k1/1p3ppp/2b5/8/8/6q1/1Q4PP/6K1 w - - 0 1")
    blunder = chess.Move.from_uci("b2b7")
    assert board.is_legal(blunder)
    score = decoy_scorer(board, blunder)
    greedy = search(board, score, depth=1, width=3)
    assert greedy.move == blunder  # one ply cannot see the reply
    result = search(board, score, depth=2, width=3)
    assert result.move != blunder
    blunder_root = next(r for r in result.root_moves if r.move == blunder)
    assert blunder_root.value is not None and blunder_root.value <= -(MATE_VALUE - 3)


def test_no_stalemate_when_a_win_is_available() -> None:
    # Qf7 stalemates; Qf8# and plenty of winning moves exist. The scorer adores the stalemate.
    board = chess.Board("7k/8/6K1/8/8/8/8/5Q2 w - - 0 1")
    stalemate = chess.Move.from_uci("f1f7")
    after = board.copy()
    after.push(stalemate)
    assert after.is_stalemate()
    score = decoy_scorer(board, stalemate)
    for mode in ("minimax", "beam"):
        for depth in (1, 2, 3):
            result = search(board, score, mode=mode, depth=depth, width=3)
            assert result.move != stalemate
            assert is_mate_value(result.value) and result.value > 0
    # No mate in one here, but stalemating Qg6 ... keep away: material scorer plus stalemate love.
    board = chess.Board("k7/2K5/8/1Q6/8/8/8/8 w - - 0 1")
    traps = [m for m in board.legal_moves if _after(board, m).is_stalemate()]
    assert traps
    lover = CountingScorer(lambda b: 0.99 if not any(b.generate_legal_moves()) else material(b))
    for depth in (1, 2, 3, 4):
        result = Searcher(lover, SearchConfig(depth=depth, width=3)).search(board)
        assert result.move not in traps
        assert result.value > 0


def _after(board: chess.Board, move: chess.Move) -> chess.Board:
    after = board.copy()
    after.push(move)
    return after


def test_stalemate_scores_as_draw_for_the_losing_side() -> None:
    # Black (losing) can only save itself by stalemate-ish draws; search must value draws at 0,
    # not as a win for Black.
    board = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert board.is_stalemate()
    result = Searcher(CountingScorer(material)).search(board)
    assert result.move is None and result.value == 0.0
    mated = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    assert mated.is_checkmate()
    result = Searcher(CountingScorer(material)).search(mated)
    assert result.move is None and result.value == MATE_VALUE


def test_insufficient_material_and_fifty_moves_are_draws() -> None:
    # Kxb2 leaves bare kings: a draw, worth 0, though the scorer would call it a Black win.
    board = chess.Board("8/8/8/8/8/8/3N4/K1k5 b - - 0 1")
    capture = chess.Move.from_uci("c1d2")
    result = search(board, lambda b: -0.9 if b.occupied == b.kings else 0.5, depth=1, width=3)
    assert result.move == capture and result.value == 0.0
    # Halfmove clock 99: every quiet move completes 50 moves without capture or pawn move.
    board = chess.Board("8/8/8/3k4/8/8/3K4/3R4 w - - 99 80")
    result = search(board, material, depth=2, width=3)
    quiet = [r for r in result.root_moves if not board.is_capture(r.move)]
    assert all(r.static == 0.0 for r in quiet)


def test_threefold_repetition_uses_game_history() -> None:
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"):
        board.push_uci(uci)
    repeat = chess.Move.from_uci("f6g8")  # startpos for the third time
    start_key = chess.polyglot.zobrist_hash(chess.Board())

    def scorer(others: float) -> Callable[[chess.Board], float]:
        return lambda b: -0.9 if chess.polyglot.zobrist_hash(b) == start_key else others

    # Black is doing fine elsewhere (-0.5): it must not walk into the draw it "loves" (-0.9).
    result = search(board, scorer(-0.5), depth=1, width=40)
    assert result.move != repeat
    repeat_root = next(r for r in result.root_moves if r.move == repeat)
    assert repeat_root.static == 0.0
    # Black is worse elsewhere (+0.5): the repetition draw is its best move.
    result = search(board, scorer(0.5), depth=1, width=40)
    assert result.move == repeat and result.value == 0.0
    # The same position without its history: no repetition, the scorer's -0.9 stands.
    fresh = chess.Board(board.fen())
    result = search(fresh, scorer(-0.5), depth=1, width=40)
    assert result.move == repeat and result.value == pytest.approx(-0.9)


def test_repetition_inside_the_search_path() -> None:
    # After 1.Nf3 Nf6 2.Ng1 (history), the line ...Ng8 Nf3 Nf6 Ng1 repeats inside the search.
    board = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6"):
        board.push_uci(uci)
    result = search(board, random_scorer(3), depth=4, width=3)
    value, move = reference_minimax(board, random_scorer(3), depth=4, width=3)
    assert result.move == move and result.value == pytest.approx(value)


# -- alpha-beta == plain pruned minimax -----------------------------------------------------------


VARIANTS = {
    "alpha-beta": {"leaf_chunk": 0},
    "alpha-beta, frontier batches": {"leaf_chunk": 0, "frontier_batch": True},
    "alpha-beta, chunked leaves": {"leaf_chunk": 4},
}


@pytest.mark.parametrize("fen", MIDDLEGAMES)
def test_alpha_beta_equals_plain_pruned_minimax(fen: str) -> None:
    board = chess.Board(fen)
    for seed in (1, 2):
        score = random_scorer(seed)
        for depth, width in ((2, 3), (3, 2), (4, 3)):
            plain_scorer = CountingScorer(score)
            plain = Searcher(
                plain_scorer, SearchConfig(depth=depth, width=width, alpha_beta=False, leaf_chunk=0)
            ).search(board, iterate=False)
            if depth <= 3:
                ref_value, ref_move = reference_minimax(board, score, depth, width)
                assert plain.move == ref_move and plain.value == pytest.approx(ref_value)
            for name, variant in VARIANTS.items():
                counter = CountingScorer(score)
                config = SearchConfig(depth=depth, width=width, **variant)
                result = Searcher(counter, config).search(board, iterate=False)
                assert (result.move, result.value, result.pv) == (
                    plain.move,
                    plain.value,
                    plain.pv,
                ), name
                if not variant.get("frontier_batch"):
                    assert counter.positions <= plain_scorer.positions, name


def test_pv_is_a_legal_line_reaching_the_value() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    score = random_scorer(7)
    result = search(board, score, depth=4, width=3)
    assert len(result.pv) == 4
    line = board.copy()
    for move in result.pv:
        assert line.is_legal(move)
        line.push(move)
    assert score(line) == pytest.approx(result.value, abs=1e-6)


# -- beam ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fen", MIDDLEGAMES[:4])
def test_beam_matches_reference_and_batches_per_level(fen: str) -> None:
    board = chess.Board(fen)
    score = random_scorer(11)
    for depth in (1, 2, 3, 4):
        counter = CountingScorer(score)
        result = Searcher(counter, SearchConfig(mode="beam", depth=depth, width=3)).search(
            board, iterate=False
        )
        value, move = reference_beam(board, score, depth, 3)
        assert result.move == move and result.value == pytest.approx(value)
        assert counter.calls <= depth  # one batch per level
        assert len(result.pv) <= depth and result.pv[0] == result.move
    greedy = search(board, score, mode="minimax", depth=1, width=3)
    beam1 = search(board, score, mode="beam", depth=1, width=3)
    assert greedy.move == beam1.move


def test_beam_embeds_far_fewer_positions_than_minimax() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    beam, minimax = CountingScorer(random_scorer(5)), CountingScorer(random_scorer(5))
    Searcher(beam, SearchConfig(mode="beam", depth=4)).search(board, iterate=False)
    Searcher(minimax, SearchConfig(alpha_beta=False, depth=4)).search(board, iterate=False)
    assert beam.positions < minimax.positions / 3


# -- iterative deepening, limits, cache -----------------------------------------------------------


def test_iterative_deepening_reports_each_depth() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    seen: list[int] = []
    result = Searcher(CountingScorer(random_scorer(2)), SearchConfig(depth=4)).search(
        board, on_iteration=lambda r: seen.append(r.depth)
    )
    assert seen == [1, 2, 3, 4] and result.depth == 4 and result.completed
    # A forced mate ends the deepening: deeper iterations cannot change it.
    mate = chess.Board(MIDDLEGAMES[3])
    found = Searcher(CountingScorer(random_scorer(2)), SearchConfig(depth=6)).search(mate)
    assert found.depth == 1 and found.completed and mate_in(found.value, mate.turn) == 1
    assert result.nodes > 0 and result.time_s > 0 and result.cache_hits > 0
    direct = Searcher(CountingScorer(random_scorer(2)), SearchConfig(depth=4)).search(
        board, iterate=False
    )
    assert direct.move == result.move and direct.value == result.value


def test_stop_flag_and_limits_keep_a_legal_move() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    stop = threading.Event()
    stop.set()
    result = Searcher(CountingScorer(material), SearchConfig(depth=6)).search(board, stop=stop)
    assert result.depth == 1 and not result.completed and board.is_legal(result.move)
    past = time.monotonic() - 1.0
    result = Searcher(CountingScorer(material)).search(board, deadline=past)
    assert result.depth == 1 and board.is_legal(result.move)
    result = Searcher(CountingScorer(material)).search(board, max_nodes=60)
    assert result.nodes <= max(60, board.legal_moves.count()) and board.is_legal(result.move)


def test_nearly_flagged_depth_one_scores_only_what_the_clock_allows() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    counter = CountingScorer(material)
    searcher = Searcher(counter, SearchConfig(depth=4))
    searcher.seconds_per_position = 0.01  # as measured on earlier batches
    result = searcher.search(board, deadline=time.monotonic() + 0.05)
    assert board.is_legal(result.move) and not result.completed
    assert counter.positions <= 5 and result.depth == 1
    # No time at all: nothing is embedded, yet a mate in one is still played.
    mate_board = chess.Board(MATES_IN_ONE[0][0])
    searcher.cache.clear()
    result = searcher.search(mate_board, deadline=time.monotonic() - 1.0)
    assert result.move == chess.Move.from_uci(MATES_IN_ONE[0][1]) and result.nodes == 0


def test_stop_from_another_thread_mid_iteration() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    stop = threading.Event()
    base = random_scorer(9)

    def slow(b: chess.Board) -> float:
        time.sleep(0.0005)
        return base(b)

    timer = threading.Timer(0.3, stop.set)
    timer.start()
    began = time.monotonic()
    result = Searcher(CountingScorer(slow), SearchConfig(depth=12)).search(board, stop=stop)
    timer.cancel()
    assert time.monotonic() - began < 5.0
    assert not result.completed and 1 <= result.depth < 12 and board.is_legal(result.move)


def test_cache_is_kept_across_searches_and_bounded() -> None:
    board = chess.Board(MIDDLEGAMES[2])
    counter = CountingScorer(random_scorer(4))
    searcher = Searcher(counter, SearchConfig(depth=3))
    first = searcher.search(board)
    positions = counter.positions
    second = searcher.search(board)
    assert counter.positions == positions and second.nodes == 0 and second.cache_hit_rate == 1.0
    assert second.move == first.move and second.value == first.value
    assert searcher.cache.hit_rate > 0
    searcher.new_game()
    assert len(searcher.cache) == 0
    cache = EmbeddingCache(2)
    cache.put(1, 0.1)
    cache.put(2, 0.2)
    assert cache.get(1) == (0.1, 0)
    cache.put(3, 0.3)  # evicts 2, the least recently used
    assert cache.get(2) is None and cache.get(1) is not None and len(cache) == 2


def test_config_validation_and_score_conversion() -> None:
    for bad in ({"mode": "mcts"}, {"depth": 0}, {"width": 0}, {"draw_score": 2.0}):
        with pytest.raises(ValueError, match=r"mode|depth|width|draw_score|leaf_chunk"):
            SearchConfig(**bad)
    linear = lambda s: (s + 1) / 2  # noqa: E731
    assert pov_score(0.0, chess.WHITE, linear).white() == chess.engine.Cp(0)
    assert pov_score(0.5, chess.BLACK, linear).relative.score() < 0
    assert pov_score(1.0, chess.WHITE, linear).white() == chess.engine.Cp(10000)
    assert pov_score(MATE_VALUE - 3, chess.WHITE, linear).relative == chess.engine.Mate(2)
    assert pov_score(MATE_VALUE - 3, chess.BLACK, linear).relative == chess.engine.Mate(-1)
    assert pov_score(-(MATE_VALUE - 2), chess.WHITE, linear).relative == chess.engine.Mate(-1)
    assert mate_in(0.7, chess.WHITE) is None


def test_scorer_with_wrong_output_is_reported() -> None:
    board = chess.Board()
    with pytest.raises(ValueError, match="scorer returned"):
        Searcher(lambda boards: np.zeros(1)).search(board, depth=1)
