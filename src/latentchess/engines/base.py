"""The one interface every engine shares, ours in each mode and external UCI engines alike.

An engine is a subclass of :class:`Engine`. It must answer :meth:`Engine.analyse`; everything
else has a default that an engine overrides only when it has something to say:

* :meth:`Engine.options` declares its UCI options once (:class:`EngineOption`: python-chess's
  :class:`chess.engine.Option` plus the action to take when it changes); :meth:`Engine.set_option`
  validates a value with ``Option.parse`` and runs that action. The UCI session, the web board's
  menus and engine specs (``latent:depth=4`` is ``setoption name Depth value 4``) all read these
  declarations.
* :meth:`Engine.go` is the search a UCI ``go`` runs: it streams ``info`` as python-chess
  :class:`chess.engine.InfoDict` and stops on an event. The default runs :meth:`analyse` once.
* :meth:`Engine.time_budget` says how long the engine would think under a clock (the UCI session
  asks it at ``ponderhit``); the default is the native core's time manager.
* :meth:`Engine.prepare` starts slow set-up in the background (a model load) and
  :meth:`Engine.ready` waits for it;
  :meth:`Engine.provenance` names what the engine runs (model file hashes); :meth:`Engine.new_game`
  forgets the previous game; :meth:`Engine.close` releases processes.

Limits are python-chess's :class:`chess.engine.Limit` (time, depth, nodes, clock), so any engine
plugs into matches, puzzles and benchmarks the same way (as in DeepMind's searchless_chess).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import chess
import chess.engine

from latentchess.engines.default import DEFAULT_MOVE_TIME_S
from latentchess.errors import EngineError

if TYPE_CHECKING:
    from latentchess.wdl import WdlModel

__all__ = [
    "Engine",
    "EngineOption",
    "Analysis",
    "MoveScore",
    "TimeBudget",
    "InfoCallback",
    "GoControl",
    "native_time_budget",
]

InfoCallback = Callable[[chess.engine.InfoDict], None]
"""Receives each ``info`` an engine reports while searching (one per iteration and PV line)."""


@dataclass(frozen=True, kw_only=True)
class MoveScore:
    """One root move as an engine sees it.

    Attributes:
        move: the move.
        score: engine-specific score from White's view (ours: axis value; UCI engines: cp).
        rank: 1 for the move the engine would play.
        win_prob_white: calibrated White win probability after the move, if known.
        pv: the line the engine expects after it (MultiPV engines), else empty.
        score_cp: the line's centipawns from the side to move's view (UCI), if reported.
        mate: the line's moves to mate from the side to move's view (UCI), if reported.
    """

    move: chess.Move
    score: float
    rank: int
    win_prob_white: float | None = None
    pv: list[chess.Move] = field(default_factory=list)
    score_cp: int | None = None
    mate: int | None = None

    def uci_score(self) -> str | None:
        """``cp 35`` / ``mate 2`` when the engine reported a UCI score for this move."""
        if self.mate is not None:
            return f"mate {self.mate}"
        return None if self.score_cp is None else f"cp {self.score_cp}"


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """What an engine reports about a position.

    Attributes:
        best_move: the move it would play (None only when there is no legal move).
        pv: principal variation starting with ``best_move``.
        score_cp: centipawns from the side to move's view (UCI convention), if known.
        mate: moves to mate from the side to move's view (positive: it mates), if known.
        win_prob_white: White's win probability, if known.
        depth: search depth reached, in plies.
        seldepth: deepest ply reached (alpha-beta engines), if known.
        nodes: positions evaluated (ours: positions embedded).
        nps: nodes per second, if known.
        time_s: wall time spent.
        moves: per-root-move scores, best first, when the engine reports them.
        wdl: (win, draw, loss) permille of the side to move, when the engine has a WDL head.
    """

    best_move: chess.Move | None
    pv: list[chess.Move] = field(default_factory=list)
    score_cp: int | None = None
    mate: int | None = None
    win_prob_white: float | None = None
    depth: int = 0
    seldepth: int | None = None
    nodes: int = 0
    nps: int | None = None
    time_s: float = 0.0
    moves: list[MoveScore] = field(default_factory=list)
    wdl: tuple[int, int, int] | None = None

    @property
    def ponder(self) -> chess.Move | None:
        """The reply the engine expects (the PV's second move), if any."""
        return self.pv[1] if len(self.pv) > 1 else None

    def info(self) -> chess.engine.InfoDict:
        """This analysis as one python-chess ``info`` (what a UCI engine would print)."""
        info: chess.engine.InfoDict = {"depth": self.depth, "nodes": self.nodes}
        if self.seldepth is not None:
            info["seldepth"] = self.seldepth
        turn = chess.WHITE  # scores here are the side to move's: any colour works for relative
        if self.mate is not None:
            info["score"] = chess.engine.PovScore(chess.engine.Mate(self.mate), turn)
        elif self.score_cp is not None:
            info["score"] = chess.engine.PovScore(chess.engine.Cp(self.score_cp), turn)
        if self.wdl is not None:
            info["wdl"] = chess.engine.PovWdl(chess.engine.Wdl(*self.wdl), turn)
        if self.nps is not None:
            info["nps"] = self.nps
        info["time"] = self.time_s
        if self.pv:
            info["pv"] = list(self.pv)
        return info


@dataclass(frozen=True, kw_only=True)
class GoControl:
    """How a :meth:`Engine.go` search is driven (what a UCI ``go`` adds to its limits).

    Attributes:
        stop: set by ``stop`` (or the session's ponderhit timer) to end the search; a
            :class:`~latentchess.core.alphabeta.StopSignal` reaches the native search at once.
        infinite: ``go infinite`` / ``go ponder``: search until stopped (depth and nodes apply).
        started: ``time.monotonic()`` when ``go`` arrived; time limits count from it.
        search_moves: ``go searchmoves``: only these root moves (empty: all).
        on_info: receives each ``info`` (one per iteration and PV line).
    """

    stop: threading.Event = field(default_factory=threading.Event)
    infinite: bool = False
    started: float | None = None
    search_moves: Sequence[chess.Move] = ()
    on_info: InfoCallback | None = None


@dataclass(frozen=True)
class TimeBudget:
    """Thinking time for one move, in seconds from when the request arrived.

    Attributes:
        soft: start no new iteration after this.
        hard: stop the running iteration so that the move is sent by this.
    """

    soft: float
    hard: float


@dataclass(frozen=True)
class EngineOption:
    """One option an engine declares: its UCI form and what a new value does.

    Attributes:
        option: name, type (``spin``, ``check``, ``combo``, ``string``, ``button``), default
            (the value in force now), ``min``/``max`` and ``var``, as python-chess describes
            options of UCI engines.
        on_change: called with the parsed value (``None`` for a button); may raise
            :class:`~latentchess.errors.EngineError` to refuse it (nothing changes then).
        key: the engine-spec key that sets it (``depth`` for ``Depth``), if it has one.
    """

    option: chess.engine.Option
    on_change: Callable[[Any], None]
    key: str | None = None

    @property
    def name(self) -> str:
        """The UCI name (``Move Overhead``)."""
        return self.option.name

    def parse(self, value: object) -> Any:
        """The value as the option's type (``Option.parse``).

        Raises:
            EngineError: a value of the wrong type or out of range, naming the option.
        """
        if self.option.type == "check" and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise EngineError(f"option {self.name!r} needs true or false, got {value!r}")
            return lowered in ("true", "1", "yes", "on")
        try:
            return self.option.parse(value.strip() if isinstance(value, str) else value)  # type: ignore[arg-type]
        except chess.engine.EngineError as error:
            raise EngineError(str(error)) from None

    def uci_line(self) -> str:
        """The ``option name ... type ...`` line answered to ``uci``."""
        o = self.option
        line = f"option name {o.name} type {o.type}"
        if o.type == "button":
            return line
        default = o.default
        if isinstance(default, bool):
            default = "true" if default else "false"
        line += f" default {default}"
        if o.type == "spin":
            line += f" min {o.min} max {o.max}"
        for choice in o.var or ():
            line += f" var {choice}"
        return line


def spin(
    name: str, value: int, low: int, high: int, on_change: Callable[[int], None], key: str | None
) -> EngineOption:
    """A ``spin`` option (an integer in ``[low, high]``)."""
    return EngineOption(chess.engine.Option(name, "spin", value, low, high, None), on_change, key)


def combo(
    name: str, value: str, choices: Sequence[str], on_change: Callable[[str], None], key: str | None
) -> EngineOption:
    """A ``combo`` option (one of ``choices``)."""
    option = chess.engine.Option(name, "combo", value, None, None, list(choices))
    return EngineOption(option, on_change, key)


def string(
    name: str, value: str, on_change: Callable[[str], None], key: str | None
) -> EngineOption:
    """A ``string`` option."""
    return EngineOption(
        chess.engine.Option(name, "string", value, None, None, None), on_change, key
    )


def check(
    name: str, value: bool, on_change: Callable[[bool], None], key: str | None
) -> EngineOption:
    """A ``check`` option (true or false)."""
    option = chess.engine.Option(name, "check", value, None, None, None)
    return EngineOption(option, on_change, key)


def button(name: str, on_press: Callable[[], None]) -> EngineOption:
    """A ``button`` option (``Clear Hash``)."""
    option = chess.engine.Option(name, "button", None, None, None, None)
    return EngineOption(option, lambda _value: on_press())


def native_time_budget(
    limit: chess.engine.Limit,
    board: chess.Board,
    *,
    move_overhead_ms: int,
    parameters: Mapping[str, int] | None = None,
) -> TimeBudget | None:
    """The native core's time manager (``core/cpp/timeman.cpp``) for the move of ``board`` under
    ``limit``, with the search parameters ``parameters`` changes; None: no time."""
    from latentchess.core.alphabeta import time_budget_ms

    soft_ms, hard_ms = time_budget_ms(
        limit, board, move_overhead_ms=move_overhead_ms, parameters=parameters
    )
    if hard_ms < 0:
        return None
    return TimeBudget(max(soft_ms, 0) / 1000.0, hard_ms / 1000.0)


class Engine:
    """A chess engine: picks a move under a limit and can explain a position.

    Subclasses set :attr:`name` and implement :meth:`analyse`; every other method has a default.
    """

    name: str = "engine"

    # -- options -----------------------------------------------------------------------------

    def options(self) -> list[EngineOption]:
        """The options this engine declares (defaults: the values in force now)."""
        return []

    def set_option(self, name: str, value: object = None) -> None:
        """Set a declared option by its UCI name (case-insensitive) or spec key.

        Raises:
            EngineError: an undeclared name or a refused value (nothing changes then).
        """
        wanted = name.strip().lower()
        for option in self.options():
            if wanted in (option.name.lower(), (option.key or "").lower()):
                option.on_change(option.parse(value))
                return
        known = ", ".join(option.name for option in self.options()) or "none"
        raise EngineError(f"unknown option {name.strip()!r} of {self.name!r} (options: {known})")

    # -- life cycle --------------------------------------------------------------------------

    def prepare(self) -> None:
        """Start slow set-up in the background (a model load); :meth:`ready` waits for it.

        The UCI session calls it once ``uciok`` is out, so that a GUI's handshake is answered at
        once and the load overlaps its ``setoption`` lines.
        """

    def ready(self) -> None:
        """Block until the engine can search (e.g. its model has loaded).

        Raises:
            LatentChessError: it cannot search (the reason, e.g. a model that failed to load).
        """

    def provenance(self) -> dict[str, str]:
        """What the engine runs, for results and the UCI log (model paths and hashes)."""
        return {}

    def new_game(self) -> None:
        """Forget the previous game (tables, caches, histories)."""

    def close(self) -> None:
        """Release processes and memory; the engine is unusable afterwards."""

    # -- thinking ----------------------------------------------------------------------------

    def default_limit(self) -> chess.engine.Limit:
        """The limit of a move when a caller gives none (the command line's bestmove)."""
        return chess.engine.Limit(time=DEFAULT_MOVE_TIME_S)

    def time_budget(
        self, limit: chess.engine.Limit, board: chess.Board, *, move_overhead_ms: int = 30
    ) -> TimeBudget | None:
        """How long this engine thinks about the move of ``board`` under ``limit`` (None: the
        limit sets no time)."""
        return native_time_budget(limit, board, move_overhead_ms=move_overhead_ms)

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """Search ``board`` within ``limit`` and report the result."""
        raise NotImplementedError(f"{type(self).__name__} does not implement analyse")

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """A legal move for ``board`` within ``limit``.

        Raises:
            EngineError: ``board`` has no legal move.
        """
        move = self.analyse(board, limit).best_move
        if move is None:
            raise EngineError(f"no legal move in {board.fen()!r}")
        return move

    def go(
        self, board: chess.Board, limit: chess.engine.Limit, control: GoControl | None = None
    ) -> Analysis:
        """The search behind a UCI ``go``: streams ``info``, stops when told (:class:`GoControl`).

        The default analyses once (an infinite search runs to depth 6; it can be neither stopped
        nor restricted to ``search_moves``) and reports it; engines with an iterative search
        override it.

        Args:
            board: the position, its move stack the game's history.
            limit: the ``go`` command's limits (clocks are both sides').
            control: stop event, infinite, start time, root moves, ``info`` receiver.
        """
        control = control or GoControl()
        if control.infinite and limit.depth is None and limit.nodes is None:
            limit = chess.engine.Limit(depth=6)
        began = time.monotonic()
        analysis = self.analyse(board, limit)
        if control.on_info is not None:
            info = analysis.info()
            info.setdefault("time", time.monotonic() - began)
            control.on_info(info)
        return analysis

    def info_string(self) -> str:
        """A line the UCI session sends as ``info string`` after each search ("": none)."""
        return ""

    def supports_search_moves(self) -> bool:
        """Whether :meth:`go` honours ``search_moves`` (UCI ``go searchmoves``)."""
        return False

    def wdl_model(self) -> WdlModel | None:
        """The model that turns this engine's scores into win/draw/loss chances (UCI
        ``UCI_ShowWDL``); None: the engine has none, and its ``info`` lines carry no ``wdl``."""
        return None

    def supports_chess960(self) -> bool:
        """Whether this engine plays Chess960 boards (``board.chess960``) correctly now.

        Such a board's castling moves are king-takes-own-rook (``e1h1``) and its FEN may name
        castling rooks by file. An engine whose model cannot encode that (its tokens know only
        ``KQkq`` castling) answers False, and the UCI session then neither offers
        ``UCI_Chess960`` for it nor lets it search a Chess960 position.
        """
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
