"""``data selfplay``: games of the native ``ab`` engine against itself, one record per position.

Game ``g`` of a run starts from a line of an openings PGN (pgn-extract's ``eco.pgn`` by default,
chosen by :func:`latentchess.data.generate.choose_opening` from ``(seed, g)``; none with
``openings=None``) plus ``random_plies`` uniformly random legal plies drawn from
``np.random.default_rng([seed, g])``. The first search must find the result within
``opening_cp`` centipawns; otherwise the random plies are drawn again (up to ten times, the last
draw is kept), so few games start lost. Then the engine (``ab`` with its NNUE, in-process
through the native core, one thread, a fixed node count, its hash cleared per game, hence a game
is a pure function of the run's settings and ``g``) searches every position and plays its best
move, until:

* checkmate, stalemate, insufficient material, the fifty-move rule or a threefold repetition;
* resignation: ``resign_plies`` consecutive scores at least ``resign_cp`` for the same side;
* a draw by adjudication: from ply ``draw_min_ply`` on, ``draw_plies`` consecutive scores within
  ``±draw_cp`` (no tablebases here);
* ``max_plies`` plies (a draw).

Every searched position is recorded, with the search's score (side to move's view), best move,
ply and the game's result (:mod:`latentchess.data.packed_sfen`, Stockfish's ``.bin`` records),
except, with ``keep="quiet"`` (the default), positions in check or whose best move captures:
the filters of the NNUE trainer (:mod:`latentchess.nnue.dataset`) and of nnue-pytorch's
"smart FEN skipping", whose labels a static evaluation cannot match.

Files of shard ``I`` of ``N`` in the output directory::

    selfplay-s<I>of<N>.bin          the records, a game's records contiguous
    selfplay-s<I>of<N>.games.jsonl  one line per finished game: index, records, result, ...
    selfplay-s<I>of<N>.json         the run's settings (a rerun with others is refused)

A game's records are appended and synced before its line is; on a rerun, lines past the last
complete one and records past those the lines account for are cut off, and the games not in the
log are played. So a killed run keeps every finished game, and a rerun with a larger ``games``
extends it. Game ``g`` belongs to shard ``g mod N``: shards never overlap, and their ``.bin``
files concatenate into one data set (or are read together as a directory).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import struct
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np

from latentchess.data.generate import DEFAULT_OPENINGS, choose_opening, load_openings
from latentchess.data.packed_sfen import RECORD_SIZE, encode_score, pack_record, write_records
from latentchess.errors import LatentChessError

__all__ = ["KEEP", "SelfPlayConfig", "GameRecord", "SelfPlayResult", "play_game", "selfplay"]

KEEP = ("quiet", "all")
"""Record filters: ``quiet`` skips positions in check or whose best move captures."""

_OPENING_TRIES = 10
_MATE_CP = 100_000  # a mate's weight in the adjudication counters


@dataclass(frozen=True, kw_only=True)
class SelfPlayConfig:
    """Everything that decides a self-play run's games.

    Attributes:
        games: games in total over all shards (game ``g`` belongs to shard ``g mod N``).
        nodes: nodes per search.
        seed: run seed; game ``g`` is seeded from ``(seed, g)``.
        evaluator: the engine's evaluation: ``nnue`` (the shipped network), ``hce`` or an NNUE
            model directory.
        hash_mb: transposition table per process (cleared at each game).
        openings: PGN whose games' main lines start the games; ``None``: the start position.
        random_plies: uniformly random plies after the opening line.
        opening_cp: redraw the random plies when the first search scores beyond this.
        resign_cp: resignation threshold in centipawns.
        resign_plies: consecutive plies beyond ``resign_cp`` for one side to resign (0: never).
        draw_cp: draw threshold in centipawns.
        draw_plies: consecutive plies within ``±draw_cp`` to adjudicate a draw (0: never).
        draw_min_ply: no draw adjudication before this ply.
        max_plies: a game still going at this ply is a draw.
        keep: ``quiet`` (skip positions in check or whose best move captures) or ``all``.
        shard_index: this shard.
        num_shards: shards the run is split into.
    """

    games: int
    nodes: int = 5000
    seed: int = 0
    evaluator: str = "nnue"
    hash_mb: int = 16
    openings: Path | None = field(default=DEFAULT_OPENINGS)
    random_plies: int = 4
    opening_cp: int = 300
    resign_cp: int = 600
    resign_plies: int = 8
    draw_cp: int = 10
    draw_plies: int = 12
    draw_min_ply: int = 80
    max_plies: int = 400
    keep: str = "quiet"
    shard_index: int = 0
    num_shards: int = 1

    def __post_init__(self) -> None:
        if self.games < 1 or self.nodes < 1 or self.hash_mb < 1 or self.max_plies < 1:
            raise LatentChessError("games, nodes, hash and max plies must be >= 1")
        if not 0 <= self.shard_index < self.num_shards:
            raise LatentChessError(
                f"shard must be I/N with 0 <= I < N, got {self.shard_index}/{self.num_shards}"
            )
        if self.keep not in KEEP:
            raise LatentChessError(f"keep must be one of {KEEP}, got {self.keep!r}")
        numbers = (self.random_plies, self.opening_cp, self.resign_cp, self.resign_plies,
                   self.draw_cp, self.draw_plies, self.draw_min_ply)  # fmt: skip
        if min(numbers) < 0:
            raise LatentChessError("plies and thresholds must be >= 0")

    @property
    def stem(self) -> str:
        """The file name stem of this shard."""
        return f"selfplay-s{self.shard_index}of{self.num_shards}"

    def shard_games(self) -> list[int]:
        """This shard's game indices."""
        return list(range(self.shard_index, self.games, self.num_shards))

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share (all but the number of games)."""
        record = asdict(self)
        del record["games"]
        record["openings"] = None if self.openings is None else str(self.openings)
        return {"command": "selfplay", **record}


@dataclass(frozen=True, kw_only=True)
class GameRecord:
    """One finished game.

    Attributes:
        game: its index in the run.
        records: its kept positions, packed (40 bytes each), in game order.
        result: ``1-0``, ``0-1`` or ``1/2-1/2``.
        termination: ``checkmate``, ``stalemate``, ``insufficient material``, ``fifty moves``,
            ``repetition``, ``resign``, ``adjudicated draw`` or ``max plies``.
        plies: the game's length in plies (the opening included).
        searched: positions searched (recorded or not).
        nodes: nodes searched.
        opening: the opening line and random plies, UCI.
    """

    game: int
    records: list[bytes]
    result: str
    termination: str
    plies: int
    searched: int
    nodes: int
    opening: tuple[str, ...]

    def log_line(self) -> str:
        """The game's line in the ``.games.jsonl`` log."""
        record = {k: v for k, v in asdict(self).items() if k != "records"}
        record["records"] = len(self.records)
        record["opening"] = " ".join(self.opening)
        return json.dumps(record, sort_keys=True)


