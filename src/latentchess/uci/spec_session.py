"""The UCI session for any engine named by a spec (``latentchess uci --engine SPEC``).

The conversation (parsing, positions, ``go``/``stop``/``ponderhit``, one ``bestmove`` per
``go``, refusals as ``info string``) is :class:`~latentchess.uci.session.UciSession`'s; this
subclass only swaps the engine hooks: its options are ``Hash``, ``Threads``, ``MultiPV``,
``Move Overhead`` and ``Clear Hash``, plus ``EvalFile`` for ``ab`` and the options an engine
declares itself (``hybrid``: ``HybridMode``, ``HybridK``; ``chessformer``: ``Elo``, ``SelfElo``,
``OppoElo``, ``Temperature``, ``TopP``, ``CfMode``), and its search is the engine's. Engines
with a streaming ``search`` (the ``ab`` engine) send one ``info`` line per iteration and MultiPV
line and stop at once on ``stop``; any other :class:`~latentchess.engines.base.Engine` is asked
``analyse`` and reported once (an infinite search of such an engine runs to its own depth and
then waits).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import chess
import chess.engine

from latentchess.engines.base import Engine
from latentchess.errors import LatentChessError
from latentchess.uci.protocol import SetOption, go_limit
from latentchess.uci.session import UciSession, _Search

__all__ = ["SpecSession", "format_search_info"]

_FALLBACK_INFINITE_DEPTH = 6
"""Depth an engine without a stoppable search is given for ``go infinite``."""


def format_search_info(info: Any, line: Any) -> str:
    """An ``info`` line for one principal variation of one iteration (a native search)."""
    score = f"mate {line.mate}" if line.mate is not None else f"cp {line.score_cp}"
    if line.bound == "lower":
        score += " lowerbound"
    elif line.bound == "upper":
        score += " upperbound"
    pv = " ".join(move.uci() for move in line.pv)
    return (
        f"info depth {info.depth} seldepth {info.seldepth} multipv {line.multipv} score {score} "
        f"nodes {info.nodes} nps {info.nps} hashfull {info.hashfull} "
        f"time {int(info.time_s * 1000)} pv {pv}"
    )


class SpecSession(UciSession):
    """A UCI conversation around one engine built from a spec.

    Args:
        write: receives each output line.
        engine: the engine (the session closes it at the end).
        name: the ``id name`` it reports.
    """

    def __init__(self, write: Callable[[str], None], *, engine: Engine, name: str) -> None:
        super().__init__(write, model="-")
        self._spec_engine = engine
        self._name = name
        self.hash_mb = int(getattr(getattr(engine, "config", None), "hash_mb", 16))
        self.multipv = 1
        self.move_overhead_ms = 30
        self.options.move_overhead_ms = self.move_overhead_ms

    # -- hooks --------------------------------------------------------------------------------

    def _uci(self) -> None:
        self.write(f"id name {self._name}")
        self.write("id author the latentchess authors")
        for line in (*self.leading_options, *self._option_lines()):
            self.write(line)
        self.write("uciok")

    def _option_lines(self) -> list[str]:
        return [
            f"option name Hash type spin default {self.hash_mb} min 1 max 65536",
            "option name Threads type spin default 1 min 1 max 1",
            "option name MultiPV type spin default 1 min 1 max 256",
            f"option name Move Overhead type spin default {self.move_overhead_ms} min 0 max 10000",
            "option name Clear Hash type button",
            # Engines may declare their own options (the hybrid engine: its mode and k).
            *getattr(self._spec_engine, "uci_option_lines", list)(),
        ] + (
            [f"option name EvalFile type string default {self._spec_engine.config.evaluator}"]
            if hasattr(self._spec_engine, "set_evaluator")
            else []
        )

    def start_loading(self) -> None:
        """Nothing to load: the engine was built with the session."""

    def wait_ready(self) -> Any:
        return self._spec_engine

    def _new_game(self) -> None:
        new_game = getattr(self._spec_engine, "new_game", None)
        if new_game is not None:
            new_game()

    def _setoption(self, command: SetOption) -> None:
        name, value = command.name.strip().lower(), (command.value or "").strip()
        spins = {
            "hash": ("hash_mb", 1, 65536),
            "threads": ("threads", 1, 1),
            "multipv": ("multipv", 1, 256),
            "move overhead": ("move_overhead_ms", 0, 10000),
        }
        if name == "clear hash":
            self._new_game()
            return
        if name == "evalfile" and hasattr(self._spec_engine, "set_evaluator"):
            try:  # nnue, hce, pesto or an NNUE model directory
                self._spec_engine.set_evaluator(value)
            except LatentChessError as error:
                self.info(f"EvalFile {value!r} refused: {error}")
            return
        if name in ("ponder", "uci_showwdl", "uci_analysemode"):
            return  # GUIs set these unasked; nothing to do
        engine_option = getattr(self._spec_engine, "set_uci_option", None)
        if name not in spins and engine_option is not None:
            try:
                if engine_option(command.name.strip(), value):
                    return
            except LatentChessError as error:
                self.info(str(error))
                return
        if name not in spins:
            self.info(f"unknown option {command.name!r}")
            return
        attribute, low, high = spins[name]
        try:
            number = int(value)
        except ValueError:
            self.info(f"option {command.name!r} needs an integer, got {value!r}")
            return
        if not low <= number <= high:
            self.info(f"option {command.name!r} must lie in [{low}, {high}], got {number}")
            return
        if attribute == "hash_mb":
            set_hash = getattr(self._spec_engine, "set_hash", None)
            if set_hash is None:
                self.info(f"{self._name} has no hash table; 'Hash' ignored")
                return
            set_hash(number)
        if attribute != "threads":
            setattr(self, attribute, number)
        self.options.move_overhead_ms = self.move_overhead_ms

    def _new_stop_event(self) -> threading.Event:
        if hasattr(self._spec_engine, "search") and hasattr(self._spec_engine, "set_hash"):
            from latentchess.core.alphabeta import StopSignal

            return StopSignal()  # reaches the native search at once
        return threading.Event()

    def _supports_searchmoves(self) -> bool:
        from latentchess.engines.ab import AlphaBetaEngine

        return isinstance(self._spec_engine, AlphaBetaEngine)

    def _root_restriction(self, search: _Search) -> dict[str, list[chess.Move]]:
        """``search_moves=`` for ``go searchmoves``: its legal moves (others named and dropped)."""
        if not search.go.searchmoves or not self._supports_searchmoves():
            return {}
        board = search.board
        moves: list[chess.Move] = []
        for text in search.go.searchmoves:
            try:
                move = chess.Move.from_uci(text)
            except ValueError:
                move = None
            if move is None or move not in board.legal_moves:
                self.info(f"searchmoves: {text!r} is not a legal move here; ignored")
            elif move not in moves:
                moves.append(move)
        if not moves:
            self.info("searchmoves: no legal move given; searching all moves")
            return {}
        return {"search_moves": moves}

    def _search_with(
        self,
        engine: Any,
        search: _Search,
        limit: chess.engine.Limit,
        infinite: bool,
        received: float,
        on_iteration: Callable[[], None],
    ) -> tuple[chess.Move | None, chess.Move | None]:
        board = search.board
        if search.go.mate is not None:
            limit = chess.engine.Limit(
                time=limit.time,
                depth=limit.depth,
                nodes=limit.nodes,
                mate=search.go.mate,
                white_clock=limit.white_clock,
                black_clock=limit.black_clock,
                white_inc=limit.white_inc,
                black_inc=limit.black_inc,
                remaining_moves=limit.remaining_moves,
            )
        if hasattr(engine, "set_hash"):  # the native alpha-beta engine: streaming and stoppable

            def iteration(info: Any) -> None:
                for line in info.lines:
                    self.write(format_search_info(info, line))
                on_iteration()

            outcome = engine.search(
                board,
                limit,
                multipv=self.multipv,
                infinite=infinite,
                stop=search.stop,
                started=received,
                move_overhead_ms=self.move_overhead_ms,
                on_iteration=iteration,
                **self._root_restriction(search),
            )
            return outcome.best_move, outcome.ponder
        if infinite and limit.depth is None and limit.nodes is None:
            limit = chess.engine.Limit(depth=_FALLBACK_INFINITE_DEPTH)
        analysis = engine.analyse(board, limit)
        score = ""
        if analysis.mate is not None:
            score = f" score mate {analysis.mate}"
        elif analysis.score_cp is not None:
            score = f" score cp {analysis.score_cp}"
        if analysis.wdl is not None:  # engines with a win/draw/loss head (the Chessformer)
            score += " wdl {} {} {}".format(*analysis.wdl)
        pv = " ".join(move.uci() for move in analysis.pv)
        self.write(
            f"info depth {analysis.depth}{score} nodes {analysis.nodes} "
            f"time {int(analysis.time_s * 1000)}" + (f" pv {pv}" if pv else "")
        )
        info_string = getattr(engine, "info_string", None)
        if info_string is not None:
            self.info(info_string())
        ponder = analysis.pv[1] if len(analysis.pv) > 1 else None
        return analysis.best_move, ponder

    def _time_budget(self, search: _Search) -> tuple[float, float] | None:
        limit = go_limit(search.go)
        turn = search.board.turn
        clock = limit.white_clock if turn == chess.WHITE else limit.black_clock
        increment = (limit.white_inc if turn == chess.WHITE else limit.black_inc) or 0.0
        overhead = self.move_overhead_ms / 1000.0
        if limit.time is not None:
            hard = max(0.001, limit.time - overhead)
            return hard, hard
        if clock is None:
            return None
        usable = max(0.001, clock - overhead)
        moves = min(limit.remaining_moves or 25, 50)
        soft = min(usable / moves + 0.75 * increment, 0.8 * usable)
        hard = min(4 * soft, usable / 3 + 0.75 * increment)
        return soft, max(soft, hard)

    def close(self) -> None:
        """Stop any search (sending its ``bestmove``) and close the engine."""
        super().close()
        self._spec_engine.close()
