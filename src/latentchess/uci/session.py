"""One UCI conversation for every engine: options, the current position, the search thread.

The session knows engines only through :class:`~latentchess.engines.base.Engine`: the options it
lists and sets are the engine's declarations (plus ``Engine``, which names the engine by its spec
and replaces it mid-session), ``go`` runs :meth:`Engine.go` in a thread so that ``stop``,
``isready`` and ``quit`` are answered at once, ``ponderhit`` asks :meth:`Engine.time_budget` how
long to go on, and ``isready`` waits for :meth:`Engine.ready` (a model loading in the
background). There is no engine-specific branch here.

The session owns the board and the move notation, so it owns ``UCI_Chess960`` too: it offers the
option to engines that say they play Chess960 (:meth:`Engine.supports_chess960`), builds Chess960
boards while it is on (X-FEN or Shredder-FEN, castling as king-takes-own-rook ``e1h1``), writes
every move in the board's notation, and never lets an engine that cannot play Chess960 search
such a board (a legal fallback move instead, with the reason).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

import chess
import chess.engine

from latentchess.engines.base import Engine, EngineOption, GoControl, check
from latentchess.engines.default import DEFAULT_ENGINE_SPEC
from latentchess.errors import EngineError, LatentChessError
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
    format_info,
    go_limit,
    parse_command,
)

if TYPE_CHECKING:
    from latentchess.wdl import WdlModel

__all__ = [
    "UciSession",
    "run",
    "ENGINE_OPTION",
    "SHOW_WDL_OPTION",
    "CHESS960_OPTION",
    "EngineFactory",
]

ENGINE_OPTION = "Engine"
"""The session's own option: the engine's spec (``ab``, ``latent:depth=4``, ``hybrid``...)."""

SHOW_WDL_OPTION = "UCI_ShowWDL"
"""The session's option for ``wdl W D L`` in ``info`` lines, from :meth:`Engine.wdl_model`;
declared when the engine has a model (``ab`` with a network that ships one)."""

CHESS960_OPTION = "UCI_Chess960"
"""The session's own option (UCI standard): Chess960 boards and king-takes-rook castling."""

_UNASKED = ("ponder", "uci_analysemode", "uci_showwdl", "multipv")
"""Options GUIs set without asking; silently accepted when the engine does not declare them."""

EngineFactory = Callable[[str], Engine]
"""Builds an engine from a spec, not waiting for it to be ready (``create_engine(wait=False)``)."""


def _create(spec: str) -> Engine:
    from latentchess.engines.registry import create_engine

    return create_engine(spec, wait=False)


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


