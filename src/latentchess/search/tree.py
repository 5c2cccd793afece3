"""One fixed-depth search of one position: child generation, minimax with cutoffs, beam."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import chess
import numpy as np

from latentchess.batch_keys import clock_cache_keys, zobrist_hashes
from latentchess.core import Board as NativeBoard
from latentchess.search.base import MATE_VALUE, RootMove, Scorer, SearchConfig, SearchResult
from latentchess.search.cache import DRAWN, MATED, NORMAL, EmbeddingCache

__all__ = ["Run", "AbortedError", "SearchState"]

_Parent = tuple[chess.Board, int, tuple[int, ...]]
"""A position to expand: the board, its ply from the root, the hashes of the path to it."""


class SearchState(Protocol):
    """What a run reads and updates of the searcher that kept it across moves
    (:class:`~latentchess.search.searcher.Searcher`)."""

    scorer: Scorer
    config: SearchConfig
    cache: EmbeddingCache
    seconds_per_position: float
    move_hints: dict[int, chess.Move]
    root_policy: Callable[[chess.Board], list[chess.Move]] | None

    def observe_speed(self, positions: int, seconds: float) -> None: ...


class AbortedError(Exception):
    """Raised inside an iteration when the stop flag, deadline or node limit is hit."""


class _Child:
    """A generated child position: the move, the board after it, its hashes and value.

    ``key`` is the Polyglot Zobrist hash (repetitions, move hints); ``cache_key`` adds the clocks,
    which the model reads, and keys the score cache. The python-chess board is built on first use
    (``board``): with native expansion most children (cached, terminal, cut off) never need one.
    """

    __slots__ = ("_board", "cache_key", "clock", "key", "move", "parent", "terminal", "value")

    def __init__(self, move: chess.Move, parent: chess.Board) -> None:
        self.move = move
        self.parent = parent
        self._board: chess.Board | None = None
        self.key = 0
        self.clock = 0
        self.cache_key = 0
        self.value = 0.0
        self.terminal = False

    @property
    def board(self) -> chess.Board:
        if self._board is None:
            self._board = self.parent.copy(stack=False)
            self._board.push(self.move)
        return self._board


# Node expansion on the native core (latentchess.core): the same children, keys and terminal
# status as python-chess gives (benchmarks/movegen_check.py), ~30x cheaper per child. False runs
# the python-chess expansion (kept for benchmarks/bench_expand_search.py and the equality test).
NATIVE_EXPANSION = True


def _native_facts(board: chess.Board) -> dict[chess.Move, tuple[int, int, int]]:
    """``move -> (key, status, halfmove clock)`` of each child of ``board``, from the core."""
    expansion = NativeBoard(board.fen()).expand(with_tokens=False)
    return dict(
        zip(
            expansion.moves,
            zip(
                expansion.keys.tolist(),
                expansion.status.tolist(),
                expansion.halfmove.tolist(),
                strict=True,
            ),
            strict=True,
        )
    )


class Run:
    """State of one fixed-depth search of one root position."""

    def __init__(
        self,
        searcher: SearchState,
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
            raise AbortedError
        if self.max_nodes is not None and self.nodes_before + self.nodes + batch > self.max_nodes:
            raise AbortedError
        if self.deadline is not None:
            # Do not start a batch that is expected to end after the deadline.
            expected = batch * self.searcher.seconds_per_position
            if time.monotonic() + expected > self.deadline:
                raise AbortedError

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
            The children per parent, and the children still to score grouped by cache key.
        """
        families: list[list[_Child]] = []
        flat: list[_Child] = []
        native: list[int] = []  # per child: status from the core, or -1 (compute it here)
        for board, _, _ in parents:
            # python-chess's move order either way (ties among equal values keep it).
            children = [_Child(move, board) for move in board.legal_moves]
            if NATIVE_EXPANSION:
                facts = _native_facts(board)
                for child in children:
                    child.key, status, child.clock = facts[child.move]
                    native.append(status)
            families.append(children)
            flat.extend(children)
        missing: dict[int, list[_Child]] = {}
        if not flat:
            return families, missing
        if not NATIVE_EXPANSION:
            keys = zobrist_hashes([c.board for c in flat]).tolist()
            for child, key in zip(flat, keys, strict=True):
                child.key, child.clock = key, child.board.halfmove_clock
            native = [-1] * len(flat)
        # The score cache keys on everything the model reads: the Zobrist hash and both clocks
        # (a child's move number is its parent's, plus one after a Black move).
        fullmoves = [
            board.fullmove_number + (board.turn == chess.BLACK)
            for (board, _, _), children in zip(parents, families, strict=True)
            for _ in children
        ]
        score_keys = clock_cache_keys(
            [c.key for c in flat], [c.clock for c in flat], fullmoves
        ).tolist()
        cache = self.searcher.cache
        draw = self.config.draw_score
        start = 0
        for (board, ply, path), children in zip(parents, families, strict=True):
            mate_value = MATE_VALUE - (ply + 1)
            if board.turn == chess.BLACK:
                mate_value = -mate_value
            for index, child in enumerate(children, start):
                key = child.key
                child.cache_key = score_key = score_keys[index]
                entry = cache.get(score_key)
                if entry is None:
                    status = native[index] if native[index] >= 0 else _status(child.board)
                    if status != NORMAL:
                        cache.put(score_key, 0.0, status)
                else:
                    self.cache_hits += 1
                    child.value, status = entry
                if status == MATED:
                    child.value, child.terminal = mate_value, True
                elif status == DRAWN or _is_draw(child.clock, key, self.history, path):
                    child.value, child.terminal = draw, True
                elif entry is None:
                    missing.setdefault(score_key, []).append(child)
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
    ) -> tuple[float, list[chess.Move]]:
        """Backed-up value (White's view) and principal variation of a non-terminal ``board``.

        ``path`` ends with ``board``'s own hash; ``alpha`` and ``beta`` bound the values that
        can still change the choice of an ancestor (-inf, inf without cutoffs).
        """
        prefetched = self.pending.pop(id(board), None)
        if prefetched is not None:
            assert prefetched[0] is board
            children = prefetched[1]
        elif depth == 1 and self.config.leaf_chunk and self.config.alpha_beta:
            return self._leaf_parent(board, ply, alpha, beta, path)
        else:
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
        valued = [c for c in children if c.cache_key not in missing]
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

    def root(
        self, board: chess.Board, depth: int, exact_root: bool, affordable: int | None = None
    ) -> SearchResult:
        """Search ``board`` (which has legal moves) to ``depth`` plies.

        ``affordable`` (depth 1 only): the clock allows scoring only this many root children;
        the likeliest good ones (captures first) are scored and the rest count as the worst.
        """
        white = board.turn == chess.WHITE
        if affordable is None:
            children = self.expand([(board, 0, ())])[0]
        else:
            families, missing = self.generate([(board, 0, ())])
            children = families[0]
            ranked = sorted(missing.items(), key=lambda item: _refutation_order(board, item[1][0]))
            if affordable > 0 and ranked:
                self._score(dict(ranked[:affordable]))
            for _, group in ranked[affordable:]:
                for child in group:
                    child.value = -1.0 if white else 1.0
        children.sort(key=_value, reverse=white)
        root_policy = self.searcher.root_policy
        if root_policy is not None:
            # A policy prior picks (and orders) the root moves the search expands: its top
            # ``width``; the scores above still value every root move.
            rank = {move: i for i, move in enumerate(root_policy(board))}
            children.sort(key=lambda c: rank.get(c.move, len(rank)))  # stable: ties by value
        if self.config.mode == "beam":
            return self._beam(board, children, depth)
        top = children[: self.config.width]
        if depth == 2 and self.config.frontier_batch:
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
        return MATED if board.is_check() else DRAWN
    if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
        return DRAWN
    return NORMAL


def _is_draw(clock: int, key: int, history: dict[int, int], path: tuple[int, ...]) -> bool:
    """History-dependent draws (``clock``: halfmove clock): 50-move rule, threefold repetition."""
    if clock >= 100:
        return True
    if clock < 4:  # a repetition needs at least four reversible plies
        return False
    return history.get(key, 0) + path.count(key) >= 2
