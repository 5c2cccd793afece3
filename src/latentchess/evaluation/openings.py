"""Match openings: from a PGN or EPD file, a Polyglot book, or a balanced sample of ECO lines.

Every opening is a start position plus the moves played from it; those moves become part of each
game's record (marked "book"), so a PGN of a match replays from the standard position whenever the
opening did.

The default sample ("balanced ECO") draws from pgn-extract's ``eco.pgn``: lines of at least
``min_plies`` plies, one line per ECO code, codes taken round-robin over the five volumes A-E in a
seeded random order, so a small sample already spans flank openings, open, semi-open, closed and
Indian games. Optionally (``max_cp``) each candidate's final position is checked by Stockfish at a
low depth and kept only when ``|eval| <= max_cp`` centipawns, which drops gambits and known
refutations. The result depends only on the seed, the file and (when checking) the engine.
"""

from __future__ import annotations

import functools
import io
import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot

from latentchess.errors import DataFormatError
from latentchess.textfiles import read_text, strip_compression

__all__ = [
    "ECO_PGN",
    "Opening",
    "read_pgn_openings",
    "read_epd_openings",
    "polyglot_openings",
    "eco_openings",
    "load_openings",
    "chess960_openings",
]

ECO_PGN = Path("/usr/share/pgn-extract/eco.pgn")
"""pgn-extract's ECO classification (Debian package pgn-extract)."""


@dataclass(frozen=True, kw_only=True)
class Opening:
    """A start position and the book moves played from it.

    Attributes:
        name: human-readable name ("Sicilian defence: Najdorf", an EPD id, ...).
        fen: the position the game starts from (usually the standard one).
        moves: book moves from ``fen``, UCI.
        eco: ECO code, if known.
        source: where it came from (``file:line``).
        chess960: played by Chess960 rules (``fen`` in X-FEN, castling as king takes rook).
    """

    name: str
    fen: str = chess.STARTING_FEN
    moves: tuple[str, ...] = ()
    eco: str | None = None
    source: str = ""
    chess960: bool = False

    def board(self) -> chess.Board:
        """The position after the book moves (with the moves on its stack)."""
        board = chess.Board(self.fen, chess960=self.chess960)
        for uci in self.moves:
            board.push_uci(uci)
        return board

    @property
    def key(self) -> str:
        """Identifies the opening in a resumed match: start FEN and book moves."""
        return " ".join([self.fen, *self.moves])


