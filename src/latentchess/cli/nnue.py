"""``latentchess nnue ...``: train an NNUE, build its feature cache, inspect a network.

``torchrun --nproc_per_node=K -m latentchess nnue train ...`` trains data-parallel
(``--batch-size`` is the global batch).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from latentchess.argtypes import shard, weights

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``nnue`` and its subcommands."""
    nnue = subparsers.add_parser("nnue", help="NNUE evaluation networks (train, cache, info)")
    sub = nnue.add_subparsers(dest="nnue_command", metavar="SUBCOMMAND", required=True)

    t = sub.add_parser(
        "train",
        help="train an NNUE (target-score or PQR loss; resumable, DDP-ready)",
        description="Extract features once into a memory-mapped cache, then train. Rerunning "
        "the same command resumes from OUT/checkpoints. Writes OUT/model.",
    )
    t.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="PATH[:ROWS[:EVERY]]",
        help="labelled CSV (repeatable): every EVERY-th row, at most ROWS of them",
    )
    t.add_argument("--out", type=Path, required=True, help="run directory")
    t.add_argument("--cache", type=Path, default=None, help="feature cache dir (default OUT/cache)")
    t.add_argument("--features", default="ALL", help="feature set, e.g. ALL or ALL+H+V")
    t.add_argument("--l1", type=int, default=256, help="accumulator width (default 256)")
    t.add_argument("--l2", type=int, default=32, help="hidden width (default 32)")
    t.add_argument(
        "--psqt",
        action="store_true",
        help="add a linear piece-square term to the output (unbounded material; not in the thesis)",
    )
    t.add_argument("--loss", choices=("score", "pqr"), default="score")
    t.add_argument("--init", type=Path, default=None, help="NNUE model dir to fine-tune")
    t.add_argument("--batch-size", type=int, default=16384)
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--gamma", type=float, default=0.99, help="lr factor per epoch")
    t.add_argument(
        "--epoch-positions",
        type=int,
        default=None,
        help="samples per epoch for the lr decay (default: the training split)",
    )
    t.add_argument("--steps", type=int, default=1000)
    t.add_argument("--max-minutes", type=float, default=None)
    t.add_argument("--holdout-fraction", type=float, default=0.02)
    t.add_argument("--eval-every", type=int, default=200)
    t.add_argument("--checkpoint-every", type=int, default=100)
    t.add_argument("--log-every", type=int, default=20)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--device", default="auto")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--dense-lr-scale",
        type=float,
        default=1.0,
        help="learning-rate factor of the L2 and output layers (default 1); below 1 keeps "
        "second-layer units from leaving (0, 1) for good",
    )
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=_train)

    e = sub.add_parser("export", help="write RUN/model (or --to) from a run's last checkpoint")
    e.add_argument("run", type=Path, help="the training run directory")
    e.add_argument("--to", type=Path, default=None, help="model directory (default RUN/model)")
    e.set_defaults(func=_export)

    s = sub.add_parser(
        "label-static",
        help="label positions with Stockfish's static evaluation (fast NNUE training data)",
        description="Read FENs (first CSV column) from the sources, play 0-2 random legal moves "
        "from each, keep the quiet results and write them with Stockfish's static 'eval' as "
        "labelled CSV parts (depth 0, no best move). Resumable; --shard I/N splits the work.",
    )
    s.add_argument("sources", type=Path, nargs="+", metavar="CSV", help="position sources")
    s.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    s.add_argument("--stockfish", default="/usr/games/stockfish", help="Stockfish binary")
    s.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N", help="default 0/1")
    s.add_argument("--chunk", type=int, default=50_000, help="input positions per part")
    s.add_argument(
        "--random-plies",
        type=weights,
        default=(0.5, 0.3, 0.2),
        metavar="W0,W1,...",
        help="weights of 0, 1, 2, ... random plies before labelling (default 0.5,0.3,0.2)",
    )
    s.add_argument("--limit", type=int, default=None, help="stop after this many input positions")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(func=_label_static)

    i = sub.add_parser("info", help="print an NNUE model directory's config")
    i.add_argument("model", type=Path)
    i.set_defaults(func=_info)


def _train(args: argparse.Namespace) -> int:
    from latentchess.nnue.model import NnueConfig
    from latentchess.nnue.train import NnueTrainConfig, command_line, train_nnue

    cfg = NnueTrainConfig(
        data=tuple(args.data),
        out=args.out,
        cache=args.cache,
        network=NnueConfig(feature_set=args.features, l1=args.l1, l2=args.l2, psqt=args.psqt),
        loss=args.loss,
        init=args.init,
        batch_size=args.batch_size,
        lr=args.lr,
        gamma=args.gamma,
        epoch_positions=args.epoch_positions,
        steps=args.steps,
        max_minutes=args.max_minutes,
        holdout_fraction=args.holdout_fraction,
        eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every,
        log_every=args.log_every,
        threads=args.threads,
        device=args.device,
        seed=args.seed,
        dense_lr_scale=args.dense_lr_scale,
        progress=not args.no_progress,
        command=command_line(),
    )
    result = train_nnue(cfg)
    print(
        json.dumps(
            {
                "step": result.step,
                "stop": result.stop_reason,
                "model": str(result.model_dir),
                **result.metrics,
            }
        )
    )
    return 0


def _label_static(args: argparse.Namespace) -> int:
    from latentchess.nnue.distil import DistilConfig, label_static

    counts = label_static(
        DistilConfig(
            sources=tuple(args.sources),
            out=args.out,
            stockfish=args.stockfish,
            shard=args.shard,
            chunk=args.chunk,
            random_plies=args.random_plies,
            limit=args.limit,
            seed=args.seed,
            progress=not args.no_progress,
        )
    )
    print(json.dumps(counts))
    return 0


def _export(args: argparse.Namespace) -> int:
    from latentchess.nnue.train import export_checkpoint

    print(export_checkpoint(args.run, args.to))
    return 0


def _info(args: argparse.Namespace) -> int:
    from latentchess.nnue.io import load_nnue

    model = load_nnue(args.model)
    print(json.dumps({"nnue": model.network.cfg.to_dict(), **model.metadata}, indent=2))
    return 0
