"""Sampling positives: positions whose win probability lies within ``delta`` of the anchor's.

Paper section 3.3: "for each anchor, we precompute all positions whose win probabilities differ by
less than delta and randomly sample five as positives". Storing the candidate lists would take
memory quadratic in the window size; instead the labels are sorted once, and each position's
candidates are a contiguous window ``[lo, hi)`` of the sorted order, found by binary search
(``np.searchsorted``) on the thresholds ``p - delta`` and ``p + delta``. Sampling is then one
vectorised draw of offsets into the windows, skipping the anchor's own slot.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["PositiveSampler"]

IntArray = npt.NDArray[np.int64]


class PositiveSampler:
    """Draws positives for anchors from a fixed label array.

    Positions are addressed by their index into ``labels`` (not by cache row). A position with the
    same label as the anchor is a candidate (it is another position); the anchor itself never is.

    An anchor whose window holds no other position gets *itself* as every positive: with dropout
    the copies are two different views of one position (the SimCLR notion of a positive), and the
    batch never lacks the anchor's row. :meth:`candidate_counts` tells how many anchors that hits.

    Args:
        labels: ``(N,)`` White-perspective win probabilities.
        delta: the positive margin (``within_delta`` in :mod:`latentchess.training.losses`).
    """

    def __init__(self, labels: npt.ArrayLike, delta: float) -> None:
        values = np.asarray(labels, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError(f"expected a 1-D label array, got shape {values.shape}")
        if not delta > 0:
            raise ValueError(f"delta must be positive, got {delta!r}")
        self.delta = float(delta)
        self._order: IntArray = np.argsort(values, kind="stable")  # sorted slot -> position
        self._sorted = values[self._order]  # (N,) ascending
        self._slot: IntArray = np.empty_like(self._order)  # position -> sorted slot
        self._slot[self._order] = np.arange(values.size)
        # Window of slot s: sorted values v with p - delta < v < p + delta (within_delta).
        self._lo: IntArray = np.searchsorted(self._sorted, self._sorted - delta, side="right")
        self._hi: IntArray = np.searchsorted(self._sorted, self._sorted + delta, side="left")

    def __len__(self) -> int:
        return int(self._order.size)

    def candidate_counts(self, anchors: npt.ArrayLike | None = None) -> IntArray:
        """Candidate positives (the anchor excluded) of each anchor, or of every position."""
        slots = self._slot if anchors is None else self._slot[np.asarray(anchors, dtype=np.int64)]
        return self._hi[slots] - self._lo[slots] - 1

    def sample(self, anchors: npt.ArrayLike, k: int, rng: np.random.Generator) -> IntArray:
        """Draw ``k`` positives per anchor, uniformly with replacement from its window.

        Args:
            anchors: ``(B,)`` position indices.
            k: positives per anchor.
            rng: the random source (the caller seeds it, which makes data order reproducible).

        Returns:
            ``(B, k)`` position indices; an anchor without candidates gets its own index.
        """
        anchor_index = np.asarray(anchors, dtype=np.int64)
        if anchor_index.size and (anchor_index.min() < 0 or anchor_index.max() >= len(self)):
            raise IndexError(f"anchor indices must lie in [0, {len(self)})")
        slot = self._slot[anchor_index][:, None]  # (B, 1)
        lo = self._lo[slot]  # (B, 1)
        count = self._hi[slot] - lo - 1  # (B, 1) candidates besides the anchor
        offset = rng.integers(0, np.maximum(count, 1), size=(anchor_index.size, k))  # (B, k)
        chosen = lo + offset  # (B, k) sorted slots, the anchor's slot not yet skipped
        chosen += (chosen >= slot).astype(np.int64)  # skip the anchor: slots lo..hi-1 minus one
        chosen = np.where(count > 0, chosen, slot)  # no candidates: the anchor itself
        return self._order[chosen]