class _LineCounter:
    """Line numbers of increasing offsets into one text, counted incrementally."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1

    def at(self, offset: int) -> int:
        start = _NON_SPACE.search(self.text, offset)
        offset = start.start() if start else offset
        if offset < self.offset:
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


_NON_SPACE = re.compile(r"\S")


def read_pgn_openings(path: str | Path, *, max_plies: int | None = None) -> list[Opening]:
    """Every game of a PGN file as an opening (its main line, cut to ``max_plies``).

    Raises:
        DataFormatError: with the file and line of a game python-chess cannot read, an illegal
            move, or when the file holds no game.
    """
    path = Path(path)
    text = read_text(path)
    handle = io.StringIO(text)
    lines = _LineCounter(text)
    openings: list[Opening] = []
    while True:
        line = lines.at(handle.tell())
        try:
            game = chess.pgn.read_game(handle)
        except Exception as error:  # python-chess's parser can fail (IndexError on an extra ')')
            raise DataFormatError(
                f"unreadable PGN game: {type(error).__name__}: {error}", path=path, line=line
            ) from error
        if game is None:
            break
        if game.errors:
            raise DataFormatError(f"bad PGN game: {game.errors[0]}", path=path, line=line)
        moves = [move.uci() for move in game.mainline_moves()]
        if not moves and "FEN" not in game.headers:
            continue  # a file-level comment or an empty game: no opening in it
        if max_plies is not None:
            moves = moves[:max_plies]
        headers = game.headers
        name = " ".join(v for v in (headers.get("Opening"), headers.get("Variation")) if v)
        fen = game.board().fen()
        openings.append(
            Opening(
                name=name or f"{path.name}:{line}",
                fen=fen,
                moves=tuple(moves),
                eco=headers.get("ECO"),
                source=f"{path}:{line}",
            )
        )
    if not openings:
        raise DataFormatError("no games found (expected a PGN file of opening lines)", path=path)
    return openings


def read_epd_openings(path: str | Path) -> list[Opening]:
    """Every position of an EPD file as an opening (no book moves).

    Raises:
        DataFormatError: naming the file and line of a position that does not parse.
    """
    path = Path(path)
    openings: list[Opening] = []
    for number, raw in enumerate(read_text(path).splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            board, ops = chess.Board.from_epd(line)
        except ValueError as error:
            raise DataFormatError(
                f"bad EPD position {line!r}: {error}", path=path, line=number
            ) from error
        if not board.is_valid():
            raise DataFormatError(
                f"impossible position {line!r}: {board.status()!r}", path=path, line=number
            )
        name = str(ops.get("id", f"{path.name}:{number}"))
        openings.append(Opening(name=name, fen=board.fen(), source=f"{path}:{number}"))
    if not openings:
        raise DataFormatError("no positions found (expected EPD lines)", path=path)
    return openings


def polyglot_openings(
    path: str | Path, count: int, *, plies: int = 8, seed: int = 0
) -> list[Opening]:
    """``count`` distinct lines of up to ``plies`` plies, walked through a Polyglot book.

    Each step picks a book move with probability proportional to its weight (seeded); a walk
    ends early where the book has no move. Lines are distinct by their final position.

    Raises:
        DataFormatError: when the file is not a Polyglot book or has no move for the start.
    """
    path = Path(path)
    size = path.stat().st_size if path.is_file() else -1
    if size <= 0 or size % 16:
        raise DataFormatError(
            f"not a Polyglot book (expected a non-empty file of 16-byte entries, got {size} bytes)",
            path=path,
        )
    rng = random.Random(seed)
    lines: dict[str, Opening] = {}
    with chess.polyglot.open_reader(path) as reader:
        if reader.get(chess.Board()) is None:
            raise DataFormatError("the book has no move for the starting position", path=path)
        for _attempt in range(count * 50):
            if len(lines) >= count:
                break
            board = chess.Board()
            for _ply in range(plies):
                entry = _weighted_choice(reader, board, rng)
                if entry is None:
                    break
                board.push(entry)
            key = board.epd()
            if key not in lines:
                moves = tuple(move.uci() for move in board.move_stack)
                lines[key] = Opening(
                    name=f"book line {len(lines) + 1}", moves=moves, source=str(path)
                )
    return list(lines.values())


def _weighted_choice(
    reader: chess.polyglot.MemoryMappedReader, board: chess.Board, rng: random.Random
) -> chess.Move | None:
    entries = [e for e in reader.find_all(board) if e.move in board.legal_moves]
    total = sum(e.weight for e in entries)
    if not entries:
        return None
    if total == 0:
        return rng.choice(entries).move
    pick = rng.uniform(0, total)
    for entry in entries:
        pick -= entry.weight
        if pick <= 0:
            return entry.move
    return entries[-1].move


def eco_openings(
    count: int,
    *,
    path: str | Path = ECO_PGN,
    seed: int = 0,
    min_plies: int = 6,
    engine: chess.engine.SimpleEngine | None = None,
    max_cp: int | None = None,
    depth: int = 10,
) -> list[Opening]:
    """A balanced sample of ECO lines (see the module docstring).

    Args:
        count: openings wanted (fewer if the file runs out of candidates).
        path: the ECO PGN.
        seed: sampling seed.
        min_plies: shortest line kept.
        engine: a UCI engine to check the final positions with (needed when ``max_cp`` is set).
        max_cp: keep only lines whose end position scores within +-max_cp (White's view).
        depth: depth of that check.
    """
    by_code: dict[str, list[Opening]] = defaultdict(list)
    for opening in _cached_lines(str(path), Path(path).stat().st_mtime_ns):
        if len(opening.moves) >= min_plies and opening.eco:
            by_code[opening.eco].append(opening)
    rng = random.Random(seed)
    volumes: dict[str, list[str]] = defaultdict(list)
    for code in sorted(by_code):
        volumes[code[0]].append(code)
    for codes in volumes.values():
        rng.shuffle(codes)
    chosen: list[Opening] = []
    for code in _round_robin([volumes[v] for v in sorted(volumes)]):
        if len(chosen) >= count:
            break
        opening = rng.choice(by_code[code])
        if max_cp is not None:
            if engine is None:
                raise ValueError("eco_openings: max_cp needs an engine to check positions with")
            info = engine.analyse(opening.board(), chess.engine.Limit(depth=depth))
            score = info["score"].white().score(mate_score=100_000)
            if score is None or abs(score) > max_cp:
                continue
        chosen.append(opening)
    return chosen


@functools.lru_cache(maxsize=2)
def _cached_lines(path: str, mtime_ns: int) -> tuple[Opening, ...]:
    """Parsing eco.pgn takes seconds; a process sampling it twice parses it once."""
    return tuple(read_pgn_openings(path))


def _round_robin(groups: list[list[str]]) -> Iterator[str]:
    index = 0
    while any(index < len(group) for group in groups):
        for group in groups:
            if index < len(group):
                yield group[index]
        index += 1


def chess960_openings(count: int, *, seed: int = 0) -> list[Opening]:
    """``count`` distinct Chess960 start positions drawn with ``seed`` from the 960 (all of them,
    shuffled, when ``count >= 960``), named by their Scharnagl number (518: the standard array).
    """
    numbers = random.Random(seed).sample(range(960), min(count, 960))
    return [
        Opening(
            name=f"Chess960 #{number}",
            fen=chess.Board.from_chess960_pos(number).fen(),
            source=f"chess960:{number}",
            chess960=True,
        )
        for number in numbers
    ]


def load_openings(
    path: str | Path | None,
    count: int,
    *,
    seed: int = 0,
    plies: int | None = None,
    engine: chess.engine.SimpleEngine | None = None,
    max_cp: int | None = None,
) -> list[Opening]:
    """Openings for a match: by file type (``.pgn``, ``.epd``, plain or compressed; ``.bin``
    Polyglot) or, without a path, the balanced ECO sample.

    Args:
        path: opening file, or None for the ECO sample.
        count: openings wanted (files: all of them, shuffled with the seed when more are there).
        seed: seed for book walks, ECO sampling and file shuffling.
        plies: cut PGN lines to this many plies; book walk length (default 8).
        engine: engine for the ECO balance check.
        max_cp: ECO balance threshold (None: no check).
    """
    if path is None:
        return eco_openings(count, seed=seed, engine=engine, max_cp=max_cp)
    path = Path(path)
    if path.suffix.lower() == ".bin":
        return polyglot_openings(path, count, plies=plies or 8, seed=seed)
    suffix = Path(strip_compression(path)).suffix.lower()
    if suffix == ".pgn":
        openings = read_pgn_openings(path, max_plies=plies)
    elif suffix == ".epd":
        openings = read_epd_openings(path)
    else:
        raise DataFormatError(
            f"unknown opening file type {suffix!r} (expected .pgn or .epd, each possibly .gz, "
            ".xz or .zst, or a Polyglot .bin)",
            path=path,
        )
    if len(openings) > count:
        openings = random.Random(seed).sample(openings, count)
    return openings
