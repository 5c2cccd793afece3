"""Browser sessions: one game, one opponent and at most one running search each.

A session is created by the page (``POST /api/sessions``) and addressed by an unguessable id;
sessions never share boards, engines or caches. Starting a search (an engine move or an
analysis) stops the session's previous one; a new move, an undo, a new game and closing the tab
stop it too. Thinking happens in worker threads; the event loop only waits for it.
"""

from __future__ import annotations

import io
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.engine
import chess.pgn

from latentchess.engines.base import Engine
from latentchess.engines.default import DEFAULT_ENGINE_SPEC
from latentchess.web.opponents import OpponentConfig, RequestError

__all__ = ["Session", "SessionStore", "parse_fen", "parse_move", "parse_pgn", "MAX_PLIES"]

MAX_FEN_LENGTH = 120
MAX_PGN_BYTES = 200_000
MAX_PLIES = 600
"""Longest game a session keeps (bounds the per-ply work of the latent view)."""


def parse_fen(fen: object) -> chess.Board:
    """A board from the page's FEN, only if it is a legal standard chess position.

    Raises:
        RequestError: not a string, too long, unparsable or not a legal position.
    """
    if not isinstance(fen, str) or not fen.strip() or len(fen) > MAX_FEN_LENGTH:
        raise RequestError(f"fen must be a non-empty string of at most {MAX_FEN_LENGTH} characters")
    text = fen.strip()
    if text == "startpos":
        text = chess.STARTING_FEN
    try:
        board = chess.Board(text)
    except ValueError as error:
        raise RequestError(f"invalid FEN {fen!r}: {error}") from None
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [
            name.lower().replace("_", " ")
            for name, flag in chess.Status.__members__.items()
            if flag and flag in status
        ]
        raise RequestError(f"invalid FEN {fen!r}: not a legal position ({', '.join(problems)})")
    return board


def parse_move(board: chess.Board, move: object) -> chess.Move:
    """A legal move of ``board`` from UCI text (promotion letter included).

    Raises:
        RequestError: not a string, not UCI, or illegal in the position.
    """
    if not isinstance(move, str) or not 4 <= len(move) <= 5:
        raise RequestError(f"move must be a UCI string such as 'e2e4' or 'e7e8q', got {move!r}")
    try:
        parsed = chess.Move.from_uci(move)
    except chess.InvalidMoveError:
        raise RequestError(f"move {move!r} is not UCI (e.g. 'e2e4', 'e7e8q')") from None
    if parsed not in board.legal_moves:
        raise RequestError(f"illegal move {move!r} in {board.fen()!r}", status=422)
    return parsed


def parse_pgn(text: object) -> tuple[chess.Board, dict[str, str]]:
    """The first game of a PGN: its final board (with the moves on the stack) and headers.

    Raises:
        RequestError: not a string, too long, no game, or an illegal move in it.
    """
    if not isinstance(text, str) or not text.strip():
        raise RequestError("pgn must be a non-empty string")
    if len(text.encode("utf-8")) > MAX_PGN_BYTES:
        raise RequestError(f"pgn is larger than {MAX_PGN_BYTES} bytes")
    game = chess.pgn.read_game(io.StringIO(text))
    if game is None:
        raise RequestError("no game found in the PGN")
    if game.errors:
        raise RequestError(f"bad PGN: {game.errors[0]}")
    if game.board().chess960 or game.headers.get("Variant", "Standard").lower() not in (
        "standard",
        "chess",
    ):
        raise RequestError("only standard chess games can be imported")
    board = game.board()
    for move in game.mainline_moves():
        board.push(move)
    if len(board.move_stack) > MAX_PLIES:
        raise RequestError(f"the game has {len(board.move_stack)} plies; at most {MAX_PLIES}")
    return board, {k: v for k, v in game.headers.items() if k not in ("FEN", "SetUp")}


