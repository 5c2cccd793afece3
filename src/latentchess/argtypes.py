"""Argument types shared by the command-line modules (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse

__all__ = ["non_negative_int", "positive_int", "shard", "weights"]


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


def shard(text: str) -> tuple[int, int]:
    """``I/N`` with ``0 <= I < N`` (this process's share of a job split N ways)."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/4, got {text!r}") from None
    if count < 1 or not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"expected I/N with 0 <= I < N, got {text!r}")
    return index, count


def weights(text: str) -> tuple[float, ...]:
    """Comma-separated non-negative numbers, e.g. ``0.5,0.3,0.2``."""
    try:
        values = tuple(float(w) for w in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated weights, got {text!r}"
        ) from None
    if min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected weights >= 0, got {text!r}")
    return values
