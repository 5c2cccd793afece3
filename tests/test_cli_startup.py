"""A lean start: ``latentchess --help`` imports no command's module, and ``latentchess uci``
(the default ``ab``) reaches ``readyok`` over a real pipe without NumPy, SciPy or PyTorch."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from latentchess.cli import build_parser
from latentchess.cli.commands import COMMANDS, module_of

HEAVY = ("numpy", "scipy", "torch", "pandas", "pyarrow")


_PROBE = """
import sys
from latentchess.cli import main
try:
    main(sys.argv[1:])
finally:
    print("MODULES", *sorted(sys.modules), file=sys.stderr)
"""
"""``latentchess ARGS`` in a fresh interpreter, listing every module it imported on the way."""


def _run(args: list[str], stdin: str = "") -> tuple[str, set[str]]:
    """stdout and the modules imported of ``latentchess ARGS`` fed ``stdin`` through a pipe."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return done.stdout, set(modules.split()[1:])


def _action(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return dict(_action(parser).choices)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    helps = {choice.dest: choice.help for choice in _action(parser)._choices_actions}
    return {name: helps.get(name) for name in _action(parser).choices}


def test_the_command_table_matches_what_the_modules_register() -> None:
    registered = _subcommands(build_parser())  # every module's register()
    assert registered == {name: help_text for name, (_, help_text) in COMMANDS.items()}
    assert list(registered) == list(COMMANDS)  # --help lists them in the same order


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    return [(action.dest, *action.option_strings) for action in parser._actions]


def test_a_lazy_parser_builds_each_command_as_the_full_one() -> None:
    full = _choices(build_parser())
    for name in COMMANDS:
        lazy = build_parser((name,), list_all=False)
        assert list(_subcommands(lazy)) == [name]
        assert _options(_choices(lazy)[name]) == _options(full[name]), name
    parser = build_parser(("perft",))
    assert list(_subcommands(parser)) == list(COMMANDS)  # the rest listed, parsing nothing
    args = parser.parse_args(["perft", "--depth", "2"])
    assert args.command == "perft" and args.depth == 2 and callable(args.func)


def test_help_lists_every_command_without_importing_their_modules() -> None:
    stdout, imported = _run(["--help"])
    assert re.findall(r"^    (\S+)", stdout, re.MULTILINE) == list(COMMANDS)
    assert not {module_of(name) for name in COMMANDS} & imported
    assert not {name for name in imported if name.split(".")[0] in HEAVY}


def test_uci_reaches_readyok_without_numpy_scipy_or_torch() -> None:
    pytest.importorskip("latentchess.core._native")
    stdout, imported = _run(["uci"], "uci\nisready\nquit\n")
    lines = stdout.splitlines()
    assert "uciok" in lines and lines[-1] == "readyok"
    assert "latentchess.engines.ab" in imported
    assert sorted(name for name in imported if name.split(".")[0] in HEAVY) == []
    assert {module_of(name) for name in COMMANDS} & imported == {"latentchess.cli.engines"}
