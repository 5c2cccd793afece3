"""``data generate``: varied, Stockfish-labelled positions from games that start at ECO openings.

Game ``g`` of a run is seeded from ``(seed, g)``. It starts from a random line of an openings PGN
(pgn-extract's ``eco.pgn`` by default) plus 0-``random_opening_plies`` random plies and draws a
temperature from ``temperatures``; then every position is analysed by Stockfish at the label
limit with MultiPV ``multipv``. That analysis is the position's label and also picks the next
move: a softmax over the MultiPV scores (centipawns, mover's view; a mate in n counts
``MATE_SCORE_CP - n``) at the game's temperature, or a uniformly random legal move with
probability ``random_move_prob``. Games run to checkmate, a draw (stalemate, dead material,
threefold repetition, fifty moves) or ``max_plies``, so forced-mate positions (labels exactly
1.0 / 0.0) and the final checkmates themselves occur, which the advantage axis needs.

Stockfish's single-thread search at a fixed depth or node count is deterministic and gets
``ucinewgame`` at each game, so a game is a pure function of ``(seed, g)`` -- except the last
games of a run, which stop where the run has enough positions (where exactly depends on timing).

Sharding: game ``g`` belongs to shard ``g % N``, so ``--shard I/N`` runs on N machines never
overlap; each shard makes its share of ``--positions`` and ``data merge`` deduplicates across
shards. Alternatively one shard's games (the unit of work) spread over a cluster's workers
(``pool``, CLI ``--cluster``), committed in game order by this process alone. Resuming: see
:mod:`latentchess.data.resume` (the cursor counts this shard's games).
"""

from __future__ import annotations

import functools
import io
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, overload

import chess
import chess.engine
import chess.pgn
import numpy as np

from latentchess.cluster import WorkPool
from latentchess.data._pool import JobContext, LabellerSpec, run_ordered
from latentchess.data.resume import ResumableWriter
from latentchess.data.stockfish import MATE_SCORE_CP, Label, Labeller, limit_to_dict, make_limit
from latentchess.errors import DataFormatError, LatentChessError

__all__ = [
    "DEFAULT_OPENINGS",
    "GenerateConfig",
    "GenerateResult",
    "generate",
    "load_openings",
    "choose_opening",
    "play_game",
]

DEFAULT_OPENINGS = Path("/usr/share/pgn-extract/eco.pgn")
"""Debian's pgn-extract ships this PGN of ~2,000 named ECO opening lines."""

SOURCE = "generate"


@dataclass(frozen=True, kw_only=True)
class GenerateConfig:
    """Everything that decides which positions a generation run makes.

    Attributes:
        positions: rows to make in total over all shards (this shard makes its share).
        seed: run seed; game g is seeded from (seed, g).
        depth: label search depth (None with ``nodes`` set; default 9, see
            :data:`latentchess.data.stockfish.DEFAULT_LABEL_DEPTH`).
        nodes: label node limit instead of a depth.
        multipv: Stockfish lines per position; the move is sampled among them.
        temperatures: softmax temperatures in centipawns; each game draws one.
        random_move_prob: chance of a uniformly random legal move instead of a sampled one.
        random_opening_plies: up to this many random plies after the opening line.
        max_plies: stop a game at this ply (counted from the standard start).
        shard_index: this shard, 0 <= shard_index < num_shards.
        num_shards: shards the run is split into.
        openings: PGN whose games' main lines are the openings.
        hash_mb: Stockfish hash per process.
    """

    positions: int
    seed: int = 0
    depth: int | None = None
    nodes: int | None = None
    multipv: int = 4
    temperatures: tuple[float, ...] = (30.0, 60.0, 120.0)
    random_move_prob: float = 0.04
    random_opening_plies: int = 4
    max_plies: int = 300
    shard_index: int = 0
    num_shards: int = 1
    openings: Path = field(default=DEFAULT_OPENINGS)
    hash_mb: int = 16

    def __post_init__(self) -> None:
        if self.positions < 1:
            raise ValueError(f"positions must be >= 1, got {self.positions!r}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(
                f"shard must be I/N with 0 <= I < N, got {self.shard_index}/{self.num_shards}"
            )
        if self.multipv < 1:
            raise ValueError(f"multipv must be >= 1, got {self.multipv!r}")
        if not self.temperatures or min(self.temperatures) <= 0:
            raise ValueError(f"temperatures must be positive, got {self.temperatures!r}")
        if not 0.0 <= self.random_move_prob <= 1.0:
            raise ValueError(f"random_move_prob must lie in [0, 1], got {self.random_move_prob!r}")
        if self.random_opening_plies < 0 or self.max_plies < 1:
            raise ValueError("random_opening_plies must be >= 0 and max_plies >= 1")
        make_limit(depth=self.depth, nodes=self.nodes)  # validates the limit

    @property
    def limit(self) -> chess.engine.Limit:
        return make_limit(depth=self.depth, nodes=self.nodes)

    @property
    def shard_positions(self) -> int:
        """This shard's share of :attr:`positions`."""
        base, extra = divmod(self.positions, self.num_shards)
        return base + (1 if self.shard_index < extra else 0)

    def run_identity(self) -> dict[str, Any]:
        """The settings a resumed run must share (everything but the target size)."""
        identity = asdict(self)
        del identity["positions"], identity["depth"], identity["nodes"]
        identity["limit"] = limit_to_dict(self.limit)
        identity["openings"] = str(self.openings)
        return {"command": "generate", **identity}


