"""Small rated-game PGNs made by the Chessformer tests (random legal games with ratings)."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.pgn

from latentchess.models.chessformer import ChessformerConfig
from latentchess.training.objectives.chessformer import ChessformerTrainConfig


def random_game(rng: random.Random, plies: int) -> chess.pgn.Game:
    """A random legal game of up to ``plies`` plies, with captures and promotions preferred."""
    board = chess.Board()
    game = chess.pgn.Game()
    node: chess.pgn.GameNode = game
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        special = [m for m in moves if m.promotion or board.is_capture(m)]
        move = rng.choice(special if special and rng.random() < 0.5 else moves)
        node = node.add_variation(move)
        board.push(move)
    return game


def write_rated_pgn(path: Path, games: int = 12, plies: int = 60, seed: int = 0) -> Path:
    """A PGN of random games between players ``p0``..``p5`` rated 900-2300."""
    rng = random.Random(seed)
    with open(path, "w") as handle:
        for index in range(games):
            game = random_game(rng, plies)
            game.headers["Site"] = f"https://lichess.org/test{index:04d}"
            game.headers["White"] = f"p{index % 6}"
            game.headers["Black"] = f"p{(index + 1) % 6}"
            game.headers["WhiteElo"] = str(900 + 100 * (index % 15))
            game.headers["BlackElo"] = str(2300 - 100 * (index % 15))
            game.headers["Result"] = ("1-0", "0-1", "1/2-1/2")[index % 3]
            print(game, file=handle, end="\n\n")
    return path


def train_config(
    data: Path, out: Path, model: ChessformerConfig, **changes: object
) -> ChessformerTrainConfig:
    """A seconds-long Chessformer training run on one CPU thread; ``changes`` override fields
    (``model`` among them)."""
    base: dict[str, object] = dict(
        data=data,
        out=out,
        model=model,
        steps=8,
        batch_size=32,
        lr=3e-3,
        warmup=2,
        eval_every=4,
        eval_positions=64,
        checkpoint_every=4,
        log_every=2,
        progress=False,
        threads=1,
        device="cpu",
        holdout_fraction=0.2,
    )
    base.update(changes)
    return ChessformerTrainConfig(**base)  # type: ignore[arg-type]
