"""``latentchess train {supcon,regression,chessformer,nnue}``: one command, one loop.

``regression`` is the control of ``supcon``: the same encoder and flags, another loss.

Each objective's flags map onto its config (:class:`~latentchess.training.config.TrainConfig`,
:class:`~latentchess.training.objectives.chessformer.ChessformerTrainConfig`,
:class:`~latentchess.training.nnue.NnueTrainConfig`) and every run goes through the shared loop
(:mod:`latentchess.training.loop`): rerunning the same command resumes from OUT/checkpoints.

``latentchess train --data ...`` with no objective is ``latentchess train supcon --data ...`` (the
spelling from before there were objectives). ``latentchess train-chessformer`` and ``latentchess
nnue train`` still work as deprecated aliases of ``train chessformer`` and ``train nnue``.

Multi-GPU or multi-node: ``torchrun --nproc_per_node=K [--nnodes=N --node_rank=I
--rdzv_endpoint=HOST:PORT] -m latentchess train OBJECTIVE ...`` (same flags; ``--batch-size`` is
global).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from latentchess.training.config import TrainConfig

__all__ = [
    "OBJECTIVES",
    "register",
    "config_from_args",
    "add_nnue_arguments",
    "run_nnue",
    "deprecated",
]

OBJECTIVES = ("supcon", "regression", "chessformer", "nnue")
DEFAULT_OBJECTIVE = "supcon"

_CHESSFORMER_DESCRIPTION = (
    "Train a Chessformer (squares as tokens, geometric attention bias) on a PGN of rated "
    "games (human moves, game results) or a Stockfish-labelled CSV (best move, win "
    "probability), and write OUT/model. Rerunning the same command resumes."
)

_NNUE_DESCRIPTION = (
    "Extract features once into a memory-mapped cache, then train. Rerunning the same command "
    "resumes from OUT/checkpoints. Writes OUT/model."
)


class _TrainParser(argparse.ArgumentParser):
    """``train`` whose first argument is not an objective (nor help) means ``train supcon``."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        argv = list(sys.argv[1:] if args is None else args)
        if argv and argv[0] not in (*OBJECTIVES, "-h", "--help"):
            argv.insert(0, DEFAULT_OBJECTIVE)
        return super().parse_known_args(argv, namespace)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``train`` (and the deprecated ``train-chessformer``) to the ``latentchess`` parser."""
    train = subparsers.add_parser(
        "train",
        help="train a model: supcon (the SOLIS encoder), chessformer or nnue (resumable, "
        "DDP-ready)",
        description="Train through the shared loop (resume from OUT/checkpoints, atomic "
        "checkpoints, SIGINT/SIGTERM, --max-minutes, progress, OUT/metrics.jsonl, torchrun). "
        "With no objective named, supcon: `latentchess train --data ...` is `latentchess train "
        "supcon --data ...`.",
    )
    train.__class__ = _TrainParser  # argparse builds subparsers of the top parser's class
    objectives = train.add_subparsers(
        dest="objective",
        metavar="OBJECTIVE",
        required=True,
        parser_class=argparse.ArgumentParser,
    )

    p = objectives.add_parser(
        "supcon",
        help="a SOLIS encoder with supervised contrastive learning (the default objective)",
        description=(
            "Train a SOLIS encoder on Stockfish win probabilities with the SupCon loss "
            "(paper section 3.3), compute the advantage axis and the score calibration, and "
            "write OUT/model. Rerunning the same command resumes from OUT/checkpoints. "
            "Under torchrun the run is data-parallel (--batch-size is the global batch)."
        ),
    )
    _add_supcon_arguments(p)
    p.set_defaults(func=_supcon)

    p = objectives.add_parser(
        "regression",
        help="the same encoder trained to regress its axis cosine onto the win probability "
        "(the control of supcon)",
        description=(
            "Train an encoder of the supcon objective's shape (same flags, data, split, "
            "optimiser and export) with a fixed unit axis u: the loss is the mean squared error "
            "of cos(z, u) against 2 p_white - 1. --positives and --temperature are not used; a "
            "step embeds --batch-size positions (768 embeds as many as supcon's 128 x (1 + 5)). "
            "The model stores u as its axis, so `latent:model=DIR` scores with it unchanged."
        ),
    )
    _add_supcon_arguments(p)
    p.set_defaults(func=_supcon)

    p = objectives.add_parser(
        "chessformer",
        help="a Chessformer (policy + value) on rated games or engine labels",
        description=_CHESSFORMER_DESCRIPTION,
    )
    _add_chessformer_arguments(p)
    p.set_defaults(func=_chessformer)

    p = objectives.add_parser(
        "nnue",
        help="an NNUE evaluation network (target-score or PQR loss)",
        description=_NNUE_DESCRIPTION,
    )
    add_nnue_arguments(p)
    p.set_defaults(func=run_nnue)

    p = subparsers.add_parser(
        "train-chessformer",
        help="deprecated: `latentchess train chessformer`",
        description=_CHESSFORMER_DESCRIPTION + " Deprecated spelling of `latentchess train "
        "chessformer`.",
    )
    _add_chessformer_arguments(p)
    p.set_defaults(func=deprecated(_chessformer, "train-chessformer", "train chessformer"))


def deprecated(
    run: Callable[[argparse.Namespace], int], old: str, new: str
) -> Callable[[argparse.Namespace], int]:
    """``run`` after a one-line note (rank 0 only) that ``latentchess OLD`` is now ``NEW``."""

    def wrapped(args: argparse.Namespace) -> int:
        if os.environ.get("RANK", "0") == "0":
            print(
                f"note: `latentchess {old}` is deprecated; use `latentchess {new}`",
                file=sys.stderr,
            )
        return run(args)

    return wrapped


# -- supcon ----------------------------------------------------------------------------------------


def _add_supcon_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, required=True, help="training cache or Parquet dataset dir")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument(
        "--model-config",
        default="tiny",
        help="a name from `latentchess models`: a SOLIS encoder (micro, tiny, ...), a "
        "contrastive Chessformer GAB encoder (gab-nano, gab-micro, gab-tiny) or a sparse "
        "NNUE-feature encoder (sparse-32, sparse-64, sparse-128); default tiny",
    )
    p.add_argument(
        "--feature-set",
        default=None,
        help="sparse encoders only: NNUE feature blocks joined by '+' (ALL, KA, KA9, H, V, D1, "
        "D2, PH, PV, MB, MC, and a threat block T or TNK last; default ALL)",
    )
    p.add_argument(
        "--init-ft",
        type=Path,
        default=None,
        metavar="NNUE_DIR",
        help="sparse encoders only: start the feature transformer from this NNUE's (the blocks "
        "the two sets share, and the bias; the widths must match)",
    )
    p.add_argument(
        "--hidden",
        type=int,
        default=None,
        help="sparse encoders only: the width of the dense hidden layer (default the config's, 32)",
    )
    p.add_argument(
        "--ft-from",
        default=None,
        metavar="NNUE",
        help="sparse encoders only: use this NNUE's feature transformer unchanged (a shipped "
        "name such as nnue-default, or a model directory): frozen in training, and not stored "
        "in the encoder's file, which records the name and the transformer's fingerprint",
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


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` described by parsed ``train`` arguments.

    Raises:
        ValueError: an unknown model config or an invalid setting (the message names it).
    """
    from latentchess.models import get_config
    from latentchess.training.config import TrainConfig

    model = dataclasses.replace(get_config(args.model_config), dropout=args.dropout)
    feature_set = getattr(args, "feature_set", None)
    if feature_set is not None:
        if not hasattr(model, "feature_set"):
            raise ValueError(
                f"--feature-set applies to sparse-* encoders, not {args.model_config!r}"
            )
        model = dataclasses.replace(model, feature_set=feature_set)
    hidden = getattr(args, "hidden", None)
    if hidden is not None:
        if not hasattr(model, "feature_set"):
            raise ValueError(f"--hidden applies to sparse-* encoders, not {args.model_config!r}")
        model = dataclasses.replace(model, hidden=hidden)
    ft_from = getattr(args, "ft_from", None)
    if ft_from is not None:
        if not hasattr(model, "ft_from"):
            raise ValueError(f"--ft-from applies to sparse-* encoders, not {args.model_config!r}")
        model = dataclasses.replace(model, ft_from=str(ft_from))
    optional = {"lr": args.lr, "weight_decay": args.weight_decay}
    init_ft = getattr(args, "init_ft", None)
    objective = getattr(args, "objective", "supcon")
    return TrainConfig(
        data=args.data,
        out=args.out,
        model=model,
        objective="regression" if objective == "regression" else "supcon",
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
        init_ft=init_ft,
        progress=not args.no_progress,
        **{k: v for k, v in optional.items() if v is not None},
    )