@dataclass
class Session:
    """One browser tab's game and engines.

    Attributes:
        id: the unguessable session id.
        board: the game so far (start position + move stack).
        redo: moves undone, most recent last.
        opponent: the engine the page plays against.
        headers: PGN headers kept from an import.
        engine_evals: what the opponent reported per FEN it moved from
            (:func:`latentchess.web.service.engine_eval`: score, depth, PV, White win probability).
        engine_names: the engine spec that played each colour (``chess.WHITE``/``BLACK``), if any.
        plies: per-position view data (axis score, map coordinates, referee eval) by FEN.
        last_seen: ``time.monotonic()`` of the last request.
    """

    id: str
    board: chess.Board = field(default_factory=chess.Board)
    redo: list[chess.Move] = field(default_factory=list)
    opponent: OpponentConfig = field(
        # The default engine's spec is a bare kind ("ab"): no parameters to validate.
        default_factory=lambda: OpponentConfig(
            kind=DEFAULT_ENGINE_SPEC, params={}, movetime_ms=1000
        )
    )
    headers: dict[str, str] = field(default_factory=dict)
    engine_evals: dict[str, dict[str, Any]] = field(default_factory=dict)
    engine_names: dict[bool, str] = field(default_factory=dict)
    plies: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_seen: float = field(default_factory=time.monotonic)
    engine: Engine | None = None
    engine_config: OpponentConfig | None = None
    analysis_engine: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Guards the board and the fields above between the loop and worker threads."""
    engine_lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while an engine of this session thinks (engines are not re-entrant)."""
    _generation: int = 0
    _stop: threading.Event | None = None
    closed: bool = False

    # -- the one search ----------------------------------------------------------------------

    def begin_search(self) -> tuple[int, threading.Event]:
        """Stop the running search, if any, and start a new one: ``(generation, stop flag)``."""
        with self.lock:
            if self._stop is not None:
                self._stop.set()
            self._generation += 1
            self._stop = threading.Event()
            return self._generation, self._stop

    def cancel_search(self) -> None:
        """Stop the running search; its result, when it comes, is dropped."""
        with self.lock:
            if self._stop is not None:
                self._stop.set()
            self._stop = None
            self._generation += 1

    def is_current(self, generation: int) -> bool:
        """Whether the search started as ``generation`` is still the session's search."""
        return self._generation == generation and not self.closed

    # -- the game ----------------------------------------------------------------------------

    def new_game(self, board: chess.Board, headers: dict[str, str] | None = None) -> None:
        self.cancel_search()
        with self.lock:
            self.board = board
            self.redo = []
            self.headers = dict(headers or {})
            self.engine_evals = {}
            self.engine_names = {}
        if self.engine is not None:
            with self.engine_lock:
                self.engine.new_game()

    def push(self, move: chess.Move) -> None:
        self.cancel_search()
        with self.lock:
            if len(self.board.move_stack) >= MAX_PLIES:
                raise RequestError(f"the game is already {MAX_PLIES} plies long", status=409)
            self.board.push(move)
            if self.redo and self.redo[-1] == move:
                self.redo.pop()
            else:
                self.redo = []

    def undo(self) -> None:
        self.cancel_search()
        with self.lock:
            if not self.board.move_stack:
                raise RequestError("nothing to undo", status=409)
            self.redo.append(self.board.pop())

    def redo_move(self) -> None:
        self.cancel_search()
        with self.lock:
            if not self.redo:
                raise RequestError("nothing to redo", status=409)
            self.board.push(self.redo.pop())

    def pgn(self) -> str:
        """The game as PGN text, with headers and the opponent's spec."""
        with self.lock:
            game = chess.pgn.Game.from_board(self.board)
            game.headers["Event"] = self.headers.get("Event", "latentchess web board")
            game.headers["Date"] = time.strftime("%Y.%m.%d")
            for key, value in self.headers.items():
                if key not in ("FEN", "SetUp", "Result"):
                    game.headers[key] = value
            for color, key in ((chess.WHITE, "White"), (chess.BLACK, "Black")):
                if key not in self.headers:
                    game.headers[key] = self.engine_names.get(color, "player")
            return str(game) + "\n"

    def close(self) -> None:
        """Stop the search and release the engines (blocking only on a thinking engine)."""
        self.cancel_search()
        self.closed = True
        with self.engine_lock:
            for engine in (self.engine, self.analysis_engine):
                if engine is not None:
                    engine.close()
            self.engine = self.analysis_engine = None


class SessionStore:
    """The server's sessions, capped in number and expired when idle.

    Args:
        max_sessions: when full, the least recently used session is closed to make room.
        idle_s: sessions idle longer than this are closed.
    """

    def __init__(self, *, max_sessions: int = 32, idle_s: float = 3600.0) -> None:
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(self) -> tuple[Session, list[Session]]:
        """A new session, and the sessions evicted for it (close them off the loop)."""
        evicted: list[Session] = []
        now = time.monotonic()
        with self._lock:
            for key, old in list(self._sessions.items()):
                if now - old.last_seen > self.idle_s:
                    evicted.append(self._sessions.pop(key))
            while len(self._sessions) >= self.max_sessions:
                key = min(self._sessions, key=lambda k: self._sessions[k].last_seen)
                evicted.append(self._sessions.pop(key))
            session = Session(id=secrets.token_urlsafe(18))
            self._sessions[session.id] = session
        return session, evicted

    def get(self, session_id: str) -> Session:
        """The session with this id.

        Raises:
            RequestError: 404 when there is none (expired, closed or never made).
        """
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise RequestError(f"no session {session_id!r} (expired or closed)", status=404)
        session.last_seen = time.monotonic()
        return session

    def pop(self, session_id: str) -> Session | None:
        with self._lock:
            return self._sessions.pop(session_id, None)

    def all(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    def __len__(self) -> int:
        return len(self._sessions)