@dataclass(frozen=True, kw_only=True)
class SelfPlayResult:
    """What a run did.

    Attributes:
        path: the shard's ``.bin`` file.
        games: games in the file (this and earlier invocations).
        records: records in the file.
        new_games: games this invocation played.
        new_records: records this invocation wrote.
        searched: positions this invocation searched.
        seconds: wall time of this invocation.
    """

    path: Path
    games: int
    records: int
    new_games: int
    new_records: int
    searched: int
    seconds: float


def _terminal(board: chess.Board) -> tuple[str, str] | None:
    """(result, termination) of a finished game, else None."""
    if board.is_checkmate():
        return ("0-1" if board.turn == chess.WHITE else "1-0"), "checkmate"
    if board.is_stalemate():
        return "1/2-1/2", "stalemate"
    if board.is_insufficient_material():
        return "1/2-1/2", "insufficient material"
    if board.halfmove_clock >= 100:
        return "1/2-1/2", "fifty moves"
    if board.is_repetition(3):
        return "1/2-1/2", "repetition"
    return None


def _search(engine: Any, board: chess.Board, nodes: int) -> tuple[chess.Move, int, int, int]:
    """(best move, packed score, score for the counters in cp, nodes) of one search."""
    outcome = engine.search(board, chess.engine.Limit(nodes=nodes))
    if outcome.best_move is None or not outcome.info.lines:
        raise LatentChessError(f"the engine found no move in {board.fen()!r}")
    line = outcome.info.lines[0]
    if line.mate is not None:
        cp = _MATE_CP if line.mate > 0 else -_MATE_CP
    else:
        cp = int(line.score_cp or 0)
    return outcome.best_move, encode_score(line.score_cp, line.mate), cp, outcome.nodes


