"""EPD test suites: ``bm``/``am`` accuracy (ECM, Arasan, Bratko-Kopec) and STS points (``c0``).

A position counts as *solved* when the engine's move is one of the ``bm`` moves (if any) and none
of the ``am`` moves. STS files carry ``c0 "f5=10, Be5+=2, ..."``: the points of each listed move
(10 or 100 for the best; moves not listed score 0). Moves in ``bm``, ``am`` and ``c0`` are SAN
(python-chess also reads the fully disambiguated ``Bg7f8`` found in STS v3); a ``c0`` entry that is
not SAN is tried as UCI. When a move appears twice in ``c0`` the higher points count.

Results are grouped by *theme*: the ``id`` without its final ``.number`` (``"STS(v1.0) Undermine"``,
``"ECM"``, ``"BK"``), or the file name when a line has no id. A malformed line (bad FEN, a move
that does not parse or is illegal, unbalanced quotes) is reported with its file and line and
skipped, or raised with ``strict``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.engine

from latentchess.engines.base import Engine
from latentchess.errors import DataFormatError
from latentchess.textfiles import read_text, strip_compression

__all__ = [
    "EpdPosition",
    "EpdResult",
    "EpdReport",
    "ThemeStats",
    "read_epd",
    "parse_epd_line",
    "run_epd",
]


@dataclass(frozen=True, kw_only=True)
class EpdPosition:
    """One test position.

    Attributes:
        id: the ``id`` operation (or ``file:line``).
        theme: group name (see the module docstring).
        fen: the position (EPD has no clocks: halfmove 0, fullmove 1).
        best_moves: ``bm`` moves, UCI.
        avoid_moves: ``am`` moves, UCI.
        points: ``c0`` points by UCI move (empty when the line has none).
        source: ``file:line``.
    """

    id: str
    theme: str
    fen: str
    best_moves: tuple[str, ...] = ()
    avoid_moves: tuple[str, ...] = ()
    points: dict[str, int] = field(default_factory=dict)
    source: str = ""

    @property
    def max_points(self) -> int:
        return max(self.points.values(), default=0)


_MOVE = r"(?:[NBRQK]?[a-h]?[1-8]?x?[a-h][1-8](?:=?[NBRQnbrq])?|O-O(?:-O)?|0-0(?:-0)?)[+#]?"
_C0_ITEM = re.compile(rf"^\s*(?P<move>{_MOVE})\s*=\s*(?P<points>-?\d+)\s*$")


def parse_epd_line(line: str, *, default_theme: str = "", source: str = "") -> EpdPosition:
    """Parse one EPD line.

    Raises:
        ValueError: describing what is wrong (the caller adds file and line).
    """
    if line.count('"') % 2:
        raise ValueError("unbalanced quotes")
    board, ops = chess.Board.from_epd(line)
    if not board.is_valid():
        raise ValueError(f"impossible position ({board.status()!r})")
    if "bm" not in ops and "am" not in ops and "c0" not in ops:
        raise ValueError("no bm, am or c0 operation: nothing to score")
    for name in ("bm", "am"):  # python-chess reads 'bm 5' as the number 5, not a move list
        if name in ops and not isinstance(ops[name], list):
            raise ValueError(f"{name} must list moves, got {ops[name]!r}")
    best = tuple(m.uci() for m in ops.get("bm", []))  # type: ignore[union-attr]
    avoid = tuple(m.uci() for m in ops.get("am", []))  # type: ignore[union-attr]
    points: dict[str, int] = {}
    c0 = ops.get("c0")
    items = [_C0_ITEM.match(item) for item in c0.split(",")] if isinstance(c0, str) else []
    if any(items):  # a move=points list (STS); otherwise c0 is a comment (Arasan: game names)
        for item, match in zip(str(c0).split(","), items, strict=True):
            if match is None:
                raise ValueError(f"bad c0 entry {item.strip()!r} (expected move=points)")
            move = _parse_move(board, match["move"])
            points[move] = max(points.get(move, int(match["points"])), int(match["points"]))
    if not best and not avoid and not points:
        raise ValueError("no bm, am or move=points c0: nothing to score")
    identifier = str(ops.get("id", source))
    theme = identifier.rsplit(".", 1)[0] if "id" in ops and "." in identifier else default_theme
    return EpdPosition(
        id=identifier,
        theme=theme or default_theme,
        fen=board.fen(),
        best_moves=best,
        avoid_moves=avoid,
        points=points,
        source=source,
    )


def _parse_move(board: chess.Board, text: str) -> str:
    try:
        return board.parse_san(text).uci()
    except ValueError:
        try:
            move = chess.Move.from_uci(text)
        except ValueError:
            raise ValueError(f"move {text!r} is neither SAN nor UCI in {board.fen()!r}") from None
        if move not in board.legal_moves:
            raise ValueError(f"illegal move {text!r} in {board.fen()!r}") from None
        return move.uci()


def read_epd(
    path: str | Path, *, strict: bool = False
) -> tuple[list[EpdPosition], list[DataFormatError]]:
    """Read an EPD suite (plain, or compressed: ``.gz``, ``.xz``, ``.zst``).

    Returns:
        The positions, and one error (file:line) per skipped line.

    Raises:
        DataFormatError: for an unreadable file, or any bad line when ``strict``.
    """
    path = Path(path)
    text = read_text(path)
    theme = Path(strip_compression(path)).stem  # sts1.epd.xz: theme sts1
    positions: list[EpdPosition] = []
    problems: list[DataFormatError] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            positions.append(
                parse_epd_line(line, default_theme=theme, source=f"{path.name}:{number}")
            )
        except ValueError as error:
            problem = DataFormatError(f"bad EPD line {line!r}: {error}", path=path, line=number)
            if strict:
                raise problem from error
            problems.append(problem)
    return positions, problems


@dataclass(frozen=True, kw_only=True)
class EpdResult:
    """The engine's answer on one position."""

    position: EpdPosition
    move: str | None
    solved: bool
    points: int
    error: str = ""


