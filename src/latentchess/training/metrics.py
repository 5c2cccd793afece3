"""Held-out metrics: how well the projection on the advantage axis orders positions.

* Spearman rank correlation between ``cos(z, axis)`` and White's win probability.
* Pair accuracy: for random pairs of held-out positions whose win probabilities differ by more
  than ``delta``, the share that the axis projection orders the same way as the labels (ties in
  the projection count one half). Pairs closer than ``delta`` are left out: the training objective
  treats them as equivalent, and at depth-9 label noise their order is a coin flip anyway.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

__all__ = ["autocast", "embed_tokens", "axis_cosine", "spearman", "pair_accuracy"]

FloatArray = npt.NDArray[np.float32]


@contextlib.contextmanager
def autocast(device: torch.device, precision: str) -> Iterator[None]:
    """bfloat16 autocast on ``device`` when ``precision == "bf16"``, else nothing."""
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
        yield


def embed_tokens(
    encoder: nn.Module,
    tokens: npt.ArrayLike,
    *,
    device: torch.device,
    precision: str,
    batch_size: int = 512,
) -> FloatArray:
    """Embed ``(N, 77)`` tokens in eval mode; returns ``(N, D)`` float32 (train mode restored)."""
    array = np.asarray(tokens)
    was_training = encoder.training
    encoder.eval()
    out: list[FloatArray] = []
    try:
        with torch.no_grad(), autocast(device, precision):
            for start in range(0, len(array), batch_size):
                batch = torch.from_numpy(np.ascontiguousarray(array[start : start + batch_size]))
                out.append(encoder(batch.to(device)).float().cpu().numpy())
    finally:
        encoder.train(was_training)
    if not out:
        dim = int(getattr(getattr(encoder, "config", None), "dim", 0))
        return np.zeros((0, dim), dtype=np.float32)
    return np.concatenate(out)


def axis_cosine(embeddings: npt.ArrayLike, axis: npt.ArrayLike) -> FloatArray:
    """``(N,)`` cosine between each (unit) embedding and the axis (any length)."""
    z = np.asarray(embeddings, dtype=np.float32)
    a = np.asarray(axis, dtype=np.float32)
    norm = float(np.linalg.norm(a))
    if norm == 0.0:
        return np.zeros(len(z), dtype=np.float32)
    return (z @ (a / norm)).astype(np.float32)


def spearman(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Spearman rank correlation (``nan`` when either side is constant)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if len(s) < 2 or np.ptp(s) == 0 or np.ptp(y) == 0:
        return float("nan")
    from scipy.stats import spearmanr  # heavy import, deferred to first use

    return float(spearmanr(s, y).statistic)


def pair_accuracy(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    *,
    delta: float,
    pairs: int = 20_000,
    seed: int = 0,
) -> float:
    """Share of random pairs with ``|p_i - p_j| > delta`` that the scores order correctly.

    Args:
        scores: ``(N,)`` axis projections.
        labels: ``(N,)`` win probabilities.
        delta: minimum label gap of a counted pair.
        pairs: random pairs drawn (before dropping the close ones).
        seed: seed of the pair draw (fixed, so successive evaluations use the same pairs).

    Returns:
        The accuracy in ``[0, 1]``, or ``nan`` if no pair qualifies.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if len(s) < 2:
        return float("nan")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(s), size=pairs)
    j = rng.integers(0, len(s), size=pairs)
    gap = y[i] - y[j]
    keep = np.abs(gap) > delta
    if not keep.any():
        return float("nan")
    agreement = np.sign(s[i] - s[j])[keep] * np.sign(gap[keep])  # +1 right, -1 wrong, 0 tie
    return float(np.mean((agreement + 1.0) / 2.0))
