"""The core's NNUE against the Python reference: features, integer inference, incremental."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest
import torch

from latentchess.core.nnue import load_network, native_module, resolve_evaluator
from latentchess.errors import EngineError
from latentchess.nnue.features import (
    KING_BUCKET_LAYOUTS,
    king_bucket,
    parse_feature_set,
    position_features,
)
from latentchess.nnue.io import load_nnue, save_nnue
from latentchess.nnue.model import Nnue, NnueConfig, quantised_forward
from training_fixtures import core_and_integer_reference

# Positions where castling (both sides), en passant and promotions (with and without capture)
# are legal, so random walks from them exercise every special move.
SPECIAL = [
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1",
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 0 1",
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
    "1n2k3/P7/8/8/8/8/7p/4K1N1 w - - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
]
FEATURES = "ALL+H+PV"


def _bits(move: chess.Move) -> int:
    return move.from_square | (move.to_square << 6) | ((move.promotion or 0) << 12)


def _special(board: chess.Board, move: chess.Move) -> bool:
    return board.is_castling(move) or board.is_en_passant(move) or move.promotion is not None


@pytest.fixture(
    scope="module",
    params=[
        (FEATURES, False, 1),
        (FEATURES, True, 1),
        ("ALL+MB+MC", False, 1),
        ("V+D1+D2", True, 1),
        (FEATURES, True, 4),
        ("KA+H", True, 4),
        ("H+KA9", True, 1),
    ],
    ids=["plain", "psqt", "mobility", "local", "buckets", "king-buckets", "nine-king-buckets"],
)
def network_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """Small networks: without and with the psqt term (its weights randomised off material), and
    one with the mobility blocks, whose features change with every move anywhere on the board,
    and one whose blocks are all updated incrementally (shared features: counted), without ALL,
    and one with four output buckets (each its own random dense layers), and one with king
    buckets (each its own random first layer) beside a counted block, and one with nine king
    buckets at an offset."""
    features, psqt, buckets = request.param
    torch.manual_seed(1)
    net = Nnue(NnueConfig(feature_set=features, l1=32, l2=8, psqt=psqt, output_buckets=buckets))
    with torch.no_grad():
        net.out.weight.mul_(10.0)
        if net.psqt is not None:
            net.psqt.weight[:-1].add_(torch.randn_like(net.psqt.weight[:-1]) * 0.05)
    return save_nnue(tmp_path_factory.mktemp("nnue") / "net", net, {"note": "test network"})


def _walks(seed: int, plies: int = 60) -> list[list[chess.Board]]:
    rng, games = random.Random(seed), []
    for fen in [chess.STARTING_FEN, *SPECIAL] * 2:
        board, boards = chess.Board(fen), []
        for _ in range(plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            boards.append(board.copy())
        games.append(boards)
    return games


def _king_bucket_changes(board: chess.Board, move: chess.Move, block: str) -> bool:
    """Whether ``move`` takes the mover's king into another bucket of ``block``."""
    after = board.copy(stack=False)
    after.push(move)

    def bucket(b: chess.Board) -> int:
        square = b.king(board.turn)
        assert square is not None
        rank = chess.square_rank(square) if board.turn else 7 - chess.square_rank(square)
        return king_bucket(chess.square_file(square), rank, block)

    return bucket(board) != bucket(after)


def test_features_equal_the_reference() -> None:
    native = native_module()
    fs = parse_feature_set("ALL+H+V+D1+D2+PH+PV+MB+MC+KA+KA9")
    boards = [b for game in _walks(3, plies=40) for b in game]
    # Mobility's hard cases: pins (absolute and along the capture line), single and double
    # check, en passant that would expose the king, castling through attacked squares.
    boards += [
        chess.Board(fen)
        for fen in (
            "4k3/8/8/KpP4r/8/8/8/8 w - b6 0 2",
            "4k3/4r3/8/8/4B3/8/4K3/8 w - - 0 1",
            "4k3/8/8/b7/8/8/3N4/4K3 w - - 0 1",
            "4k3/8/5n2/8/8/8/4r3/R3K2R w KQ - 0 1",
            "r3k2r/8/8/8/8/8/6b1/R3K2R b KQkq - 0 1",
            "4k3/8/8/8/1b6/8/8/r3K2R w K - 0 1",
            "rnb1kbnr/pppp1ppp/8/4p3/5PPq/8/PPPPP2P/RNBQKBNR w KQkq - 1 3",
        )
    ]
    for board in boards:
        position = native.Position(board.fen())
        white, black = position_features(board, fs)
        assert list(native.nnue_features(position, 0, fs.name)) == white.tolist(), board.fen()
        assert list(native.nnue_features(position, 1, fs.name)) == black.tolist(), board.fen()
    batch = native.nnue_features_batch([b.fen() for b in boards[:20]], "ALL", 32)
    assert (
        batch.shape == (20, 2, 32)
        and batch[0, 0, :3].tolist()
        == sorted(position_features(boards[0], parse_feature_set("ALL"))[0].tolist())[:3]
    )


def test_integer_inference_equals_the_python_reference(network_dir: Path) -> None:
    model, network = load_nnue(network_dir), load_network(network_dir)
    assert (network.feature_set, network.l1, network.l2) == (model.network.cfg.feature_set, 32, 8)
    boards = [b for game in _walks(5, plies=30) for b in game]
    ours, reference = core_and_integer_reference(network_dir, boards)
    assert ours == reference.tolist() and np.abs(reference).max() > 20