class UciSession:
    """State of one UCI conversation.

    Args:
        write: receives each output line (the loop prints and flushes it).
        spec: the engine at start-up, as a spec (default: the default engine).
        engine: an engine already built (tests, the hybrid's wrappers); ``spec`` then only names
            it in ``id name`` and the ``Engine`` option.
        factory: builds an engine from a spec (default: the registry, not waiting for models).

    Raises:
        LatentChessError: the start-up spec cannot be parsed or its engine cannot be built.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        spec: str = DEFAULT_ENGINE_SPEC,
        engine: Engine | None = None,
        factory: EngineFactory = _create,
    ) -> None:
        self._write_lock = threading.Lock()
        self._raw_write = write
        self._factory = factory
        self.spec = spec.strip()
        self.engine: Engine = engine if engine is not None else factory(self.spec)
        self.board: chess.Board | None = None
        self.position_error: str | None = None
        self._position_command: Position | None = None
        """The ``position`` that made :attr:`board`: the next one that continues it only plays
        the new moves."""
        """Why there is no position (a refused ``position``), for the ``go`` that follows."""
        self.debug = False
        self.engine_error: str | None = None
        """Why the engine cannot search (a model that failed to load); None when it can."""
        self.chess960 = False
        """``UCI_Chess960``: positions are Chess960 boards, castling written ``e1h1``."""
        self._set_options: dict[str, SetOption] = {}  # by lower-case name, in the order set
        self._uci_seen = False
        self.show_wdl = False
        """``UCI_ShowWDL``: ``info`` lines with a score carry ``wdl`` (engines with a model)."""
        self._announced: object = None
        self._search: _Search | None = None

    # -- output ------------------------------------------------------------------------------

    def write(self, line: str) -> None:
        """Send one line (thread-safe: the search thread writes too)."""
        with self._write_lock:
            self._raw_write(line)

    def info(self, text: str) -> None:
        """Send ``info string TEXT`` (one line)."""
        self.write("info string " + " ".join(text.split()))

    # -- readiness ---------------------------------------------------------------------------

    def ready(self) -> bool:
        """Wait for the engine to be ready; say once what it runs, or why it cannot search."""
        try:
            self.engine.ready()
            self.engine_error = None
            provenance = self.engine.provenance()
            announce: object = ("ok", tuple(provenance.items()))
            text = " ".join(f"{key}={value}" for key, value in provenance.items())
            message = f"{self.spec}: {text}" if text else None
        except Exception as error:  # reported to the GUI, never fatal
            self.engine_error = str(error) if isinstance(error, LatentChessError) else repr(error)
            announce = ("error", self.engine_error)
            message = (
                f"ERROR: {self.spec} cannot search: {self.engine_error}; set its options (or "
                f"the {ENGINE_OPTION} option) to fix it; until then every move is a fallback "
                "without search"
            )
        if announce != self._announced and message is not None:
            self.info(message)
        self._announced = announce
        return self.engine_error is None

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
                self.ready()  # while searching, the engine is obviously ready
            self.write("readyok")
        elif isinstance(command, UciNewGame):
            self._stop_search()
            self.engine.new_game()
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
        self._uci_seen = True
        self.write(f"id name {ENGINE_NAME} {self.spec}")
        self.write(f"id author {ENGINE_AUTHOR}")
        self.write(f"option name {ENGINE_OPTION} type string default {self.spec}")
        # Pondering is the session's (go ponder / ponderhit), the same for every engine; GUIs
        # only ponder with an engine that declares it.
        self.write("option name Ponder type check default false")
        if self._wdl_model() is not None:
            self.write(f"option name {SHOW_WDL_OPTION} type check default false")
        if self.engine.supports_chess960():
            self.write(self._chess960_option().uci_line())
        for option in self.engine.options():
            self.write(option.uci_line())
        self.write("uciok")
        self.engine.prepare()  # a model loads while the GUI sends its options

    def _setoption(self, command: SetOption) -> None:
        name, value = command.name.strip(), (command.value or "").strip()
        if name.lower() == ENGINE_OPTION.lower():
            self._switch(value)
            return
        if name.lower() == SHOW_WDL_OPTION.lower():
            if value.lower() not in ("true", "false"):
                self.info(
                    f"option {SHOW_WDL_OPTION!r} refused: expected true or false, got {value!r}"
                )
            else:
                self.show_wdl = value.lower() == "true"
            return
        if name.lower() == CHESS960_OPTION.lower():
            option = self._chess960_option()
            try:
                option.on_change(option.parse(value))
            except LatentChessError as error:
                self.info(f"option {name!r} refused: {error}")
            return
        # Kept for a later engine (Engine option) that declares it, even when this one doesn't.
        self._set_options[name.lower()] = command
        declared = {option.name.lower() for option in self.engine.options()}
        if name.lower() not in declared:
            if name.lower() not in _UNASKED:
                self.info(f"unknown option {name!r}")
            return
        try:
            self.engine.set_option(name, value)
        except LatentChessError as error:
            self.info(f"option {name!r} refused: {error}")

    def _chess960_option(self) -> EngineOption:
        """``UCI_Chess960``, declared once here (the session's notation, not an engine's)."""
        return check(CHESS960_OPTION, False, self._set_chess960, None)

    def _set_chess960(self, on: bool) -> None:
        if on and not self.engine.supports_chess960():
            raise EngineError(f"engine {self.spec} cannot play Chess960; still standard chess")
        self.chess960 = on

    def _switch(self, text: str) -> None:
        """``setoption name Engine value SPEC``: a new engine; a bad spec keeps the old one."""
        from latentchess.engines.registry import parse_engine_spec

        if not text:
            self.info(
                f"option {ENGINE_OPTION!r} needs an engine spec (e.g. 'ab', 'latent'); "
                f"still {self.spec}"
            )
            return
        if text == self.spec:
            return
        try:
            engine = self._factory(text)
        except Exception as error:  # a bad spec, a missing binary: the current engine stays
            reason = str(error) if isinstance(error, LatentChessError) else repr(error)
            self.info(f"{ENGINE_OPTION} {text!r} refused: {reason}; still playing {self.spec}")
            return
        old, self.engine, self.spec = self.engine, engine, text
        old.close()
        self._announced = None
        # Options set so far that the new engine declares too, unless its spec sets them.
        named = {key.lower() for key in parse_engine_spec(text).params}
        for option in engine.options():
            command = self._set_options.get(option.name.lower())
            if command is not None and (option.key or "").lower() not in named:
                try:
                    engine.set_option(option.name, (command.value or "").strip())
                except LatentChessError as error:
                    self.info(f"option {option.name!r} not carried over: {error}")
        if self.chess960 and not engine.supports_chess960():
            self.info(
                f"{CHESS960_OPTION} is on but {text} cannot play Chess960: Chess960 positions "
                "get a fallback move without search"
            )
        if self._uci_seen:
            engine.prepare()
            shown = ", ".join(option.name for option in engine.options())
            self.info(f"engine now {text} (options: {shown}; send 'uci' to list them)")

    def _position(self, command: Position) -> None:
        previous = None
        if self.board is not None and self._position_command is not None:
            previous = (self._position_command, self.board)
        try:
            board, warnings = build_position(command, previous, chess960=self.chess960)
        except PositionError as error:
            # Never answer a later `go` with a move for the previous board: the GUI means
            # another position, so until a valid one arrives there is none.
            self.board, self.position_error = None, f"refused position: {error}"
            self._position_command = None
            self.info(f"{self.position_error}; no position set")
            return
        for warning in warnings:
            self.info(f"repaired position: {warning}")
        self.board, self.position_error = board, None
        self._position_command = command

    # -- searching ---------------------------------------------------------------------------

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
        if go.perft is not None and board is not None:
            self._perft(board, go.perft)
            return
        if board is None:
            self.info(f"go without a valid position ({self.position_error or 'none was set'})")
            self.write("bestmove 0000")
            return
        if not any(board.generate_legal_moves()):
            self.info("no legal moves in this position")
            self.write("bestmove 0000")
            return
        if board.chess960 and not self.engine.supports_chess960():
            self.info(
                f"{self.spec} cannot play Chess960 ({CHESS960_OPTION} is on); playing a "
                "fallback move without search"
            )
            self.write(f"bestmove {_fallback(board)}")
            return
        if not self.ready():
            # Never forfeit a game over an engine that cannot search (a missing model): answer
            # with a legal move (a capture if there is one) and say why.
            self.info(f"{self.engine_error}; playing a fallback move without search")
            self.write(f"bestmove {_fallback(board)}")
            return
        search_moves = self._search_moves(go, board)
        search = _Search(threading.Thread(target=lambda: None), self._stop_event(), go, board)
        if go.ponder:
            search.pondering.set()
        search.thread = threading.Thread(
            target=self._run_search,
            args=(self.engine, search, received, search_moves),
            name="latentchess-search",
            daemon=True,
        )
        self._search = search
        search.thread.start()

    def _stop_event(self) -> threading.Event:
        """The event ``stop`` sets: one the native search watches directly (any engine may)."""
        from latentchess.core.alphabeta import StopSignal

        return StopSignal()

    def _search_moves(self, go: Go, board: chess.Board) -> list[chess.Move]:
        """``go searchmoves``: its legal moves (others named and dropped)."""
        if not go.searchmoves:
            return []
        if not self.engine.supports_search_moves():
            self.info("searchmoves is not supported by this engine; searching all moves")
            return []
        moves: list[chess.Move] = []
        for text in go.searchmoves:
            try:
                move: chess.Move | None = chess.Move.from_uci(text)
            except ValueError:
                move = None
            if move is None or move not in board.legal_moves:
                self.info(f"searchmoves: {text!r} is not a legal move here; ignored")
            elif move not in moves:
                moves.append(move)
        if not moves:
            self.info("searchmoves: no legal move given; searching all moves")
        return moves

    def _run_search(
        self, engine: Engine, search: _Search, received: float, search_moves: list[chess.Move]
    ) -> None:
        board, go = search.board, search.go
        infinite = go.infinite or go.ponder
        wdl_model = self._wdl_model() if self.show_wdl else None

        def on_info(info: chess.engine.InfoDict) -> None:
            if wdl_model is not None and "score" in info and "wdl" not in info:
                wdl = wdl_model.wdl(info["score"].relative, board)
                info = {**info, "wdl": chess.engine.PovWdl(wdl, board.turn)}
            self.write(format_info(info))
            soft = search.soft_deadline
            if "depth" in info and soft is not None and time.monotonic() >= soft:
                search.stop.set()  # after ponderhit: the clock's soft limit, as in a timed go

        move: chess.Move | None
        try:
            limit = go_limit(go)
            if infinite:
                limit = chess.engine.Limit(depth=limit.depth, nodes=limit.nodes, mate=limit.mate)
            control = GoControl(
                stop=search.stop,
                infinite=infinite,
                started=received,
                search_moves=search_moves,
                on_info=on_info,
            )
            analysis = engine.go(board, limit, control)
            move, ponder = analysis.best_move, analysis.ponder
            note = engine.info_string()
            if note:
                self.info(note)
        except Exception as error:  # never die mid-game: play something legal
            self.info(f"search failed ({type(error).__name__}: {error}); playing a legal move")
            move, ponder = next(iter(board.legal_moves)), None
        search.searched.set()
        # The protocol: no bestmove before stop -- unless ponderhit gave the search a budget.
        # (searched is set before budgeted is read, and _ponderhit sets budgeted before it reads
        # searched, so a search that ends around the ponderhit never waits out the timer.)
        if infinite and not search.budgeted.is_set():
            search.stop.wait()
        text = f"bestmove {_notation(board, move, ponder)}" if move is not None else "bestmove 0000"
        self.write(text)

    def _wdl_model(self) -> WdlModel | None:
        """The engine's WDL model; None when it has none or it cannot be read (said once)."""
        try:
            return self.engine.wdl_model()
        except Exception as error:  # a broken wdl.json must not stop the engine
            self.info(f"no WDL: {type(error).__name__}: {error}")
            return None

    def _ponderhit(self) -> None:
        search = self._search
        if search is None or not search.pondering.is_set():
            self.info("ponderhit without a ponder search")
            return
        search.pondering.clear()
        budget = self.engine.time_budget(go_limit(search.go), search.board)
        if budget is None:
            search.stop.set()
            return
        search.soft_deadline = time.monotonic() + budget.soft
        search.budgeted.set()
        if search.searched.is_set():  # e.g. a mate found while pondering: answer now
            search.stop.set()
            return
        timer = threading.Timer(budget.hard, search.stop.set)
        timer.daemon = True
        timer.start()

    def _perft(self, board: chess.Board, depth: int) -> None:
        """``go perft N``: leaf counts per move, a blank line, ``Nodes searched``, as Stockfish."""
        from latentchess.core import Board
        from latentchess.core.suite import format_divide

        if depth == 0:
            lines = ["", "Nodes searched: 1"]
        else:
            lines = format_divide(Board.from_chess(board).perft_divide(depth))
        for line in lines:
            self.write(line)

    def _stop_search(self) -> None:
        search = self._search
        if search is None:
            return
        search.stop.set()
        search.thread.join()
        self._search = None

    def close(self) -> None:
        """Stop any search (sending its ``bestmove``) and close the engine."""
        self._stop_search()
        self.engine.close()


