"""Search settings, results and the scale of search values (axis scores and mates)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import chess
import chess.engine

from latentchess.winprob import centipawns

if TYPE_CHECKING:  # NumPy is not needed to name the type (nor by `latentchess uci`'s parsers)
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "MATE_VALUE",
    "MODES",
    "MAX_DEPTH",
    "Scorer",
    "SearchConfig",
    "SearchResult",
    "RootMove",
    "is_mate_value",
    "mate_in",
    "pov_score",
]

MATE_VALUE = 100.0
"""A checkmate ``p`` plies from the root is worth ``+-(MATE_VALUE - p)`` (White's view)."""
MODES = ("minimax", "beam")
MAX_DEPTH = 64
"""Deepest iteration the iterative-deepening driver starts (``go infinite``)."""

Scorer = Callable[[Sequence[chess.Board]], "npt.NDArray[np.floating]"]
"""Boards -> ``(N,)`` axis scores in [-1, 1] from White's view (a model, or a fake in tests)."""


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    """How the search runs.

    Attributes:
        mode: ``"minimax"`` (top-k pruned minimax, default) or ``"beam"`` (level-wise beam).
        depth: plies searched when no other limit is given (the paper's best: 6).
        width: children expanded per node (minimax) or positions kept per level (beam): k.
        cache_size: positions whose scores the LRU embedding cache keeps (about 220 bytes each).
        alpha_beta: cut off among expanded children (same move and value; fewer embeddings).
        frontier_batch: score the grandchildren of all expanded children of a node two plies
            above the horizon in one batch (minimax; bigger batches for accelerators, a few more
            positions). Not with ``leaf_chunk``.
        leaf_chunk: with alpha-beta, a node one ply above the horizon scores its likeliest
            refutations first in a batch of this size and the rest only if no cutoff came
            (fewer positions, smaller batches: best on CPU); 0 scores whole sibling sets.
        draw_score: axis score of a drawn position (the cosine where White's calibrated win
            probability is 1/2; 0 without a calibration).
        qs: resolve captures at the horizon (an addition to the paper's search, native core
            only): each leaf is worth a quiescence search on the axis score (stand pat, then
            captures and queen promotions that do not lose material by SEE; every evasion in
            check; 16 plies at most), and top-k never cuts a move that wins material by SEE.
        revise: re-search an iteration whose value fails low (falls by more than 0.05 below the
            previous iteration's, the mover's view) with twice the width at the root and at
            ply 1 (an addition to the paper's search, native core only).
        partial: use the time given (native core only): from depth 2 the root searches the last
            iteration's best move first, an iteration stopped by the clock or a node limit keeps
            the root moves it finished (the best of them is played; ``partial`` in the result),
            and an iteration not predicted to finish by the hard deadline still starts while the
            soft deadline has not passed, and stops at it. Without it such an iteration is not
            started and a stopped one is discarded (the paper's search), which ends searches
            under a fixed time per move after a third of it.
        reduce: late-move reductions (native core only): with 3 or more plies left, an expanded
            quiet move after the first two that gives no check is searched a ply shallower
            first, and at full depth only if that value would be the node's new best.
        ``qs``, ``revise``, ``partial`` and ``reduce`` are minimax-only and the Python search
        (the paper's, kept as the reference) does not implement them; off, the native search is
        the paper's exactly.
        eval: what scores the positions: ``"latent"`` (the model's axis: the latent planner) or
            an alpha-beta evaluator (``nnue``, ``hce``, ``pesto`` or an NNUE directory) whose
            centipawns a WDL model maps to White's W - L (native core only). Not a latent planner
            then: the instrument that holds the search fixed and swaps the evaluation.
    """

    mode: str = "minimax"
    depth: int = 6
    width: int = 3
    cache_size: int = 1_000_000
    alpha_beta: bool = True
    frontier_batch: bool = False
    leaf_chunk: int = 8
    draw_score: float = 0.0
    qs: bool = False
    revise: bool = False
    partial: bool = False
    reduce: bool = False
    eval: str = "latent"

    def __post_init__(self) -> None:
        if not isinstance(self.eval, str) or not self.eval.strip():
            raise ValueError(f"SearchConfig.eval must be a non-empty name, got {self.eval!r}")
        if self.mode not in MODES:
            raise ValueError(f"unknown search mode {self.mode!r}; choose from {list(MODES)}")
        for name in ("depth", "width", "cache_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"SearchConfig.{name} must be a positive int, got {value!r}")
        if not isinstance(self.leaf_chunk, int) or self.leaf_chunk < 0:
            raise ValueError(
                f"SearchConfig.leaf_chunk must be an int >= 0, got {self.leaf_chunk!r}"
            )
        if self.frontier_batch and self.leaf_chunk:
            raise ValueError(
                "SearchConfig.frontier_batch needs leaf_chunk=0 (they exclude each other)"
            )
        if self.depth > MAX_DEPTH:
            raise ValueError(f"SearchConfig.depth must be at most {MAX_DEPTH}, got {self.depth}")
        if not -1.0 <= self.draw_score <= 1.0:
            raise ValueError(
                f"SearchConfig.draw_score must lie in [-1, 1], got {self.draw_score!r}"
            )


@dataclass(frozen=True, kw_only=True)
class RootMove:
    """One legal root move as the search saw it.

    Attributes:
        move: the move.
        static: score of the position after the move (its axis projection, or the exact value of
            a terminal position), White's view.
        value: backed-up value if the move was expanded, else ``None``.
        exact: whether ``value`` is exact; alpha-beta proves only a bound for moves that cannot
            beat the best one (an upper bound when White moves, a lower bound when Black moves).
    """

    move: chess.Move
    static: float
    value: float | None = None
    exact: bool = False


@dataclass(kw_only=True)
class SearchResult:
    """Outcome of a search.

    Attributes:
        move: the move to play; ``None`` only when the root has no legal move.
        value: backed-up value of ``move``, White's view (axis scale; mates ``+-(MATE_VALUE -
            plies)``). Without legal moves: the root's own terminal value.
        pv: principal variation, starting with ``move``.
        depth: last completed depth (plies), or the depth of a stopped iteration whose finished
            root moves were kept (``partial``).
        mode: search mode.
        nodes: positions embedded (sent to the scorer), all iterations together.
        cache_hits: positions whose score came from the cache.
        time_s: wall time.
        completed: whether the requested depth was completed (False when stopped early).
        partial: whether the last iteration was stopped and its finished root moves kept
            (:attr:`SearchConfig.partial`).
        root_moves: every legal root move, in the order the last iteration ranked them.
        scorer_time_s: part of ``time_s`` spent inside the scorer.
        scorer_calls: number of scorer batches.
    """

    move: chess.Move | None
    value: float
    pv: list[chess.Move] = field(default_factory=list)
    depth: int = 0
    mode: str = "minimax"
    nodes: int = 0
    cache_hits: int = 0
    time_s: float = 0.0
    completed: bool = True
    partial: bool = False
    root_moves: list[RootMove] = field(default_factory=list)
    scorer_time_s: float = 0.0
    scorer_calls: int = 0

    @property
    def cache_hit_rate(self) -> float:
        """Share of score lookups answered by the cache."""
        total = self.nodes + self.cache_hits
        return self.cache_hits / total if total else 0.0

    @property
    def nps(self) -> float:
        """Positions embedded per second."""
        return self.nodes / self.time_s if self.time_s > 0 else 0.0


def is_mate_value(value: float) -> bool:
    """Whether a search value is a forced checkmate rather than an axis score."""
    return abs(value) > MATE_VALUE / 2


def mate_in(value: float, turn: chess.Color) -> int | None:
    """Moves to mate from the view of the side to move (UCI ``score mate``), or ``None``.

    Positive: the side to move mates in that many of its moves; negative: it is mated after that
    many of its moves; ``0``: it is checkmated now.
    """
    if not is_mate_value(value):
        return None
    plies = round(MATE_VALUE - abs(value))
    white_mates = value > 0
    if white_mates == (turn == chess.WHITE):
        return (plies + 1) // 2
    return -(plies // 2)


def pov_score(
    value: float, turn: chess.Color, win_probability: Callable[[float], float]
) -> chess.engine.PovScore:
    """A search value as a python-chess score from the side to move's view.

    Axis scores go through the model's calibration (axis score -> White win probability) and
    :func:`latentchess.winprob.centipawns`, clipped to +-10000 cp, so that UCI ``score cp`` means
    what it means for other engines; forced mates become ``Mate(n)``.
    """
    mate = mate_in(value, turn)
    if mate is not None:
        return chess.engine.PovScore(chess.engine.Mate(mate), turn)
    p_white = min(max(float(win_probability(value)), 0.0), 1.0)
    cp = centipawns(p_white)
    cp_white = round(min(max(cp, -10000.0), 10000.0))
    return chess.engine.PovScore(chess.engine.Cp(cp_white if turn else -cp_white), turn)
