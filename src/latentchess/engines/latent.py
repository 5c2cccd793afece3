"""Our engine: a trained model plus the embedding-guided search, behind the ``Engine`` protocol.

``LatentEngine(model, config).play(board, limit)`` honours python-chess limits: ``depth`` (plies),
``nodes`` (positions embedded), ``time`` (seconds for this move) and clocks (``white_clock``,
``black_clock``, ``white_inc``, ``black_inc``, ``remaining_moves``), whichever come first. The
search cache persists across the moves of a game; :meth:`LatentEngine.new_game` clears it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.engine
import numpy as np
import numpy.typing as npt

from latentchess.batch_keys import tokenize_boards
from latentchess.engines.base import Analysis, MoveScore
from latentchess.errors import EngineError
from latentchess.provenance import note_model
from latentchess.search import (
    MAX_DEPTH,
    RootMove,
    SearchConfig,
    Searcher,
    SearchResult,
    is_mate_value,
    pov_score,
)

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel
    from latentchess.search.policy import PolicyProposer

__all__ = [
    "LatentEngine",
    "search_config_from_options",
    "TimeBudget",
    "time_budget",
    "calibration",
    "calibrated_draw_score",
    "ranked_root_moves",
    "DEFAULT_MOVE_OVERHEAD_S",
]

DEFAULT_MOVE_OVERHEAD_S = 0.05
"""Seconds reserved per move for process and GUI latency (UCI option ``Move Overhead``)."""


@dataclass(frozen=True)
class TimeBudget:
    """Thinking time for one move, in seconds from when the request arrived.

    Attributes:
        soft: start no new iteration after this.
        hard: abort the running iteration so that the move is sent by this.
    """

    soft: float
    hard: float


def time_budget(
    limit: chess.engine.Limit, turn: chess.Color, *, overhead_s: float = DEFAULT_MOVE_OVERHEAD_S
) -> TimeBudget | None:
    """How long to think under ``limit``, or ``None`` when it sets no time.

    A fixed time per move is used whole, minus the overhead, which takes at most a fifth of it
    (at 50 ms per move, the ladder's setting, a 50 ms reserve would leave no time to score a
    single move: the engine would play the first legal move). With a clock the target is an even
    share of what is left (``remaining_moves``, else 30 more moves) plus most of the increment;
    the hard limit is at most three targets and never more than half the clock (85% on the last
    move before a time control), so the engine never loses on time, even when an iteration it
    started takes longer than predicted.
    """
    budgets = []
    if limit.time is not None:
        hard = max(limit.time - min(overhead_s, 0.2 * limit.time), 0.0)
        budgets.append(TimeBudget(hard, hard))
    clock = limit.white_clock if turn == chess.WHITE else limit.black_clock
    if clock is not None:
        increment = (limit.white_inc if turn == chess.WHITE else limit.black_inc) or 0.0
        moves = min(limit.remaining_moves or 30, 50)
        usable = max(clock - overhead_s, 0.0)
        target = usable / moves + 0.75 * increment
        hard = min(3.0 * target, usable * (0.85 if moves == 1 else 0.5))
        budgets.append(TimeBudget(min(target, hard), hard))
    if not budgets:
        return None
    return TimeBudget(min(b.soft for b in budgets), min(b.hard for b in budgets))


def calibration(model: LatentModel) -> Callable[[float], float]:
    """The model's map from axis score to White's win probability, if it is increasing.

    A calibration fitted on a barely trained model can come out decreasing (White's chances
    falling as the position aligns with White's side of the axis); it would invert every
    reported score, so the linear fallback ``(score + 1) / 2`` is used instead, with a warning.
    """

    def fitted(score: float) -> float:
        return float(model.win_probability(score))

    if fitted(1.0) > fitted(-1.0):
        return fitted
    warnings.warn(
        f"model {model!r}: calibration is not increasing in the axis score; using (s + 1) / 2",
        stacklevel=2,
    )
    return lambda score: min(max((score + 1.0) / 2.0, 0.0), 1.0)


def calibrated_draw_score(win_probability: Callable[[float], float]) -> float:
    """The axis score at which White's calibrated win probability is 1/2 (bisection on [-1, 1]).

    Args:
        win_probability: an increasing calibration (see :func:`calibration`); 0 for the linear
            fallback.
    """
    low, high = -1.0, 1.0
    if win_probability(low) >= 0.5:
        return low
    if win_probability(high) <= 0.5:
        return high
    for _ in range(50):
        middle = (low + high) / 2
        if win_probability(middle) < 0.5:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def ranked_root_moves(result: SearchResult, turn: chess.Color) -> list[RootMove]:
    """Root moves best first for the side to move: searched ones by value, then by static score."""
    sign = 1.0 if turn == chess.WHITE else -1.0
    searched = [r for r in result.root_moves if r.value is not None]
    others = [r for r in result.root_moves if r.value is None]
    searched.sort(key=lambda r: -sign * (r.value or 0.0))
    others.sort(key=lambda r: -sign * r.static)
    ranked = searched + others
    # The played move first, even when a bound ties it (alpha-beta proves only "not better").
    if result.move is not None:
        ranked.sort(key=lambda r: r.move != result.move)
    return ranked


_OPTION_TYPES: dict[str, type] = {f.name: type(f.default) for f in dataclasses.fields(SearchConfig)}
_ENGINE_OPTIONS = (
    "precision",
    "device",
    "threads",
    "name",
    "move_overhead",
    "policy",
    "policy_elo",
)


def _coerce(key: str, value: Any, kind: type) -> Any:
    """Convert an option given as text (engine specs, UCI) to the config field's type."""
    if not isinstance(value, str) or kind is str:
        return value
    text = value.strip()
    try:
        if kind is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        return kind(text)
    except ValueError:
        raise EngineError(f"option {key}={value!r} is not a valid {kind.__name__}") from None


def search_config_from_options(
    options: dict[str, Any], base: SearchConfig | None = None
) -> SearchConfig:
    """``base`` (default: ``SearchConfig()``) with the :class:`SearchConfig` fields among loosely
    typed ``options`` (strings from specs and command lines) replaced; other keys are ignored.

    Raises:
        EngineError: a value of the wrong type or out of range.
    """
    fields = {
        key: _coerce(key, value, _OPTION_TYPES[key])
        for key, value in options.items()
        if key in _OPTION_TYPES
    }
    try:
        return dataclasses.replace(base or SearchConfig(), **fields)
    except ValueError as error:
        raise EngineError(f"bad latent engine options {options!r}: {error}") from error


class LatentEngine:
    """A :class:`~latentchess.models.inference.LatentModel` searching with :class:`Searcher`.

    Args:
        model: the loaded model.
        config: search settings; ``draw_score`` is replaced by the model's calibrated draw score
            unless ``draw_score`` is given here.
        name: engine name in PGNs and reports.
        move_overhead_s: seconds reserved per move for communication latency.
        draw_score: override for the axis score of a draw.
    """

    def __init__(
        self,
        model: LatentModel,
        config: SearchConfig | None = None,
        *,
        name: str | None = None,
        move_overhead_s: float = DEFAULT_MOVE_OVERHEAD_S,
        draw_score: float | None = None,
    ) -> None:
        config = config or SearchConfig()
        self._calibration = calibration(model)
        score = calibrated_draw_score(self._calibration) if draw_score is None else draw_score
        self.config = dataclasses.replace(config, draw_score=score)
        self.model = model
        note_model(model.provenance())  # for the results of the command that built it
        self.name = name or f"latent-{config.mode}-d{config.depth}-w{config.width}"
        self.move_overhead_s = move_overhead_s
        self.searcher = Searcher(self.score_boards, self.config)
        self.policy: PolicyProposer | None = None

    @classmethod
    def from_options(
        cls, model: str | Path | LatentModel | None = None, **options: Any
    ) -> LatentEngine:
        """Build an engine from loosely typed options (engine specs, command lines).

        Args:
            model: a model directory, a loaded model, or ``None`` for the default model.
            **options: :class:`SearchConfig` fields (``mode``, ``depth``, ``width``,
                ``cache_size``, ``alpha_beta``, ``frontier_batch``, ``leaf_chunk``,
                ``draw_score``) and
                ``precision``, ``device``, ``threads`` (torch CPU threads, process-wide),
                ``name``, ``move_overhead`` (seconds), ``policy`` (``human`` or a Chessformer
                model directory: its policy picks and orders the root moves the search expands,
                :mod:`latentchess.search.policy`) and ``policy_elo``; values may be strings.

        Raises:
            EngineError: an unknown option or a value of the wrong type.
            ModelFileError: the model cannot be loaded.
        """
        unknown = set(options) - set(_OPTION_TYPES) - set(_ENGINE_OPTIONS)
        if unknown:
            raise EngineError(
                f"unknown latent engine options {sorted(unknown)!r}; "
                f"known: {sorted([*_OPTION_TYPES, *_ENGINE_OPTIONS])!r}"
            )
        draw = options.get("draw_score")
        if draw is not None:
            draw = _coerce("draw_score", draw, float)
        config = search_config_from_options(
            {key: value for key, value in options.items() if key != "draw_score"}
        )
        threads = _coerce("threads", options.get("threads", 0), int)
        if threads:
            import torch

            torch.set_num_threads(threads)
        if model is None or isinstance(model, str | Path):
            from latentchess.models.io import load_model

            model = load_model(
                model,
                device=options.get("device"),
                precision=str(options.get("precision", "auto")),
                threads=threads or None,
            )
        overhead = _coerce(
            "move_overhead", options.get("move_overhead", DEFAULT_MOVE_OVERHEAD_S), float
        )
        engine = cls(
            model, config, name=options.get("name"), move_overhead_s=overhead, draw_score=draw
        )
        if options.get("policy") is not None:
            from latentchess.search.policy import load_policy

            raw = options.get("policy_elo")
            elo = None if raw is None else _coerce("policy_elo", raw, float)
            engine.set_policy(load_policy(str(options["policy"]), elo=elo))
        return engine

    def set_policy(self, policy: PolicyProposer | None) -> None:
        """Let ``policy`` pick and order the root moves the search expands (None: the scores)."""
        self.policy = policy
        self.searcher.root_policy = None if policy is None else policy.order

    # -- scoring ---------------------------------------------------------------------------------

    def score_boards(self, boards: Sequence[chess.Board]) -> npt.NDArray[np.float32]:
        """Axis scores of boards, White's view (the search's scorer)."""
        return self.model.score_tokens(tokenize_boards(boards))

    def win_probability(self, value: float) -> float:
        """White's win probability for a search value (mates are certain)."""
        if is_mate_value(value):
            return 1.0 if value > 0 else 0.0
        return self._calibration(value)

    def pov_score(self, value: float, turn: chess.Color) -> chess.engine.PovScore:
        """A search value as a python-chess score from ``turn``'s view (cp or mate)."""
        return pov_score(value, turn, self.win_probability)

    # -- the Engine protocol ---------------------------------------------------------------------

    def search(
        self,
        board: chess.Board,
        limit: chess.engine.Limit | None = None,
        *,
        stop: threading.Event | None = None,
        on_iteration: Callable[[SearchResult], None] | None = None,
        infinite: bool = False,
        exact_root: bool = False,
        started: float | None = None,
    ) -> SearchResult:
        """Search ``board`` under ``limit`` (default: the configured depth).

        Args:
            board: the position, with its move stack as game history.
            limit: depth, nodes, time and/or clock limits.
            stop: set from another thread to stop (the last completed iteration's move stands).
            on_iteration: called with each completed iteration.
            infinite: deepen until ``stop`` (or ``limit.depth``) instead of the configured depth.
            exact_root: exact values for every expanded root move (analysis).
            started: ``time.monotonic()`` when the request arrived (time limits count from it).
        """
        limit = limit or chess.engine.Limit()
        started = time.monotonic() if started is None else started
        depth = limit.depth or (MAX_DEPTH if infinite else self.config.depth)
        depth = max(1, min(depth, MAX_DEPTH))
        budget = time_budget(limit, board.turn, overhead_s=self.move_overhead_s)
        deadline = soft = None
        if budget is not None and not infinite:
            deadline, soft = started + budget.hard, started + budget.soft
            if board.legal_moves.count() == 1:
                depth = 1  # nothing to choose: answer at once and keep the clock
        return self.searcher.search(
            board,
            depth=depth,
            deadline=deadline,
            soft_deadline=soft,
            stop=stop,
            max_nodes=limit.nodes,
            on_iteration=on_iteration,
            exact_root=exact_root,
        )

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """The move to play in ``board`` within ``limit``.

        Raises:
            EngineError: ``board`` has no legal move.
        """
        result = self.search(board, limit)
        if result.move is None:
            raise EngineError(f"no legal move to play in {board.fen()!r}")
        return result.move

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """Search ``board`` and report the best line and every root move's score."""
        result = self.search(board, limit, exact_root=True)
        return self.to_analysis(board, result)

    def to_analysis(self, board: chess.Board, result: SearchResult) -> Analysis:
        """Convert a search result on ``board`` to the protocol's :class:`Analysis`."""
        score = self.pov_score(result.value, board.turn).relative
        moves = [
            MoveScore(
                move=root.move,
                score=root.static if root.value is None else root.value,
                rank=rank,
                win_prob_white=self.win_probability(
                    root.static if root.value is None else root.value
                ),
            )
            for rank, root in enumerate(ranked_root_moves(result, board.turn), 1)
        ]
        return Analysis(
            best_move=result.move,
            pv=list(result.pv),
            score_cp=score.score(),
            mate=score.mate(),
            win_prob_white=self.win_probability(result.value),
            depth=result.depth,
            nodes=result.nodes,
            time_s=result.time_s,
            moves=moves,
        )

    def new_game(self) -> None:
        """Forget history-dependent state and cached scores before a new game."""
        self.searcher.new_game()
        if self.policy is not None:
            self.policy.new_game()

    def close(self) -> None:
        """Release the cache; the model stays usable by others holding it."""
        self.searcher.cache.clear()

    def __repr__(self) -> str:
        return f"LatentEngine(name={self.name!r}, config={self.config!r})"
