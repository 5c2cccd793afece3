"""Search limits per side, written as short strings: ``50ms``, ``depth=1``, ``tc=60+0.6``.

Syntax: comma-separated items, each one of

* ``time=DUR`` or ``movetime=DUR`` or a bare ``DUR`` -- fixed time per move; ``DUR`` is seconds
  with an optional unit, ``0.05``, ``0.05s``, ``50ms``;
* ``depth=N`` -- fixed search depth in plies;
* ``nodes=N`` -- fixed node count;
* ``tc=BASE+INC`` or a bare ``BASE+INC`` -- a clock of BASE seconds plus INC per move
  (``tc=60`` means no increment).

Items combine (``depth=6,time=1`` stops at whichever comes first), as UCI's ``go`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import chess
import chess.engine

from latentchess.errors import LatentChessError

__all__ = ["SideLimit", "parse_limit", "LimitError"]


class LimitError(LatentChessError, ValueError):
    """A limit string that does not follow the syntax above."""


_DURATION_RE = re.compile(r"^(?P<value>\d+(\.\d*)?|\.\d+)\s*(?P<unit>ms|s)?$")
_CLOCK_RE = re.compile(r"^(?P<base>[^+]+)(\+(?P<inc>.+))?$")


@dataclass(frozen=True, kw_only=True)
class SideLimit:
    """How long one side may think per move.

    Attributes:
        movetime: seconds per move.
        depth: plies per search.
        nodes: nodes per search.
        base: clock at the start of the game in seconds (a clock game when set).
        increment: seconds added to the clock after each move.
    """

    movetime: float | None = None
    depth: int | None = None
    nodes: int | None = None
    base: float | None = None
    increment: float = 0.0

    def __post_init__(self) -> None:
        if all(v is None for v in (self.movetime, self.depth, self.nodes, self.base)):
            raise LimitError("a limit needs at least one of time, depth, nodes or tc")
        for name in ("movetime", "depth", "nodes", "base"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise LimitError(f"{name} must be positive, got {value!r}")
        if self.increment < 0:
            raise LimitError(f"increment must not be negative, got {self.increment!r}")

    @property
    def is_clock(self) -> bool:
        """Whether this side plays on a clock (and can lose on time)."""
        return self.base is not None

    def engine_limit(
        self, clocks: dict[chess.Color, float | None], increments: dict[chess.Color, float]
    ) -> chess.engine.Limit:
        """The python-chess limit for one move, given both sides' remaining clocks."""
        return chess.engine.Limit(
            time=self.movetime,
            depth=self.depth,
            nodes=self.nodes,
            white_clock=clocks[chess.WHITE] if self.is_clock else None,
            black_clock=clocks[chess.BLACK] if self.is_clock else None,
            white_inc=increments[chess.WHITE] if self.is_clock else None,
            black_inc=increments[chess.BLACK] if self.is_clock else None,
        )

    def fixed_limit(self) -> chess.engine.Limit:
        """The limit for a single search outside a game (a clock counts as its full base)."""
        return chess.engine.Limit(
            time=self.movetime,
            depth=self.depth,
            nodes=self.nodes,
            white_clock=self.base,
            black_clock=self.base,
            white_inc=self.increment if self.is_clock else None,
            black_inc=self.increment if self.is_clock else None,
        )

    def pgn_time_control(self) -> str:
        """PGN ``TimeControl`` value: ``BASE+INC`` for a clock, ``-`` otherwise."""
        if self.base is None:
            return "-"
        return f"{self.base:g}+{self.increment:g}" if self.increment else f"{self.base:g}"

    def __str__(self) -> str:
        parts = []
        if self.movetime is not None:
            parts.append(f"time={self.movetime:g}")
        if self.depth is not None:
            parts.append(f"depth={self.depth}")
        if self.nodes is not None:
            parts.append(f"nodes={self.nodes}")
        if self.base is not None:
            parts.append(f"tc={self.pgn_time_control()}")
        return ",".join(parts)


def parse_limit(text: str) -> SideLimit:
    """Parse a limit string (see the module docstring).

    Raises:
        LimitError: quoting the bad item.
    """
    fields: dict[str, float | int] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise LimitError(f"empty item in limit {text!r}")
        key, sep, value = item.partition("=")
        key = key.strip().lower() if sep else ""
        value = value.strip() if sep else item
        if key == "":
            key = "tc" if "+" in value else "time"
        try:
            if key in ("time", "movetime"):
                _store(fields, "movetime", _duration(value), text)
            elif key in ("depth", "nodes"):
                if not value.isdigit():
                    raise ValueError(f"expected a whole number, got {value!r}")
                _store(fields, key, int(value), text)
            elif key == "tc":
                clock = _CLOCK_RE.match(value)
                if clock is None:
                    raise ValueError(f"expected BASE+INC, got {value!r}")
                _store(fields, "base", _duration(clock["base"]), text)
                fields["increment"] = _duration(clock["inc"]) if clock["inc"] else 0.0
            else:
                raise ValueError(f"unknown key {key!r} (expected time, depth, nodes or tc)")
        except ValueError as error:
            raise LimitError(f"bad limit item {item!r} in {text!r}: {error}") from error
    return SideLimit(**fields)  # type: ignore[arg-type]


def _store(fields: dict[str, float | int], key: str, value: float | int, text: str) -> None:
    if key in fields:
        raise LimitError(f"{key} given twice in limit {text!r}")
    fields[key] = value


def _duration(text: str) -> float:
    match = _DURATION_RE.match(text.strip())
    if match is None:
        raise ValueError(f"expected seconds like 0.05, 0.05s or 50ms, got {text!r}")
    value = float(match["value"])
    return value / 1000.0 if match["unit"] == "ms" else value
