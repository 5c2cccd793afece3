"""The ``latentchess`` command: a thin argparse layer over the Python API.

Each area of the package owns its subcommands in a ``cli`` module with a
``register(subparsers)`` function; every subcommand sets ``func(args) -> int`` (exit status).
:mod:`latentchess.cli.commands` lists every command with its module and help, so ``latentchess
--help`` imports none of those modules and ``latentchess uci`` imports only ``cli.engines``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection, Sequence
from typing import Any

from latentchess.cli.commands import COMMANDS, module_of
from latentchess.engines.default import DEFAULT_ENGINE_SPEC
from latentchess.errors import LatentChessError

__all__ = ["main", "build_parser"]


class _Ignored:
    """Takes every call a ``register`` function makes on the parser of a command not built (adds
    arguments, groups, defaults) and does nothing: building argparse parsers costs time."""

    def __getattr__(self, name: str) -> Any:
        return self._ignore

    def __setattr__(self, name: str, value: Any) -> None:  # `parser.__class__ = ...` too
        pass

    def _ignore(self, *args: Any, **kwargs: Any) -> _Ignored:
        return self


class _Only:
    """Stands for the subparsers while one module registers its commands: adds ``wanted`` and
    ignores the module's other commands."""

    def __init__(self, subparsers: Any, wanted: str) -> None:
        self.subparsers = subparsers
        self.wanted = wanted

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self.subparsers.add_parser(name, **kwargs) if name == self.wanted else _Ignored()


def build_parser(
    commands: Collection[str] | None = None, *, list_all: bool = True
) -> argparse.ArgumentParser:
    """The ``latentchess`` parser: full parsers for ``commands`` (None: every command); with
    ``list_all``, the others are listed with their help and parse nothing (their modules are not
    imported), else left out (``main`` builds only the command it runs)."""
    parser = argparse.ArgumentParser(
        prog="latentchess",
        description="Chess engines and a research toolkit around planning in a learned embedding "
        f"space. Commands with an --engine option use {DEFAULT_ENGINE_SPEC!r} (native alpha-beta, "
        "the strongest engine measured here) unless it names another; '--engine latent' is the "
        "latent planner.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if commands is None:
        for module_name in dict.fromkeys(module_of(name) for name in COMMANDS):
            importlib.import_module(module_name).register(subparsers)
        return parser
    for name, (_, help_text) in COMMANDS.items():
        if name in commands:
            importlib.import_module(module_of(name)).register(_Only(subparsers, name))
        elif list_all:
            subparsers.add_parser(name, help=help_text, add_help=False)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (its first word: the top level has no option but --help)."""
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command(argv)
    if command is None:  # --help, or not a command: list them all
        args = build_parser(()).parse_args(argv)
    else:
        args = build_parser((command,), list_all=False).parse_args(argv)
    args.argv = argv  # what results record as the command
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
