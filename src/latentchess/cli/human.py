"""``latentchess eval-human``: top-1 human move matching overall and per rating band, under the
field's protocol (skipped plies, clock and speed filters, held-out players, 95% intervals)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _edges(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated ratings like 1400,2000,2400, got {text!r}"
        ) from None


def _speeds(text: str) -> tuple[str, ...]:
    return () if text == "any" else tuple(s.strip() for s in text.split(","))


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``eval-human`` to the ``latentchess`` parser."""
    p = subparsers.add_parser(
        "eval-human",
        help="top-1 move-matching accuracy of a Chessformer on rated games, per rating band",
        description=(
            "For the positions of the rated games (WhiteElo/BlackElo) in GAMES that the protocol "
            "keeps, compare the model's most probable legal move with the move played; print the "
            "accuracy overall and per band of the mover's rating, with position and game counts "
            "and 95% intervals (bootstrap over games). The defaults are the protocol of Maia-3 "
            "and Allie: skip the first 10 plies, drop every position from the first ply where the "
            "mover's clock ([%clk]) is under 30 s, blitz games only, bands <1400, 1400-1999, "
            "2000-2399, >=2400. '--skip-plies 0 --min-clock 0 --time-control any' scores every "
            "position. A protocol that keeps no position is an error (status 2) naming each filter "
            "that removed games or positions, by speed, and the flag that keeps them. A model "
            "with a time-control input is given each game's band (TimeControl); accuracy by "
            "speed is printed when there are several, and the JSON keeps per-game hits for "
            "paired comparisons (latentchess.evaluation.human.paired_difference)."
        ),
    )
    p.add_argument("games", type=Path, help="PGN of rated games (.pgn, .gz, .xz, .zst)")
    p.add_argument("--model", type=Path, default=None, help="model dir (default: shipped model)")
    p.add_argument("--json", type=Path, default=None, help="write the result (and protocol) here")
    p.add_argument(
        "--plot", type=Path, default=None, help="accuracy by band with intervals (.png/.svg)"
    )
    g = p.add_argument_group("protocol")
    g.add_argument("--skip-plies", type=int, default=10, help="skip each game's first N plies")
    g.add_argument(
        "--min-clock",
        type=float,
        default=30.0,
        help="seconds: drop positions where the mover's [%%clk] is lower (0: no clock filter)",
    )
    g.add_argument(
        "--clock-rule",
        choices=("truncate", "position"),
        default="truncate",
        help="truncate: drop the rest of the game from the first low clock (Maia-3, Allie); "
        "position: only the low-clock positions (Maia-2)",
    )
    g.add_argument(
        "--time-control",
        type=_speeds,
        default=("blitz",),
        metavar="SPEEDS",
        help="Lichess speed classes to keep, comma-separated (ultrabullet, bullet, blitz, rapid, "
        "classical, correspondence), or 'any' (default: blitz)",
    )
    g.add_argument(
        "--bands",
        type=_edges,
        default=(1400, 2000, 2400),
        metavar="EDGES",
        help="band edges of the mover's rating (default 1400,2000,2400)",
    )
    g.add_argument(
        "--exclude-players-of",
        type=Path,
        action="append",
        default=[],
        metavar="PGN",
        help="training PGN: leave out every game where either player (or its URL) appears "
        "there (repeatable)",
    )
    g.add_argument(
        "--sample-positions", type=int, default=None, help="score a random sample of N positions"
    )
    g.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap")
    g.add_argument("--bootstrap", type=int, default=2000, help="bootstrap draws (0: none)")
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
    from latentchess.evaluation.human import HumanProtocol, evaluate_human, write_json

    protocol = HumanProtocol(
        skip_plies=args.skip_plies,
        min_clock=args.min_clock,
        clock_rule=args.clock_rule,
        speeds=args.time_control,
        band_edges=args.bands,
        sample_positions=args.sample_positions,
        seed=args.seed,
        bootstrap=args.bootstrap,
    )
    result = evaluate_human(
        args.games,
        args.model,
        protocol=protocol,
        exclude_players_of=args.exclude_players_of,
        max_games=args.max_games,
        skip_games=args.skip_games,
        heldout=args.heldout,
        holdout_fraction=args.holdout_fraction,
        device=args.device,
        progress=not args.no_progress,
    )
    filters = result.extra["filters"]
    print(f"model: {result.model}")
    print(
        f"{result.games} games, {result.positions} positions ({args.heldout}), "
        f"{result.seconds:.0f} s"
    )
    print("filters: " + ", ".join(f"{k} {v}" for k, v in filters.items()))
    print(result.table())
    speeds = result.extra.get("by_speed", {})
    if len(speeds) > 1 or result.extra.get("time_control_input"):
        for speed, row in speeds.items():
            ci = row["ci95"]
            interval = f"  [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
            print(
                f"{speed:>10}  {row['positions']:>9}  {row['games']:>5}  "
                f"{row['accuracy']:>6.3f}{interval}"
            )
    if args.json is not None:
        write_json(result, args.json)
        print(f"written: {args.json}")
    if args.plot is not None:
        from latentchess.plots.human import plot_human_bands

        print(f"written: {plot_human_bands(result.to_dict(), args.plot)}")
    return 0
