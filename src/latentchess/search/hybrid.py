"""Hybrid planning: a batched latent scorer proposes and orders, alpha-beta validates.

The seams (so that a future evaluator - a Chessformer value/policy head, a bigger latent model on
a GPU - plugs into the same places):

:class:`BatchScorer`
    ``(N, 77)`` position tokens (:func:`latentchess.encoding.tokenize`) -> ``(N,)`` scores in
    [-1, 1] from White's view. Called with whole sibling sets or frontiers, never per node.
:class:`CandidateProposer`
    A board and a deadline -> every legal root move ranked best first (:class:`Candidate`).

The three places the hybrid engine uses them (``latentchess.engines.hybrid``):

1. root candidates: the proposer's top k are validated by the core's alpha-beta (a
   ``searchmoves`` restriction); the rest get a second restricted search, and a move the proposer
   ranked low is admitted when alpha-beta finds it better by a margin (the safety net);
2. ordering: :func:`ply_one_orders` ranks the replies to the first root moves with one scorer
   batch, and the core consults these orders (plus the proposer's root order) at its first plies;
3. horizon: :class:`HorizonSearch`, a full-width alpha-beta of depth 1-3 over the native board
   whose leaves are scored by the scorer, one batch per sibling set.

Values of :class:`HorizonSearch` are on the latent search's scale (``latentchess.search.base``):
axis scores, checkmates ``+-(MATE_VALUE - plies)``, draws ``draw_score``; but side-to-move relative
inside the negamax.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import chess
import numpy as np
import numpy.typing as npt

from latentchess.core.board import DRAWN, MATED, Board
from latentchess.search.base import MATE_VALUE

__all__ = [
    "BatchScorer",
    "Candidate",
    "CandidateProposer",
    "HorizonResult",
    "HorizonSearch",
    "ply_one_orders",
]

Tokens = npt.NDArray[np.uint8]  # (N, 77)
Scores = npt.NDArray[np.floating]  # (N,), White's view, in [-1, 1]


@runtime_checkable
class BatchScorer(Protocol):
    """Scores many positions at once (the latent model, or a fake in tests)."""

    def __call__(self, tokens: Tokens) -> Scores:
        """``(N, 77)`` tokens -> ``(N,)`` scores in [-1, 1], White's view."""
        ...


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """A root move as a proposer ranks it.

    Attributes:
        move: the move.
        score: the proposer's value of the move, side to move's view (higher is better; on the
            latent scale mates are ``+-(MATE_VALUE - plies)``).
        rank: 0 for the proposer's favourite.
    """

    move: chess.Move
    score: float
    rank: int


@runtime_checkable
class CandidateProposer(Protocol):
    """Ranks every legal root move, best first."""

    def propose(self, board: chess.Board, deadline: float | None) -> list[Candidate]:
        """All legal moves of ``board`` ranked best first, within ``deadline`` (monotonic s)."""
        ...


