"""``latentchess nnue ...``: export a run's checkpoint, label static data, inspect a network.

Training is ``latentchess train nnue`` (:mod:`latentchess.cli.train`); ``latentchess nnue train``
is its deprecated alias.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from latentchess.argtypes import shard, weights
from latentchess.cli.train import add_nnue_arguments, deprecated, run_nnue

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``nnue`` and its subcommands."""
    nnue = subparsers.add_parser(
        "nnue", help="NNUE evaluation networks (export, label-static, info)"
    )
    sub = nnue.add_subparsers(dest="nnue_command", metavar="SUBCOMMAND", required=True)

    t = sub.add_parser(
        "train",
        help="deprecated: `latentchess train nnue`",
        description="Deprecated spelling of `latentchess train nnue` (same flags).",
    )
    add_nnue_arguments(t)
    t.set_defaults(func=deprecated(run_nnue, "nnue train", "train nnue"))

    e = sub.add_parser("export", help="write RUN/model (or --to) from a run's last checkpoint")
    e.add_argument("run", type=Path, help="the training run directory")
    e.add_argument("--to", type=Path, default=None, help="model directory (default RUN/model)")
    e.add_argument(
        "--lean",
        action="store_true",
        help="the quantised tensors only (what the core reads; the float weights are rebuilt "
        "from them on loading): far smaller for a threat network",
    )
    e.set_defaults(func=_export)

    s = sub.add_parser(
        "label-static",
        help="label positions with Stockfish's static evaluation (fast NNUE training data)",
        description="Read FENs (first CSV column, the positions of `data selfplay` .bin "
        "records, or the fen column of `data label`'s Parquet shards) from the sources, play "
        "0-2 random legal moves from each, keep the quiet "
        "results and write them with Stockfish's static 'eval' as labelled CSV parts (depth 0, "
        "no best move). Resumable; --shard I/N splits the work.",
    )
    s.add_argument(
        "sources",
        type=Path,
        nargs="+",
        metavar="SOURCE",
        help="position sources: labelled CSV (.csv, .csv.gz), self-play .bin, a Parquet "
        "dataset (`data label`), or a directory of these",
    )
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
    from latentchess.training.nnue import export_checkpoint

    print(export_checkpoint(args.run, args.to, lean=args.lean))
    return 0


def _info(args: argparse.Namespace) -> int:
    from latentchess.nnue.features import BLOCK_SIZES
    from latentchess.nnue.io import load_nnue

    model = load_nnue(args.model)
    features = model.network.cfg.features
    blocks = [
        {"block": block, "offset": offset, "size": BLOCK_SIZES[block]}
        for block, offset in zip(features.blocks, features.offsets, strict=True)
    ]
    nnue = model.network.cfg.to_dict() | {"features": features.size, "blocks": blocks}
    print(json.dumps({**model.metadata, "nnue": nnue}, indent=2))
    return 0
