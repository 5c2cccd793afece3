"""``latentchess train-chessformer``: flags onto
:class:`~latentchess.training.objectives.chessformer.ChessformerTrainConfig`.

Multi-GPU: ``torchrun --nproc_per_node=K -m latentchess train-chessformer ...`` (``--batch-size``
is global).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``train-chessformer`` to the ``latentchess`` parser."""
    p = subparsers.add_parser(
        "train-chessformer",
        help="train a Chessformer (policy + value) on rated games or engine labels",
        description=(
            "Train a Chessformer (squares as tokens, geometric attention bias) on a PGN of rated "
            "games (human moves, game results) or a Stockfish-labelled CSV (best move, win "
            "probability), and write OUT/model. Rerunning the same command resumes."
        ),
    )
    p.add_argument("--data", type=Path, required=True, help="PGN (.gz/.zst), CSV or .npz cache")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument(
        "--model-config",
        default="cf-micro",
        help="a name from CHESSFORMER_CONFIGS (default cf-micro)",
    )
    p.add_argument("--history", type=int, default=None, help="previous boards (config's default)")
    p.add_argument("--side-features", action="store_true", help="castling/ep/rule-50/repetition")
    p.add_argument("--position", default=None, help="gab, relative, absolute or none")
    p.add_argument(
        "--absolute-embedding", action="store_true", help="add a learned per-square embedding"
    )
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--schedule", default="cosine", choices=("cosine", "constant"))
    p.add_argument("--value-weight", type=float, default=0.1)
    p.add_argument("--holdout-fraction", type=float, default=0.05)
    p.add_argument("--max-games", type=int, default=None, help="games (PGN) or rows (CSV) to read")
    p.add_argument("--max-minutes", type=float, default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=1000)
    p.add_argument("--eval-positions", type=int, default=4096)
    p.add_argument(
        "--final-positions",
        type=int,
        default=None,
        help="held-out positions per set in the final evaluation (default: all)",
    )
    p.add_argument("--checkpoint-every", type=int, default=200)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from latentchess.models.chessformer import get_chessformer_config
    from latentchess.training.objectives.chessformer import (
        ChessformerTrainConfig,
        train_chessformer,
    )

    model = get_chessformer_config(args.model_config)
    changes: dict[str, object] = {}
    if args.history is not None:
        changes["history"] = args.history
    if args.side_features:
        changes["side_features"] = True
    if args.position is not None:
        changes["position"] = args.position
    if args.absolute_embedding:
        changes["absolute_embedding"] = True
    model = dataclasses.replace(model, **changes)
    cfg = ChessformerTrainConfig(
        data=args.data,
        out=args.out,
        model=model,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        schedule=args.schedule,
        value_weight=args.value_weight,
        holdout_fraction=args.holdout_fraction,
        max_games=args.max_games,
        max_minutes=args.max_minutes,
        device=args.device,
        threads=args.threads,
        seed=args.seed,
        eval_every=args.eval_every,
        eval_positions=args.eval_positions,
        final_positions=args.final_positions,
        checkpoint_every=args.checkpoint_every,
        log_every=args.log_every,
        progress=not args.no_progress,
    )
    result = train_chessformer(cfg)
    if os.environ.get("RANK", "0") != "0":  # under torchrun, rank 0 reports
        return 0
    print(f"{result.stop_reason} at step {result.step} in {result.seconds:.0f} s")
    if result.model_dir is not None:
        print(f"model: {result.model_dir}")
        flat = {k: v for k, v in result.metrics.items() if not isinstance(v, dict)}
        print(json.dumps(flat, indent=2))
    return 0
