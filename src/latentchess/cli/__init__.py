"""The ``latentchess`` command: a thin argparse layer over the Python API.

Each area of the package owns its subcommands in a ``cli`` module with a
``register(subparsers)`` function; every subcommand sets ``func(args) -> int`` (exit status).
Those modules import only light things at top level, so ``latentchess --help`` is quick.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from latentchess.engines.default import DEFAULT_ENGINE_SPEC
from latentchess.errors import LatentChessError

__all__ = ["main", "build_parser"]

_COMMAND_MODULES = (
    "latentchess.cli.data",
    "latentchess.cli.train",
    "latentchess.cli.nnue",
    "latentchess.cli.models",
    "latentchess.cli.chessformer",
    "latentchess.cli.engines",
    "latentchess.cli.evaluation",
    "latentchess.cli.tune",
    "latentchess.cli.human",
    "latentchess.cli.plots",
    "latentchess.cli.demo",
    "latentchess.cli.perft",
    "latentchess.cli.web",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="latentchess",
        description="Chess engines and a research toolkit around planning in a learned embedding "
        f"space. Commands with an --engine option use {DEFAULT_ENGINE_SPEC!r} (native alpha-beta, "
        "the strongest engine measured here) unless it names another; '--engine latent' is the "
        "latent planner.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in _COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what results record as the command
    try:
        return int(args.func(args) or 0)
    except LatentChessError as error:
        print(f"latentchess {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `latentchess analyse ... | head`): not an error of ours.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"latentchess {args.command}: interrupted", file=sys.stderr)
        return 130
