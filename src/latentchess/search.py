"""Embedding-guided search (paper section 3.4): choose moves by alignment with the advantage axis.

The static score of a position is the cosine of its embedding with the advantage axis, from
White's view (+1 White wins, -1 Black wins). White prefers high scores and Black low ones, whatever
the side to move at the root. Two modes:

``minimax`` (default; what the SOLIS reference code actually does)
    Depth-limited minimax. Every node scores all its legal children in one batch, expands only the
    ``width`` best of them for the side to move, and backs values up; the root plays the move with
    the best backed-up value. Alpha-beta cutoffs among the expanded children (searched best-first)
    return the same move and value as the plain pruned minimax (``alpha_beta=False``) while
    embedding far fewer positions. With ``frontier_batch`` a node two plies above the horizon
    scores the children of all its expanded children in one batch (bigger forward passes, at the
    price of a few positions a cutoff would have spared).

``beam`` (the paper's literal description, kept for the ablation)
    Level by level: score the children of every kept position in one batch and keep the ``width``
    best overall for the side to move at that level; play the root move whose line reached the best
    final score. Global top-k lets the opponent's best replies come from our worst moves, which is
    why it is not the default.

Game-theoretic terminals are exact and never embedded: a checkmate scores ``+-(MATE_VALUE - ply)``
(faster mates preferred, slower defeats preferred), and stalemate, insufficient material, the
50-move rule and threefold repetition (counting the game's history before the root) score
``SearchConfig.draw_score`` (the axis score of a draw, 0 unless the caller calibrates it), never
a win for either side. Terminal children take part in every node's top-k like any other child, so a
mate among a node's children is always found even when the static scores would prune it.

Static scores are kept in an :class:`EmbeddingCache` keyed by the Polyglot Zobrist hash, which
covers pieces, castling rights, the en-passant file and the side to move but not the halfmove
clock or the move number: a position reached with other clocks reuses the score of the first
encounter (the tokens include the clocks, so a fresh embedding could differ slightly).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import chess
import chess.engine
import numpy as np
import numpy.typing as npt

from latentchess.fastboard import zobrist_hashes
from latentchess.winprob import centipawns

__all__ = [
    "MATE_VALUE",
    "MODES",
    "Scorer",
    "SearchConfig",
    "SearchResult",
    "RootMove",
    "EmbeddingCache",
    "Searcher",
    "is_mate_value",
    "mate_in",
    "pov_score",
]

MATE_VALUE = 100.0
"""A checkmate ``p`` plies from the root is worth ``+-(MATE_VALUE - p)`` (White's view)."""
MODES = ("minimax", "beam")
MAX_DEPTH = 64
"""Deepest iteration the iterative-deepening driver starts (``go infinite``)."""

Scorer = Callable[[Sequence[chess.Board]], npt.NDArray[np.floating]]
"""Boards -> ``(N,)`` axis scores in [-1, 1] from White's view (a model, or a fake in tests)."""

# Terminal status of a position, cached with its score.
_NORMAL, _MATED, _DRAWN = 0, 1, 2


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    """How the search runs.

    Attributes:
        mode: ``"minimax"`` (top-k pruned minimax, default) or ``"beam"`` (level-wise beam).
        depth: plies searched when no other limit is given (the paper's best: 6).
        width: children expanded per node (minimax) or positions kept per level (beam): k.
        cache_size: positions whose scores the LRU embedding cache keeps (about 150 bytes each).
        alpha_beta: cut off among expanded children (same move and value; fewer embeddings).
        frontier_batch: score the grandchildren of all expanded children of a node two plies
            above the horizon in one batch (minimax; bigger batches for accelerators, a few more
            positions). Not with ``leaf_chunk``.
        leaf_chunk: with alpha-beta, a node one ply above the horizon scores its likeliest
            refutations first in a batch of this size and the rest only if no cutoff came
            (fewer positions, smaller batches: best on CPU); 0 scores whole sibling sets.
        draw_score: axis score of a drawn position (the cosine where White's calibrated win
            probability is 1/2; 0 without a calibration).
    """

    mode: str = "minimax"
    depth: int = 6
    width: int = 3
    cache_size: int = 1_000_000
    alpha_beta: bool = True
    frontier_batch: bool = False
    leaf_chunk: int = 8
    draw_score: float = 0.0

    def __post_init__(self) -> None:
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
        depth: last completed depth (plies).
        mode: search mode.
        nodes: positions embedded (sent to the scorer), all iterations together.
        cache_hits: positions whose score came from the cache.
        time_s: wall time.
        completed: whether the requested depth was completed (False when stopped early).
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


class EmbeddingCache:
    """Bounded LRU map from a position's Zobrist hash to its axis score and terminal status.

    It stores what the search needs from an embedding (its projection on the axis, one float)
    rather than the vector, so a million positions fit in ~150 MB. It survives across the moves of
    a game; hits and misses are counted over its lifetime.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"cache capacity must be positive, got {capacity!r}")
        self.capacity = capacity
        self._entries: OrderedDict[int, tuple[float, int]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: int) -> tuple[float, int] | None:
        """``(score, status)`` for ``key``, or ``None``; a hit becomes most recently used."""
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def put(self, key: int, score: float, status: int = _NORMAL) -> None:
        """Store an entry, evicting the least recently used one when full."""
        self._entries[key] = (score, status)
        self._entries.move_to_end(key)
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry and reset the counters."""
        self._entries.clear()
        self.hits = self.misses = 0

    @property
    def hit_rate(self) -> float:
        """Lifetime share of lookups that hit."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


_Parent = tuple[chess.Board, int, tuple[int, ...]]
"""A position to expand: the board, its ply from the root, the hashes of the path to it."""


class _AbortedError(Exception):
    """Raised inside an iteration when the stop flag, deadline or node limit is hit."""


class _Child:
    """A generated child position: the move, the board after it, its hash and value."""

    __slots__ = ("board", "key", "move", "terminal", "value")

    def __init__(self, move: chess.Move, board: chess.Board) -> None:
        self.move = move
        self.board = board
        self.key = 0
        self.value = 0.0
        self.terminal = False


class _Run:
    """State of one fixed-depth search of one root position."""

    def __init__(
        self,
        searcher: Searcher,
        history: dict[int, int],
        *,
        abortable: bool,
        deadline: float | None,
        stop: threading.Event | None,
        max_nodes: int | None,
        nodes_before: int,
    ) -> None:
        self.searcher = searcher
        self.config = searcher.config
        self.history = history
        self.abortable = abortable
        self.deadline = deadline
        self.stop = stop
        self.max_nodes = max_nodes
        self.nodes_before = nodes_before
        self.nodes = 0
        self.cache_hits = 0
        self.scorer_time = 0.0
        self.scorer_calls = 0
        # Children expanded ahead of time, by id of the parent board (kept alive alongside).
        self.pending: dict[int, tuple[chess.Board, list[_Child]]] = {}

    # -- children --------------------------------------------------------------------------

    def _check_abort(self, batch: int) -> None:
        if not self.abortable:
            return
        if self.stop is not None and self.stop.is_set():
            raise _AbortedError
        if self.max_nodes is not None and self.nodes_before + self.nodes + batch > self.max_nodes:
            raise _AbortedError
        if self.deadline is not None:
            # Do not start a batch that is expected to end after the deadline.
            expected = batch * self.searcher.seconds_per_position
            if time.monotonic() + expected > self.deadline:
                raise _AbortedError

    def expand(self, parents: Sequence[_Parent]) -> list[list[_Child]]:
        """Generate and value the children of each ``(board, ply, path)`` with one scorer call.

        ``path`` holds the hashes of the positions after the root up to and including ``board``
        (for repetitions). Values are exact for terminal children and static scores otherwise.
        """
        families, missing = self.generate(parents)
        if missing:
            self._score(missing)
        return families

    def generate(
        self, parents: Sequence[_Parent]
    ) -> tuple[list[list[_Child]], dict[int, list[_Child]]]:
        """Children of each parent, valued from the cache or as terminals where possible.

        Returns:
            The children per parent, and the children still to score grouped by hash.
        """
        families: list[list[_Child]] = []
        flat: list[_Child] = []
        for board, _, _ in parents:
            children = []
            for move in board.legal_moves:
                child = board.copy(stack=False)
                child.push(move)
                children.append(_Child(move, child))
            families.append(children)
            flat.extend(children)
        missing: dict[int, list[_Child]] = {}
        if not flat:
            return families, missing
        keys = zobrist_hashes([c.board for c in flat])
        cache = self.searcher.cache
        draw = self.config.draw_score
        start = 0
        for (board, ply, path), children in zip(parents, families, strict=True):
            mate_value = MATE_VALUE - (ply + 1)
            if board.turn == chess.BLACK:
                mate_value = -mate_value
            for index, child in enumerate(children, start):
                key = int(keys[index])
                child.key = key
                entry = cache.get(key)
                if entry is None:
                    status = _status(child.board)
                    if status != _NORMAL:
                        cache.put(key, 0.0, status)
                else:
                    self.cache_hits += 1
                    child.value, status = entry
                if status == _MATED:
                    child.value, child.terminal = mate_value, True
                elif status == _DRAWN or _is_draw(child.board, key, self.history, path):
                    child.value, child.terminal = draw, True
                elif entry is None:
                    missing.setdefault(key, []).append(child)
            start += len(children)
        return families, missing

    def _score(self, missing: dict[int, list[_Child]]) -> None:
        self._check_abort(len(missing))
        boards = [children[0].board for children in missing.values()]
        began = time.perf_counter()
        scores = np.asarray(self.searcher.scorer(boards), dtype=np.float64).reshape(-1)
        elapsed = time.perf_counter() - began
        if scores.shape != (len(boards),):
            raise ValueError(f"scorer returned {scores.shape[0]} scores for {len(boards)} boards")
        self.searcher.observe_speed(len(boards), elapsed)
        self.scorer_time += elapsed
        self.scorer_calls += 1
        self.nodes += len(boards)
        cache = self.searcher.cache
        for (key, children), score in zip(missing.items(), scores.tolist(), strict=True):
            cache.put(key, score)
            for child in children:
                child.value = score

    # -- minimax ---------------------------------------------------------------------------

    def minimax(
        self,
        board: chess.Board,
        ply: int,
        depth: int,
        alpha: float,
        beta: float,
        path: tuple[int, ...],
        children: list[_Child] | None = None,
    ) -> tuple[float, list[chess.Move]]:
        """Backed-up value (White's view) and principal variation of a non-terminal ``board``."""
        if depth == 1 and children is None and self.config.leaf_chunk and self.config.alpha_beta:
            return self._leaf_parent(board, ply, alpha, beta, path)
        if children is None and id(board) in self.pending:
            prefetched_board, children = self.pending.pop(id(board))
            assert prefetched_board is board
        if children is None:
            children = self.expand([(board, ply, path)])[0]
        white = board.turn == chess.WHITE
        children.sort(key=_value, reverse=white)  # stable: ties keep move-generation order
        top = children[: self.config.width]
        if depth == 1:
            return top[0].value, [top[0].move]
        hints = self.searcher.move_hints
        if self.config.alpha_beta:
            # Try first the move that was best here last time (it only changes the order among
            # the expanded children, hence the cutoffs, never the value).
            hint = hints.get(path[-1])
            if hint is not None and hint != top[0].move:
                for index, child in enumerate(top):
                    if child.move == hint:
                        top.insert(0, top.pop(index))
                        break
        if depth == 2 and self.config.frontier_batch:
            self._prefetch(top, ply + 1, path)
        best = -math.inf if white else math.inf
        best_pv: list[chess.Move] = []
        window = alpha if white else beta
        for child in top:
            if child.terminal:
                value, pv = child.value, []
            else:
                value, pv = self.minimax(
                    child.board, ply + 1, depth - 1, alpha, beta, (*path, child.key)
                )
            if (value > best) if white else (value < best):
                best, best_pv = value, [child.move, *pv]
            if self.config.alpha_beta:
                if white:
                    alpha = max(alpha, value)
                else:
                    beta = min(beta, value)
                if alpha >= beta:
                    break
        if self.config.alpha_beta and ((best > window) if white else (best < window)):
            if len(hints) >= self.config.cache_size:
                hints.clear()
            hints[path[-1]] = best_pv[0]
        return best, best_pv

    def _leaf_parent(
        self, board: chess.Board, ply: int, alpha: float, beta: float, path: tuple[int, ...]
    ) -> tuple[float, list[chess.Move]]:
        """A node one ply above the horizon, scoring its children only until a cutoff.

        Its value is its best child's; once a child reaches the window's far side (``beta`` for
        White, ``alpha`` for Black) the parent will not choose this node whatever the others
        score -- plain alpha-beta with these children as leaves. Cached and terminal children
        are used first, then likely refutations (captures, most valuable victim first) in a batch
        of ``leaf_chunk``, then the rest in one batch.
        """
        families, missing = self.generate([(board, ply, path)])
        children = families[0]
        white = board.turn == chess.WHITE
        pick = max if white else min
        valued = [c for c in children if c.key not in missing]
        if missing:
            pending = sorted(missing.items(), key=lambda item: _refutation_order(board, item[1][0]))
            chunk = self.config.leaf_chunk
            for batch in (pending[:chunk], pending[chunk:]):
                if valued:
                    best = pick(c.value for c in valued)
                    if (best >= beta) if white else (best <= alpha):
                        break
                if batch:
                    self._score(dict(batch))
                    valued.extend(child for _, group in batch for child in group)
        best = pick(c.value for c in valued)
        # Ties go to the earliest move in generation order, as in the full sort.
        valued_ids = {id(c) for c in valued}
        first = next(c for c in children if c.value == best and id(c) in valued_ids)
        return best, [first.move]

    def _prefetch(self, top: list[_Child], ply: int, path: tuple[int, ...]) -> None:
        """Expand the non-terminal children in ``top`` together (one scorer call)."""
        open_children = [c for c in top if not c.terminal and id(c.board) not in self.pending]
        if len(open_children) < 2:
            return
        families = self.expand([(c.board, ply, (*path, c.key)) for c in open_children])
        for child, family in zip(open_children, families, strict=True):
            self.pending[id(child.board)] = (child.board, family)

    def root(self, board: chess.Board, depth: int, exact_root: bool) -> SearchResult:
        """Search ``board`` (which has legal moves) to ``depth`` plies."""
        children = self.expand([(board, 0, ())])[0]
        white = board.turn == chess.WHITE
        children.sort(key=_value, reverse=white)
        if self.config.mode == "beam":
            return self._beam(board, children, depth)
        top = children[: self.config.width]
        if depth > 1 and self.config.frontier_batch and depth == 2:
            self._prefetch(top, 1, ())
        values: dict[int, tuple[float, bool]] = {}
        best = -math.inf if white else math.inf
        best_pv: list[chess.Move] = []
        for index, child in enumerate(top):
            if child.terminal or depth == 1:
                value, pv = child.value, []
            else:
                # Full window for the first move (and for all with exact_root); later moves only
                # need to prove they are no better than the best so far.
                alpha, beta = -math.inf, math.inf
                if self.config.alpha_beta and index > 0 and not exact_root:
                    alpha, beta = (best, math.inf) if white else (-math.inf, best)
                value, pv = self.minimax(child.board, 1, depth - 1, alpha, beta, (child.key,))
            improved = (value > best) if white else (value < best)
            exact = improved or exact_root or index == 0 or not self.config.alpha_beta
            values[index] = (value, exact or child.terminal or depth == 1)
            if improved:
                best, best_pv = value, [child.move, *pv]
        root_moves = [
            RootMove(
                move=c.move,
                static=c.value,
                value=values.get(i, (None, False))[0],
                exact=values.get(i, (None, False))[1],
            )
            for i, c in enumerate(children)
        ]
        return SearchResult(
            move=best_pv[0],
            value=best,
            pv=best_pv,
            depth=depth,
            mode="minimax",
            root_moves=root_moves,
        )

    # -- beam ------------------------------------------------------------------------------

    def _beam(self, board: chess.Board, children: list[_Child], depth: int) -> SearchResult:
        """The paper's level-wise beam: global top-k per level, best final score wins."""
        width = self.config.width
        root_white = board.turn == chess.WHITE
        lines = [_Line(c, i, [c.move], (c.key,)) for i, c in enumerate(children[:width])]
        # Terminal lines end where they are; they compete in the final choice, not for slots.
        finished = [line for line in lines if line.child.terminal]
        beam = [line for line in lines if not line.child.terminal]
        for level in range(2, depth + 1):
            if not beam:
                break
            families = self.expand([(line.child.board, level - 1, line.path) for line in beam])
            candidates = [
                _Line(c, line.root_index, [*line.moves, c.move], (*line.path, c.key))
                for line, family in zip(beam, families, strict=True)
                for c in family
            ]
            mover_white = (level % 2 == 1) == root_white
            candidates.sort(key=_line_value, reverse=mover_white)
            kept = candidates[:width]
            finished.extend(line for line in kept if line.child.terminal)
            beam = [line for line in kept if not line.child.terminal]
        final = sorted(finished + beam, key=_line_value, reverse=root_white)
        best = final[0]
        reached: dict[int, float] = {}
        for line in final:
            reached.setdefault(line.root_index, line.child.value)
        root_moves = [
            RootMove(move=c.move, static=c.value, value=reached.get(i), exact=i in reached)
            for i, c in enumerate(children)
        ]
        return SearchResult(
            move=best.moves[0],
            value=best.child.value,
            pv=best.moves,
            depth=depth,
            mode="beam",
            root_moves=root_moves,
        )


class _Line:
    """A beam entry: the line's last position, which root move it started with, its moves."""

    __slots__ = ("child", "moves", "path", "root_index")

    def __init__(
        self, child: _Child, root_index: int, moves: list[chess.Move], path: tuple[int, ...]
    ) -> None:
        self.child = child
        self.root_index = root_index
        self.moves = moves
        self.path = path


def _value(child: _Child) -> float:
    return child.value


def _line_value(line: _Line) -> float:
    return line.child.value


_VICTIM = {None: 0, chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def _refutation_order(board: chess.Board, child: _Child) -> tuple[int, int]:
    """Sort key putting captures of valuable pieces by cheap pieces first (MVV-LVA)."""
    move = child.move
    victim = _VICTIM[board.piece_type_at(move.to_square)]
    if victim == 0 and board.is_en_passant(move):
        victim = 1
    promotion = 8 if move.promotion == chess.QUEEN else 0
    attacker = board.piece_type_at(move.from_square) or 0
    return (-(victim + promotion), attacker)


def _status(board: chess.Board) -> int:
    """Position-only terminal status: checkmated, drawn (stalemate, insufficient material)."""
    if not any(board.generate_legal_moves()):
        return _MATED if board.is_check() else _DRAWN
    if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
        return _DRAWN
    return _NORMAL


def _is_draw(board: chess.Board, key: int, history: dict[int, int], path: tuple[int, ...]) -> bool:
    """History-dependent draws: the 50-move rule and threefold repetition."""
    clock = board.halfmove_clock
    if clock >= 100:
        return True
    if clock < 4:  # a repetition needs at least four reversible plies
        return False
    return history.get(key, 0) + path.count(key) >= 2


class Searcher:
    """Runs searches with one scorer, one configuration and one cache kept across moves.

    Args:
        scorer: boards -> axis scores (White's view).
        config: search settings.
    """

    def __init__(self, scorer: Scorer, config: SearchConfig | None = None) -> None:
        self.scorer = scorer
        self.config = config or SearchConfig()
        self.cache = EmbeddingCache(self.config.cache_size)
        self.seconds_per_position = 0.0
        """Moving estimate of the scorer's cost, used to stop before a deadline."""
        self.move_hints: dict[int, chess.Move] = {}
        """Best (or cutoff) move found at each position, tried first next time."""

    def observe_speed(self, positions: int, seconds: float) -> None:
        """Update the scorer speed estimate with one measured batch."""
        per = seconds / max(positions, 1)
        if self.seconds_per_position == 0.0:
            self.seconds_per_position = per
        else:
            self.seconds_per_position = 0.7 * self.seconds_per_position + 0.3 * per

    def new_game(self) -> None:
        """Forget cached scores and move hints (keeps results independent of earlier games)."""
        self.cache.clear()
        self.move_hints.clear()

    def search(
        self,
        board: chess.Board,
        *,
        depth: int | None = None,
        deadline: float | None = None,
        soft_deadline: float | None = None,
        stop: threading.Event | None = None,
        max_nodes: int | None = None,
        on_iteration: Callable[[SearchResult], None] | None = None,
        exact_root: bool = False,
        iterate: bool = True,
    ) -> SearchResult:
        """Iterative deepening from depth 1 to ``depth`` (default: the config's).

        Depth 1 always completes, so there is always a legal move. Later iterations stop
        mid-way, keeping the last completed one, when ``stop`` is set, the node limit would be
        exceeded or the next scorer batch would end after ``deadline`` (``time.monotonic()``
        seconds). No iteration starts after ``soft_deadline`` or when it is not expected to finish
        before ``deadline``.

        Args:
            board: the position; its move stack supplies the history for repetitions.
            depth: deepest iteration.
            deadline: hard time limit (monotonic clock).
            soft_deadline: no new iteration after this time.
            stop: set from another thread to stop.
            max_nodes: limit on positions embedded.
            on_iteration: called with each completed iteration's result.
            exact_root: give every expanded root move an exact value (for analysis).
            iterate: False searches ``depth`` directly (no shallower iterations).
        """
        depth = self.config.depth if depth is None else depth
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"search depth must lie in [1, {MAX_DEPTH}], got {depth!r}")
        began = time.perf_counter()
        if not any(board.generate_legal_moves()):
            value = self.config.draw_score
            if board.is_check():
                value = -MATE_VALUE if board.turn == chess.WHITE else MATE_VALUE
            return SearchResult(move=None, value=value, mode=self.config.mode, time_s=0.0)
        history = _history(board)
        best: SearchResult | None = None
        totals = [0, 0, 0.0, 0]  # nodes, cache hits, scorer time, scorer calls
        last_time = growth = 0.0
        last_lookups = 0
        for current in range(1 if iterate else depth, depth + 1):
            now = time.monotonic()
            if best is not None:
                if soft_deadline is not None and now >= soft_deadline:
                    break
                # The next iteration looks up about three times the positions of this one, and
                # the new ones need the scorer, even when this one was answered from the cache.
                uncached = 2.0 * last_lookups * self.seconds_per_position
                expected = max(last_time * (growth or 3.0), uncached)
                if deadline is not None and now + expected > deadline:
                    break
            run = _Run(
                self,
                history,
                abortable=best is not None,
                deadline=deadline,
                stop=stop,
                max_nodes=max_nodes,
                nodes_before=totals[0],
            )
            iteration_began = time.perf_counter()
            try:
                result = run.root(board, current, exact_root)
            except _AbortedError:
                result = None
            totals[0] += run.nodes
            totals[1] += run.cache_hits
            totals[2] += run.scorer_time
            totals[3] += run.scorer_calls
            if result is None:
                break
            elapsed = time.perf_counter() - iteration_began
            if last_time > 0.01:
                growth = min(max(elapsed / last_time, 1.5), 8.0)
            last_time, last_lookups = elapsed, run.nodes + run.cache_hits
            best = result
            _fill(best, totals, began)
            if on_iteration is not None:
                on_iteration(best)
            # A forced mate (either way) does not change with depth: the expanded tree is the
            # same and faster mates would already be inside the horizon.
            if self.config.mode == "minimax" and is_mate_value(best.value):
                break
        assert best is not None  # depth 1 cannot abort
        _fill(best, totals, began)
        best.completed = best.depth == depth or is_mate_value(best.value)
        return best


def _fill(result: SearchResult, totals: list, began: float) -> None:  # type: ignore[type-arg]
    result.nodes, result.cache_hits = int(totals[0]), int(totals[1])
    result.scorer_time_s, result.scorer_calls = float(totals[2]), int(totals[3])
    result.time_s = time.perf_counter() - began


def _history(board: chess.Board) -> dict[int, int]:
    """Occurrences of each position since the last irreversible move, the root included."""
    back = board.copy()
    boards = [board.copy(stack=False)]
    for _ in range(min(board.halfmove_clock, len(board.move_stack))):
        back.pop()
        boards.append(back.copy(stack=False))
    counts: dict[int, int] = {}
    for key in zobrist_hashes(boards).tolist():
        counts[key] = counts.get(key, 0) + 1
    return counts


def iter_root_values(result: SearchResult) -> Iterable[tuple[chess.Move, float]]:
    """Root moves with the value the search ranks them by (backed-up if expanded, else static)."""
    for root in result.root_moves:
        yield root.move, root.static if root.value is None else root.value