def _opening(
    engine: Any, config: SelfPlayConfig, game: int, line: tuple[str, ...]
) -> tuple[chess.Board, tuple[chess.Move, int, int, int]]:
    """The game's start (opening line plus random plies) and the first search's result."""
    rng = np.random.default_rng([config.seed, game])
    board = chess.Board()
    for uci in line:
        board.push_uci(uci)
    while board.move_stack and _terminal(board) is not None:
        board.pop()  # a line that ends the game (eco.pgn has mating traps) is cut back
    base = len(board.move_stack)
    first: tuple[chess.Move, int, int, int] | None = None
    for _ in range(_OPENING_TRIES):
        while len(board.move_stack) > base:
            board.pop()
        first = None  # the search of this try's position, if it gets one
        for _ in range(config.random_plies):
            if _terminal(board) is not None:
                break
            moves = list(board.legal_moves)
            board.push(moves[int(rng.integers(len(moves)))])
        if _terminal(board) is not None:
            continue
        engine.new_game()
        first = _search(engine, board, config.nodes)
        if abs(first[2]) <= config.opening_cp:
            break
    if first is None:  # the last draw ended the game: play the opening line alone
        while len(board.move_stack) > base:
            board.pop()
        engine.new_game()
        first = _search(engine, board, config.nodes)
    return board, first


def play_game(
    engine: Any, config: SelfPlayConfig, game: int, line: tuple[str, ...] = ()
) -> GameRecord:
    """Play game ``game`` of a run from its opening line (see the module docstring).

    Args:
        engine: a :class:`latentchess.core.alphabeta.AlphaBeta`.
        config: the run.
        game: the game's index.
        line: the opening line, UCI (:func:`~latentchess.data.generate.choose_opening`).
    """
    board, first = _opening(engine, config, game, line)
    opening = tuple(move.uci() for move in board.move_stack)
    pending: list[tuple[bytes, chess.Color]] = []
    searched = nodes = 0
    white_run = black_run = draw_run = 0
    result, termination = "1/2-1/2", "max plies"
    found: tuple[chess.Move, int, int, int] | None = first
    while True:
        over = _terminal(board)
        if over is not None:
            result, termination = over
            break
        if board.ply() >= config.max_plies:
            break
        move, score, cp, spent = found or _search(engine, board, config.nodes)
        found = None
        searched += 1
        nodes += spent
        if config.keep == "all" or not (board.is_check() or board.is_capture(move)):
            pending.append((pack_record(board, score, move, 0), board.turn))
        white_cp = cp if board.turn == chess.WHITE else -cp
        white_run = white_run + 1 if white_cp >= config.resign_cp else 0
        black_run = black_run + 1 if white_cp <= -config.resign_cp else 0
        quiet = board.ply() >= config.draw_min_ply and abs(cp) <= config.draw_cp
        draw_run = draw_run + 1 if quiet else 0
        board.push(move)
        if config.resign_plies and max(white_run, black_run) >= config.resign_plies:
            result, termination = ("1-0" if white_run else "0-1"), "resign"
            break
        if config.draw_plies and draw_run >= config.draw_plies:
            result, termination = "1/2-1/2", "adjudicated draw"
            break
    white_result = {"1-0": 1, "0-1": -1}.get(result, 0)
    records = [
        data[:38] + struct.pack("<bB", white_result if turn == chess.WHITE else -white_result, 255)
        for data, turn in pending
    ]
    return GameRecord(
        game=game,
        records=records,
        result=result,
        termination=termination,
        plies=board.ply(),
        searched=searched,
        nodes=nodes,
        opening=opening,
    )


# -- the run ----------------------------------------------------------------------------------


def _pool_game(tag: str, config: SelfPlayConfig, game: int) -> GameRecord:
    """One game as a unit of work: the engine is this worker thread's, kept for the run."""
    from latentchess.cluster import worker_resource
    from latentchess.core.alphabeta import AlphaBeta

    engine = worker_resource(
        tag, "engine", lambda: AlphaBeta(config.evaluator, hash_mb=config.hash_mb)
    )
    openings = None if config.openings is None else load_openings(config.openings)
    line = () if openings is None else choose_opening(openings, config.seed, game)
    return play_game(engine, config, game, line)