def _child_values(
    board: Board,
    scorer: BatchScorer,
    sign: float,
    draw_score: float,
    *,
    ply: int,
    cache: dict[int, float] | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Values of ``board``'s children (in ``legal_moves()`` order) from the mover's view, and
    which children are game ends (their values are exact)."""
    expansion = board.expand(with_tokens=True)
    count = len(expansion.moves)
    white = np.zeros(count, dtype=np.float64)
    terminal = np.zeros(count, dtype=np.bool_)
    todo = []
    for i in range(count):
        status = int(expansion.status[i])
        if status == MATED:
            white[i] = sign * (MATE_VALUE - ply)
            terminal[i] = True
        elif status == DRAWN or int(expansion.repetitions[i]) > 0 or expansion.halfmove[i] >= 100:
            white[i] = draw_score
            terminal[i] = True
        else:
            key = int(expansion.keys[i])
            cached = None if cache is None else cache.get(key)
            if cached is None:
                todo.append(i)
            else:
                white[i] = cached
    if todo:
        scores = np.asarray(scorer(expansion.tokens[todo]), dtype=np.float64)  # (len(todo),)
        white[todo] = scores
        if cache is not None:
            for i, score in zip(todo, scores.tolist(), strict=True):
                cache[int(expansion.keys[i])] = score
    return sign * white, terminal


def ply_one_orders(
    board: chess.Board,
    roots: Sequence[chess.Move],
    scorer: BatchScorer,
    *,
    draw_score: float = 0.0,
) -> dict[int, list[chess.Move]]:
    """The replies to each of ``roots`` ranked best first for the replying side, in one batch.

    Returns:
        Polyglot key of the position after each root move -> its legal moves, best first (the
        table ``AlphaBeta.search(move_orders=...)`` consumes).
    """
    native = Board.from_chess(board)
    parents: list[tuple[int, list[chess.Move]]] = []
    tokens: list[Tokens] = []
    fixed: list[npt.NDArray[np.float64]] = []
    spans: list[tuple[int, int, npt.NDArray[np.bool_]]] = []
    offset = 0
    # The replying side's sign: after the root move it is the opponent's turn.
    sign = -1.0 if board.turn == chess.WHITE else 1.0
    for move in roots:
        native.push(move)
        expansion = native.expand(with_tokens=True)
        count = len(expansion.moves)
        if count:
            values = np.zeros(count, dtype=np.float64)
            mated = expansion.status == MATED
            drawn = (expansion.status == DRAWN) | (expansion.repetitions > 0)
            values[mated] = sign * MATE_VALUE
            values[drawn] = draw_score
            normal = ~(mated | drawn)
            parents.append((native.zobrist_key(), expansion.moves))
            tokens.append(expansion.tokens[normal])
            fixed.append(values)
            spans.append((offset, offset + int(normal.sum()), normal))
            offset += int(normal.sum())
        native.pop()
    if not parents:
        return {}
    batch = np.concatenate(tokens) if offset else np.zeros((0, 77), dtype=np.uint8)
    scores = np.asarray(scorer(batch), dtype=np.float64) if offset else np.zeros(0)
    orders: dict[int, list[chess.Move]] = {}
    for (key, moves), values, (start, end, normal) in zip(parents, fixed, spans, strict=True):
        values[normal] = scores[start:end]
        order = np.argsort(-(sign * values), kind="stable")
        orders[key] = [moves[i] for i in order.tolist()]
    return orders


class _AbortedError(Exception):
    """The deadline passed inside an iteration."""


@dataclass(kw_only=True)
class HorizonResult:
    """What :meth:`HorizonSearch.search` found.

    Attributes:
        move: the best move (None without legal moves).
        value: its value, side to move's view (latent scale, mates ``+-(MATE_VALUE - plies)``).
        pv: the principal variation.
        depth: the last completed depth.
        positions: positions sent to the scorer.
        batches: scorer calls.
        root_values: the last completed iteration's value per root move (side to move's view;
            a bound for moves that could not beat the best).
    """

    move: chess.Move | None
    value: float
    pv: list[chess.Move] = field(default_factory=list)
    depth: int = 0
    positions: int = 0
    batches: int = 0
    root_values: dict[chess.Move, float] = field(default_factory=dict)


class HorizonSearch:
    """Full-width alpha-beta of a few plies whose leaves the scorer values in batches.

    Every interior node scores all its children in one batch (cached by Polyglot key), orders them
    by that score and searches them best first with alpha-beta; a node one ply above the horizon
    takes the best child score directly. Checkmates, stalemates, insufficient material, the
    fifty-move rule and repetitions (with the game's history) are exact.

    Args:
        scorer: the batched leaf scorer.
        draw_score: its value of a draw (White's view).
        cache_size: scores kept (the cache is emptied when it grows past this).
    """

    def __init__(
        self, scorer: BatchScorer, *, draw_score: float = 0.0, cache_size: int = 500_000
    ) -> None:
        self.scorer = scorer
        self.draw_score = draw_score
        self.cache_size = cache_size
        self.cache: dict[int, float] = {}
        self._deadline: float | None = None
        self._positions = 0
        self._batches = 0

    def new_game(self) -> None:
        """Forget cached scores."""
        self.cache.clear()

    def search(
        self,
        board: chess.Board,
        *,
        depth: int = 3,
        deadline: float | None = None,
        root_order: list[chess.Move] | None = None,
    ) -> HorizonResult:
        """Iterative deepening from 1 to ``depth`` plies; depth 1 always completes.

        ``root_order`` (e.g. a policy's ranking) orders the root moves of the first iteration;
        later iterations order them by the previous one's values.
        """
        if len(self.cache) > self.cache_size:
            self.cache.clear()
        native = Board.from_chess(board)
        self._positions = self._batches = 0
        best = HorizonResult(move=None, value=0.0)
        if not native.legal_moves():
            return best
        for current in range(1, depth + 1):
            self._deadline = deadline if current > 1 else None
            try:
                value, pv, root_values = self._root(native, current, root_order)
            except _AbortedError:
                break
            best = HorizonResult(
                move=pv[0], value=value, pv=pv, depth=current, root_values=root_values
            )
            root_order = sorted(root_values, key=lambda m: -root_values[m])
            if abs(value) > MATE_VALUE / 2:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
        best.positions, best.batches = self._positions, self._batches
        return best

    # -- the negamax ---------------------------------------------------------------------------

    def _children(self, board: Board, ply: int) -> tuple[list[chess.Move], list[float], list[bool]]:
        """Children best first: moves, static values (side to move's view), game ends."""
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise _AbortedError
        sign = 1.0 if board.turn == chess.WHITE else -1.0
        values, terminal = _child_values(
            board, self._count, sign, self.draw_score, ply=ply + 1, cache=self.cache
        )
        moves = board.legal_moves()
        order = np.argsort(-values, kind="stable").tolist()
        return (
            [moves[i] for i in order],
            [float(values[i]) for i in order],
            [bool(terminal[i]) for i in order],
        )

    def _count(self, tokens: Tokens) -> Scores:
        self._positions += len(tokens)
        self._batches += 1
        return self.scorer(tokens)

    def _root(
        self, board: Board, depth: int, order: list[chess.Move] | None
    ) -> tuple[float, list[chess.Move], dict[chess.Move, float]]:
        moves, statics, ends = self._children(board, 0)
        if order is not None:
            rank = {move: i for i, move in enumerate(order)}
            triples = sorted(
                zip(moves, statics, ends, strict=True), key=lambda t: rank.get(t[0], 999)
            )
            moves, statics, ends = (list(column) for column in zip(*triples, strict=True))
        alpha, beta = -np.inf, np.inf
        best_pv: list[chess.Move] = []
        values: dict[chess.Move, float] = {}
        for move, static, end in zip(moves, statics, ends, strict=True):
            if depth == 1 or end:
                value, line = static, []
            else:
                board.push(move)
                value, line = self._negamax(board, depth - 1, -beta, -alpha, 1)
                value = -value
                board.pop()
            values[move] = value
            if value > alpha:
                alpha = value
                best_pv = [move, *line]
        return float(alpha), best_pv, values

    def _negamax(
        self, board: Board, depth: int, alpha: float, beta: float, ply: int
    ) -> tuple[float, list[chess.Move]]:
        moves, statics, ends = self._children(board, ply)
        if not moves:
            # Terminal positions are scored by their parent; a node reached here has moves.
            return (-(MATE_VALUE - ply) if board.is_check() else self._relative_draw(board)), []
        if depth == 1:
            return statics[0], [moves[0]]
        best, best_line = -np.inf, []
        for move, static, end in zip(moves, statics, ends, strict=True):
            if end:
                value, line = static, []
            else:
                board.push(move)
                value, line = self._negamax(board, depth - 1, -beta, -alpha, ply + 1)
                value = -value
                board.pop()
            if value > best:
                best, best_line = value, [move, *line]
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        return float(best), best_line

    def _relative_draw(self, board: Board) -> float:
        return self.draw_score if board.turn == chess.WHITE else -self.draw_score