def _notation(board: chess.Board, move: chess.Move, ponder: chess.Move | None) -> str:
    """``MOVE [ponder PONDER]`` in ``board``'s notation (Chess960: castling as ``e1h1``),
    whichever castling form the engine returned; a ponder move that is not legal after ``move``
    is left out."""
    text = board.uci(move)
    if ponder is not None:
        after = board.copy(stack=False)
        try:
            after.push(move)
            if after.is_legal(ponder):
                text += f" ponder {after.uci(ponder)}"
        except (AssertionError, ValueError):  # python-chess's errors for an illegal push
            pass
    return text


def _fallback(board: chess.Board | None) -> str:
    """A legal move without search (a capture if there is one), or ``0000`` when none exists."""
    if board is None:
        return "0000"
    moves = list(board.legal_moves)
    if not moves:
        return "0000"
    return next((m for m in moves if board.is_capture(m)), moves[0]).uci()


def run(
    lines: Iterable[str] | None = None,
    output: TextIO | None = None,
    *,
    spec: str = DEFAULT_ENGINE_SPEC,
) -> int:
    """The UCI loop: read commands until ``quit`` or end of input; returns the exit status.

    Raises:
        LatentChessError: the start-up spec cannot be parsed or its engine cannot be built.
    """
    stream = output or sys.stdout

    def write(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()

    session = UciSession(write, spec=spec)
    source = lines if lines is not None else sys.stdin
    try:
        for line in source:
            if not session.handle_line(line):
                break
    finally:
        session.close()
    return 0
