"""``ab:eval=latent``: the alpha-beta search scored by the sparse latent encoder's axis.

The evaluator (latent_encoder.h, ``LatentEvaluator``) keeps the encoder's accumulators through
make/unmake and null moves; after every step they equal a refresh bit for bit, and so does the
axis score. The centipawns are the latent engine's own report of that score (the model's
calibration, then ``winprob.centipawns``), within the core's quantisation of PyTorch's float32.
"""

from __future__ import annotations

import random

import chess
import chess.engine
import numpy as np
import pytest

from latentchess.core import _native as native
from latentchess.core.board import move_to_bits
from latentchess.core.nnue import is_sparse_latent_dir, resolve_evaluator
from latentchess.engines.registry import create_engine
from latentchess.errors import EngineError
from latentchess.paths import DEFAULT_MODEL, SHIPPED_WEIGHTS
from latentchess.search import native as _assembler  # noqa: F401  (the default model is on the NNUE's transformer)
from latentchess.uci.session import UciSession
from latentchess.winprob import centipawns
from uci_fixtures import SessionTranscript

SHIPPED = SHIPPED_WEIGHTS / DEFAULT_MODEL
AXIS_TOLERANCE = 3e-2
"""|core - PyTorch| axis scores of the default latent model, sparse-nnue-64 (on the NNUE's
transformer at its scale 127, the core's hidden layer int8: measured max 2.0e-2 on 2,000 random
game positions, docs/sparse-encoder.md#native-core)."""
HANGING_QUEEN = "r1bqkbnr/pppp1p1p/2n3p1/4p2Q/2B1P3/5N2/PPPP1PPP/RNB1K2R b KQkq - 1 4"
"""1. e4 e5 2. Qh5 Nc6 3. Bc4 g6 4. Nf3??: g6xh5 wins the queen (Stockfish 15.1, depth 16:
-6.26 after gxh5, the only move near that)."""


@pytest.fixture(scope="module")
def latent() -> str:
    return resolve_evaluator("latent")


def _random_walk(seed: int, steps: int) -> tuple[chess.Board, list[int], list[chess.Board]]:
    """A random sequence of moves, undos and null moves (never in check) from the start: the
    core's steps and the board after each."""
    rng = random.Random(seed)
    board = chess.Board()
    ops: list[int] = []
    boards: list[chess.Board] = []
    for _ in range(steps):
        roll = rng.random()
        if board.move_stack and roll < 0.2:
            ops.append(-3 if board.pop() == chess.Move.null() else -1)
        elif roll < 0.3 and not board.is_check() and board.move_stack[-1:] != [chess.Move.null()]:
            board.push(chess.Move.null())
            ops.append(-2)
        else:
            legal = list(board.legal_moves)
            if not legal:
                break
            captures = [m for m in legal if board.is_capture(m) or m.promotion]
            move = rng.choice(captures if captures and rng.random() < 0.4 else legal)
            ops.append(move_to_bits(move))
            board.push(move)
        boards.append(board.copy())
    return chess.Board(), ops, boards


def test_resolve_names_the_shipped_model_and_directories(latent: str) -> None:
    assert latent == f"latent:{SHIPPED.resolve()}"
    assert is_sparse_latent_dir(SHIPPED)
    assert resolve_evaluator(str(SHIPPED)) == latent == resolve_evaluator(f"latent:{SHIPPED}")
    assert resolve_evaluator("hce") == "hce" and resolve_evaluator("nnue").startswith("nnue:")
    with pytest.raises(EngineError, match="latent"):
        resolve_evaluator("latent:/nonexistent/model")
    with pytest.raises(ValueError, match="not registered"):
        native.evaluate(native.Position(chess.STARTING_FEN), "latent:/never/registered")


def test_incremental_equals_refresh_bit_for_bit_through_moves_undos_and_null_moves(
    latent: str,
) -> None:
    nulls = undos = 0
    for seed in range(6):
        root, ops, boards = _random_walk(seed, 120)
        nulls += ops.count(-2)
        undos += ops.count(-1) + ops.count(-3)
        incremental, refreshed, cps, accumulators_equal = native.latent_evaluator_walk(
            native.Position(root.fen()), ops, latent
        )
        assert accumulators_equal
        assert np.array_equal(np.float32(incremental), np.float32(refreshed))
        # The evaluation the search sees after each step is the one of the position from scratch.
        for board, cp, fresh in zip(boards, cps[1:], refreshed[1:], strict=True):
            assert cp == native.evaluate(native.Position(board.fen()), latent)
            assert abs(cp) <= 10000 and np.isfinite(fresh)
    assert nulls >= 20 and undos >= 40


def test_core_evaluation_is_the_pytorch_models_within_tolerance(latent: str) -> None:
    from latentchess.models import load_model

    model = load_model(SHIPPED, precision="fp32")
    rng = random.Random(3)
    fens = []
    for _ in range(12):
        board = chess.Board()
        for _ in range(rng.randrange(4, 60)):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        fens.append(board.fen())
    fens.append(HANGING_QUEEN)
    reference = np.asarray(model.score(fens), dtype=np.float64)
    for fen, score in zip(fens, reference, strict=True):
        position = native.Position(fen)
        axis = native.latent_evaluator_walk(position, [], latent)[0][0]
        assert abs(axis - score) < AXIS_TOLERANCE, fen
        white_cp = centipawns(float(model.win_probability(score)))
        ours = native.evaluate(position, latent)
        ours_white = ours if chess.Board(fen).turn == chess.WHITE else -ours
        slope = float(model.metadata["calibration"]["slope"])
        # d cp / d s = slope / 0.00368208 (the logistic's logit is linear in s)
        assert abs(ours_white - white_cp) <= AXIS_TOLERANCE * slope / 0.00368208 + 1, fen


def test_takes_the_hanging_queen_at_a_small_depth() -> None:
    engine = create_engine("ab:eval=latent,hash=4")
    try:
        board = chess.Board(HANGING_QUEEN)
        for depth in (1, 2, 3):
            analysis = engine.analyse(board, chess.engine.Limit(depth=depth))
            assert analysis.best_move == chess.Move.from_uci("g6h5"), depth
            assert analysis.score_cp is not None and analysis.score_cp > 300
    finally:
        engine.close()


def test_self_play_moves_are_legal(latent: str) -> None:
    engine = create_engine("ab:eval=latent,hash=4")
    try:
        assert engine.provenance()["evaluator"] == latent
        board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
        for _ in range(24):
            if board.is_game_over():
                break
            move = engine.analyse(board, chess.engine.Limit(depth=3)).best_move
            assert move in board.legal_moves, board.fen()
            board.push(move)
    finally:
        engine.close()


def test_uci_session_with_the_latent_evaluation() -> None:
    spec = "ab:eval=latent,hash=4"
    t = SessionTranscript(
        lambda write: UciSession(write, spec=spec, engine=create_engine(spec, wait=False))
    )
    t.send("uci")
    t.wait_for("uciok")
    assert "option name EvalFile type string default latent" in t.lines
    t.send(f"position fen {HANGING_QUEEN}", "go depth 2")
    assert t.wait_for("bestmove").split()[1] == "g6h5"
    t.send("setoption name EvalFile value hce", "isready")
    t.wait_for("readyok")
    t.send("setoption name EvalFile value latent", "position startpos moves e2e4", "go depth 3")
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(t.wait_for("bestmove").split()[1]) in board.legal_moves
    t.send("quit")
