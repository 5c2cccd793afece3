"""What inference precision ``"auto"`` picks on a CPU: measured speed plus move-ranking fidelity.

A reduced precision (``"int8"``, then ``"bf16"``) replaces ``"fp32"`` only when, on a fixed probe
set, it

* ranks the *siblings* (the children of each probe position, i.e. the moves a search compares) in
  nearly the order float32 does: its best child of a parent is float32's best (or within
  :data:`TIE_MARGIN` of it) for at least :data:`MIN_TOP1_AGREEMENT` of the parents, and at
  least :data:`MIN_PAIR_AGREEMENT` of the sibling pairs keep their order (pairs float32 scores
  within :data:`TIE_MARGIN` of each other are ties and not counted),
* keeps every embedding's cosine to float32 at least :data:`MIN_COSINE`, and
* is measurably faster: at least :data:`MIN_SPEEDUP` times float32's throughput on a search-sized
  batch of :data:`SPEED_BATCH` of those children (best of a few timed repetitions).

``int8`` is tried before ``bf16`` and wins unless ``bf16`` is :data:`MIN_SPEEDUP` times faster;
``bf16`` is tried only on CPUs with native bfloat16 matrix units (elsewhere PyTorch emulates it,
5-10x slower than float32). The fidelity part is a pure function (:func:`ranking_fidelity`) so it
can be tested on any CPU; the speed part is a measurement of this machine, which is why the chosen
precision is recorded with every result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import chess
import numpy as np
import numpy.typing as npt

from latentchess.encoding import tokenize_batch

__all__ = [
    "MIN_COSINE",
    "MIN_PAIR_AGREEMENT",
    "MIN_SPEEDUP",
    "MIN_TOP1_AGREEMENT",
    "TIE_MARGIN",
    "Fidelity",
    "probe_positions",
    "ranking_fidelity",
    "throughput",
]

MIN_COSINE = 0.999
MIN_TOP1_AGREEMENT = 0.9
MIN_PAIR_AGREEMENT = 0.95
TIE_MARGIN = 1e-3
MIN_SPEEDUP = 1.1
PROBE_PARENTS = 12
SPEED_BATCH = 64
"""Positions per timed forward pass: a search-sized batch."""

Embedder = Callable[[npt.NDArray[np.uint8]], npt.NDArray[np.float32]]


@dataclass(frozen=True, kw_only=True)
class Fidelity:
    """Agreement of a reduced precision with float32 on the probe set.

    Attributes:
        min_cosine: smallest cosine between an embedding and its float32 counterpart.
        top1_agreement: share of parents where its best child (for the side to move) is float32's
            best or float32 scores it within :data:`TIE_MARGIN` of the best.
        pair_agreement: share of non-tied sibling pairs ordered the same way.
    """

    min_cosine: float
    top1_agreement: float
    pair_agreement: float

    @property
    def passed(self) -> bool:
        """Whether every bar is met."""
        return (
            self.min_cosine >= MIN_COSINE
            and self.top1_agreement >= MIN_TOP1_AGREEMENT
            and self.pair_agreement >= MIN_PAIR_AGREEMENT
        )

    def __str__(self) -> str:
        return (
            f"min cosine {self.min_cosine:.5f}, best move agrees {self.top1_agreement:.0%}, "
            f"sibling order agrees {self.pair_agreement:.1%}"
        )


def probe_positions(
    parents: int = PROBE_PARENTS,
) -> tuple[npt.NDArray[np.uint8], list[slice], list[bool]]:
    """Tokens of the children of ``parents`` fixed positions (seeded random games).

    Returns:
        ``(tokens, groups, white_to_move)``: all children's tokens, the slice of ``tokens``
        holding each parent's children, and whether White chooses among them.
    """
    rng = np.random.default_rng(0)
    board = chess.Board()
    fens: list[str] = []
    groups: list[slice] = []
    white: list[bool] = []
    while len(groups) < parents:
        moves = list(board.legal_moves)
        if len(moves) < 2 or board.ply() > 100:
            board = chess.Board()
            continue
        if board.ply() % 3 == 2:  # every third ply of the games is a probe parent
            start = len(fens)
            for move in moves:
                board.push(move)
                fens.append(board.fen())
                board.pop()
            groups.append(slice(start, len(fens)))
            white.append(board.turn == chess.WHITE)
        board.push(moves[int(rng.integers(len(moves)))])
    return tokenize_batch(fens), groups, white


def ranking_fidelity(
    reference: npt.NDArray[np.float32],
    candidate: npt.NDArray[np.float32],
    unit_axis: npt.NDArray[np.float32],
    groups: list[slice],
    white_to_move: list[bool],
) -> Fidelity:
    """Compare a candidate's embeddings with float32's on sibling groups (see module docstring)."""
    cosine = (reference * candidate).sum(axis=1) / np.maximum(
        np.linalg.norm(candidate, axis=1) * np.linalg.norm(reference, axis=1), 1e-12
    )
    ref_scores, cand_scores = reference @ unit_axis, candidate @ unit_axis
    top1, agree, pairs = 0, 0, 0
    for group, white in zip(groups, white_to_move, strict=True):
        sign = 1.0 if white else -1.0
        ref, cand = sign * ref_scores[group], sign * cand_scores[group]
        top1 += int(ref[np.argmax(cand)] >= ref.max() - TIE_MARGIN)  # its pick is fp32's best
        d_ref = ref[:, None] - ref[None, :]
        d_cand = cand[:, None] - cand[None, :]
        upper = np.triu(np.abs(d_ref) > TIE_MARGIN, k=1)
        pairs += int(upper.sum())
        agree += int((np.sign(d_ref) == np.sign(d_cand))[upper].sum())
    finite = bool(np.isfinite(candidate).all())
    return Fidelity(
        min_cosine=float(cosine.min()) if finite else float("nan"),
        top1_agreement=top1 / max(1, len(groups)) if finite else 0.0,
        pair_agreement=agree / pairs if pairs and finite else (1.0 if finite else 0.0),
    )


def throughput(embed: Embedder, tokens: npt.NDArray[np.uint8], repeats: int = 3) -> float:
    """Positions per second of ``embed`` on ``tokens[:SPEED_BATCH]`` (best of ``repeats``)."""
    tokens = tokens[:SPEED_BATCH]
    embed(tokens)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        embed(tokens)
        best = min(best, time.perf_counter() - began)
    return len(tokens) / max(best, 1e-9)
