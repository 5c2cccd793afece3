"""Subcommands of this area (see latentchess.cli)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
