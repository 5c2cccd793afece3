"""Small synthetic training data and configs shared by the training tests."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import chess
import numpy as np

from latentchess.core.nnue import load_network, native_module
from latentchess.data.cache import TrainingCache, write_cache
from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE
from latentchess.models import EncoderConfig
from latentchess.nnue.features import position_features
from latentchess.nnue.io import load_nnue
from latentchess.nnue.model import quantised_forward
from latentchess.training.config import TrainConfig

MICRO = EncoderConfig(name="micro", layers=1, hidden=32, heads=2, mlp=64, dim=16, dropout=0.1)


def synthetic_cache(path: Path, rows: int = 640, seed: int = 0) -> TrainingCache:
    """Random tokens whose label is readable from a class pattern in the first 16 squares.

    Five classes with win probabilities near 0, 0.25, 0.5, 0.75 and 1; classes 0 and 4 are exact
    0.0 / 1.0 (forced mates), so the advantage axis has its anchors.
    """
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB_SIZE, size=(rows, SEQUENCE_LENGTH), dtype=np.uint8)
    classes = np.arange(rows) % 5
    tokens[:, 1:17] = (classes * 6 + 1)[:, None]
    labels = classes / 4 + rng.uniform(-0.01, 0.01, size=rows)
    labels[classes == 0], labels[classes == 4] = 0.0, 1.0
    return write_cache(path, tokens, labels.astype(np.float32), source="synthetic")


def micro_config(data: Path, out: Path, **overrides: Any) -> TrainConfig:
    """A configuration that runs a step in a few milliseconds."""
    settings: dict[str, Any] = {
        "model": MICRO,
        "steps": 12,
        "batch_size": 8,
        "positives": 3,
        "lr": 0.05,
        "warmup": 2,
        "threads": 1,
        "precision": "fp32",  # numbers are compared: never a CPU-dependent precision
        "holdout_fraction": 0.1,
        "eval_every": 6,
        "eval_positions": 64,
        "eval_axis_per_side": 16,
        "axis_per_side": 64,
        "checkpoint_every": 100,
        "log_every": 1,
        "progress": False,
    }
    settings.update(overrides)
    return TrainConfig(data=data, out=out, **settings)


_VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500, chess.QUEEN: 900}


def _material(board: chess.Board) -> int:
    return sum(
        v * (len(board.pieces(t, chess.WHITE)) - len(board.pieces(t, chess.BLACK)))
        for t, v in _VALUES.items()
    )


def write_material_csv(path: Path, games: int = 12, seed: int = 0) -> int:
    """Random games labelled with White's material balance (a real, if crude, evaluation)."""
    rng, rows = random.Random(seed), []
    for _ in range(games):
        board = chess.Board()
        for _ in range(60):
            moves = list(board.legal_moves)
            if not moves or board.is_game_over():
                break
            move = rng.choice(moves)
            rows.append(f"{board.fen()},{_material(board)},,0.5,{move.uci()},1,")
            board.push(move)
    rows.append("8/8/8/8/8/8/8/K1k5 w - - 0 1,,3,1.0,a1a2,1,")  # a mate row: filtered
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    return len(rows)


def core_and_integer_reference(
    network_dir: Path, boards: list[chess.Board]
) -> tuple[list[int], np.ndarray]:
    """The core's evaluation of each board with the network in ``network_dir``, and Python's
    integer (quantised) model's, for the caller to compare."""
    native, network = native_module(), load_network(network_dir)
    model = load_nnue(network_dir)
    fs = model.network.cfg.features
    feats = [position_features(b, fs) for b in boards]
    stm = np.array([0 if b.turn else 1 for b in boards])
    reference = quantised_forward(
        model.quantised, [f[0] for f in feats], [f[1] for f in feats], stm, fs.name
    )
    return [network.evaluate(native.Position(b.fen())) for b in boards], reference