def _supcon(args: argparse.Namespace) -> int:
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


# -- chessformer -----------------------------------------------------------------------------------


class _GivenAction(argparse.Action):
    """Store the value and remember that it was given (``DEST_given``)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _add_chessformer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, required=True, help="PGN (.gz/.xz/.zst), CSV or .npz cache")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument(
        "--model-config",
        default="cf-micro",
        action=_GivenAction,
        help="a name from CHESSFORMER_CONFIGS (default cf-micro; with --init-from, its model's)",
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
    p.add_argument(
        "--time-control",
        action="store_true",
        help="condition on the game's time-control band (bullet, blitz, rapid, classical)",
    )
    p.add_argument(
        "--mirror",
        type=float,
        default=0.0,
        metavar="P",
        help="mirror a <-> h with probability P the positions without castling rights",
    )
    p.add_argument(
        "--init-from", type=Path, default=None, metavar="MODEL", help="start from a model dir"
    )
    p.add_argument(
        "--mix-data",
        type=Path,
        default=None,
        metavar="PATH",
        help="a second data set (e.g. engine moves, CSV or .npz) mixed into the batches",
    )
    p.add_argument(
        "--mix-share",
        type=float,
        default=0.0,
        metavar="S",
        help="the mix data's share of the first batch, decaying linearly to 0 (default 0)",
    )
    p.add_argument(
        "--loader-workers",
        type=int,
        default=0,
        metavar="N",
        help="processes that make the coming batches while the model trains (default 0: none; "
        "the batches are the same)",
    )


def _chessformer(args: argparse.Namespace) -> int:
    from latentchess.models.chessformer import get_chessformer_config
    from latentchess.training.objectives.chessformer import (
        ChessformerTrainConfig,
        train_chessformer,
    )

    if args.init_from is not None and not getattr(args, "model_config_given", False):
        from latentchess.models.chessformer_io import load_chessformer

        model = load_chessformer(args.init_from)[0].cfg
    else:
        model = get_chessformer_config(args.model_config)
    changes: dict[str, object] = {}
    if args.time_control:
        changes["time_control"] = True
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
        mirror=args.mirror,
        init_from=args.init_from,
        mix_data=args.mix_data,
        mix_share=args.mix_share,
        loader_workers=args.loader_workers,
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


# -- nnue ------------------------------------------------------------------------------------------


def add_nnue_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``train nnue`` (also those of the deprecated ``nnue train``)."""
    p.add_argument(
        "--data",
        action="append",
        required=True,
        metavar="PATH[:ROWS[:EVERY]]",
        help="labelled CSV, Parquet dataset (`data label`), self-play .bin file (`data "
        "selfplay`) or a directory of them (repeatable): every EVERY-th row, at most ROWS of them",
    )
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument("--cache", type=Path, default=None, help="feature cache dir (default OUT/cache)")
    p.add_argument(
        "--lambda",
        dest="score_lambda",
        type=float,
        default=1.0,
        metavar="LAMBDA",
        help="target = LAMBDA * winprob(score) + (1 - LAMBDA) * game result (default 1: the "
        "score alone; results come from self-play .bin data, CSV rows use the score alone)",
    )
    p.add_argument("--features", default="ALL", help="feature set, e.g. ALL or ALL+H+V")
    p.add_argument("--l1", type=int, default=256, help="accumulator width (default 256)")
    p.add_argument("--l2", type=int, default=32, help="hidden width (default 32)")
    p.add_argument(
        "--psqt",
        action="store_true",
        help="add a linear piece-square term to the output (unbounded material; not in the thesis)",
    )
    p.add_argument(
        "--output-buckets",
        type=int,
        default=1,
        help="copies of the dense layers, one per piece-count range (Stockfish's layer stacks: "
        "8); with --init of a plain network every copy starts as its layers",
    )
    p.add_argument("--loss", choices=("score", "pqr"), default="score")
    p.add_argument(
        "--init",
        type=Path,
        default=None,
        help="NNUE model dir to fine-tune (the same shape, or a plain one with --output-buckets)",
    )
    p.add_argument("--batch-size", type=int, default=16384)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--gamma", type=float, default=0.99, help="lr factor per epoch")
    p.add_argument(
        "--epoch-positions",
        type=int,
        default=None,
        help="samples per epoch for the lr decay (default: the training split)",
    )
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--max-minutes", type=float, default=None)
    p.add_argument("--holdout-fraction", type=float, default=0.02)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--dense-lr-scale",
        type=float,
        default=1.0,
        help="learning-rate factor of the L2 and output layers (default 1); below 1 keeps "
        "second-layer units from leaving (0, 1) for good, above 1 lets a bucketed fine-tune "
        "move its dense layers more than the accumulator",
    )
    update = p.add_mutually_exclusive_group()
    update.add_argument(
        "--sparse-features",
        dest="sparse_features",
        action="store_const",
        const=True,
        default=None,
        help="sparse first-layer update: a step moves only the feature rows its batch touches "
        "(lazy Adam; the default for a set with a threat block; one process only)",
    )
    update.add_argument(
        "--dense-features",
        dest="sparse_features",
        action="store_const",
        const=False,
        help="dense first-layer update: Adam on every row (the default without a threat block)",
    )
    p.add_argument("--no-progress", action="store_true")


def run_nnue(args: argparse.Namespace) -> int:
    """Run ``train nnue``; prints the result as one JSON line."""
    from latentchess.nnue.model import NnueConfig
    from latentchess.training.nnue import NnueTrainConfig, command_line
    from latentchess.training.objectives.nnue import train_nnue

    cfg = NnueTrainConfig(
        data=tuple(args.data),
        out=args.out,
        cache=args.cache,
        network=NnueConfig(
            feature_set=args.features,
            l1=args.l1,
            l2=args.l2,
            psqt=args.psqt,
            output_buckets=args.output_buckets,
        ),
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
        score_lambda=args.score_lambda,
        sparse_features=args.sparse_features,
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
