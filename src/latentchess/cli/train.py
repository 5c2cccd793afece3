"""``latentchess train``: flags onto :class:`~latentchess.training.config.TrainConfig`.

Multi-GPU or multi-node: ``torchrun --nproc_per_node=K [--nnodes=N --node_rank=I
--rdzv_endpoint=HOST:PORT] -m latentchess train ...`` (same flags; ``--batch-size`` is global).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from latentchess.training.config import TrainConfig

__all__ = ["register", "config_from_args"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    p = subparsers.add_parser(
        "train",
        help="train an encoder with supervised contrastive learning (resumable, DDP-ready)",
        description=(
            "Train a SOLIS encoder on Stockfish win probabilities with the SupCon loss "
            "(paper section 3.3), compute the advantage axis and the score calibration, and "
            "write OUT/model. Rerunning the same command resumes from OUT/checkpoints. "
            "Under torchrun the run is data-parallel (--batch-size is the global batch)."
        ),
    )
    p.add_argument("--data", type=Path, required=True, help="training cache or Parquet dataset dir")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument(
        "--model-config",
        default="tiny",
        help="a name from `latentchess models`: a SOLIS encoder (micro, tiny, ...) or a "
        "contrastive Chessformer GAB encoder (gab-nano, gab-micro, gab-tiny); default tiny",
    )
    p.add_argument(
        "--dropout",
        type=float,
        default=0.0,
        help=(
            "dropout of the encoder (default 0; the paper's 0.1 made short runs collapse to a "
            "constant embedding, see benchmarks/results/lr_schedule.md)"
        ),
    )
    p.add_argument("--steps", type=int, default=10_000, help="optimiser steps (default 10000)")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop training after this many minutes of this invocation, then write a checkpoint "
        "and the model (axis, calibration: extra time on top); rerun to continue",
    )
    p.add_argument("--batch-size", type=int, default=128, help="anchors per step (default 128)")
    p.add_argument("--positives", type=int, default=5, help="positives per anchor (default 5)")
    p.add_argument("--delta", type=float, default=0.05, help="positive margin (default 0.05)")
    p.add_argument("--temperature", type=float, default=0.07, help="SupCon tau (default 0.07)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate")
    p.add_argument("--schedule", choices=("cosine", "constant"), default="cosine")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default 2%% of steps)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument(
        "--optimizer",
        choices=("sgd", "adamw"),
        default="sgd",
        help="sgd (with --momentum; the paper's) or adamw",
    )
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--holdout-fraction", type=float, default=0.02)
    p.add_argument("--holdout-max", type=int, default=20_000)
    p.add_argument("--eval-every", type=int, default=500, help="0: evaluate only at the end")
    p.add_argument("--eval-positions", type=int, default=4096)
    p.add_argument(
        "--axis-positions", type=int, default=4096, help="mates per side for the axis (4096)"
    )
    p.add_argument("--checkpoint-every", type=int, default=1000)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--cache-dir", type=Path, default=None, help="token cache of a Parquet dataset")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_train)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` described by parsed ``train`` arguments.

    Raises:
        ValueError: an unknown model config or an invalid setting (the message names it).
    """
    import dataclasses

    from latentchess.models import get_config
    from latentchess.training.config import TrainConfig

    model = dataclasses.replace(get_config(args.model_config), dropout=args.dropout)
    optional = {"lr": args.lr, "weight_decay": args.weight_decay}
    return TrainConfig(
        data=args.data,
        out=args.out,
        model=model,
        steps=args.steps,
        max_minutes=args.max_minutes,
        batch_size=args.batch_size,
        positives=args.positives,
        delta=args.delta,
        temperature=args.temperature,
        schedule=args.schedule,
        warmup=args.warmup,
        momentum=args.momentum,
        optimizer=args.optimizer,
        precision=args.precision,
        device=args.device,
        threads=args.threads,
        seed=args.seed,
        holdout_fraction=args.holdout_fraction,
        holdout_max=args.holdout_max,
        eval_every=args.eval_every,
        eval_positions=args.eval_positions,
        axis_per_side=args.axis_positions,
        checkpoint_every=args.checkpoint_every,
        log_every=args.log_every,
        cache_dir=args.cache_dir,
        progress=not args.no_progress,
        **{k: v for k, v in optional.items() if v is not None},
    )


def _train(args: argparse.Namespace) -> int:
    from latentchess.training.trainer import train

    try:
        cfg = config_from_args(args)
    except ValueError as error:
        print(f"latentchess train: error: {error}", file=sys.stderr)
        return 2
    result = train(cfg)
    if result.resumed_from is not None:
        print(f"resumed from step {result.resumed_from}", file=sys.stderr)
    if result.stop_reason == "signal":
        print(
            f"interrupted at step {result.step}; checkpoint written to "
            f"{cfg.out / 'checkpoints'}; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    if result.model_dir is not None:
        metrics = ", ".join(
            f"{key} {value:.4f}"
            for key, value in result.metrics.items()
            if key in ("spearman", "pair_accuracy", "heldout_loss")
        )
        budget = (
            " (time budget reached; rerun to continue)" if result.stop_reason != "completed" else ""
        )
        print(
            f"step {result.step}{budget}: model written to {result.model_dir}; held-out {metrics}"
        )
    return 0
