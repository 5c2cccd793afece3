"""Subcommand of the native core (see latentchess.cli): ``perft``.

``latentchess perft --depth N [--fen FEN] [--moves ...] [--chess960]`` prints the leaf count per
legal move, a blank line and ``Nodes searched: N``, as Stockfish's ``go perft N``; ``--suite``
checks the standard perft suite (and published Chess960 counts) against their published counts
(exit status 1 on any mismatch).
"""

from __future__ import annotations

import argparse
import sys
import time

from latentchess.argtypes import non_negative_int, positive_int

__all__ = ["register"]

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``perft`` to the ``latentchess`` parser."""
    perft = subparsers.add_parser(
        "perft",
        help="count the leaves of the legal move tree (move generator check, as 'go perft')",
        description=(
            "Count leaf nodes of the legal move tree on the native core: per root move, a blank "
            "line and 'Nodes searched: N' (Stockfish's 'go perft' format; timing on stderr). "
            "--suite runs the standard perft suite against its published counts."
        ),
    )
    perft.add_argument("--fen", default=START_FEN, help="position (default: the start position)")
    perft.add_argument("--moves", nargs="*", default=[], metavar="UCI", help="moves played first")
    perft.add_argument("--depth", type=non_negative_int, default=5, help="plies (default 5)")
    perft.add_argument(
        "--chess960",
        action="store_true",
        help="Chess960 rules: X-FEN or Shredder-FEN castling, castling moves as king takes rook",
    )
    perft.add_argument(
        "--suite",
        action="store_true",
        help="run the standard suite (every published count up to --max-nodes) instead",
    )
    perft.add_argument(
        "--max-nodes",
        type=positive_int,
        default=200_000_000,
        help="with --suite: the largest published count to run (default 200,000,000)",
    )
    perft.set_defaults(func=_perft)


def _perft(args: argparse.Namespace) -> int:
    from latentchess.core import Board
    from latentchess.core.suite import format_divide

    if args.suite:
        return _suite(args.max_nodes)
    board = Board(args.fen, chess960=args.chess960)
    for uci in args.moves:
        board.push_uci(uci)
    began = time.perf_counter()
    if args.depth == 0:
        lines = ["", "Nodes searched: 1"]
        nodes = 1
    else:
        divide = board.perft_divide(args.depth)
        lines = format_divide(divide)
        nodes = sum(divide.values())
    seconds = time.perf_counter() - began
    print("\n".join(lines), flush=True)
    rate = nodes / seconds if seconds > 0 else float("inf")
    print(
        f"perft {args.depth}: {nodes:,} nodes in {seconds:.3f} s ({rate:,.0f} nodes/s)",
        file=sys.stderr,
    )
    return 0


def _suite(max_nodes: int) -> int:
    from latentchess.core.suite import PerftOutcome, cases_up_to, run_suite

    total = len(cases_up_to(max_nodes))
    done = 0
    began = time.perf_counter()

    def show(outcome: PerftOutcome) -> None:
        nonlocal done
        done += 1
        verdict = "ok" if outcome.ok else f"MISMATCH (published {outcome.expected:,})"
        rate = outcome.nodes / outcome.seconds if outcome.seconds > 0 else 0.0
        print(
            f"[{done}/{total}] {outcome.name:<22} depth {outcome.depth}  {outcome.nodes:>13,}  "
            f"{outcome.seconds:7.2f} s  {rate / 1e6:6.1f} M nodes/s  {verdict}",
            flush=True,
        )

    outcomes = run_suite(max_nodes, on_result=show)
    wrong = [o for o in outcomes if not o.ok]
    nodes = sum(o.nodes for o in outcomes)
    print(
        f"{len(outcomes) - len(wrong)}/{len(outcomes)} counts equal the published values; "
        f"{nodes:,} nodes in {time.perf_counter() - began:.1f} s"
    )
    return 1 if wrong else 0
