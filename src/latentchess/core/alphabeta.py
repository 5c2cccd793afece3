"""The native alpha-beta search from Python: limits in python-chess terms, typed results.

:class:`AlphaBeta` owns one native ``SearchEngine`` (its transposition table and evaluator). A
search converts the ``chess.Board`` once (start FEN plus the move stack, so repetitions against
the game's history are exact), releases the GIL while it runs, and streams one
:class:`SearchInfo` per completed iteration to a callback. :class:`StopSignal` is a
``threading.Event`` whose ``set()`` also reaches a running native search at once; with a plain
event the search polls it (about every thousand nodes).

The search's tunable constants (pruning margins, reductions, the aspiration window, time factors:
``core/cpp/search_parameters.h``) are :data:`SEARCH_PARAMETERS`, each with its tuning range and
the step sizes of the OpenBench SPSA recipe; an :class:`AlphaBeta` takes values for any of them
(``parameters``) and every thread of its searches uses them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.engine

from latentchess.core.board import move_to_bits
from latentchess.errors import EngineError

__all__ = [
    "EVALUATORS",
    "PRUNING",
    "SEARCH_PARAMETERS",
    "AlphaBeta",
    "SearchParameter",
    "SearchInfo",
    "SearchLine",
    "SearchOutcome",
    "StopSignal",
    "check_search_parameters",
    "native_position",
    "time_budget_ms",
]

PRUNING = {
    "rfp": "reverse_futility_pruning",
    "lmp": "late_move_pruning",
    "see": "see_pruning",
    "fp": "futility_pruning",
    "se": "singular_extensions",
}
"""Pruning (and the singular extension) that can be switched off to measure it: short name ->
native switch."""

EVALUATORS = ("hce", "pesto")
"""Evaluators built into the core: the hand-crafted evaluation, and its PeSTO tables alone."""


@dataclass(frozen=True, kw_only=True)
class SearchParameter:
    """One tunable constant of the native search, with its tuning range.

    Attributes:
        name: the field of ``SearchParameters`` (search_parameters.h); also the engine spec key
            and the UCI option name of a tunable ``ab`` (``ab:tune=1``).
        default: the value the search was written with (the core's default).
        minimum, maximum: the range an engine accepts and a tuner explores.
        c_end: the SPSA perturbation at the last iteration (OpenBench's ``c_end``; about a
            twentieth of the range, at least 0.5 for an integer).
        r_end: the SPSA learning rate at the last iteration (OpenBench's ``r_end``).
        summary: what it does, in one line.
    """

    name: str
    default: int
    minimum: int
    maximum: int
    c_end: float
    r_end: float = 0.002
    summary: str

    def __post_init__(self) -> None:
        if not self.minimum <= self.default <= self.maximum:
            raise ValueError(f"{self.name}: default {self.default} outside its range")


def _parameter(
    name: str, default: int, minimum: int, maximum: int, c_end: float, summary: str
) -> SearchParameter:
    return SearchParameter(
        name=name, default=default, minimum=minimum, maximum=maximum, c_end=c_end, summary=summary
    )


SEARCH_PARAMETERS: tuple[SearchParameter, ...] = (
    _parameter("reverse_futility_margin", 85, 40, 160, 8, "reverse futility margin per ply"),
    _parameter("reverse_futility_depth", 6, 3, 10, 0.5, "deepest reverse futility pruning"),
    _parameter("reverse_futility_blend", 0, 0, 1, 0.5, "reverse futility returns (eval+beta)/2"),
    _parameter("null_move_base_reduction", 3, 1, 6, 0.5, "null-move reduction, constant part"),
    _parameter("null_move_depth_divisor", 4, 2, 8, 0.5, "null move: a ply more per N plies"),
    _parameter("null_move_eval_divisor", 200, 100, 400, 15, "null move: a ply more per N cp"),
    _parameter("null_move_eval_max_reduction", 3, 1, 6, 0.5, "null move: most plies for eval"),
    _parameter("iir_depth", 6, 2, 12, 0.5, "internal iterative reduction from this depth"),
    _parameter("futility_base", 90, 30, 200, 8, "futility margin, constant part (cp)"),
    _parameter("futility_per_depth", 100, 50, 200, 8, "futility margin per ply (cp)"),
    _parameter("capture_futility_margin", 0, 0, 600, 20, "capture futility margin (0: off)"),
    _parameter("futility_depth", 6, 3, 10, 0.5, "deepest futility and SEE pruning"),
    _parameter("late_move_pruning_base", 3, 0, 10, 0.5, "late-move pruning: base + depth^2"),
    _parameter("see_tactical_per_depth", 100, 40, 200, 8, "SEE pruning of captures, cp per ply"),
    _parameter("see_quiet_per_depth_squared", 25, 5, 60, 3, "SEE pruning of quiets, cp/ply^2"),
    _parameter("lmr_base_percent", 75, 25, 150, 6, "LMR table base (hundredths)"),
    _parameter("lmr_divisor_percent", 225, 150, 350, 12, "LMR table divisor (hundredths)"),
    _parameter("lmr_history_divisor", 10000, 4000, 20000, 800, "LMR: a ply per N of history"),
    _parameter("lmr_root", 1, 0, 1, 0.5, "LMR at the root too (0: off)"),
    _parameter("lmr_table_pv", 0, 0, 3, 0.5, "LMR: plies less on or once on the PV (0: off)"),
    _parameter("lmr_cutoff_count", 0, 0, 2, 0.5, "LMR: plies more if next ply cuts a lot"),
    _parameter("lmr_deeper_margin", 0, 0, 200, 8, "LMR re-search deeper past alpha+N (0: off)"),
    _parameter("futility_lmr_depth", 1, 0, 1, 0.5, "futility margins at the LMR depth (0: off)"),
    _parameter("fail_low_prior_bonus", 1, 0, 1, 0.5, "fail-low rewards the move before (0: off)"),
    _parameter("threat_history", 1, 0, 1, 0.5, "history by threatened squares (0: off)"),
    _parameter("threat_order", 8000, 0, 40000, 1000, "order: per class out of/into attack"),
    _parameter("check_order", 0, 0, 40000, 1000, "order: quiet checks (0: off)"),
    _parameter("continuation_far", 0, 0, 1, 0.5, "histories of moves 4, 6 plies back (0: off)"),
    _parameter("lmr_cut_node", 1, 0, 3, 0.5, "LMR: plies more at expected cut nodes"),
    _parameter("lmr_table_capture", 1, 0, 2, 0.5, "LMR: plies more if table move captures"),
    _parameter("check_extension", 1, 0, 1, 0.5, "plies more for a node in check"),
    _parameter("singular_margin_per_depth", 2, 1, 5, 0.5, "singular bound, cp below per ply"),
    _parameter("singular_min_depth", 7, 4, 10, 0.5, "shallowest singular extension"),
    _parameter("singular_double_margin", 0, 0, 60, 4, "double extension below bound-N cp (0: off)"),
    _parameter("singular_negative_extension", 1, 0, 2, 0.5, "table move's plies less (0: off)"),
    _parameter("probcut_margin", 200, 0, 400, 15, "ProbCut: beta + N cp at depth - 4 (0: off)"),
    _parameter("razoring_margin", 0, 0, 600, 20, "razoring below alpha - N cp/ply (0: off)"),
    _parameter("table_cut_history", 1, 0, 1, 0.5, "table cut-offs reward quiet moves (0: off)"),
    _parameter("eval_history", 0, 0, 100, 4, "history per cp of eval swing (0: off)"),
    _parameter("history_bonus_per_depth_squared", 16, 4, 40, 2, "history bonus per ply^2"),
    _parameter("history_bonus_per_depth", 0, 0, 400, 15, "history bonus per ply (0: off)"),
    _parameter("history_bonus_max", 1600, 400, 4000, 150, "largest history bonus"),
    _parameter("quiescence_delta_margin", 200, 50, 400, 15, "quiescence delta pruning (cp)"),
    _parameter("quiescence_table_eval", 1, 0, 1, 0.5, "stand pat on the table's score (0: off)"),
    _parameter("quiescence_stand_pat_blend", 0, 0, 1, 0.5, "stand pat returns (score+beta)/2"),
    _parameter("capture_history_divisor", 512, 0, 1024, 32, "capture history's divisor (0: off)"),
    _parameter("fifty_move_scaling", 0, 0, 1, 0.5, "evals shrink as the 50-move count runs"),
    _parameter("correction_history_percent", 0, 0, 200, 10, "correction history's share (%)"),
    _parameter("aspiration_delta", 20, 8, 50, 2, "first aspiration half-width (cp)"),
    _parameter("aspiration_fail_high_depth", 0, 0, 1, 0.5, "a root fail high: a ply less (0: off)"),
    _parameter("time_unstable_percent", 150, 100, 250, 8, "time factor, new best move (%)"),
    _parameter("time_score_drop_percent", 140, 100, 250, 8, "time factor, falling score (%)"),
    _parameter("time_score_drop", 30, 10, 80, 4, "fall in score (cp) that asks for time"),
    _parameter("time_moves_to_go", 20, 8, 40, 2, "moves a sudden-death clock is planned over"),
    _parameter("time_iteration_percent", 70, 25, 100, 5, "no new iteration past this % of budget"),
    _parameter("time_node_share_percent", 0, 0, 300, 10, "x (1.5 - best move node share) (0: off)"),
    _parameter("time_opening_percent", 100, 100, 600, 20, "clock share at ply 0 (%, 100: off)"),
    _parameter("time_opening_plies", 60, 10, 120, 5, "ply by which the opening extra fades"),
)
"""The search's tunable constants in ``SearchParameters`` order (core/cpp/search_parameters.h),
with the ranges and SPSA step sizes ``latentchess tune spsa`` uses. The defaults must equal the
core's (a test checks them against ``search_parameter_defaults``)."""

_PARAMETERS_BY_NAME = {parameter.name: parameter for parameter in SEARCH_PARAMETERS}


def check_search_parameters(values: Mapping[str, object]) -> dict[str, int]:
    """``values`` as integers by name, checked against :data:`SEARCH_PARAMETERS`.

    Raises:
        EngineError: an unknown name, a value that is not a whole number, or one outside its
            parameter's range.
    """
    checked: dict[str, int] = {}
    for name, value in values.items():
        parameter = _PARAMETERS_BY_NAME.get(name)
        if parameter is None:
            raise EngineError(
                f"unknown search parameter {name!r}; known: {', '.join(_PARAMETERS_BY_NAME)}"
            )
        try:
            number = int(str(value).strip())
        except ValueError:
            raise EngineError(
                f"search parameter {name!r} needs a whole number, got {value!r}"
            ) from None
        if not parameter.minimum <= number <= parameter.maximum:
            raise EngineError(
                f"search parameter {name!r} must lie in [{parameter.minimum}, "
                f"{parameter.maximum}], got {number}"
            )
        checked[name] = number
    return checked


def _native() -> Any:
    from latentchess.core import _native

    return _native


def native_position(board: chess.Board) -> Any:
    """The core's position for ``board``, with the game's history for repetition draws.

    A Chess960 board (``board.chess960``) gives a Chess960 position: its castling moves, in and
    out, are king-takes-rook (``e1h1``), as python-chess writes them on that board.

    Only the moves since the last capture or pawn move matter for repetitions (no position
    before an irreversible move can recur), so the core replays just those.

    Raises:
        InvalidFenError: when the core refuses the position.
    """
    replay = min(len(board.move_stack), board.halfmove_clock)
    start = board.copy()
    for _ in range(replay):
        start.pop()
    position = _native().Position(start.fen(shredder=board.chess960), board.chess960)
    for move in board.move_stack[len(board.move_stack) - replay :]:
        position.push_uci(move.uci())
    return position


class StopSignal(threading.Event):
    """A ``threading.Event`` that also stops the native search watching it (within 256 nodes)."""

    def __init__(self) -> None:
        super().__init__()
        self.native = _native().StopFlag()

    def set(self) -> None:
        """Stop the search (and wake anyone waiting on the event)."""
        self.native.set()
        super().set()

    def clear(self) -> None:
        """Re-arm the signal."""
        self.native.clear()
        super().clear()


@dataclass(frozen=True, kw_only=True)
class SearchLine:
    """One principal variation.

    Attributes:
        multipv: its rank (1 = best).
        pv: the moves, the root move first.
        score_cp: centipawns from the side to move's view (None for a mate score).
        mate: moves to mate, positive when the side to move mates (None otherwise).
        bound: ``exact``, or ``lower``/``upper`` when the score lies outside the last window.
    """

    multipv: int
    pv: list[chess.Move]
    score_cp: int | None
    mate: int | None
    bound: str = "exact"

    def score(self) -> chess.engine.Score:
        """The score as python-chess's relative :class:`chess.engine.Score`."""
        if self.mate is not None:
            return chess.engine.Mate(self.mate)
        return chess.engine.Cp(self.score_cp or 0)


@dataclass(frozen=True, kw_only=True)
class SearchInfo:
    """What one completed iteration found (a UCI ``info`` line per line of ``lines``).

    Attributes:
        depth: nominal depth in plies.
        seldepth: deepest ply reached.
        nodes: nodes searched so far.
        time_s: seconds since the search started.
        hashfull: permille of the transposition table in use.
        lines: principal variations, best first (MultiPV).
    """

    depth: int
    seldepth: int
    nodes: int
    time_s: float
    hashfull: int
    lines: list[SearchLine] = field(default_factory=list)

    @property
    def nps(self) -> int:
        """Nodes per second."""
        return int(self.nodes / self.time_s) if self.time_s > 0 else 0


@dataclass(frozen=True, kw_only=True)
class SearchOutcome:
    """The result of a search.

    Attributes:
        best_move: the move to play (None when there is no legal move).
        ponder: the expected reply, if the PV has one.
        info: the last completed iteration.
        nodes: all nodes searched, the interrupted last iteration included.
        time_s: wall time of the native search.
        soft_s: the time manager's target for this search (None without a time limit).
        hard_s: the time manager's hard limit (None without a time limit).
    """

    best_move: chess.Move | None
    ponder: chess.Move | None
    info: SearchInfo
    nodes: int
    time_s: float
    soft_s: float | None = None
    hard_s: float | None = None


def _info(raw: dict[str, Any], board: chess.Board) -> SearchInfo:
    lines = []
    for line in raw["lines"]:
        lines.append(
            SearchLine(
                multipv=line["multipv"],
                pv=[chess.Move.from_uci(text) for text in line["pv"]],
                score_cp=line["cp"],
                mate=line["mate"],
                bound=line["bound"],
            )
        )
    return SearchInfo(
        depth=raw["depth"],
        seldepth=raw["seldepth"],
        nodes=raw["nodes"],
        time_s=raw["time_ms"] / 1000.0,
        hashfull=raw["hashfull"],
        lines=lines,
    )


def _limits(
    board_turn: chess.Color, limit: chess.engine.Limit, *, move_overhead_ms: int, spent_s: float
) -> Any:
    """The core's ``SearchLimits`` for python-chess limits (clocks: the side to move's)."""
    limits = _native().SearchLimits()
    limits.move_overhead_ms = max(0, int(move_overhead_ms))
    limits.spent_ms = max(0, int(spent_s * 1000))
    if limit.depth is not None:
        limits.depth = max(1, int(limit.depth))
    if limit.nodes is not None:
        limits.nodes = max(1, int(limit.nodes))
    if limit.mate is not None:
        limits.mate_in = max(1, int(limit.mate))
    if limit.time is not None:
        limits.movetime_ms = max(1, int(limit.time * 1000))
    clock = limit.white_clock if board_turn == chess.WHITE else limit.black_clock
    increment = limit.white_inc if board_turn == chess.WHITE else limit.black_inc
    if clock is not None:
        limits.time_left_ms = max(0, int(clock * 1000))
        limits.increment_ms = max(0, int((increment or 0.0) * 1000))
        limits.moves_to_go = int(limit.remaining_moves or 0)
    return limits


def time_budget_ms(
    limit: chess.engine.Limit,
    board: chess.Board,
    *,
    move_overhead_ms: int = 30,
    parameters: Mapping[str, int] | None = None,
) -> tuple[int, int]:
    """``(soft, hard)`` milliseconds the native time manager gives the move of ``board`` (its
    side to move's clock, its game ply) under ``limit`` (-1: no limit), with the search
    parameters ``parameters`` changes (``time_moves_to_go``, ``time_opening_percent``)."""
    soft, hard = _native().time_budget(
        _limits(board.turn, limit, move_overhead_ms=move_overhead_ms, spent_s=0.0),
        check_search_parameters(parameters or {}),
        board.ply(),
    )
    return int(soft), int(hard)


class AlphaBeta:
    """The native alpha-beta engine: one transposition table and evaluator across searches.

    Args:
        evaluator: one of :data:`EVALUATORS`, ``nnue`` (the shipped network), ``latent`` (the
            shipped sparse latent model) or an NNUE or sparse latent model directory (see
            :func:`latentchess.core.nnue.resolve_evaluator`).
        hash_mb: transposition table size in MB.
        threads: search threads (Lazy SMP over the shared table; 1, the default, is the
            deterministic single-threaded search ``bench`` measures).
        parameters: values of :data:`SEARCH_PARAMETERS` by name (the rest keep their defaults).

    Raises:
        EngineError: a bad hash size, evaluator or parameter.
    """

    def __init__(
        self,
        evaluator: str = "hce",
        *,
        hash_mb: int = 16,
        threads: int = 1,
        parameters: Mapping[str, int] | None = None,
    ) -> None:
        from latentchess.core.nnue import resolve_evaluator

        native_name = resolve_evaluator(evaluator)  # hce, pesto, nnue, latent, a model dir
        if hash_mb < 1:
            raise EngineError(f"hash must be at least 1 MB, got {hash_mb!r}")
        try:
            self._engine = _native().SearchEngine(native_name, hash_mb)
        except ValueError as error:  # a corrupt network file
            raise EngineError(f"evaluator {evaluator!r}: {error}") from error
        self.evaluator = evaluator
        self.threads = threads
        if parameters:
            self.set_parameters(parameters)

    @property
    def threads(self) -> int:
        """Search threads: the caller's thread plus ``threads - 1`` helpers during a search."""
        return int(self._engine.threads)

    @threads.setter
    def threads(self, threads: int) -> None:
        try:
            self._engine.threads = int(threads)
        except ValueError as error:
            raise EngineError(str(error)) from error

    @property
    def parameters(self) -> dict[str, int]:
        """Every search parameter's value in force, by name (:data:`SEARCH_PARAMETERS`)."""
        return {name: int(value) for name, value in self._engine.parameters.items()}

    def set_parameters(self, changes: Mapping[str, object]) -> None:
        """Set the named search parameters for every later search (all threads); the others
        keep their values.

        Raises:
            EngineError: an unknown name or a value outside the parameter's range (nothing
                changes then).
        """
        checked = check_search_parameters(changes)
        try:
            self._engine.parameters = checked
        except ValueError as error:
            raise EngineError(str(error)) from error

    @property
    def hash_mb(self) -> int:
        """Transposition table size in MB."""
        return int(self._engine.hash_megabytes)

    def resize(self, hash_mb: int) -> None:
        """Resize (and clear) the transposition table."""
        if hash_mb < 1:
            raise EngineError(f"hash must be at least 1 MB, got {hash_mb!r}")
        self._engine.set_hash_megabytes(hash_mb)

    def new_game(self) -> None:
        """Forget the previous game (clears the transposition table)."""
        self._engine.new_game()

    def search(
        self,
        board: chess.Board,
        limit: chess.engine.Limit,
        *,
        multipv: int = 1,
        infinite: bool = False,
        move_overhead_ms: int = 30,
        spent_s: float = 0.0,
        stop: threading.Event | None = None,
        on_iteration: Callable[[SearchInfo], None] | None = None,
        search_moves: Sequence[chess.Move] | None = None,
        move_orders: Mapping[int, Sequence[chess.Move]] | None = None,
        disabled_pruning: frozenset[str] = frozenset(),
    ) -> SearchOutcome:
        """Search ``board`` within ``limit`` (depth, nodes, time, clocks, mate).

        Args:
            board: the position; its move stack gives the history for repetition draws.
            limit: python-chess limits; clocks are the side to move's.
            multipv: number of principal variations.
            infinite: search until ``stop`` (depth and nodes limits still apply).
            move_overhead_ms: time kept back from every clock for transmission and set-up.
            spent_s: seconds this move already used before the search began (the hybrid's
                latent proposer): the time manager counts the move's budget from its start, so
                the search gets what is left of the same budget `ab` alone would have.
            stop: ends the search early when set (a :class:`StopSignal` at once, any other
                event within about a thousand nodes).
            on_iteration: called after each completed iteration, on the searching thread.
            search_moves: (hybrid) search only these root moves (UCI ``searchmoves``); ``None``
                or empty: all.
            move_orders: (hybrid) Polyglot key -> that position's moves best first, consulted at
                the first plies: listed quiet moves are tried in this order and reduced by rank.
            disabled_pruning: names of :data:`PRUNING` switched off (for measurements).
        """
        limits = _limits(board.turn, limit, move_overhead_ms=move_overhead_ms, spent_s=spent_s)
        limits.multipv = max(1, int(multipv))
        limits.infinite = bool(infinite)
        for name in disabled_pruning:
            if name not in PRUNING:
                raise EngineError(f"unknown pruning {name!r}; known: {', '.join(PRUNING)}")
            setattr(limits, PRUNING[name], False)
        if search_moves:
            limits.search_moves = [move_to_bits(move) for move in search_moves]
        for key, moves in (move_orders or {}).items():
            limits.set_move_order(int(key), [move_to_bits(move) for move in moves])

        callback = None
        if on_iteration is not None:

            def callback(raw: dict[str, Any]) -> None:
                on_iteration(_info(raw, board))

        flag = stop.native if isinstance(stop, StopSignal) else None
        poll = stop.is_set if stop is not None and flag is None else None
        position = native_position(board)
        raw = self._engine.search(position, limits, on_iteration=callback, stop=flag, poll=poll)
        best = raw["bestmove"]
        ponder = raw["ponder"]
        return SearchOutcome(
            best_move=None if best is None else chess.Move.from_uci(best),
            ponder=None if ponder is None else chess.Move.from_uci(ponder),
            info=_info(raw, board),
            nodes=raw["total_nodes"],
            time_s=raw["total_time_ms"] / 1000.0,
            soft_s=raw["soft_ms"] / 1000.0 if raw["soft_ms"] >= 0 else None,
            hard_s=raw["hard_ms"] / 1000.0 if raw["hard_ms"] >= 0 else None,
        )
