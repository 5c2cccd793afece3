"""The web board's work, done in worker threads: views of a game, engine moves, analyses.

Nothing here touches the event loop; :mod:`latentchess.web.app` calls these functions through a
thread pool and turns :class:`~latentchess.web.opponents.RequestError` into 4xx answers.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.engine

from latentchess.engines.base import Analysis, GoControl
from latentchess.errors import EngineError
from latentchess.latent_view import LatentView
from latentchess.web.opponents import RequestError, build_engine
from latentchess.web.sessions import MAX_PLIES, Session
from latentchess.winprob import score_win_probability

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel

__all__ = ["Settings", "Service", "Emit", "engine_eval"]

Emit = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How the server behaves.

    Attributes:
        max_think_s: longest a single engine move or analysis may run.
        allow_external: whether ``uci:``/``xboard:`` and free-form specs may be started.
        referee_nodes: Stockfish nodes per position for the per-ply evaluation curve.
        analysis_depth: depth of the latent search in the analysis panel.
        stockfish: path of the Stockfish binary for the referee and the alpha-beta column
            (``None``: look it up; not found: those columns stay empty).
    """

    max_think_s: float = 10.0
    allow_external: bool = False
    referee_nodes: int = 20_000
    analysis_depth: int = 4
    stockfish: Path | None = None


