"""The embedding cache: axis scores by position key, bounded, kept across the moves of a game."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["EmbeddingCache", "NORMAL", "MATED", "DRAWN"]

# Terminal status of a position (independent of history), cached with its score.
NORMAL, MATED, DRAWN = 0, 1, 2


class EmbeddingCache:
    """Bounded LRU map from a position's key to its axis score and terminal status.

    It stores what the search needs from an embedding (its projection on the axis, one float)
    rather than the vector: about 220 bytes a position, so a million fit in ~220 MB. The search
    keys it with :func:`latentchess.batch_keys.cache_keys` (the Polyglot Zobrist hash extended by
    the halfmove clock and move number, everything the model's tokens show). It survives across
    the moves of a game; hits and misses are counted over its lifetime.
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

    def put(self, key: int, score: float, status: int = NORMAL) -> None:
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
