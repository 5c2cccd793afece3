"""Lichess-format puzzles: read, solve with any engine, report, and make new ones.

Format (the Lichess puzzle database's CSV): ``PuzzleId,FEN,Moves,Rating,RatingDeviation,
Popularity,NbPlays,Themes,GameUrl,OpeningTags``. ``FEN`` is the position *before* the opponent's
move; ``Moves`` (UCI, space-separated) starts with that opponent move, then the solver's and the
opponent's replies alternate. The solver must find every one of its moves; as on Lichess, any move
that checkmates solves the puzzle (there can be several).

Reports give accuracy overall, per rating band (``band_width`` wide, 400 by default) and per theme,
plus a *puzzle performance rating*: the rating R that makes the expected number of solves,
``sum 1 / (1 + 10^((rating_i - R) / 400))``, equal the actual number (the maximum-likelihood
estimate when each puzzle is an opponent of its rating), with a 95% interval from the Fisher
information. It is only comparable between engines on the same puzzle set.

Making puzzles (:func:`make_puzzles`) from a labelled Parquet dataset (``data/store.py``):

1. candidates: rows with a ``best_move`` whose ``multipv_gap_cp`` (best minus second-best move,
   mover's view) is at least ``gap_cp`` -- a single move clearly better than every other;
2. the opponent's first move: the row at ``ply - 1`` of the same ``source`` and ``game`` whose
   position leads to the candidate by one legal move (rows without one are skipped and counted),
   so the puzzle FEN is that earlier position and ``Moves`` is ``"<their move> <best move>"``;
3. rating proxy: Stockfish searches the candidate once to ``max_depth`` plies; the *solve depth*
   d is the smallest depth from which its best move equals the label's at every deeper iteration
   (``max_depth + 1`` if never). ``Rating = 800 + 150 * (d - 1)`` (depth 1 -> 800, depth 6 ->
   1550, depth 12 -> 2450), ``RatingDeviation`` 500 marks it as a proxy, not a Glicko rating.
   Deeper-hidden moves are harder for people and engines alike, so the proxy orders puzzles
   by difficulty; it is not calibrated to Lichess ratings;
4. themes: ``oneMove``, plus ``mate mateIn1`` if the move mates, else ``crushing`` when the gap is
   at least 500 cp and ``advantage`` otherwise. ``PuzzleId`` is a hash of FEN and moves,
   ``GameUrl`` names the source, game and ply.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine

from latentchess.cluster import WorkPool
from latentchess.encoding import fen_key
from latentchess.engines.base import Engine
from latentchess.errors import DataFormatError

__all__ = [
    "PUZZLE_COLUMNS",
    "Puzzle",
    "PuzzleResult",
    "PuzzleReport",
    "read_puzzles",
    "write_puzzles",
    "solve_puzzle",
    "run_puzzles",
    "make_puzzles",
    "proxy_rating",
]

PUZZLE_COLUMNS = (
    "PuzzleId",
    "FEN",
    "Moves",
    "Rating",
    "RatingDeviation",
    "Popularity",
    "NbPlays",
    "Themes",
    "GameUrl",
    "OpeningTags",
)


@dataclass(frozen=True, kw_only=True)
class Puzzle:
    """One puzzle (fields as in the Lichess CSV; ``moves`` in UCI, the opponent's first)."""

    id: str
    fen: str
    moves: tuple[str, ...]
    rating: int
    rating_deviation: int = 0
    popularity: int = 0
    plays: int = 0
    themes: tuple[str, ...] = ()
    game_url: str = ""
    opening_tags: tuple[str, ...] = ()

    def row(self) -> list[str]:
        """The CSV row."""
        return [
            self.id,
            self.fen,
            " ".join(self.moves),
            str(self.rating),
            str(self.rating_deviation),
            str(self.popularity),
            str(self.plays),
            " ".join(self.themes),
            self.game_url,
            " ".join(self.opening_tags),
        ]


def read_puzzles(
    path: str | Path, *, strict: bool = False
) -> tuple[list[Puzzle], list[DataFormatError]]:
    """Read a Lichess puzzle CSV, checking every FEN and move.

    Args:
        path: the CSV file (with the header row).
        strict: raise on the first bad row instead of skipping it.

    Returns:
        The valid puzzles, and one error per skipped row (file and line in each).

    Raises:
        DataFormatError: for a missing file or header, or any bad row when ``strict``.
    """
    path = Path(path)
    try:
        # Bytes that are not UTF-8 become U+FFFD: the row then fails its own checks, with a line.
        handle = path.open(newline="", encoding="utf-8", errors="replace")
    except OSError as error:
        raise DataFormatError(f"cannot read: {error.strerror}", path=path) from error
    puzzles: list[Puzzle] = []
    problems: list[DataFormatError] = []
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
        except csv.Error as error:
            raise DataFormatError(f"unreadable CSV header: {error}", path=path, line=1) from None
        if header is None or [h.strip() for h in header[:3]] != list(PUZZLE_COLUMNS[:3]):
            raise DataFormatError(
                f"expected the Lichess puzzle header {','.join(PUZZLE_COLUMNS)!r}, got {header!r}",
                path=path,
                line=1,
            )
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as error:  # e.g. a field beyond the csv module's size limit
                problem = DataFormatError(
                    f"unreadable CSV row: {error}", path=path, line=reader.line_num
                )
                if strict:
                    raise problem from None
                problems.append(problem)
                continue
            line = reader.line_num
            if not row or not "".join(row).strip():
                continue
            try:
                puzzles.append(_parse_row(row))
            except ValueError as error:
                problem = DataFormatError(
                    f"bad puzzle {row[0] if row else ''!r}: {error}", path=path, line=line
                )
                if strict:
                    raise problem from error
                problems.append(problem)
    return puzzles, problems


def _parse_row(row: list[str]) -> Puzzle:
    if len(row) < 4:
        raise ValueError(f"expected at least 4 columns (id, FEN, moves, rating), got {len(row)}")
    row = row + [""] * (len(PUZZLE_COLUMNS) - len(row))
    fen, moves = row[1].strip(), tuple(row[2].split())
    board = chess.Board(fen)  # raises ValueError on a bad FEN
    if not board.is_valid():
        raise ValueError(f"impossible position {fen!r} ({board.status()!r})")
    if len(moves) < 2:
        raise ValueError(f"expected the opponent's move and at least one reply, got {row[2]!r}")
    for uci in moves:
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            raise ValueError(f"illegal move {uci!r} in {board.fen()!r}")
        board.push(move)

    def number(text: str, what: str) -> int:
        try:
            return int(text) if text.strip() else 0
        except ValueError as error:
            raise ValueError(f"{what} must be an integer, got {text!r}") from error

    return Puzzle(
        id=row[0].strip(),
        fen=fen,
        moves=moves,
        rating=number(row[3], "Rating"),
        rating_deviation=number(row[4], "RatingDeviation"),
        popularity=number(row[5], "Popularity"),
        plays=number(row[6], "NbPlays"),
        themes=tuple(row[7].split()),
        game_url=row[8].strip(),
        opening_tags=tuple(row[9].split()),
    )


def write_puzzles(path: str | Path, puzzles: Iterable[Puzzle]) -> int:
    """Write puzzles as a Lichess-format CSV; returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(PUZZLE_COLUMNS)
        for puzzle in puzzles:
            writer.writerow(puzzle.row())
            count += 1
    return count


# --- solving -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PuzzleResult:
    """How an engine did on one puzzle.

    Attributes:
        puzzle: the puzzle.
        solved: whether every solver move was found (or a mate played).
        played: the engine's moves, UCI.
        wrong_at: index in ``puzzle.moves`` of the first wrong move (None when solved).
        error: engine failure message, if the engine failed.
    """

    puzzle: Puzzle
    solved: bool
    played: tuple[str, ...] = ()
    wrong_at: int | None = None
    error: str = ""


def solve_puzzle(engine: Engine, puzzle: Puzzle, limit: chess.engine.Limit) -> PuzzleResult:
    """Play the solver's side of ``puzzle`` with ``engine`` (see the module docstring)."""
    engine.new_game()
    board = chess.Board(puzzle.fen)
    board.push_uci(puzzle.moves[0])
    played: list[str] = []
    for index in range(1, len(puzzle.moves), 2):
        move = engine.play(board.copy(), limit)
        played.append(move.uci())
        if move.uci() != puzzle.moves[index]:
            if move in board.legal_moves:
                board.push(move)
                if board.is_checkmate():
                    return PuzzleResult(puzzle=puzzle, solved=True, played=tuple(played))
            return PuzzleResult(puzzle=puzzle, solved=False, played=tuple(played), wrong_at=index)
        board.push(move)
        if index + 1 < len(puzzle.moves):
            board.push_uci(puzzle.moves[index + 1])
    return PuzzleResult(puzzle=puzzle, solved=True, played=tuple(played))


@dataclass(frozen=True, kw_only=True)
class BandStats:
    """Accuracy on a group of puzzles (a rating band or a theme)."""

    label: str
    total: int
    solved: int

    @property
    def accuracy(self) -> float:
        return self.solved / self.total if self.total else 0.0


@dataclass(frozen=True, kw_only=True)
class PuzzleReport:
    """Results of an engine on a puzzle set.

    Attributes:
        results: one per puzzle, in input order.
        engine: engine name.
        limit: the search limit, as text.
    """

    results: list[PuzzleResult]
    engine: str = ""
    limit: str = ""

    @property
    def solved(self) -> int:
        return sum(r.solved for r in self.results)

    @property
    def accuracy(self) -> float:
        return self.solved / len(self.results) if self.results else 0.0

    def by_band(self, width: int = 400) -> list[BandStats]:
        """Accuracy per rating band ``[k*width, (k+1)*width)``, lowest first."""
        groups: dict[int, list[bool]] = defaultdict(list)
        for r in self.results:
            groups[r.puzzle.rating // width * width].append(r.solved)
        return [
            BandStats(label=f"{low}-{low + width - 1}", total=len(v), solved=sum(v))
            for low, v in sorted(groups.items())
        ]

    def by_theme(self, minimum: int = 1) -> list[BandStats]:
        """Accuracy per theme with at least ``minimum`` puzzles, most common first."""
        groups: dict[str, list[bool]] = defaultdict(list)
        for r in self.results:
            for theme in r.puzzle.themes:
                groups[theme].append(r.solved)
        stats = [BandStats(label=t, total=len(v), solved=sum(v)) for t, v in groups.items()]
        return sorted((s for s in stats if s.total >= minimum), key=lambda s: (-s.total, s.label))

    def performance_rating(self) -> tuple[float, float, float]:
        """Puzzle performance rating and its 95% interval (see the module docstring)."""
        return performance_rating(
            [r.puzzle.rating for r in self.results], [r.solved for r in self.results]
        )

    def table(self, width: int = 400, themes: int = 0) -> str:
        """Plain-text report."""
        rating, low, high = self.performance_rating()
        lines = [
            f"{self.engine} ({self.limit}): solved {self.solved}/{len(self.results)} "
            f"= {100 * self.accuracy:.1f}%, "
            f"performance rating {rating:.0f} [{low:.0f}, {high:.0f}]",
            f"{'rating band':>12}  {'puzzles':>7}  {'solved':>6}  accuracy",
        ]
        for band in self.by_band(width):
            lines.append(
                f"{band.label:>12}  {band.total:7d}  {band.solved:6d}  {100 * band.accuracy:7.1f}%"
            )
        if themes:
            lines.append(f"{'theme':>24}  {'puzzles':>7}  {'solved':>6}  accuracy")
            for band in self.by_theme()[:themes]:
                accuracy = 100 * band.accuracy
                lines.append(
                    f"{band.label:>24}  {band.total:7d}  {band.solved:6d}  {accuracy:7.1f}%"
                )
        failures = sum(1 for r in self.results if r.error)
        if failures:
            lines.append(f"{failures} puzzle(s) counted unsolved because the engine failed")
        return "\n".join(lines)

    def to_dict(self, width: int = 400) -> dict[str, object]:
        """JSON-ready summary."""
        rating, low, high = self.performance_rating()
        return {
            "engine": self.engine,
            "limit": self.limit,
            "puzzles": len(self.results),
            "solved": self.solved,
            "accuracy": self.accuracy,
            "performance_rating": [rating, low, high],
            "bands": [b.__dict__ | {"accuracy": b.accuracy} for b in self.by_band(width)],
            "themes": [b.__dict__ | {"accuracy": b.accuracy} for b in self.by_theme()],
            "failed": [r.puzzle.id for r in self.results if not r.solved],
        }

    def plot(self, path: str | Path, width: int = 400) -> None:
        """Bar chart of accuracy per rating band, saved as PNG."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        bands = self.by_band(width)
        figure = Figure(figsize=(max(5.0, 0.9 * len(bands) + 2), 4.0))
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        bars = axes.bar(
            [b.label for b in bands], [100 * b.accuracy for b in bands], color="#4c72b0"
        )
        for bar, band in zip(bars, bands, strict=True):
            axes.annotate(
                f"{band.solved}/{band.total}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        axes.set_ylim(0, 105)
        axes.set_xlabel("puzzle rating")
        axes.set_ylabel("solved (%)")
        axes.set_title(
            f"{self.engine} ({self.limit}): {100 * self.accuracy:.1f}% of {len(self.results)}"
        )
        axes.tick_params(axis="x", labelrotation=45)
        figure.tight_layout()
        figure.savefig(Path(path), dpi=120)


def performance_rating(
    ratings: Sequence[int], solved: Sequence[bool]
) -> tuple[float, float, float]:
    """Maximum-likelihood rating against puzzles as opponents, with a 95% interval.

    All solved (or none): the estimate is unbounded; the returned value is then the rating at
    which the expected score falls short by half a puzzle, and the interval is open on one side.
    """
    if not ratings:
        return (math.nan, math.nan, math.nan)
    from scipy import optimize

    r = [float(x) for x in ratings]
    target = float(sum(solved))
    n = len(r)
    if target in (0.0, float(n)):
        target = 0.5 if target == 0 else n - 0.5

    def surplus(rating: float) -> float:
        return sum(1.0 / (1.0 + 10 ** ((x - rating) / 400.0)) for x in r) - target

    low, high = min(r) - 3000.0, max(r) + 3000.0
    estimate = float(optimize.brentq(surplus, low, high))
    k = math.log(10.0) / 400.0
    information = sum(
        k * k * p * (1 - p) for p in (1.0 / (1.0 + 10 ** ((x - estimate) / 400.0)) for x in r)
    )
    half = 1.96 / math.sqrt(information) if information > 0 else math.inf
    if sum(solved) == n:
        return (estimate, estimate - half, math.inf)
    if sum(solved) == 0:
        return (estimate, -math.inf, estimate + half)
    return (estimate, estimate - half, estimate + half)


def _solve(engine: Engine, puzzle: Puzzle, *, limit: chess.engine.Limit) -> PuzzleResult:
    return solve_puzzle(engine, puzzle, limit)


def _unsolved(puzzle: Puzzle, error: Exception) -> PuzzleResult:
    return PuzzleResult(puzzle=puzzle, solved=False, error=str(error))


def run_puzzles(
    make: Callable[[], Engine],
    puzzles: Sequence[Puzzle],
    limit: chess.engine.Limit,
    *,
    workers: int = 1,
    progress: bool = True,
    engine_name: str = "",
    limit_text: str = "",
    pool: WorkPool | None = None,
) -> PuzzleReport:
    """Solve every puzzle with engines from ``make`` (one per worker thread).

    With a ``pool`` (:mod:`latentchess.cluster`), chunks of puzzles run on a cluster's workers;
    ``make`` must then pickle (e.g. ``functools.partial(create_engine, spec)``).
    """
    from latentchess.evaluation.workers import map_with_engines

    results = map_with_engines(
        make,
        puzzles,
        functools.partial(_solve, limit=limit),
        _unsolved,
        workers=workers,
        desc="puzzles",
        progress=progress,
        pool=pool,
    )
    return PuzzleReport(results=results, engine=engine_name, limit=limit_text or str(limit))


# --- making puzzles ------------------------------------------------------------------------------


def proxy_rating(solve_depth: int) -> int:
    """Rating proxy from Stockfish's solve depth (see the module docstring)."""
    return 800 + 150 * (max(solve_depth, 1) - 1)


def make_puzzles(
    dataset: str | Path,
    *,
    gap_cp: int = 300,
    stockfish: str | Path = "stockfish",
    max_depth: int = 12,
    count: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> tuple[list[Puzzle], dict[str, int]]:
    """Single-move puzzles from a labelled dataset (recipe in the module docstring).

    Args:
        dataset: Parquet dataset directory (``data/store.py``) with ``game`` and ``ply`` columns.
        gap_cp: minimum ``multipv_gap_cp`` of a candidate.
        stockfish: Stockfish binary for the rating proxy.
        max_depth: deepest search of the proxy.
        count: keep at most this many (a seeded sample of the candidates), None for all.
        seed: sampling seed.
        progress: show a progress bar.

    Returns:
        The puzzles (ordered by source, game, ply) and counts of what was kept and skipped.
    """
    from latentchess.data.store import read_dataset
    from latentchess.engines.external import find_executable

    columns = ["fen", "best_move", "multipv_gap_cp", "source", "game", "ply"]
    table = read_dataset(dataset, columns=columns).to_pylist()
    by_position: dict[tuple[str, int, int], list[dict[str, object]]] = defaultdict(list)
    for row in table:
        if row["game"] is not None and row["ply"] is not None:
            by_position[row["source"], row["game"], row["ply"]].append(row)  # type: ignore[index]
    stats = {"rows": len(table), "candidates": 0, "no_previous_position": 0, "duplicates": 0}
    candidates = [
        row
        for row in table
        if row["best_move"]
        and row["multipv_gap_cp"] is not None
        and row["multipv_gap_cp"] >= gap_cp
    ]
    stats["candidates"] = len(candidates)
    pairs: list[tuple[dict[str, object], str, str]] = []  # (row, previous fen, previous move)
    for row in candidates:
        found = _previous_move(row, by_position)
        if found is None:
            stats["no_previous_position"] += 1
            continue
        pairs.append((row, *found))
    pairs.sort(key=lambda p: (str(p[0]["source"]), int(p[0]["game"]), int(p[0]["ply"])))  # type: ignore[arg-type]
    if count is not None and len(pairs) > count:
        chosen = set(random.Random(seed).sample(range(len(pairs)), count))
        pairs = [p for i, p in enumerate(pairs) if i in chosen]
    puzzles: list[Puzzle] = []
    seen: set[str] = set()
    iterator: Iterable[tuple[dict[str, object], str, str]] = pairs
    if progress:
        from tqdm import tqdm

        iterator = tqdm(pairs, desc="rating puzzles", unit="puzzle")
    with chess.engine.SimpleEngine.popen_uci(str(find_executable(stockfish))) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for row, previous_fen, previous_move in iterator:
            board = chess.Board(str(row["fen"]))
            best = chess.Move.from_uci(str(row["best_move"]))
            if best not in board.legal_moves:
                raise DataFormatError(
                    f"best_move {row['best_move']!r} is illegal in {row['fen']!r}", path=dataset
                )
            moves = (previous_move, best.uci())
            puzzle_id = hashlib.sha1(f"{previous_fen} {' '.join(moves)}".encode()).hexdigest()[:8]
            if puzzle_id in seen:
                stats["duplicates"] += 1  # the same position and moves from another game
                continue
            seen.add(puzzle_id)
            depth = _solve_depth(engine, board, best, max_depth)
            puzzles.append(
                Puzzle(
                    id=puzzle_id,
                    fen=previous_fen,
                    moves=moves,
                    rating=proxy_rating(depth),
                    rating_deviation=500,
                    themes=_themes(board, best, int(row["multipv_gap_cp"])),  # type: ignore[arg-type]
                    game_url=f"{row['source']}#game={row['game']},ply={row['ply']}",
                )
            )
    stats["kept"] = len(puzzles)
    return puzzles, stats


def _previous_move(
    row: dict[str, object], by_position: dict[tuple[str, int, int], list[dict[str, object]]]
) -> tuple[str, str] | None:
    if row["game"] is None or row["ply"] is None:
        return None
    target = fen_key(str(row["fen"]))
    for previous in by_position.get((row["source"], row["game"], int(row["ply"]) - 1), []):  # type: ignore[arg-type]
        board = chess.Board(str(previous["fen"]))
        for move in board.legal_moves:
            board.push(move)
            reached = fen_key(board.fen())
            board.pop()
            if reached == target:
                return board.fen(), move.uci()
    return None


def _solve_depth(
    engine: chess.engine.SimpleEngine, board: chess.Board, best: chess.Move, max_depth: int
) -> int:
    """Smallest depth from which Stockfish's choice stays ``best`` (``max_depth + 1`` if never)."""
    first_right: int | None = None
    # A new game object makes python-chess send ucinewgame: every search starts from an empty hash.
    with engine.analysis(board, chess.engine.Limit(depth=max_depth), game=object()) as analysis:
        for info in analysis:
            if "pv" not in info or "depth" not in info or not info["pv"]:
                continue
            if info["pv"][0] == best:
                first_right = info["depth"] if first_right is None else first_right
            else:
                first_right = None
    return first_right if first_right is not None else max_depth + 1


def _themes(board: chess.Board, best: chess.Move, gap_cp: int) -> tuple[str, ...]:
    board = board.copy()
    board.push(best)
    if board.is_checkmate():
        return ("mate", "mateIn1", "oneMove")
    return ("crushing" if gap_cp >= 500 else "advantage", "oneMove")