def _resume(config: SelfPlayConfig, out: Path) -> tuple[set[int], int]:
    """(finished games, records) of an earlier invocation; cuts the files to what is complete."""
    settings, log, data = (out / f"{config.stem}{s}" for s in (".json", ".games.jsonl", ".bin"))
    identity = config.identity()
    if settings.exists():
        saved = json.loads(settings.read_text())
        changed = [
            f"{key}: {saved.get(key)!r} -> {identity.get(key)!r}"
            for key in sorted(set(saved) | set(identity))
            if saved.get(key) != identity.get(key)
        ]
        if changed:
            raise LatentChessError(
                f"{str(out)!r} holds a self-play run with other settings ({'; '.join(changed)}); "
                "use another directory"
            )
    else:
        tmp = settings.with_name(settings.name + ".tmp")
        tmp.write_text(json.dumps(identity, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, settings)
    done: set[int] = set()
    records = 0
    if log.exists():
        raw = log.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]  # a line cut by a kill is dropped
        for number, line in enumerate(complete.decode().splitlines(), start=1):
            try:
                entry = json.loads(line)
                done.add(int(entry["game"]))
                records += int(entry["records"])
            except (ValueError, KeyError, TypeError) as error:
                raise LatentChessError(f"{log}:{number}: unreadable game line {line!r}") from error
        if len(complete) != len(raw):
            with open(log, "r+b") as handle:
                handle.truncate(len(complete))
    size = data.stat().st_size if data.exists() else 0
    if size < records * RECORD_SIZE:
        raise LatentChessError(
            f"{data} has {size} bytes but its log {log.name} accounts for {records} records "
            f"({records * RECORD_SIZE} bytes): the files do not belong together"
        )
    if size > records * RECORD_SIZE:  # records of a game whose log line was never written
        with open(data, "r+b") as handle:
            handle.truncate(records * RECORD_SIZE)
    return done, records


def _games(
    config: SelfPlayConfig, pending: Sequence[int], workers: int, cluster: str | None
) -> Iterator[GameRecord]:
    """Play ``pending`` games on the project's work pool (threads here: the native search
    releases the GIL; or a Dask cluster), yielding each as it finishes."""
    from latentchess.cluster import new_tag, open_pool

    tag = new_tag("selfplay")
    todo = iter(pending)
    with open_pool(cluster, workers) as pool:
        running: set[concurrent.futures.Future[GameRecord]] = set()
        try:
            while True:
                while len(running) < 2 * max(pool.slots, 1):
                    game = next(todo, None)
                    if game is None:
                        break
                    running.add(pool.submit(_pool_game, tag, config, game))
                if not running:
                    return
                done, running = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in done:
                    yield future.result()
        finally:
            pool.release(tag)


def selfplay(
    config: SelfPlayConfig,
    out: str | Path,
    *,
    workers: int = 1,
    cluster: str | None = None,
    progress: bool = True,
) -> SelfPlayResult:
    """Play this shard's games into ``out`` (resuming an earlier invocation).

    Args:
        config: the run.
        out: the output directory (created if missing).
        workers: games at once, each on its own thread and engine (the native search releases
            the GIL, so threads use as many cores).
        cluster: play the games on a Dask cluster instead (:mod:`latentchess.cluster`'s
            addresses: ``local:N``, ``tcp://HOST:PORT``); this process alone writes the files.
        progress: a progress bar on stderr: games, games/s, ETA, records, records/s.
    """
    from tqdm import tqdm

    started = time.monotonic()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if config.openings is not None:
        load_openings(config.openings)  # a missing file fails before any game
    done, records = _resume(config, out)
    data, log = out / f"{config.stem}.bin", out / f"{config.stem}.games.jsonl"
    pending = [g for g in config.shard_games() if g not in done]
    counts = {"games": 0, "records": 0, "searched": 0}
    bar = tqdm(
        total=len(done) + len(pending), initial=len(done), unit="game", desc=config.stem,
        disable=not progress, dynamic_ncols=True, smoothing=0.1, file=sys.stderr,
    )  # fmt: skip
    try:
        with open(log, "a", encoding="utf-8") as log_handle, bar:
            for game in _games(config, pending, workers, cluster):
                write_records(data, game.records)
                log_handle.write(game.log_line() + "\n")
                log_handle.flush()
                os.fsync(log_handle.fileno())
                counts["games"] += 1
                counts["records"] += len(game.records)
                counts["searched"] += game.searched
                elapsed = max(time.monotonic() - started, 1e-9)
                bar.set_postfix_str(
                    f"{records + counts['records']} pos, {counts['records'] / elapsed:.1f} pos/s "
                    f"({counts['searched'] / elapsed:.1f} searched/s)",
                    refresh=False,
                )
                bar.update(1)
    finally:
        bar.close()
    return SelfPlayResult(
        path=data,
        games=len(done) + counts["games"],
        records=records + counts["records"],
        new_games=counts["games"],
        new_records=counts["records"],
        searched=counts["searched"],
        seconds=time.monotonic() - started,
    )
