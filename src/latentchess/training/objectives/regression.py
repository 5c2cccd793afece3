"""Axis regression: the SupCon encoder's shape trained to regress its axis score onto the label.

The control of the SupCon objective (:mod:`latentchess.training.objectives.supcon`): the same
encoder, data, held-out split, optimiser and export, and the same score at play time, the cosine
of the L2-normalised embedding with the model's stored axis; only the training signal differs.

* axis: a fixed unit vector ``u`` drawn from the run's seed before training (stream
  ``_STREAM_AXIS``) and stored as the model's axis. The encoder's last layer can rotate its
  output freely, so any fixed direction serves; the engine's axis machinery (``latent:``, the
  native search, the calibration) reads it as it reads a SupCon model's mate axis;
* loss: ``mean((cos(z, u) - (2 p - 1))^2)`` over the step's positions, where ``p`` is White's
  win probability (the axis measures White's side, as the mate axis does): the cosine regresses
  onto the win probability mapped to ``[-1, 1]``. Mean squared error rather than a cross-entropy
  on ``(1 + cos) / 2``: the cosine reaches +-1 exactly (forced mates), where a log loss has
  unbounded gradients;
* a step takes ``batch_size`` positions of the training set in the anchor order (epochs, each
  in its own seeded order); ``positives`` and ``temperature`` are not used. To embed as many
  positions per step as SupCon, give ``--batch-size`` = SupCon's ``batch_size * (1 + positives)``
  (768 for 128 x (1 + 5));
* evaluation: held-out MSE (``heldout_loss``), and the Spearman correlation and pair accuracy of
  the cosine to ``u`` against the win probability, plus the Spearman correlation to the mate axis
  (``spearman_mate_axis``) that SupCon would have used, as a check that the two axes agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from latentchess.training.axis import AxisSelection, advantage_axis, select_axis_positions
from latentchess.training.data import step_rng
from latentchess.training.metrics import autocast, axis_cosine, pair_accuracy
from latentchess.training.metrics import spearman as spearman_correlation
from latentchess.training.objectives.supcon import _STREAM_EVAL, SupConObjective

__all__ = ["AxisRegressionObjective", "regression_axis"]

_STREAM_AXIS = 12  # step_rng stream of the fixed target axis (see training.data)


def regression_axis(dim: int, seed: int) -> npt.NDArray[np.float32]:
    """The fixed unit target axis of a regression run with ``seed`` and embedding size ``dim``."""
    vector = step_rng(seed, _STREAM_AXIS, 0).standard_normal(dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class AxisRegressionObjective(SupConObjective):
    """MSE of ``cos(z, u)`` against ``2 p_white - 1``; ``model`` is the encoder as for SupCon."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.axis = regression_axis(self.cfg.model.dim, self.cfg.seed)
        self._axis_tensor = torch.from_numpy(self.axis).to(self.device)

    # -- one step -------------------------------------------------------------------------

    def loss(self, model: nn.Module, step: int) -> tuple[Tensor, dict[str, float]]:
        ctx = self.ctx
        rows = self.order.anchors(step)  # (B,) training-set positions
        share = len(rows) // ctx.world_size
        mine = rows[ctx.rank * share : (ctx.rank + 1) * share]
        tokens = torch.from_numpy(self._tokens(self.split.train[mine])).to(self.device)
        target = torch.from_numpy(2.0 * self.train_labels[mine] - 1.0).to(self.device)
        with autocast(self.device, self.precision):
            z = model(tokens)  # (share, D), unit rows
        cos = z.float() @ self._axis_tensor
        loss = torch.mean((cos - target) ** 2)
        return loss, {}

    # -- evaluation -----------------------------------------------------------------------

    def _prepare_eval(self) -> None:
        cfg = self.cfg
        rng = step_rng(cfg.seed, _STREAM_EVAL, 0)
        n_hold = len(self.split.holdout)
        self.eval_index = np.sort(rng.permutation(n_hold)[: min(cfg.eval_positions, n_hold)])
        self.eval_batches: list[npt.NDArray[np.int64]] = []  # the MSE needs no batches
        self.eval_axis = select_axis_positions(
            self.train_labels, max_per_side=cfg.eval_axis_per_side, seed=cfg.seed
        )

    def _heldout_scores(
        self,
        axis_selection: AxisSelection,
        holdout_index: npt.NDArray[np.int64],
        loss_batches: list[npt.NDArray[np.int64]],
    ) -> tuple[dict[str, float], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Metrics against the fixed axis (and the mate axis for comparison); (axis, cosines)."""
        cfg = self.cfg

        z = self._embed(self.split.holdout[holdout_index])
        labels = self.holdout_labels[holdout_index]
        cos = axis_cosine(z, self.axis)
        train_rows = self.split.train
        mate_axis = advantage_axis(
            self._embed(train_rows[axis_selection.white]),
            self._embed(train_rows[axis_selection.black]),
        )
        metrics = {
            "heldout_loss": float(np.mean((cos - (2.0 * labels - 1.0)) ** 2)),
            "spearman": spearman_correlation(cos, labels),
            "pair_accuracy": pair_accuracy(cos, labels, delta=cfg.delta, seed=cfg.seed),
            "spearman_mate_axis": spearman_correlation(axis_cosine(z, mate_axis), labels),
            "axis_cosine_to_mate_axis": float(
                np.dot(self.axis, mate_axis) / max(float(np.linalg.norm(mate_axis)), 1e-12)
            ),
            "positions": len(holdout_index),
        }
        return metrics, self.axis, cos

    def _axis_counts(self, selection: AxisSelection) -> dict[str, Any]:
        return {
            "rule": f"fixed unit vector of the regression objective (seed {self.cfg.seed}), "
            "trained onto 2 p_white - 1",
        }
