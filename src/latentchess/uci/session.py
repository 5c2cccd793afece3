"""A UCI conversation: options, the current position, the engine, the search thread, the loop."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

import chess
import chess.engine

from latentchess.batch_keys import tokenize_boards
from latentchess.search import MAX_DEPTH, SearchConfig, SearchResult
from latentchess.uci.protocol import (
    ENGINE_AUTHOR,
    ENGINE_NAME,
    Command,
    Debug,
    Go,
    IsReady,
    PonderHit,
    Position,
    PositionError,
    Quit,
    SetOption,
    Stop,
    Uci,
    UciNewGame,
    Unknown,
    build_position,
    go_limit,
    mate_depth,
    parse_command,
)

if TYPE_CHECKING:
    from latentchess.engines.latent import LatentEngine
    from latentchess.models.inference import LatentModel

__all__ = ["UciSession", "Conversation", "run", "format_info", "BYTES_PER_CACHE_ENTRY"]

BYTES_PER_CACHE_ENTRY = 220
"""Rough memory of one cache entry, to turn the ``Hash`` option (MB) into a number of entries."""


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
    searched: threading.Event = field(default_factory=threading.Event)
    """Set by the search thread once the search has returned (it may then wait for ``stop``)."""
    budgeted: threading.Event = field(default_factory=threading.Event)
    """Set at ``ponderhit``: the search now runs on a clock and may answer by itself."""
    soft_deadline: float | None = None
    """After ``ponderhit``: no iteration completing after this is followed by another."""


def _load_model(path: str, precision: str) -> LatentModel:
    from latentchess.models.io import load_model

    return load_model(Path(path), precision=precision)


class UciSession:
    """State of one UCI conversation: options, the current position, the engine, the search.

    Args:
        write: receives each output line (the loop prints and flushes it).
        model: model directory (``None``: the default model path).
        config: initial search settings (``depth``, ``width``, ``mode``, ``cache_size``...).
        threads: torch CPU threads.
        precision: model precision (``auto``, ``fp32``, ``bf16``).
        model_loader: ``(directory, precision) -> LatentModel`` (default: ``load_model``).
    """

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        model: str | Path | None = None,
        config: SearchConfig | None = None,
        threads: int = 1,
        precision: str = "auto",
        model_loader: Callable[[str, str], LatentModel] | None = None,
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
        self._model_loader = model_loader or _load_model
        self.board: chess.Board | None = None
        self.position_error: str | None = None
        """Why there is no position (a refused ``position``), for the ``go`` that follows."""
        self.debug = False
        self.model: LatentModel | None = None
        self.model_error: str | None = None
        self.engine: LatentEngine | None = None
        self._loaded: tuple[str, str] | None = None  # (model, precision) of self.model
        self._engine_config: SearchConfig | None = None
        self._seconds_per_position = 0.0  # measured at warm-up
        self._loader: threading.Thread | None = None
        self._search: _Search | None = None
        self._announced: tuple[str, str] | None = None  # the load last reported by info string
        self.leading_options: list[str] = []
        """``option name ...`` lines announced before the engine's own (the ``Engine`` option)."""

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

    def _wanted(self) -> tuple[str, str]:
        return (self.options.model, self.options.precision)

    def start_loading(self) -> None:
        """Load the model in the background unless it is loaded or loading already."""
        if self._loader is not None and self._loader.is_alive():
            return
        if self._loaded == self._wanted():
            return
        self._loader = threading.Thread(target=self._load, name="latentchess-load", daemon=True)
        self._loader.start()

    def _load(self) -> None:
        wanted = self._wanted()
        self.engine = None
        try:
            import torch

            torch.set_num_threads(self.options.threads)
            model = self._model_loader(*wanted)
            self._seconds_per_position = _warm_up(model)
            self.model, self.model_error = model, None
        except Exception as error:  # reported to the GUI, never fatal
            self.model, self.model_error = None, f"cannot load model {wanted[0]!r}: {error}"
        self._loaded = wanted

    def wait_ready(self) -> LatentEngine | None:
        """The engine for the current options (loading the model if needed); ``None`` on error.

        Search options (depth, width, mode, hash) only rebuild the engine around the loaded
        model; the model is reloaded when its directory or precision changes.
        """
        self.start_loading()
        if self._loader is not None:
            self._loader.join()
        if self._loaded != self._wanted():  # changed while loading
            self._load()
        self._announce()
        if self.model is None:
            return None
        import torch

        if torch.get_num_threads() != self.options.threads:
            torch.set_num_threads(self.options.threads)
        config = self._config()
        if self.engine is None or self._engine_config != config:
            from latentchess.engines.latent import LatentEngine

            self.engine = LatentEngine(self.model, config)
            self.engine.searcher.seconds_per_position = self._seconds_per_position
            self._engine_config = config
        self.engine.move_overhead_s = self.options.move_overhead_ms / 1000.0
        return self.engine

    def _announce(self) -> None:
        """Once per load: which model (content hash) at which precision, or loudly why none."""
        if self._loaded is None or self._announced == self._loaded:
            return
        self._announced = self._loaded
        if self.model is None:
            self.info(
                f"ERROR: NO MODEL LOADED: {self.model_error or 'no model'}; set the Model option "
                "to a model directory (or $LATENTCHESS_MODEL); until then every move is a "
                "fallback without search"
            )
            return
        p = self.model.provenance()
        self.info(f"model {p['model']} sha256 {p['model_sha256']} precision {p['precision']}")

    # -- commands ----------------------------------------------------------------------------

    def handle_line(self, line: str) -> bool:
        """Handle one input line; False after ``quit``. Never raises: errors become info lines."""
        try:
            command = parse_command(line)
            if command is None:
                return True
            return self.handle(command)
        except Exception as error:  # a GUI must never see the engine die
            self.info(f"error handling {line.strip()!r}: {type(error).__name__}: {error}")
            return True

    def handle(self, command: Command) -> bool:
        """Handle one parsed command; False after ``quit``."""
        if isinstance(command, Uci):
            self._uci()
        elif isinstance(command, IsReady):
            if self._search is None or not self._search.thread.is_alive():
                try:
                    self.wait_ready()  # while searching, the engine is obviously loaded
                except Exception as error:  # a GUI waits for readyok: never leave it hanging
                    self.info(f"engine not ready ({type(error).__name__}: {error})")
            self.write("readyok")
        elif isinstance(command, UciNewGame):
            self._stop_search()
            self._new_game()
        elif isinstance(command, Position):
            self._stop_search()
            self._position(command)
        elif isinstance(command, Go):
            self._go(command, time.monotonic())
        elif isinstance(command, Stop):
            self._stop_search()
        elif isinstance(command, PonderHit):
            try:
                self._ponderhit()
            except Exception as error:  # the GUI now waits for a bestmove: send it
                self.info(f"ponderhit failed ({type(error).__name__}: {error}); answering now")
                if self._search is not None:
                    self._search.budgeted.set()
                    self._search.stop.set()
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
        for line in (
            f"id name {ENGINE_NAME}",
            f"id author {ENGINE_AUTHOR}",
            *self.leading_options,
            *self._option_lines(),
        ):
            self.write(line)
        self.write("uciok")
        self.start_loading()
        if self._loader is not None and not self._loader.is_alive():
            self._announce()  # loaded (or failed) already: say so now, e.g. a missing model

    # -- engine hooks: what a session for another engine (SpecSession) replaces -------------------

    def _supports_searchmoves(self) -> bool:
        """Whether ``go searchmoves`` restricts this engine's root moves."""
        return False

    def _option_lines(self) -> list[str]:
        """The ``option name ...`` lines answered to ``uci``."""
        o = self.options
        return [
            f"option name Model type string default {o.model}",
            f"option name Depth type spin default {o.depth} min 1 max {MAX_DEPTH}",
            f"option name Width type spin default {o.width} min 1 max 256",
            f"option name Mode type combo default {o.mode} var minimax var beam",
            f"option name Threads type spin default {o.threads} min 1 max 256",
            f"option name Hash type spin default {o.hash_mb} min 1 max 65536",
            f"option name Move Overhead type spin default {o.move_overhead_ms} min 0 max 10000",
            f"option name Precision type combo default {o.precision} var auto var fp32 var bf16",
            "option name Clear Hash type button",
        ]

    def _new_game(self) -> None:
        """``ucinewgame`` and ``Clear Hash``: forget what the engine cached."""
        if self.engine is not None:
            self.engine.new_game()

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
            self._new_game()
        elif name in ("ponder", "uci_showwdl", "uci_analysemode", "multipv"):
            pass  # GUIs set these unasked; nothing to do
        else:
            self.info(f"unknown option {command.name!r}")
            return
        if self._loaded is not None:
            self.start_loading()  # a new Model or Precision starts loading now

    def _position(self, command: Position) -> None:
        try:
            board, warnings = build_position(command)
        except PositionError as error:
            # Never answer a later `go` with a move for the previous board: the GUI means
            # another position, so until a valid one arrives there is none.
            self.board, self.position_error = None, f"refused position: {error}"
            self.info(f"{self.position_error}; no position set")
            return
        for warning in warnings:
            self.info(f"repaired position: {warning}")
        self.board, self.position_error = board, None

    def _go(self, go: Go, received: float) -> None:
        """Start a search; whatever fails, exactly one ``bestmove`` answers this ``go``."""
        self._stop_search()
        board = self.board.copy() if self.board is not None else None
        try:
            self._start_search(go, board, received)
        except Exception as error:  # the search thread did not start: answer here
            self.info(f"go failed ({type(error).__name__}: {error}); playing without search")
            self.write(f"bestmove {_fallback(board)}")

    def _start_search(self, go: Go, board: chess.Board | None, received: float) -> None:
        for problem in go.problems:
            self.info(problem)
        if go.perft is not None and self.board is not None:
            self._perft(go.perft)
            return
        if go.searchmoves and not self._supports_searchmoves():
            self.info("searchmoves is not supported by this engine; searching all moves")
        if go.mate is not None:
            self.info(
                f"go mate {go.mate}: searching {mate_depth(go.mate)} plies for a mate (mates "
                f"outside the {self.options.width} best moves of a node are not seen)"
            )
        if board is None:
            self.info(f"go without a valid position ({self.position_error or 'none was set'})")
            self.write("bestmove 0000")
            return
        if not any(board.generate_legal_moves()):
            self.info("no legal moves in this position")
            self.write("bestmove 0000")
            return
        engine = self.wait_ready()
        if engine is None:
            # Never forfeit a game over a missing model: answer with a legal move (a capture if
            # there is one, the first generated move otherwise) and say why.
            self.info(f"{self.model_error or 'no model'}; playing a fallback move without search")
            self.write(f"bestmove {_fallback(board)}")
            return
        stop = self._new_stop_event()
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

    def _new_stop_event(self) -> threading.Event:
        """The event a ``stop`` sets (an engine may want one its native search watches)."""
        return threading.Event()

    def _search_with(
        self,
        engine: LatentEngine,
        search: _Search,
        limit: chess.engine.Limit,
        infinite: bool,
        received: float,
        on_iteration: Callable[[], None],
    ) -> tuple[chess.Move | None, chess.Move | None]:
        """Run the engine's search; returns (best move, ponder move). Sends ``info`` lines and
        calls ``on_iteration`` after each iteration."""
        board = search.board

        def iteration(result: SearchResult) -> None:
            self.write(format_info(result, board.turn, engine))
            on_iteration()

        result = engine.search(
            board,
            limit,
            stop=search.stop,
            infinite=infinite,
            started=received,
            on_iteration=iteration,
        )
        if self.debug:
            self.info(
                f"cache hits {result.cache_hits} ({100 * result.cache_hit_rate:.0f}%), "
                f"scorer {result.scorer_time_s:.3f}s of {result.time_s:.3f}s"
            )
        return result.move, result.pv[1] if len(result.pv) > 1 else None

    def _time_budget(self, search: _Search) -> tuple[float, float] | None:
        """(soft, hard) seconds for a search after ``ponderhit``; None when it has no clock."""
        from latentchess.engines.latent import time_budget

        overhead = self.options.move_overhead_ms / 1000.0
        budget = time_budget(go_limit(search.go), search.board.turn, overhead_s=overhead)
        return None if budget is None else (budget.soft, budget.hard)

    def _perft(self, depth: int) -> None:
        """``go perft N``: leaf counts per move, a blank line, ``Nodes searched``, as Stockfish."""
        from latentchess.core import Board
        from latentchess.core.suite import format_divide

        assert self.board is not None
        if depth == 0:
            lines = ["", "Nodes searched: 1"]
        else:
            lines = format_divide(Board.from_chess(self.board).perft_divide(depth))
        for line in lines:
            self.write(line)

    def _run_search(self, engine: LatentEngine, search: _Search, received: float) -> None:
        board, go = search.board, search.go
        infinite = go.infinite or go.ponder

        def on_iteration() -> None:
            soft = search.soft_deadline
            if soft is not None and time.monotonic() >= soft:
                search.stop.set()  # after ponderhit: the clock's soft limit, as in a timed go

        try:
            limit = go_limit(go)
            if infinite:
                limit = chess.engine.Limit(depth=limit.depth, nodes=limit.nodes)
            move, ponder = self._search_with(
                engine, search, limit, infinite, received, on_iteration
            )
        except Exception as error:  # never die mid-game: play something legal
            self.info(f"search failed ({type(error).__name__}: {error}); playing a legal move")
            move, ponder = next(iter(board.legal_moves)), None
        search.searched.set()
        # The protocol: no bestmove before stop -- unless ponderhit gave the search a budget.
        # (searched is set before budgeted is read, and _ponderhit sets budgeted before it reads
        # searched, so a search that ends around the ponderhit never waits out the timer.)
        if infinite and not search.budgeted.is_set():
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
        budget = self._time_budget(search)
        if engine is None or budget is None:
            search.stop.set()
            return
        soft, seconds = budget
        search.soft_deadline = time.monotonic() + soft
        search.budgeted.set()
        if search.searched.is_set():  # e.g. a mate found while pondering: answer now
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


