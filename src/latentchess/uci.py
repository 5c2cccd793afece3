"""The UCI protocol: ``latentchess uci`` speaks to GUIs, cutechess-cli and lichess-bot.

Pure functions parse each input line into a command dataclass (:func:`parse_command`) and turn a
``position`` command into a board (:func:`build_position`); :class:`UciSession` holds the state
and reacts to commands; :func:`run` is the thin loop that reads stdin and writes stdout (flushed
after every line). The search runs in its own thread, so ``stop``, ``isready`` and ``quit`` are
answered at once.

Behaviour worth knowing:

* Unknown or malformed input gets an ``info string`` and is otherwise ignored; unknown tokens
  before a command are skipped (``joho debug on`` is ``debug on``), as the protocol asks.
* A ``position`` with a bad FEN, a missing or extra king, the side not to move in check, pawns on
  the back rank, or an illegal move in its move list is refused with an ``info string`` naming the
  problem; the previous valid position stays current, so a following ``go`` answers a legal move
  for it (or ``bestmove 0000`` if no position was ever set). Inconsistent castling rights or an
  impossible en-passant square are repaired with a warning.
* ``go`` in a position without legal moves answers ``bestmove 0000``. If the model cannot be
  loaded, ``go`` answers ``info string`` with the reason and ``bestmove 0000``; the engine keeps
  running and a later ``setoption name Model`` can fix it. Should the search itself fail, the
  first legal move is played.
* The model is loaded in the background after ``uci``; ``isready`` answers ``readyok`` once it is
  loaded (or failed), and time limits of a ``go`` count from when it arrived, so loading time is
  never taken from the engine's clock unnoticed.
* ``go ponder`` searches like ``go infinite``; ``ponderhit`` then gives the search the time budget
  of that ``go``'s clock, counted from the ponderhit.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import chess
import chess.engine

from latentchess.search import MAX_DEPTH, SearchConfig, SearchResult

if TYPE_CHECKING:
    from latentchess.engines.latent import LatentEngine

__all__ = [
    "Command",
    "Uci",
    "IsReady",
    "UciNewGame",
    "Position",
    "Go",
    "Stop",
    "PonderHit",
    "Quit",
    "SetOption",
    "Debug",
    "Unknown",
    "PositionError",
    "parse_command",
    "build_position",
    "go_limit",
    "UciSession",
    "run",
]

ENGINE_NAME = "latentchess"
ENGINE_AUTHOR = "the latentchess authors"
BYTES_PER_CACHE_ENTRY = 150
"""Rough memory of one cache entry, to turn the ``Hash`` option (MB) into a number of entries."""


# -- commands -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """Base class of parsed input lines."""


@dataclass(frozen=True)
class Uci(Command):
    """``uci``: identify and list options."""


@dataclass(frozen=True)
class IsReady(Command):
    """``isready``: answer ``readyok`` when ready."""


@dataclass(frozen=True)
class UciNewGame(Command):
    """``ucinewgame``: the next position is from another game."""


@dataclass(frozen=True)
class Position(Command):
    """``position startpos|fen FEN [moves m1 m2 ...]``.

    Attributes:
        fen: the FEN, or ``None`` for the standard starting position.
        moves: moves in UCI notation, played from there.
    """

    fen: str | None
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class Go(Command):
    """``go`` and its parameters (times in milliseconds, as on the wire).

    Attributes:
        problems: parameters that were malformed and ignored.
    """

    depth: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stop(Command):
    """``stop``: finish searching and answer ``bestmove``."""


@dataclass(frozen=True)
class PonderHit(Command):
    """``ponderhit``: the opponent played the expected move."""


@dataclass(frozen=True)
class Quit(Command):
    """``quit``."""


@dataclass(frozen=True)
class SetOption(Command):
    """``setoption name NAME [value VALUE]`` (names may contain spaces)."""

    name: str
    value: str | None = None


@dataclass(frozen=True)
class Debug(Command):
    """``debug on|off``."""

    on: bool


@dataclass(frozen=True)
class Unknown(Command):
    """A line that is not a command we know, or a malformed one."""

    line: str
    problem: str


_GO_INT_PARAMS = (
    "depth",
    "nodes",
    "movetime",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "mate",
)
_GO_WORDS = (*_GO_INT_PARAMS, "infinite", "ponder", "searchmoves")
_SIMPLE = {
    "uci": Uci(),
    "isready": IsReady(),
    "ucinewgame": UciNewGame(),
    "stop": Stop(),
    "ponderhit": PonderHit(),
    "quit": Quit(),
}
_KNOWN = {*_SIMPLE, "position", "go", "setoption", "debug", "register"}


def parse_command(line: str) -> Command | None:
    """Parse one input line; ``None`` for a blank line (and ``register``, which needs nothing)."""
    tokens = line.split()
    while tokens and tokens[0] not in _KNOWN:
        tokens = tokens[1:]  # UCI: skip unknown tokens and try the rest of the line
    if not tokens:
        if line.strip():
            return Unknown(line.strip(), "unknown command")
        return None
    name, args = tokens[0], tokens[1:]
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name == "register":
        return None
    if name == "debug":
        if args[:1] in (["on"], ["off"]):
            return Debug(args[0] == "on")
        return Unknown(line.strip(), "expected 'debug on' or 'debug off'")
    if name == "setoption":
        return _parse_setoption(line.strip(), args)
    if name == "position":
        return _parse_position(line.strip(), args)
    return _parse_go(args)


def _parse_setoption(line: str, args: list[str]) -> Command:
    if not args or args[0] != "name" or len(args) < 2:
        return Unknown(line, "expected 'setoption name <id> [value <x>]'")
    if "value" in args[1:]:
        split = args.index("value", 1)
        name, value = " ".join(args[1:split]), " ".join(args[split + 1 :])
        if not name:
            return Unknown(line, "option name is empty")
        return SetOption(name, value)
    return SetOption(" ".join(args[1:]))


def _parse_position(line: str, args: list[str]) -> Command:
    if not args:
        return Unknown(line, "expected 'position startpos|fen <fen> [moves ...]'")
    moves: list[str] = []
    if "moves" in args:
        split = args.index("moves")
        args, moves = args[:split], args[split + 1 :]
    if args == ["startpos"]:
        return Position(None, tuple(moves))
    if args[0] == "fen" and len(args) > 1:
        return Position(" ".join(args[1:]), tuple(moves))
    return Unknown(line, f"expected 'startpos' or 'fen <fen>' after 'position', got {args!r}")


def _parse_go(args: list[str]) -> Go:
    values: dict[str, object] = {}
    problems: list[str] = []
    searchmoves: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token in ("infinite", "ponder"):
            values[token] = True
        elif token in _GO_INT_PARAMS:
            raw = args[index] if index < len(args) else None
            index += 1
            try:
                number = int(raw) if raw is not None else None
            except ValueError:
                number = None
            if number is None:
                problems.append(f"ignored 'go {token}' with bad value {raw!r}")
            else:
                values[token] = max(number, 0)
        elif token == "searchmoves":
            while index < len(args) and args[index] not in _GO_WORDS:
                searchmoves.append(args[index])
                index += 1
        else:
            problems.append(f"ignored unknown 'go' parameter {token!r}")
    return Go(searchmoves=tuple(searchmoves), problems=tuple(problems), **values)  # type: ignore[arg-type]


# -- positions and limits -------------------------------------------------------------------------


class PositionError(ValueError):
    """A ``position`` command that cannot be accepted; the message names the problem."""


_FATAL = {
    chess.STATUS_NO_WHITE_KING: "no white king",
    chess.STATUS_NO_BLACK_KING: "no black king",
    chess.STATUS_TOO_MANY_KINGS: "too many kings",
    chess.STATUS_TOO_MANY_WHITE_PAWNS: "more than 8 white pawns",
    chess.STATUS_TOO_MANY_BLACK_PAWNS: "more than 8 black pawns",
    chess.STATUS_PAWNS_ON_BACKRANK: "pawns on the first or eighth rank",
    chess.STATUS_TOO_MANY_WHITE_PIECES: "more than 16 white pieces",
    chess.STATUS_TOO_MANY_BLACK_PIECES: "more than 16 black pieces",
    chess.STATUS_OPPOSITE_CHECK: "the side not to move is in check",
    chess.STATUS_EMPTY: "the board is empty",
}
_REPAIRED = {
    chess.STATUS_BAD_CASTLING_RIGHTS: "castling rights without king or rook on its square",
    chess.STATUS_INVALID_EP_SQUARE: "impossible en-passant square",
    chess.STATUS_TOO_MANY_CHECKERS: "more checkers than possible",
    chess.STATUS_IMPOSSIBLE_CHECK: "a check that no legal move could give",
}


def build_position(command: Position) -> tuple[chess.Board, list[str]]:
    """The board a ``position`` command describes, and warnings about repaired details.

    Raises:
        PositionError: bad FEN, a fatal board status (see the module docstring), or an illegal or
            malformed move in the move list.
    """
    if command.fen is None:
        board = chess.Board()
    else:
        try:
            board = chess.Board(command.fen)
        except ValueError as error:
            raise PositionError(f"bad FEN {command.fen!r}: {error}") from None
    warnings = _check_status(board, command.fen)
    for number, uci in enumerate(command.moves, 1):
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            raise PositionError(f"move {number} {uci!r} is not a UCI move") from None
        if not move or not board.is_legal(move):
            raise PositionError(f"illegal move {number} {uci!r} in {board.fen()!r}")
        board.push(move)
    return board, warnings


def _check_status(board: chess.Board, fen: str | None) -> list[str]:
    status = board.status()
    fatal = [text for flag, text in _FATAL.items() if status & flag]
    if fatal:
        raise PositionError(f"invalid position {fen!r}: {', '.join(fatal)}")
    warnings = [f"{text} in {fen!r}" for flag, text in _REPAIRED.items() if status & flag]
    if status & chess.STATUS_BAD_CASTLING_RIGHTS:
        board.castling_rights = board.clean_castling_rights()
    if status & chess.STATUS_INVALID_EP_SQUARE:
        board.ep_square = None
    return warnings


def go_limit(go: Go) -> chess.engine.Limit:
    """A ``go`` command's limits in python-chess terms (seconds)."""

    def seconds(ms: int | None) -> float | None:
        return None if ms is None else ms / 1000.0

    return chess.engine.Limit(
        time=seconds(go.movetime),
        depth=go.depth,
        nodes=go.nodes,
        white_clock=seconds(go.wtime),
        black_clock=seconds(go.btime),
        white_inc=seconds(go.winc),
        black_inc=seconds(go.binc),
        remaining_moves=go.movestogo,
    )