def score_move(position: EpdPosition, move: str | None) -> EpdResult:
    """Score a move (UCI) on a position."""
    if move is None:
        return EpdResult(position=position, move=None, solved=False, points=0)
    solved = (not position.best_moves or move in position.best_moves) and (
        move not in position.avoid_moves
    )
    if not position.best_moves and not position.avoid_moves:
        solved = position.points.get(move, 0) == position.max_points  # c0-only: top move
    return EpdResult(
        position=position, move=move, solved=solved, points=position.points.get(move, 0)
    )


@dataclass(frozen=True, kw_only=True)
class ThemeStats:
    """Totals for one theme."""

    theme: str
    positions: int
    solved: int
    points: int
    max_points: int


@dataclass(frozen=True, kw_only=True)
class EpdReport:
    """Results of an engine on one or more suites."""

    results: list[EpdResult]
    engine: str = ""
    limit: str = ""

    @property
    def solved(self) -> int:
        return sum(r.solved for r in self.results)

    def by_theme(self) -> list[ThemeStats]:
        """Totals per theme, in order of first appearance."""
        groups: dict[str, list[EpdResult]] = defaultdict(list)
        for r in self.results:
            groups[r.position.theme].append(r)
        return [
            ThemeStats(
                theme=theme,
                positions=len(rs),
                solved=sum(r.solved for r in rs),
                points=sum(r.points for r in rs),
                max_points=sum(r.position.max_points for r in rs),
            )
            for theme, rs in groups.items()
        ]

    def table(self) -> str:
        """Plain-text report: per theme, then the total."""
        themes = self.by_theme()
        width = max([len(t.theme) for t in themes] + [5])
        lines = [
            f"{self.engine} ({self.limit})",
            f"{'theme':<{width}}  {'positions':>9}  {'solved':>6}  {'%':>5}  {'points':>13}",
        ]
        rows = [*themes]
        if len(themes) > 1:
            rows.append(
                ThemeStats(
                    theme="total",
                    positions=sum(t.positions for t in themes),
                    solved=sum(t.solved for t in themes),
                    points=sum(t.points for t in themes),
                    max_points=sum(t.max_points for t in themes),
                )
            )
        for t in rows:
            pct = 100 * t.solved / max(t.positions, 1)
            points = f"{t.points}/{t.max_points}" if t.max_points else "-"
            lines.append(
                f"{t.theme:<{width}}  {t.positions:9d}  {t.solved:6d}  {pct:5.1f}  {points:>13}"
            )
        failures = sum(1 for r in self.results if r.error)
        if failures:
            lines.append(f"{failures} position(s) scored 0 because the engine failed")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "engine": self.engine,
            "limit": self.limit,
            "positions": len(self.results),
            "solved": self.solved,
            "themes": [t.__dict__ for t in self.by_theme()],
            "moves": {r.position.id: r.move for r in self.results},
        }


def run_epd(
    make: Callable[[], Engine],
    positions: Sequence[EpdPosition],
    limit: chess.engine.Limit,
    *,
    workers: int = 1,
    progress: bool = True,
    engine_name: str = "",
    limit_text: str = "",
) -> EpdReport:
    """Ask the engine for a move in every position (one engine per worker thread)."""
    from latentchess.evaluation.workers import map_with_engines

    def work(engine: Engine, position: EpdPosition) -> EpdResult:
        engine.new_game()
        board = chess.Board(position.fen)
        move = engine.play(board, limit)
        if move not in board.legal_moves:
            raise chess.IllegalMoveError(f"illegal move {move} in {position.fen!r}")
        return score_move(position, move.uci())

    def failed(position: EpdPosition, error: Exception) -> EpdResult:
        return EpdResult(position=position, move=None, solved=False, points=0, error=str(error))

    results = map_with_engines(
        make, positions, work, failed, workers=workers, desc="positions", progress=progress
    )
    return EpdReport(results=results, engine=engine_name, limit=limit_text or str(limit))
