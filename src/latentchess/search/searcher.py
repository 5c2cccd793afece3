"""The iterative-deepening driver: limits, deadlines, the stop flag, totals across iterations."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import chess

from latentchess.batch_keys import zobrist_hashes
from latentchess.search.base import (
    MATE_VALUE,
    MAX_DEPTH,
    Scorer,
    SearchConfig,
    SearchResult,
    is_mate_value,
)
from latentchess.search.cache import EmbeddingCache
from latentchess.search.tree import AbortedError, Run

__all__ = ["Searcher"]


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
        self.root_policy: Callable[[chess.Board], list[chess.Move]] | None = None
        """Optional prior: root moves best first (a Chessformer policy); when set, the root
        expands its first ``width`` moves instead of the ``width`` best-scored ones."""

    def observe_speed(self, positions: int, seconds: float) -> None:
        """Update the scorer speed estimate with one measured batch."""
        per = seconds / max(positions, 1)
        if self.seconds_per_position == 0.0:
            self.seconds_per_position = per
        else:
            self.seconds_per_position = 0.7 * self.seconds_per_position + 0.3 * per

    def _expected_time(
        self, lookups: int, previous_lookups: int, misses: int, other_time: float
    ) -> float:
        """Expected seconds of the next iteration, from the counts of the last two.

        Only cache misses reach the scorer. From a cold cache the next iteration meets about
        twice the last one's lookups as new positions (it looks up about three times as many,
        and the last one's are cached). A warm cache (the tree of an earlier move or search)
        answers part of them: the share of the last iteration's new lookups (those beyond the
        iteration before) that missed scales the estimate, so an iteration answered from the
        cache predicts a cheap next one. If that one meets new positions after all, it still
        aborts before any scorer batch that would end after the deadline: an under-estimate
        costs time up to the deadline, never a flag. The time outside the scorer grows with the
        lookups.
        """
        fresh = min(misses / max(lookups - previous_lookups, 1), 1.0)
        growth = min(max(lookups / previous_lookups, 1.5), 8.0) if previous_lookups else 3.0
        model = 2.0 * lookups * fresh * self.seconds_per_position
        return model + growth * other_time

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

        Depth 1 always completes, so there is always a legal move (when the deadline leaves no
        time to score every root move, depth 1 scores as many as the measured scorer speed allows,
        captures first; mates are found regardless). Later iterations stop
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
        last_other_time = 0.0  # the last iteration's time outside the scorer
        last_lookups = last_misses = previous_lookups = 0
        partial = False
        for current in range(1 if iterate else depth, depth + 1):
            now = time.monotonic()
            if best is not None:
                if soft_deadline is not None and now >= soft_deadline:
                    break
                expected = self._expected_time(
                    last_lookups, previous_lookups, last_misses, last_other_time
                )
                if deadline is not None and now + expected > deadline:
                    break
            run = Run(
                self,
                history,
                abortable=best is not None,
                deadline=deadline,
                stop=stop,
                max_nodes=max_nodes,
                nodes_before=totals[0],
            )
            affordable = None
            if current == 1 and deadline is not None and self.seconds_per_position > 0:
                # Nearly out of time: depth 1 must not overrun the clock either.
                seconds = deadline - time.monotonic()
                count = int(seconds / self.seconds_per_position)
                if count < board.legal_moves.count():
                    affordable = max(count, 0)
                    partial = True
            iteration_began = time.perf_counter()
            try:
                result = run.root(board, current, exact_root, affordable)
            except AbortedError:
                result = None
            totals[0] += run.nodes
            totals[1] += run.cache_hits
            totals[2] += run.scorer_time
            totals[3] += run.scorer_calls
            if result is None:
                break
            elapsed = time.perf_counter() - iteration_began
            previous_lookups, last_lookups = last_lookups, run.nodes + run.cache_hits
            last_misses = run.nodes
            last_other_time = max(elapsed - run.scorer_time, 0.0)
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
        best.completed = (best.depth == depth or is_mate_value(best.value)) and not partial
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
