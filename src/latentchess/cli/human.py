"""``latentchess eval-human``: top-1 human move matching overall and per rating band."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``eval-human`` to the ``latentchess`` parser."""
    p = subparsers.add_parser(
        "eval-human",
        help="top-1 move-matching accuracy of a Chessformer on rated games, per rating band",
        description=(
            "For every position of every rated game (WhiteElo/BlackElo) in GAMES, compare the "
            "model's most probable legal move with the move played; print the accuracy overall "
            "and per 200-point band of the mover's rating, with position counts."
        ),
    )
    p.add_argument("games", type=Path, help="PGN of rated games (.pgn, .gz, .zst)")
    p.add_argument("--model", type=Path, default=None, help="model dir (default: shipped model)")
    p.add_argument("--json", type=Path, default=None, help="write accuracy/positions/by_band here")
    p.add_argument("--max-games", type=int, default=None, help="read at most N games")
    p.add_argument(
        "--skip-games",
        type=int,
        default=0,
        help="pass over the first N games (e.g. those a model was trained on)",
    )
    p.add_argument(
        "--heldout",
        default="all",
        choices=("all", "games", "players"),
        help="all positions, or only the training split's held-out games / players",
    )
    p.add_argument("--holdout-fraction", type=float, default=0.05)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from latentchess.models.chessformer_human import evaluate_human, write_json

    result = evaluate_human(
        args.games,
        args.model,
        max_games=args.max_games,
        skip_games=args.skip_games,
        heldout=args.heldout,
        holdout_fraction=args.holdout_fraction,
        device=args.device,
        progress=not args.no_progress,
    )
    print(f"model: {result.model}")
    print(
        f"{result.games} games, {result.positions} positions ({args.heldout}), "
        f"{result.seconds:.0f} s"
    )
    print(result.table())
    if args.json is not None:
        write_json(result, args.json)
        print(f"written: {args.json}")
    return 0