def _fallback(board: chess.Board | None) -> str:
    """A legal move without search (a capture if there is one), or ``0000`` when none exists."""
    if board is None:
        return "0000"
    moves = list(board.legal_moves)
    if not moves:
        return "0000"
    return next((m for m in moves if board.is_capture(m)), moves[0]).uci()


def _warm_up(model: LatentModel) -> float:
    """Run the first (slow) forward passes now; returns the measured seconds per position."""
    start = chess.Board()
    boards = []
    for move in start.legal_moves:
        child = start.copy(stack=False)
        child.push(move)
        boards.append(child)
    tokens = tokenize_boards(boards)
    model.score_tokens(tokens)
    began = time.perf_counter()
    model.score_tokens(tokens)
    return (time.perf_counter() - began) / len(boards)


class Conversation(Protocol):
    """What :func:`run` drives: a :class:`UciSession` or a session around one."""

    def handle_line(self, line: str) -> bool:
        """Handle one input line; False after ``quit``."""
        ...

    def close(self) -> None:
        """Stop any search (sending its ``bestmove``) and release the engine."""
        ...


def run(
    lines: Iterable[str] | None = None,
    output: TextIO | None = None,
    make_session: Callable[[Callable[[str], None]], Conversation] | None = None,
    **session_options: object,
) -> int:
    """The UCI loop: read commands until ``quit`` or end of input; returns the exit status.

    ``make_session(write)`` builds the session (default: the latent engine's, with
    ``session_options``).
    """
    stream = output or sys.stdout

    def write(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()

    session: Conversation
    if make_session is not None:
        session = make_session(write)
    else:
        session = UciSession(write, **session_options)  # type: ignore[arg-type]
    source = lines if lines is not None else sys.stdin
    try:
        for line in source:
            if not session.handle_line(line):
                break
    finally:
        session.close()
    return 0