def format_info(result: SearchResult, turn: chess.Color, engine: LatentEngine) -> str:
    """An ``info`` line for one completed iteration."""
    score = engine.pov_score(result.value, turn).relative
    score_text = f"mate {score.mate()}" if score.is_mate() else f"cp {score.score()}"
    cache = engine.searcher.cache
    hashfull = min(1000, len(cache) * 1000 // cache.capacity)
    time_ms = int(result.time_s * 1000)
    pv = " ".join(move.uci() for move in result.pv)
    return (
        f"info depth {result.depth} score {score_text} nodes {result.nodes} "
        f"nps {int(result.nps)} hashfull {hashfull} time {time_ms} pv {pv}"
    )


# -- the session ----------------------------------------------------------------------------------


@dataclass
class _Options:
    model: str
    depth: int = 6
    width: int = 3
    mode: str = "minimax"
    threads: int = 1
    hash_mb: int = BYTES_PER_CACHE_ENTRY  # 1M entries
    move_overhead_ms: int = 50
    precision: str = "auto"


@dataclass
class _Search:
    thread: threading.Thread
    stop: threading.Event
    go: Go
    board: chess.Board
    pondering: threading.Event = field(default_factory=threading.Event)


EngineFactory = Callable[[str, SearchConfig, _Options], "LatentEngine"]


def _default_factory(model: str, config: SearchConfig, options: _Options) -> LatentEngine:
    import torch

    from latentchess.engines.latent import LatentEngine
    from latentchess.models.io import load_model

    torch.set_num_threads(options.threads)
    loaded = load_model(Path(model), precision=options.precision)
    return LatentEngine(loaded, config, move_overhead_s=options.move_overhead_ms / 1000.0)


class UciSession:
    """State of one UCI conversation: options, the current position, the engine, the search.

    Args:
        write: receives each output line (the loop prints and flushes it).
        model: model directory (``None``: the default model path).
        config: initial search settings (``depth``, ``width``, ``mode``, ``cache_size``...).
        threads: torch CPU threads.
        precision: model precision (``auto``, ``fp32``, ``bf16``).
        engine_factory: builds the engine (tests inject their own).
    """

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        model: str | Path | None = None,
        config: SearchConfig | None = None,
        threads: int = 1,
        precision: str = "auto",
        engine_factory: EngineFactory | None = None,
    ) -> None:
        if model is None:
            from latentchess.models.io import default_model_path

            model = default_model_path()
        config = config or SearchConfig()
        self._write_lock = threading.Lock()
        self._raw_write = write
        self.options = _Options(
            model=str(model),
            depth=config.depth,
            width=config.width,
            mode=config.mode,
            threads=threads,
            precision=precision,
            hash_mb=max(1, config.cache_size * BYTES_PER_CACHE_ENTRY // 1_000_000),
        )
        self._base_config = config
        self._factory = engine_factory or _default_factory
        self.board: chess.Board | None = None
        self.debug = False
        self.engine: LatentEngine | None = None
        self.engine_error: str | None = None
        self._engine_key: tuple[object, ...] | None = None
        self._loader: threading.Thread | None = None
        self._search: _Search | None = None

    # -- output ------------------------------------------------------------------------------

    def write(self, line: str) -> None:
        """Send one line (thread-safe: the search thread writes too)."""
        with self._write_lock:
            self._raw_write(line)

    def info(self, text: str) -> None:
        """Send ``info string TEXT`` (one line)."""
        self.write("info string " + " ".join(text.split()))

    # -- engine lifecycle --------------------------------------------------------------------

    def _config(self) -> SearchConfig:
        entries = max(1, self.options.hash_mb * 1_000_000 // BYTES_PER_CACHE_ENTRY)
        return dataclasses.replace(
            self._base_config,
            depth=self.options.depth,
            width=self.options.width,
            mode=self.options.mode,
            cache_size=entries,
        )

    def _wanted_key(self) -> tuple[object, ...]:
        return (dataclasses.astuple(self.options), self._config())

    def start_loading(self) -> None:
        """Load (or reload) the engine in the background if the options changed."""
        if self._loader is not None and self._loader.is_alive():
            return
        if self._engine_key == self._wanted_key():
            return
        self._loader = threading.Thread(target=self._load, name="latentchess-load", daemon=True)
        self._loader.start()

    def _load(self) -> None:
        key = self._wanted_key()
        try:
            engine = self._factory(self.options.model, self._config(), self.options)
            _warm_up(engine)
            self.engine, self.engine_error = engine, None
        except Exception as error:  # reported to the GUI, never fatal
            self.engine, self.engine_error = (
                None,
                f"cannot load model {self.options.model!r}: {error}",
            )
        self._engine_key = key

    def wait_ready(self) -> LatentEngine | None:
        """Make sure the engine for the current options is loaded; ``None`` if it failed."""
        self.start_loading()
        if self._loader is not None:
            self._loader.join()
        if self._engine_key != self._wanted_key():  # options changed while loading
            self._load()
        return self.engine

    # -- commands ----------------------------------------------------------------------------

    def handle_line(self, line: str) -> bool:
        """Handle one input line; False after ``quit``."""
        command = parse_command(line)
        if command is None:
            return True
        return self.handle(command)

    def handle(self, command: Command) -> bool:
        """Handle one parsed command; False after ``quit``."""
        if isinstance(command, Uci):
            self._uci()
        elif isinstance(command, IsReady):
            if self._search is None or not self._search.thread.is_alive():
                self.wait_ready()  # while searching, the engine is obviously loaded
            self.write("readyok")
        elif isinstance(command, UciNewGame):
            self._stop_search()
            if self.engine is not None:
                self.engine.new_game()
        elif isinstance(command, Position):
            self._stop_search()
            self._position(command)
        elif isinstance(command, Go):
            self._go(command, time.monotonic())
        elif isinstance(command, Stop):
            self._stop_search()
        elif isinstance(command, PonderHit):
            self._ponderhit()
        elif isinstance(command, SetOption):
            self._stop_search()
            self._setoption(command)
        elif isinstance(command, Debug):
            self.debug = command.on
        elif isinstance(command, Unknown):
            self.info(f"{command.problem}: {command.line!r}")
        elif isinstance(command, Quit):
            self._stop_search()
            return False
        return True

    def _uci(self) -> None:
        o = self.options
        for line in (
            f"id name {ENGINE_NAME}",
            f"id author {ENGINE_AUTHOR}",
            f"option name Model type string default {o.model}",
            f"option name Depth type spin default {o.depth} min 1 max {MAX_DEPTH}",
            f"option name Width type spin default {o.width} min 1 max 256",
            f"option name Mode type combo default {o.mode} var minimax var beam",
            f"option name Threads type spin default {o.threads} min 1 max 256",
            f"option name Hash type spin default {o.hash_mb} min 1 max 65536",
            f"option name Move Overhead type spin default {o.move_overhead_ms} min 0 max 10000",
            f"option name Precision type combo default {o.precision} var auto var fp32 var bf16",
            "option name Clear Hash type button",
            "uciok",
        ):
            self.write(line)
        self.start_loading()

    def _setoption(self, command: SetOption) -> None:
        name, value = command.name.strip().lower(), (command.value or "").strip()
        o = self.options
        spins = {
            "depth": ("depth", 1, MAX_DEPTH),
            "width": ("width", 1, 256),
            "threads": ("threads", 1, 256),
            "hash": ("hash_mb", 1, 65536),
            "move overhead": ("move_overhead_ms", 0, 10000),
        }
        if name in spins:
            attribute, low, high = spins[name]
            try:
                number = int(value)
            except ValueError:
                self.info(f"option {command.name!r} needs an integer, got {value!r}")
                return
            if not low <= number <= high:
                self.info(f"option {command.name!r} must lie in [{low}, {high}], got {number}")
                return
            setattr(o, attribute, number)
        elif name == "mode":
            if value not in ("minimax", "beam"):
                self.info(f"option 'Mode' must be minimax or beam, got {value!r}")
                return
            o.mode = value
        elif name == "precision":
            if value not in ("auto", "fp32", "bf16"):
                self.info(f"option 'Precision' must be auto, fp32 or bf16, got {value!r}")
                return
            o.precision = value
        elif name == "model":
            if not value:
                self.info("option 'Model' needs a directory")
                return
            o.model = value
        elif name == "clear hash":
            if self.engine is not None:
                self.engine.new_game()
        elif name in ("ponder", "uci_showwdl", "uci_analysemode", "multipv"):
            pass  # GUIs set these unasked; nothing to do
        else:
            self.info(f"unknown option {command.name!r}")
            return
        if self._engine_key is not None:
            self.start_loading()

    def _position(self, command: Position) -> None:
        try:
            board, warnings = build_position(command)
        except PositionError as error:
            kept = "keeping the previous position" if self.board else "no position set"
            self.info(f"refused position: {error}; {kept}")
            return
        for warning in warnings:
            self.info(f"repaired position: {warning}")
        self.board = board

    def _go(self, go: Go, received: float) -> None:
        self._stop_search()
        for problem in go.problems:
            self.info(problem)
        if go.searchmoves:
            self.info("searchmoves is not supported; searching all moves")
        if self.board is None:
            self.info("go without a valid position")
            self.write("bestmove 0000")
            return
        board = self.board.copy()
        if not any(board.generate_legal_moves()):
            self.info("no legal moves in this position")
            self.write("bestmove 0000")
            return
        engine = self.wait_ready()
        if engine is None:
            self.info(self.engine_error or "no engine")
            self.write("bestmove 0000")
            return
        stop = threading.Event()
        search = _Search(threading.Thread(target=lambda: None), stop, go, board)
        if go.ponder:
            search.pondering.set()
        search.thread = threading.Thread(
            target=self._run_search,
            args=(engine, search, received),
            name="latentchess-search",
            daemon=True,
        )
        self._search = search
        search.thread.start()

    def _run_search(self, engine: LatentEngine, search: _Search, received: float) -> None:
        board, go = search.board, search.go
        infinite = go.infinite or go.ponder
        limit = go_limit(go) if not infinite else chess.engine.Limit(depth=go.depth, nodes=go.nodes)
        try:
            result = engine.search(
                board,
                limit,
                stop=search.stop,
                infinite=infinite,
                started=received,
                on_iteration=lambda r: self.write(format_info(r, board.turn, engine)),
            )
            move, ponder = result.move, result.pv[1] if len(result.pv) > 1 else None
            if self.debug:
                self.info(
                    f"cache hits {result.cache_hits} ({100 * result.cache_hit_rate:.0f}%), "
                    f"scorer {result.scorer_time_s:.3f}s of {result.time_s:.3f}s"
                )
        except Exception as error:  # never die mid-game: play something legal
            self.info(f"search failed ({type(error).__name__}: {error}); playing a legal move")
            move, ponder = next(iter(board.legal_moves)), None
        if infinite:  # the protocol: no bestmove before stop (or ponderhit's own budget)
            search.stop.wait()
        text = f"bestmove {move.uci()}" if move is not None else "bestmove 0000"
        if ponder is not None:
            text += f" ponder {ponder.uci()}"
        self.write(text)

    def _ponderhit(self) -> None:
        search = self._search
        if search is None or not search.pondering.is_set():
            self.info("ponderhit without a ponder search")
            return
        search.pondering.clear()
        engine = self.engine
        from latentchess.engines.latent import time_budget

        overhead = self.options.move_overhead_ms / 1000.0
        budget = time_budget(go_limit(search.go), search.board.turn, overhead_s=overhead)
        seconds = budget.hard if budget is not None else 0.0
        if engine is None or budget is None:
            search.stop.set()
            return
        timer = threading.Timer(seconds, search.stop.set)
        timer.daemon = True
        timer.start()

    def _stop_search(self) -> None:
        search = self._search
        if search is None:
            return
        search.stop.set()
        search.thread.join()
        self._search = None

    def close(self) -> None:
        """Stop any search (sending its ``bestmove``)."""
        self._stop_search()


def _warm_up(engine: LatentEngine) -> None:
    """Run the first (slow) forward passes now and measure the scorer's speed for deadlines."""
    start = chess.Board()
    boards = []
    for move in start.legal_moves:
        child = start.copy(stack=False)
        child.push(move)
        boards.append(child)
    engine.score_boards(boards)
    began = time.perf_counter()
    engine.score_boards(boards)
    engine.searcher.observe_speed(len(boards), time.perf_counter() - began)


def run(
    lines: Iterable[str] | None = None,
    output: TextIO | None = None,
    **session_options: object,
) -> int:
    """The UCI loop: read commands until ``quit`` or end of input; returns the exit status."""
    stream = output or sys.stdout

    def write(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()

    session = UciSession(write, **session_options)  # type: ignore[arg-type]
    source = lines if lines is not None else sys.stdin
    try:
        for line in source:
            if not session.handle_line(line):
                break
    finally:
        session.close()
    return 0