def _round(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def engine_eval(board: chess.Board, analysis: Analysis, spec: str) -> dict[str, Any] | None:
    """What an engine said about the position it moved from, for the page (White's view).

    Returns:
        ``{"engine", "move", "cp", "mate", "win_prob", "depth", "pv"}`` (``pv`` in SAN, ``cp``
        and ``mate`` from White's view, ``win_prob`` White's), or None when it reported no score.
    """
    if analysis.score_cp is None and analysis.mate is None and analysis.win_prob_white is None:
        return None
    cp = mate = None
    win_prob = analysis.win_prob_white
    if analysis.score_cp is not None or analysis.mate is not None:
        relative: chess.engine.Score = (
            chess.engine.Mate(analysis.mate)
            if analysis.mate is not None
            else chess.engine.Cp(int(analysis.score_cp or 0))
        )
        white = chess.engine.PovScore(relative, board.turn).white()
        cp, mate = white.score(), white.mate()
        if win_prob is None:
            win_prob = score_win_probability(white)
    line = board.copy()
    pv: list[str] = []
    for move in analysis.pv:
        if move not in line.legal_moves:
            break
        pv.append(line.san(move))
        line.push(move)
    best = analysis.best_move
    return {
        "engine": spec,
        "move": board.san(best) if best is not None and best in board.legal_moves else None,
        "cp": cp,
        "mate": mate,
        "win_prob": _round(win_prob),
        "depth": analysis.depth,
        "pv": pv,
    }


class Service:
    """The model, its latent view and a Stockfish referee shared by all sessions.

    Args:
        model: the loaded latent model.
        view: its fitted 2-D view.
        settings: server settings.
        referee: a running Stockfish for per-ply evaluations (owned by the caller), or None.
    """

    def __init__(
        self,
        model: LatentModel,
        view: LatentView,
        settings: Settings,
        referee: chess.engine.SimpleEngine | None,
    ) -> None:
        self.model = model
        self.view = view
        self.settings = settings
        self.referee = referee
        self._referee_lock = threading.Lock()
        self._referee_cache: dict[str, float | None] = {}
        self._running = 0
        self._running_lock = threading.Lock()

    @property
    def running(self) -> int:
        """Engine moves and analyses thinking right now, all sessions together."""
        return self._running

    @contextlib.contextmanager
    def _thinking(self) -> Iterator[None]:
        with self._running_lock:
            self._running += 1
        try:
            yield
        finally:
            with self._running_lock:
                self._running -= 1

    # -- views ---------------------------------------------------------------------------------

    def referee_eval(self, board: chess.Board) -> float | None:
        """Stockfish's White win probability for a position (cached), None without Stockfish."""
        key = board.fen()
        if key in self._referee_cache:
            return self._referee_cache[key]
        if self.referee is None:
            return None
        if board.is_game_over(claim_draw=False):
            outcome = board.outcome()
            value = 0.5 if outcome is None or outcome.winner is None else float(outcome.winner)
        else:
            with self._referee_lock:
                info = self.referee.analyse(
                    board, chess.engine.Limit(nodes=self.settings.referee_nodes, time=0.5)
                )
            score = info.get("score")
            value = None if score is None else score_win_probability(score.white())
        if len(self._referee_cache) > 50_000:
            self._referee_cache.clear()
        self._referee_cache[key] = value
        return value

    def game_state(self, session: Session) -> dict[str, Any]:
        """Everything the page draws: board, legal moves, history and the latent trajectory."""
        with session.lock:
            board = session.board.copy()
            redo = len(session.redo)
            evals = dict(session.engine_evals)
            opponent = session.opponent.to_json()
        root = board.root()
        replay = root.copy()
        boards = [replay.copy(stack=False)]
        sans: list[str] = []
        for move in board.move_stack:
            sans.append(replay.san(move))
            replay.push(move)
            boards.append(replay.copy(stack=False))
        if len(session.plies) > 4 * MAX_PLIES:  # many imported games: keep memory bounded
            session.plies.clear()
        missing = [b for b in boards if b.fen() not in session.plies]
        if missing:
            embeddings = self.model.embed(missing)  # (M, D)
            scores = self.model.scores_of(embeddings)
            points = self.view.transform(embeddings)
            for b, score, point in zip(missing, scores, points, strict=True):
                session.plies[b.fen()] = {
                    "axis": _round(float(score)),
                    "axis_win_prob": _round(float(self.model.win_probability(float(score)))),
                    "x": _round(float(point[0])),
                    "y": _round(float(point[1])),
                    "referee": _round(self.referee_eval(b)),
                }
        trajectory = []
        for ply, b in enumerate(boards):
            entry = dict(session.plies[b.fen()])
            evaluation = evals.get(b.fen())
            entry.update(
                ply=ply,
                fen=b.fen(),
                san=sans[ply - 1] if ply else None,
                # the opponent's own view of the position it moved from: White's win probability
                # (the plot's dot) and its score, depth and PV (the dot's caption)
                engine=None if evaluation is None else evaluation["win_prob"],
                engine_eval=evaluation,
            )
            trajectory.append(entry)
        outcome = board.outcome(claim_draw=True)
        last = board.move_stack[-1] if board.move_stack else None
        return {
            "id": session.id,
            "fen": board.fen(),
            "start_fen": root.fen(),
            "turn": "white" if board.turn == chess.WHITE else "black",
            "sans": sans,
            "ucis": [m.uci() for m in board.move_stack],
            "first_move_number": root.fullmove_number,
            "first_turn": "white" if root.turn == chess.WHITE else "black",
            "legal": [m.uci() for m in board.legal_moves],
            "check": chess.square_name(board.king(board.turn))
            if board.is_check() and board.king(board.turn) is not None
            else None,
            "last_move": last.uci() if last else None,
            "can_undo": bool(board.move_stack),
            "can_redo": redo > 0,
            "result": outcome.result() if outcome else None,
            "termination": outcome.termination.name.lower().replace("_", " ") if outcome else None,
            "trajectory": trajectory,
            "opponent": opponent,
        }

    # -- engine moves ----------------------------------------------------------------------------

    def engine_move(self, session: Session, generation: int, stop: threading.Event) -> str | None:
        """Let the session's opponent choose a move; push it if the search is still current.

        Returns:
            The move (UCI), or None when the search was cancelled (the position changed).

        Raises:
            RequestError: the game is over, or the engine failed (message from the engine).
        """
        with session.lock:
            board = session.board.copy()
            config = session.opponent
        if board.is_game_over(claim_draw=True):
            raise RequestError("the game is over", status=409)
        limit = chess.engine.Limit(time=min(config.movetime_ms / 1000, self.settings.max_think_s))
        with self._thinking(), session.engine_lock:
            if not session.is_current(generation):
                return None
            try:
                if session.engine is None or session.engine_config != config:
                    if session.engine is not None:
                        session.engine.close()
                        session.engine = None
                    session.engine = build_engine(config, self.model)
                    session.engine_config = config
                engine = session.engine
                # The search a UCI go runs: stoppable, with the engine's score when it has one
                # (an external engine's move is the one it plays, not its PV's first).
                analysis = engine.go(board, limit, GoControl(stop=stop))
                move = analysis.best_move
            except (EngineError, chess.engine.EngineError, OSError, ValueError) as error:
                raise RequestError(f"engine {config.spec_text()!r} failed: {error}", 502) from None
        if move is None or move not in board.legal_moves:
            raise RequestError(f"engine {config.spec_text()!r} returned no legal move", 502)
        evaluation = engine_eval(board, analysis, config.spec_text())
        with session.lock:
            if not session.is_current(generation) or session.board.fen() != board.fen():
                return None
            session.engine_names[board.turn] = config.spec_text()
            if evaluation is not None:
                session.engine_evals[board.fen()] = evaluation
        session.push(move)
        return move.uci()

    # -- analysis --------------------------------------------------------------------------------

    def analyse(
        self,
        session: Session,
        board: chess.Board,
        budget_s: float,
        stop: threading.Event,
        emit: Emit,
    ) -> None:
        """Stream an analysis of ``board``: candidates with axis scores, the latent search
        ply by ply, then Stockfish's alpha-beta score of every move (``emit(event, data)``)."""
        with self._thinking():
            self._analyse(session, board, budget_s, stop, emit)

    def _analyse(
        self,
        session: Session,
        board: chess.Board,
        budget_s: float,
        stop: threading.Event,
        emit: Emit,
    ) -> None:
        started = time.monotonic()
        moves = list(board.legal_moves)
        if not moves:
            emit("done", {"reason": "no legal moves"})
            return
        children = []
        for move in moves:
            child = board.copy(stack=False)
            child.push(move)
            children.append(child)
        scores = self.model.score(children)
        emit(
            "candidates",
            {
                "fen": board.fen(),
                "moves": [
                    {
                        "uci": m.uci(),
                        "san": board.san(m),
                        "axis": _round(float(s)),
                        "win_prob": _round(float(self.model.win_probability(float(s)))),
                    }
                    for m, s in zip(moves, scores, strict=True)
                ],
            },
        )
        self._latent_analysis(session, board, budget_s / 2, stop, emit)
        remaining = budget_s - (time.monotonic() - started) - 0.1  # Stockfish's start and stop
        if not stop.is_set() and remaining > 0.05:
            self._alpha_beta(board, remaining, stop, emit)
        emit("done", {"time_s": round(time.monotonic() - started, 3), "stopped": stop.is_set()})

    def _latent_analysis(
        self,
        session: Session,
        board: chess.Board,
        budget_s: float,
        stop: threading.Event,
        emit: Emit,
    ) -> None:
        from latentchess.engines.latent import LatentEngine

        with session.engine_lock:
            if session.analysis_engine is None:
                # The model's declared search (width, qs, ...), as the engine's spec would give.
                session.analysis_engine = LatentEngine.from_options(
                    self.model,
                    depth=self.settings.analysis_depth,
                    cache_size=200_000,
                    threads=0,
                    name="latent-analysis",
                )
            engine = session.analysis_engine

            def iteration(result: Any) -> None:
                emit("iteration", self._latent_json(engine, board, result))

            result = engine.search(
                board,
                chess.engine.Limit(time=budget_s),
                stop=stop,
                on_iteration=iteration,
                exact_root=True,
            )
        data = self._latent_json(engine, board, result)
        data["moves"] = [
            {"uci": m.move.uci(), "value": _round(m.score), "win_prob": _round(m.win_prob_white)}
            for m in engine.to_analysis(board, result).moves
        ]
        emit("latent", data)

    @staticmethod
    def _latent_json(engine: Any, board: chess.Board, result: Any) -> dict[str, Any]:
        analysis = engine.to_analysis(board, result)
        pv_board = board.copy()
        pv = []
        for move in analysis.pv:
            if move not in pv_board.legal_moves:
                break
            pv.append(pv_board.san(move))
            pv_board.push(move)
        return {
            "depth": analysis.depth,
            "best": analysis.best_move.uci() if analysis.best_move else None,
            "pv": pv,
            "value": _round(result.value),
            "win_prob": _round(analysis.win_prob_white),
            "cp": analysis.score_cp,
            "mate": analysis.mate,
            "nodes": analysis.nodes,
        }

    def _alpha_beta(
        self, board: chess.Board, budget_s: float, stop: threading.Event, emit: Emit
    ) -> None:
        """Stockfish MultiPV over every legal move: the alpha-beta column beside the axis."""
        path = self.settings.stockfish
        if path is None:
            return
        count = board.legal_moves.count()
        with chess.engine.SimpleEngine.popen_uci(str(path)) as engine:
            engine.configure({"Threads": 1, "Hash": 16})
            with engine.analysis(
                board, chess.engine.Limit(time=budget_s, depth=14), multipv=count
            ) as running:
                for _ in running:
                    if stop.is_set():
                        running.stop()
                        break
                infos = list(running.multipv)
        moves = []
        for info in infos:
            pv = info.get("pv") or []
            score = info.get("score")
            if not pv or score is None:
                continue
            white = score.white()  # every column of the table is from White's view
            moves.append(
                {
                    "uci": pv[0].uci(),
                    "cp": white.score(),
                    "mate": white.mate(),
                    "win_prob": _round(score_win_probability(score.white())),
                }
            )
        depth = max((int(i.get("depth", 0)) for i in infos), default=0)
        emit("alphabeta", {"engine": "stockfish", "depth": depth, "moves": moves})

    def close_session(self, session: Session) -> None:
        """Stop and release a session's engines."""
        session.close()
