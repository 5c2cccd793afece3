"""Argument types shared by the command-line modules (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse

__all__ = ["non_negative_int", "positive_int"]


def non_negative_int(text: str) -> int:
    """An integer >= 0, or an argparse error quoting the input."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1, or an argparse error quoting the input."""
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value