@dataclass(frozen=True, kw_only=True)
class GenerateResult:
    """What a generation run did.

    Attributes:
        out: the dataset directory.
        rows: rows of this shard in the dataset (from this and earlier invocations).
        new_rows: rows this invocation added.
        labelled: positions Stockfish labelled in this invocation (including repeats dropped).
        games: games committed by this invocation (the last ones possibly cut short).
        seconds: wall time of this invocation.
    """

    out: Path
    rows: int
    new_rows: int
    labelled: int
    games: int
    seconds: float


class OpeningLines(Sequence[tuple[str, ...]]):
    """The main lines (UCI moves) of an openings PGN, parsed lazily game by game.

    Start-up only splits the file into games (about 0.05 s for pgn-extract's 2,015-line
    ``eco.pgn``, against about 1.3 s to parse it all), which matters for short runs and every
    shard of a large one; a line is parsed the first time a game draws it. A game that does not
    parse or does not start from the standard position gives the empty line (the game then starts
    from the initial position plus its random plies).
    """

    def __init__(self, path: Path) -> None:
        from latentchess.textfiles import open_text

        with open_text(path) as handle:
            text = handle.read()
        # A game starts where a tag section follows a blank line (or the file's start).
        self._games = [g for g in re.split(r"\n[ \t]*\n(?=\[)", text) if g.strip()]
        self._parsed: dict[int, tuple[str, ...]] = {}
        self.path = path

    def __len__(self) -> int:
        return len(self._games)

    @overload
    def __getitem__(self, index: int) -> tuple[str, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, ...]]: ...
    def __getitem__(self, index: int | slice) -> tuple[str, ...] | Sequence[tuple[str, ...]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]  # IndexError, negative indexes
        if index not in self._parsed:
            game = chess.pgn.read_game(io.StringIO(self._games[index]))
            usable = game is not None and not game.errors and game.board() == chess.Board()
            moves = game.mainline_moves() if usable and game is not None else []
            self._parsed[index] = tuple(move.uci() for move in moves)
        return self._parsed[index]


@functools.lru_cache(maxsize=4)
def load_openings(path: Path) -> OpeningLines:
    """The opening lines of an openings PGN (see :class:`OpeningLines`)."""
    if not Path(path).is_file():
        raise DataFormatError(
            "openings PGN not found (Debian/Ubuntu: apt-get install pgn-extract, or pass "
            "--openings FILE)",
            path=path,
        )
    lines = OpeningLines(Path(path))
    if not any(lines[i] for i in range(min(len(lines), 20))):
        raise DataFormatError("no usable opening lines (games from the standard start)", path=path)
    return lines


def _game_over(board: chess.Board) -> bool:
    # Claimable draws end the game too: a repetition or fifty-move shuffle teaches nothing new.
    return (
        board.is_checkmate()
        or board.is_stalemate()
        or board.is_insufficient_material()
        or board.halfmove_clock >= 100
        or board.is_repetition(3)
    )


def _choose_move(
    board: chess.Board, label: Label, rng: np.random.Generator, temperature: float, eps: float
) -> chess.Move:
    moves = list(board.legal_moves)
    if rng.random() < eps or not label.lines:
        return moves[int(rng.integers(len(moves)))]
    scores = np.array([s.score(mate_score=MATE_SCORE_CP) for _, s in label.lines], dtype=float)
    weights = np.exp((scores - scores.max()) / temperature)
    choice = int(rng.choice(len(scores), p=weights / weights.sum()))
    return label.lines[choice][0]


def choose_opening(openings: Sequence[tuple[str, ...]], seed: int, game: int) -> tuple[str, ...]:
    """The opening line of game ``game`` (its own stream, so workers need not load the PGN)."""
    return openings[int(np.random.default_rng([seed, game, 0]).integers(len(openings)))]


