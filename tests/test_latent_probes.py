"""benchmarks/latent_probes.py: the SEE filter, the child ranking and the statistics, on positions
the tests set up, with the real core, the shipped models and a real Stockfish at tiny depth."""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import chess
import chess.engine
import numpy as np
import pytest

from evaluation_fixtures import require_stockfish

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "latent_probes.py"

# Black to move, 3...gxh5 wins White's queen for nothing.
HANGING_QUEEN = "rnbqkbnr/pppp1p1p/6p1/4p2Q/4P3/5N2/PPPP1PPP/RNB1KB1R b KQkq - 1 3"
# White to move, Nxd5 exd5 is a knight for a knight: an equal trade, nothing won.
EQUAL_TRADE = "4k3/8/4p3/3n4/8/2N5/8/4K3 w - - 0 1"
# White to move, Nxe5 takes a knight that nothing defends: exactly a minor piece.
HANGING_KNIGHT = "4k3/8/8/4n3/8/5N2/8/4K3 w - - 0 1"
# White to move, Qxf7# (the mate is scored by the rules, whatever the evaluator says).
MATE_IN_ONE = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"


@pytest.fixture(scope="module")
def probes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("latent_probes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["latent_probes"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_see_filter_keeps_winning_captures_and_drops_equal_trades(probes: ModuleType) -> None:
    assert probes.winning_captures(HANGING_QUEEN) == ["g6h5"]
    assert probes.winning_captures(HANGING_KNIGHT) == ["f3e5"]
    assert chess.Board(EQUAL_TRADE).is_capture(chess.Move.from_uci("c3d5"))
    assert probes.winning_captures(EQUAL_TRADE) == []
    # The threshold is a minor piece: a free knight passes, one centipawn more does not.
    assert probes.winning_captures(HANGING_KNIGHT, threshold=probes.MINOR_PIECE + 1) == []


def test_best_index_is_the_argmax_and_ties_stay_among_the_tied(probes: ModuleType) -> None:
    rng = random.Random(0)
    assert probes.best_index([0.1, 0.7, -2.0, 0.3], rng) == 1
    assert probes.best_index([-math.inf, 0.0], rng) == 1
    picks = {probes.best_index([0.5, 0.1, 0.5, 0.5], rng) for _ in range(200)}
    assert picks == {0, 2, 3}


def test_children_apply_the_rules_and_the_mover_view(probes: ModuleType) -> None:
    moves, _, rules = probes.children(MATE_IN_ONE)
    assert len(moves) == chess.Board(MATE_IN_ONE).legal_moves.count()
    assert rules[moves.index("h5f7")] == math.inf
    assert sum(rule is not None for rule in rules) == 1
    # Black to move: a White-view score of +3 is worth -3 to the mover.
    black_moves, _, black_rules = probes.children(HANGING_QUEEN)
    white_view = np.arange(len(black_moves), dtype=np.float64)
    values = probes.mover_values(HANGING_QUEEN, black_rules, white_view)
    assert values == [-x for x in white_view]


def test_capture_probe_with_core_evaluators(probes: ModuleType) -> None:
    positions = [
        (probes.Sample(0, 5, HANGING_QUEEN), "g6h5"),
        (probes.Sample(1, 9, HANGING_KNIGHT), "f3e5"),
        (probes.Sample(2, 6, MATE_IN_ONE), "h5f7"),
    ]
    evaluators = {
        "sparse-64": lambda fens: np.zeros(len(fens)),  # blind: all ties, mates still found
        "hce": probes.core_evaluator("hce"),
        "nnue": probes.core_evaluator("nnue"),
    }
    result = probes.capture_probe(positions, evaluators, resamples=20, seed=0)
    assert result["positions"] == 3 and result["games"] == 3
    hce = result["evaluators"]["hce"]
    assert hce["first"] == 3 and hce["wilson95"][1] == 1.0
    blind = result["evaluators"]["sparse-64"]
    assert blind["ties_at_top"] == 2  # the mate is a unique top even for a constant evaluator
    assert 1 <= blind["first"] <= 3
    # The NNUE's count, recomputed by hand: its side-to-move score of each child, negated.
    from latentchess.core import _native
    from latentchess.core.nnue import load_network

    network, expected = load_network(), 0
    for sample, target in positions:
        board = chess.Board(sample.fen)
        values = {}
        for move in board.legal_moves:
            board.push(move)
            mate = board.is_checkmate()
            values[move.uci()] = (
                math.inf if mate else -network.evaluate(_native.Position(board.fen()))
            )
            board.pop()
        expected += max(values, key=values.__getitem__) == target
    assert result["evaluators"]["nnue"]["first"] == expected


def test_stockfish_labels_are_cached_and_static_falls_back_in_check(
    probes: ModuleType, tmp_path: Path
) -> None:
    from latentchess.nnue.distil import StaticEvaluator

    stockfish = require_stockfish()
    cache = probes.LabelCache(tmp_path / "sf.jsonl")
    in_check = "4k3/8/8/8/8/8/4R3/K7 b - - 0 1"  # Stockfish has no static evaluation in check
    assert chess.Board(in_check).is_check()
    with (
        chess.engine.SimpleEngine.popen_uci(stockfish) as engine,
        StaticEvaluator(stockfish) as static,
    ):
        label = probes.cached_search(engine, cache, HANGING_QUEEN, 4)
        assert label["best"] == "g6h5" and label["cp"] < -500  # White's view: Black wins a queen
        evaluate = probes.StockfishStatic(static, engine, cache)
        rook_up_black_to_move = "4k3/8/8/8/8/8/8/R3K3 b - - 0 1"
        scores = evaluate([rook_up_black_to_move, in_check])
        assert evaluate.in_check == 1
        assert scores[0] > 300  # White's view even with Black to move: a rook up
        assert scores[1] > 300  # the same from the depth-1 search in check
    cache.close()
    reopened = probes.LabelCache(tmp_path / "sf.jsonl")
    assert f"d4:{HANGING_QUEEN}" in reopened and f"d1:{in_check}" in reopened
    assert reopened.get(f"static:{in_check}") is None
    reopened.close()


def test_statistics(probes: ModuleType) -> None:
    low, high = probes.wilson(5, 10)
    assert low < 0.5 < high and math.isclose(low + high, 1.0)
    assert probes.wilson(0, 10)[0] == 0.0
    sat = probes.saturation(np.array([0.5, 0.5, 0.5, -0.2, 0.1, -0.2]))
    assert (sat["at_max"], sat["at_min"], sat["distinct"]) == (3, 2, 3)
    assert math.isclose(probes.mean_pairwise_cosine(np.array([[1.0, 0], [2.0, 0], [3.0, 0]])), 1)
    assert abs(probes.mean_pairwise_cosine(np.array([[1.0, 0], [0, 1.0]]))) < 1e-12
    groups = np.array([0, 0, 1, 2])
    draws = probes.game_bootstrap(groups, lambda rows: np.array([len(rows)]), 50, 0)
    assert draws.shape == (50, 1) and draws.min() >= 3 and draws.max() <= 6


def test_piece_pairs_differ_by_one_white_knight(probes: ModuleType) -> None:
    samples = [
        probes.Sample(i, 0, fen)
        for i, fen in enumerate([HANGING_QUEEN, HANGING_KNIGHT, EQUAL_TRADE, chess.STARTING_FEN])
    ]
    pairs = probes.piece_pairs(samples, 2, seed=0)
    assert pairs["remove"] and pairs["add"]
    for found in pairs.values():
        for _, without, with_knight in found:
            a, b = chess.Board(without), chess.Board(with_knight)
            assert a.is_valid() and b.is_valid()
            assert len(b.pieces(chess.KNIGHT, chess.WHITE)) == len(a.pieces(chess.KNIGHT, 1)) + 1
            assert b.occupied ^ a.occupied == b.pieces(chess.KNIGHT, chess.WHITE).mask & ~a.occupied


class _CountingModel:
    """A fake encoder whose embedding counts White's knights and bishops and Black's pawns: a
    knight more is exactly one direction, orthogonal to a bishop more."""

    axis = np.array([1.0, 1.0, 0.0])
    metadata: ClassVar[dict[str, dict[str, float]]] = {
        "calibration": {"slope": 5.0, "intercept": 0}
    }

    def embed(self, fens: list[str]) -> np.ndarray:
        rows = []
        for fen in fens:
            board = chess.Board(fen)
            white = [
                len(board.pieces(piece, chess.WHITE)) for piece in (chess.KNIGHT, chess.BISHOP)
            ]
            rows.append([*white, len(board.pieces(chess.PAWN, chess.BLACK))])
        return np.asarray(rows, dtype=np.float64)


def test_arithmetic_probe_finds_a_consistent_knight_specific_direction(probes: ModuleType) -> None:
    board, fens = chess.Board(), []
    game = "e4 d5 exd5 Qxd5 Nc3 Qa5 d4 Nf6 Nf3 Bf5 Bc4 e6 Bd2 c6 Qe2 Bb4 O-O-O Nbd7"
    for san in game.split():  # a pawn each off: room for one more White piece
        fens.append(board.fen())
        board.push_san(san)
    samples = [probes.Sample(0, ply, fen) for ply, fen in enumerate(fens)]
    knights = [pair for found in probes.piece_pairs(samples, 4, seed=0).values() for pair in found]
    bishops = probes.piece_pairs(samples, 4, seed=1, piece=chess.BISHOP)["add"]
    assert len(knights) >= 4 and bishops
    zeros = np.zeros(len(knights))
    row = probes.arithmetic_probe(
        _CountingModel(), knights, fens, zeros, zeros, bishops, resamples=20, seed=0
    )
    assert math.isclose(row["mean_pairwise_cosine"], 1.0)
    assert math.isclose(row["off_axis_mean_pairwise_cosine"], 1.0)
    assert row["cosine_knight_to_control_direction"] == 0.0
    assert row["unchanged_embeddings"] == 0 and math.isclose(row["axis_share_of_difference"], 0.5)