def test_incremental_accumulators_equal_a_refresh(network_dir: Path) -> None:
    native, network = native_module(), load_network(network_dir)
    rng, seen = random.Random(7), {"castling": 0, "en_passant": 0, "promotion": 0, "capture": 0}
    seen["king_bucket"] = 0  # a king move into another bucket refreshes its perspective
    blocks = load_nnue(network_dir).network.cfg.features.blocks
    king_block = next((b for b in blocks if b in KING_BUCKET_LAYOUTS), "KA")
    for fen in [chess.STARTING_FEN, *SPECIAL] * 3:
        board = chess.Board(fen)
        probe = native.NnueProbe(network, native.Position(fen))
        for ply in range(50):
            moves = list(board.legal_moves)
            if not moves:
                break
            special = [m for m in moves if _special(board, m)]
            move = rng.choice(special if special and ply < 4 else moves)
            seen["castling"] += board.is_castling(move)
            seen["en_passant"] += board.is_en_passant(move)
            seen["promotion"] += move.promotion is not None
            seen["capture"] += board.is_capture(move)
            seen["king_bucket"] += _king_bucket_changes(board, move, king_block)
            probe.push(_bits(move))
            board.push(move)
            if ply % 7 == 3:  # null moves as the search makes them
                probe.push_null()
                probe.pop_null()
            incremental, refreshed = probe.accumulator(), probe.refreshed()
            assert all(np.array_equal(a, b) for a, b in zip(incremental, refreshed, strict=True))
            assert probe.evaluate() == probe.refreshed_evaluate()
        while board.move_stack:
            probe.pop()
            board.pop()
            assert all(
                np.array_equal(a, b)
                for a, b in zip(probe.accumulator(), probe.refreshed(), strict=True)
            )
    assert all(count > 0 for count in seen.values()), seen


def _reference_and_ours(
    native: Any, network: Any, model: Any, feature_set: Any, board: chess.Board
) -> tuple[int, int]:
    """The core's evaluation of ``board`` (a Chess960 board) and the Python reference's."""
    features = position_features(board, feature_set)
    stm = np.array([0 if board.turn else 1])
    reference = quantised_forward(
        model.quantised, [features[0]], [features[1]], stm, feature_set.name
    )
    ours = network.evaluate(native.Position(board.fen(shredder=True), True))
    return int(ours), int(reference[0])


def test_chess960_castling_updates_equal_a_refresh_and_the_reference(network_dir: Path) -> None:
    from tests.test_chess960 import ODD_CASTLING  # king and rook squares meeting

    native, network = native_module(), load_network(network_dir)
    model = load_nnue(network_dir)
    feature_set = parse_feature_set(model.network.cfg.feature_set)
    for fen, castles in ODD_CASTLING:
        for uci in sorted(castles):
            board = chess.Board(fen, chess960=True)
            probe = native.NnueProbe(network, native.Position(fen, True))
            move = chess.Move.from_uci(uci)
            _, reference = _reference_and_ours(native, network, model, feature_set, board)
            assert probe.evaluate() == reference  # castling available: mobility's king targets
            probe.push(_bits(move))
            board.push(move)
            incremental, refreshed = probe.accumulator(), probe.refreshed()
            assert all(np.array_equal(a, b) for a, b in zip(incremental, refreshed, strict=True))
            assert probe.evaluate() == probe.refreshed_evaluate()
            # The Python reference (python-chess's Chess960 board) agrees after castling too.
            ours, reference = _reference_and_ours(native, network, model, feature_set, board)
            assert ours == reference, (fen, uci)
            probe.pop()
            assert all(
                np.array_equal(a, b)
                for a, b in zip(probe.accumulator(), probe.refreshed(), strict=True)
            )


def test_search_with_nnue_and_bad_files(network_dir: Path, tmp_path: Path) -> None:
    native = native_module()
    name = resolve_evaluator(str(network_dir))
    assert name == f"nnue:{network_dir.resolve()}" and resolve_evaluator("hce") == "hce"
    engine = native.SearchEngine(name, 1)
    limits = native.SearchLimits()
    limits.depth = 3
    result = engine.search(native.Position(chess.STARTING_FEN), limits)
    assert chess.Move.from_uci(result["bestmove"]) in chess.Board().legal_moves
    with pytest.raises(EngineError, match="not an NNUE or sparse latent model directory"):
        resolve_evaluator(str(tmp_path))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(EngineError, match="broken"):
        load_network(broken)


def test_engine_spec_and_uci_evalfile(network_dir: Path, tmp_path: Path) -> None:
    from latentchess.engines.ab import AlphaBetaConfig, AlphaBetaEngine
    from latentchess.engines.registry import create_engine
    from latentchess.uci.session import UciSession

    engine = create_engine(f"ab:eval={network_dir},depth=2")
    assert engine.play(chess.Board(), chess.engine.Limit(depth=2)) in chess.Board().legal_moves
    with pytest.raises(EngineError, match="unknown evaluator 'nope'"):
        create_engine("ab:eval=nope")
    lines: list[str] = []
    ab = AlphaBetaEngine(AlphaBetaConfig(evaluator="hce"))
    session = UciSession(lines.append, spec="ab:eval=hce", engine=ab)
    session.handle_line("uci")
    assert "option name EvalFile type string default hce" in lines
    session.handle_line(f"setoption name EvalFile value {network_dir}")
    assert ab.config.evaluator == str(network_dir)
    session.handle_line(f"setoption name EvalFile value {tmp_path}")
    assert ab.config.evaluator == str(network_dir)
    assert any("EvalFile" in line and "refused" in line for line in lines)