def play_game(
    labeller: Labeller,
    config: GenerateConfig,
    game: int,
    opening: tuple[str, ...],
    context: JobContext,
) -> list[dict[str, Any]]:
    """Play and label game ``game`` of a run from its opening line (:func:`choose_opening`).

    Returns the game's rows; fewer when the run is finishing, none when it stopped.
    """
    rng = np.random.default_rng([config.seed, game])
    board = chess.Board()
    for uci in opening:
        board.push_uci(uci)
    for _ in range(int(rng.integers(config.random_opening_plies + 1))):
        if _game_over(board):
            break
        moves = list(board.legal_moves)
        board.push(moves[int(rng.integers(len(moves)))])
    temperature = float(config.temperatures[int(rng.integers(len(config.temperatures)))])
    token = (config.seed, game)  # a new game for Stockfish: ucinewgame clears its hash
    rows: list[dict[str, Any]] = []
    while True:
        if context.stopped():
            return []
        if context.finishing():
            return rows  # the run has enough in flight: a cut-short game is still a good game
        over = _game_over(board)
        label = labeller.label(board, multipv=config.multipv, game=token)
        rows.append(label.row(board.fen(), source=SOURCE, game=game, ply=board.ply()))
        context.tick()
        if over or board.ply() >= config.max_plies or label.best_move is None:
            return rows
        board.push(_choose_move(board, label, rng, temperature, config.random_move_prob))


_GameTask = tuple[GenerateConfig, int, tuple[str, ...]]


def _game_job(labeller: Labeller, payload: _GameTask, context: JobContext) -> Any:
    config, game, opening = payload
    return play_game(labeller, config, game, opening, context)


def generate(
    config: GenerateConfig,
    out: str | Path,
    *,
    workers: int | None = None,
    shard_rows: int = 10_000,
    flush_seconds: float = 300.0,
    stockfish: str | Path | None = None,
    progress: bool = True,
    pool: WorkPool | None = None,
) -> GenerateResult:
    """Generate this shard's positions into the dataset ``out``, resuming a previous run.

    Args:
        config: the run (see :class:`GenerateConfig`).
        out: dataset directory; shards are named ``gen_s<I>of<N>-<k>.parquet``.
        workers: Stockfish processes (default: ``os.cpu_count()``).
        shard_rows: rows per Parquet shard (a shard ends at a game boundary).
        flush_seconds: write a shard at least this often.
        stockfish: Stockfish binary (default: :func:`~latentchess.data.stockfish.find_stockfish`).
        progress: show a progress bar on stderr.
        pool: play the games on a cluster's workers instead (:mod:`latentchess.cluster`; a
            game is the unit of work, ``workers`` is then unused).
    """
    from tqdm import tqdm

    started = time.monotonic()
    workers = workers or os.cpu_count() or 1
    if not Path(config.openings).is_file():  # fail before starting any process
        load_openings(config.openings)
    prefix = f"gen_s{config.shard_index}of{config.num_shards}"
    writer = ResumableWriter(
        out, prefix, config.run_identity(), shard_rows=shard_rows, flush_seconds=flush_seconds
    )
    target = config.shard_positions
    start_rows = writer.rows
    spec = LabellerSpec(
        limit=config.limit, binary=stockfish, hash_mb=config.hash_mb, multipv=config.multipv
    )
    counters = {"labelled": 0, "returned": 0, "games": 0, "barren": 0}
    bar = tqdm(
        total=target, initial=min(writer.rows, target), unit="pos", desc=f"generate {prefix}",
        disable=not progress, dynamic_ncols=True, smoothing=0.05,
    )  # fmt: skip

    def tasks() -> Iterator[tuple[int, _GameTask]]:
        # Parsed here, on first use, so that it overlaps with the workers starting up.
        openings = load_openings(config.openings)
        k = writer.cursor
        while True:
            game = config.shard_index + k * config.num_shards
            yield k, (config, game, choose_opening(openings, config.seed, game))
            k += 1

    def on_tick(n: int) -> None:
        counters["labelled"] += n
        bar.set_postfix(labelled=counters["labelled"], refresh=False)
        bar.update(0)  # redraws (rate-limited by tqdm) while a long game is still in flight

    def should_finish() -> bool:
        return writer.rows + counters["labelled"] - counters["returned"] >= target

    def on_result(k: int, rows: list[dict[str, Any]]) -> bool:
        if pool is not None:  # cluster games report their positions at the end only
            on_tick(len(rows))
        counters["returned"] += len(rows)
        new = []
        for row in rows:
            if writer.rows + len(new) >= target:
                break
            if writer.claim(row["fen"]):
                new.append(row)
        counters["games"] += 1
        counters["barren"] = 0 if new else counters["barren"] + 1
        if counters["barren"] >= 500:
            raise LatentChessError(
                "500 games in a row made no new position; is the target reachable?"
            )
        writer.commit(new, cursor=k + 1)
        bar.update(len(new))
        return writer.rows < target

    try:
        if writer.rows < target:
            run_ordered(
                _game_job,
                spec,
                tasks(),
                workers=workers,
                on_result=on_result,
                on_tick=on_tick,
                should_finish=should_finish,
                pool=pool,
            )
    finally:
        writer.close()
        bar.close()
    return GenerateResult(
        out=Path(out),
        rows=writer.rows,
        new_rows=writer.rows - start_rows,
        labelled=counters["labelled"],
        games=counters["games"],
        seconds=time.monotonic() - started,
    )
