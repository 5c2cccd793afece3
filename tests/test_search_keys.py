"""The score cache keys on everything the model reads; the time estimate counts model misses."""

from __future__ import annotations

import types
from collections.abc import Iterator, Sequence

import chess
import chess.polyglot
import numpy as np
import pytest

import latentchess.search.searcher as searcher_module
import latentchess.search.tree as tree_module
from latentchess.batch_keys import cache_keys, zobrist_hashes
from latentchess.encoding import tokenize_batch
from latentchess.search import SearchConfig, Searcher, SearchResult

MIDDLEGAME = "r2q1rk1/pp2bppp/2n1pn2/3p4/3P1B2/2PBPN2/PP1N1PPP/R2QK2R b KQ - 3 9"


def _noise(board: chess.Board, salt: int) -> float:
    key = (chess.polyglot.zobrist_hash(board) ^ salt) * 0x9E3779B97F4A7C15 % (1 << 64)
    return key / (1 << 64) * 1.8 - 0.9


class ClockScorer:
    """A fake model that reads the clocks as the real tokens do: its score flips with them."""

    def __init__(self) -> None:
        self.positions = 0

    def __call__(self, boards: Sequence[chess.Board]) -> np.ndarray:
        self.positions += len(boards)
        return np.array(
            [_noise(b, 0) if b.halfmove_clock < 20 else -_noise(b, 0) for b in boards],
            dtype=np.float64,
        )


def test_cache_keys_separate_what_the_tokens_separate() -> None:
    boards = []
    for halfmove, fullmove in ((0, 1), (5, 1), (0, 7), (999, 999), (10**30, 10**30)):
        boards.append(chess.Board(f"4k3/8/8/8/4P3/8/8/4K3 b - - {halfmove} {fullmove}"))
    board = chess.Board()
    for move in ("e4", "e5", "Nf3", "Nc6", "Ng1", "Nb8", "Nf3", "Nc6", "d4"):
        board.push_san(move)
        boards.append(board.copy(stack=False))
    keys = cache_keys(boards).tolist()
    tokens = [row.tobytes() for row in tokenize_batch(boards)]
    for i in range(len(boards)):
        for j in range(len(boards)):
            assert (keys[i] == keys[j]) == (tokens[i] == tokens[j]), (boards[i], boards[j])
    # The clamped clocks (999 and above, any size) tokenize alike and share a key.
    assert keys[3] == keys[4]
    np.testing.assert_array_equal(cache_keys(boards, zobrist_hashes(boards)), keys)


def test_same_position_with_other_clocks_is_scored_afresh() -> None:
    """Failed before the fix: the second search reused the first one's scores (Zobrist keys)."""
    early = chess.Board(MIDDLEGAME)
    late = chess.Board(MIDDLEGAME.replace(" 3 9", " 30 40"))
    assert chess.polyglot.zobrist_hash(early) == chess.polyglot.zobrist_hash(late)
    counter = ClockScorer()
    shared = Searcher(counter, SearchConfig(depth=2))
    first = shared.search(early)
    scored = counter.positions
    second = shared.search(late)
    assert counter.positions > scored and second.nodes > 0
    fresh = Searcher(ClockScorer(), SearchConfig(depth=2)).search(late)
    assert (second.move, second.value, second.pv) == (fresh.move, fresh.value, fresh.pv)
    assert second.value != first.value
    # The same clocks again: answered from the cache alone.
    again = shared.search(late)
    assert again.nodes == 0 and (again.move, again.value) == (fresh.move, fresh.value)


class FakeClock:
    """Monotonic time that advances only inside the scorer: 1 ms per position embedded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.calls = 0
        self.positions = 0

    def time(self) -> float:
        return self.now

    def __call__(self, boards: Sequence[chess.Board]) -> np.ndarray:
        self.calls += 1
        self.positions += len(boards)
        self.now += 0.001 * len(boards)
        return np.array([_noise(b, 7) for b in boards], dtype=np.float64)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fake = FakeClock()
    fake_time = types.SimpleNamespace(monotonic=fake.time, perf_counter=fake.time)
    monkeypatch.setattr(searcher_module, "time", fake_time)
    monkeypatch.setattr(tree_module, "time", fake_time)
    yield fake


def test_warm_tree_deepens_past_cached_iterations(clock: FakeClock) -> None:
    """Failed before the fix: with the whole tree cached, `2 * lookups * s/position` predicted
    more than the 300 ms left and stopped the search early without calling the model once."""
    board = chess.Board(MIDDLEGAME)
    engine = Searcher(clock, SearchConfig(depth=4))
    cold = engine.search(board)
    assert cold.depth == 4 and engine.seconds_per_position == pytest.approx(0.001)
    calls = clock.calls
    depths: list[int] = []
    warm = engine.search(
        board, depth=4, deadline=clock.now + 0.3, on_iteration=lambda r: depths.append(r.depth)
    )
    assert depths == [1, 2, 3, 4] and warm.completed and warm.nodes == 0
    assert clock.calls == calls and (warm.move, warm.value) == (cold.move, cold.value)


def test_cold_tree_does_not_start_an_iteration_it_cannot_finish(clock: FakeClock) -> None:
    """Failed before the fix too: the old estimate stopped at depth 2 with time for depth 3."""
    board = chess.Board(MIDDLEGAME)
    ends: list[tuple[int, float, int]] = []

    def record(result: SearchResult) -> None:
        ends.append((result.depth, clock.now, clock.positions))

    Searcher(clock, SearchConfig(depth=5)).search(board, on_iteration=record)
    start = 1000.0
    (_, t3, _), (_, t4, _) = ends[2], ends[3]
    # Room for depth 3 and a fifth of depth 4: depth 4 is not started at all.
    clock.now, clock.positions = start, 0
    seen: list[tuple[int, float, int]] = []
    result = Searcher(clock, SearchConfig(depth=5)).search(
        board,
        deadline=start + (t3 - start) + 0.2 * (t4 - t3),
        on_iteration=lambda r: seen.append((r.depth, clock.now, clock.positions)),
    )
    assert result.depth == 3 and not result.completed
    assert clock.positions == seen[-1][2]  # nothing embedded after depth 3
    # Room for depth 4 with a margin: it is started and completed.
    clock.now, clock.positions = start, 0
    result = Searcher(clock, SearchConfig(depth=4)).search(
        board, deadline=start + (t4 - start) * 1.5
    )
    assert result.depth == 4 and result.completed
