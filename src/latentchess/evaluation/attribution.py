"""Square-level attribution of a Chessformer move: which squares raise or lower its logit.

The from-to policy head scores a move as one number, ``f(from) . t(to) / sqrt(h)`` of two final
square states, so the question "which input squares made this move likely" has one scalar to
explain. :func:`attribute_move` answers it with integrated gradients (Sundararajan et al. 2017):
the input features are scaled from a baseline (all zeros: an empty board without side features)
to the position along ``steps`` points, the gradient of the move's logit is averaged over them
and multiplied by the input; summing over each square's features gives one number per square.
By construction the 64 numbers add up to the logit of the position minus the logit of the
baseline (``completeness``; the midpoint rule makes this approximate, closer with more steps).
The skill embeddings are not attributed: they are the same at every point of the path.
"""

from __future__ import annotations

from dataclasses import dataclass

import chess
import numpy as np
import numpy.typing as npt
import torch

from latentchess.errors import LatentChessError
from latentchess.squares import move_index

__all__ = ["MoveAttribution", "attribute_move"]


@dataclass(frozen=True)
class MoveAttribution:
    """Integrated-gradients attribution of one move's policy logit.

    Attributes:
        move: the move.
        logit: its policy logit in the position (before legal masking).
        baseline_logit: its logit on the baseline input.
        squares: (64,) attribution per board square (python-chess numbering, a1 = 0).
        probability: its policy probability among the legal moves.
    """

    move: chess.Move
    logit: float
    baseline_logit: float
    squares: npt.NDArray[np.float64]
    probability: float

    @property
    def completeness_gap(self) -> float:
        """``sum(squares) - (logit - baseline_logit)``: the integration error."""
        return float(self.squares.sum() - (self.logit - self.baseline_logit))

    def top(self, count: int = 6) -> list[tuple[str, float]]:
        """The ``count`` squares with the largest absolute attribution, as (name, value)."""
        order = np.argsort(-np.abs(self.squares), kind="stable")[:count]
        return [(chess.square_name(int(s)), float(self.squares[s])) for s in order]


def attribute_move(
    model: object,
    board: chess.Board,
    move: chess.Move,
    *,
    self_elo: float = 1500.0,
    oppo_elo: float = 1500.0,
    steps: int = 64,
) -> MoveAttribution:
    """Attribute ``move``'s logit in ``board`` to the squares (see the module docstring).

    Args:
        model: a :class:`~latentchess.models.chessformer_io.ChessformerModel`.
        board: the position (its move stack supplies the history boards).
        move: a legal move of ``board``.
        self_elo: the mover's rating.
        oppo_elo: the opponent's rating.
        steps: integration points (one batch).

    Raises:
        LatentChessError: ``move`` is not legal in ``board``, or ``steps`` < 1.
    """
    if move not in board.legal_moves:
        raise LatentChessError(f"move {move.uci()!r} is not legal in {board.fen()!r}")
    if steps < 1:
        raise LatentChessError(f"steps must be >= 1, got {steps!r}")
    net = model.network  # type: ignore[attr-defined]
    device = next(net.parameters()).device
    x = torch.from_numpy(model.features([board])).to(device, torch.float32)  # type: ignore[attr-defined]
    baseline = torch.zeros_like(x)
    index = move_index(move, board.turn)
    alphas = ((torch.arange(steps, dtype=torch.float32, device=device) + 0.5) / steps).view(
        -1, 1, 1
    )
    path = (baseline + alphas * (x - baseline)).requires_grad_(True)  # (steps, 64, F)
    mine = torch.full((steps,), float(self_elo), device=device)
    theirs = torch.full((steps,), float(oppo_elo), device=device)
    net.eval()
    with torch.enable_grad():
        policy, _ = net(path, mine, theirs)
        (grads,) = torch.autograd.grad(policy[:, index].float().sum(), path)
    attribution = ((x - baseline) * grads.mean(dim=0, keepdim=True))[0].sum(dim=-1)  # (64,)
    with torch.no_grad():
        ends, _ = net(torch.cat([x, baseline]), mine[:2], theirs[:2])
    (prediction,) = model.predict([board], self_elo, oppo_elo)  # type: ignore[attr-defined]
    probability = dict(zip(prediction.moves, prediction.probabilities.tolist(), strict=True))
    flip = 0 if board.turn == chess.WHITE else 56  # the model's frame -> board squares
    squares = attribution.double().cpu().numpy()[np.arange(64) ^ flip]
    return MoveAttribution(
        move=move,
        logit=float(ends[0, index]),
        baseline_logit=float(ends[1, index]),
        squares=squares,
        probability=float(probability[move]),
    )
