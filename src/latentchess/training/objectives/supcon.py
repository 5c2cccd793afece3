"""The SupCon objective of the SOLIS encoder (paper section 3.3) for the shared training loop.

What is specific to SupCon lives here; :mod:`latentchess.training.loop` does the rest (resume,
checkpoints, signals, DDP, progress, metrics log) and :mod:`latentchess.training.trainer` wires the
two together.

* data: a training cache (built once by rank 0), split into train and held-out rows;
* precision: ``TrainConfig.precision`` made concrete (``auto`` probes on CPU and caches the answer
  in ``out/precision.json``);
* one step (:meth:`SupConObjective.loss`): ``batch_size`` anchors, ``positives`` views of each
  within ``delta`` (:class:`~latentchess.training.positives.PositiveSampler`), this rank embeds
  its slice of the views, the embeddings of all ranks are gathered and the SupCon loss of the
  whole global batch is taken (:func:`~latentchess.training.losses.supcon_loss`);
* evaluation: held-out SupCon loss, and the Spearman correlation and pair accuracy of the cosine
  to the advantage axis against the win probability, on fixed draws;
* export: the final axis, all held-out rows, the score calibration, then
  :func:`latentchess.models.save_model` and the ``training.png`` curves.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from latentchess.errors import LatentChessError
from latentchess.models import save_model
from latentchess.models.gab_encoder import build_encoder
from latentchess.provenance import git_commit
from latentchess.training.axis import (
    AxisSelection,
    advantage_axis,
    fit_calibration,
    select_axis_positions,
)
from latentchess.training.config import TrainConfig
from latentchess.training.curves import plot_training_curves
from latentchess.training.data import (
    AnchorOrder,
    label_fingerprint,
    open_training_data,
    split_holdout,
    step_rng,
)
from latentchess.training.distributed import DistContext
from latentchess.training.loop import Objective
from latentchess.training.losses import supcon_loss
from latentchess.training.metrics import (
    autocast,
    axis_cosine,
    embed_tokens,
    pair_accuracy,
    spearman,
)
from latentchess.training.positives import PositiveSampler
from latentchess.training.precision import PROBE_FILE, training_precision

__all__ = ["SupConObjective"]

_STREAM_EVAL = 10  # step_rng streams of the evaluation draws (see training.data)
_STREAM_TORCH = 11


class SupConObjective(Objective):
    """SupCon on win-probability positives; ``model`` is the SOLIS encoder."""

    def __init__(self, cfg: TrainConfig, ctx: DistContext) -> None:
        self.cfg, self.ctx, self.device = cfg, ctx, ctx.device
        if cfg.batch_size % ctx.world_size:
            raise LatentChessError(
                f"batch size {cfg.batch_size} is not divisible by the {ctx.world_size} ranks"
            )
        if ctx.is_main:
            cfg.out.mkdir(parents=True, exist_ok=True)
        self._load_data()
        self.precision, self.precision_record = self._resolve_precision()
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        self.encoder = build_encoder(cfg.model).to(self.device)
        if cfg.init_ft is not None:  # a resumed run then loads its checkpoint over this
            from latentchess.models.sparse_encoder import SparseEncoder, init_from_nnue
            from latentchess.nnue.io import load_nnue

            assert isinstance(self.encoder, SparseEncoder)  # TrainConfig checks the kind
            init_from_nnue(self.encoder, load_nnue(cfg.init_ft).network.to(self.device))
        if getattr(cfg.model, "ft_from", None) is not None:  # an NNUE's transformer, frozen
            self.encoder.attach_shared_ft()
        self.model: nn.Module = self.encoder
        self._seed_dropout(0)
        if ctx.is_main:
            self._prepare_eval()

    # -- data -----------------------------------------------------------------------------

    def _load_data(self) -> None:
        cfg, ctx = self.cfg, self.ctx
        cache_dir = cfg.cache_dir or cfg.out / "cache"
        if ctx.is_main:  # rank 0 builds a dataset's cache once, the others then open it
            self.cache = open_training_data(cfg.data, cache_dir, progress=cfg.progress)
        ctx.barrier()
        if not ctx.is_main:
            self.cache = open_training_data(cfg.data, cache_dir, progress=False)
        labels = np.asarray(self.cache.win_prob_white, dtype=np.float32)
        self.split = split_holdout(
            len(labels), fraction=cfg.holdout_fraction, maximum=cfg.holdout_max, seed=cfg.seed
        )
        self.train_labels = labels[self.split.train]
        self.holdout_labels = labels[self.split.holdout]
        self.fingerprint = label_fingerprint(labels)
        self.sampler = PositiveSampler(self.train_labels, cfg.delta)
        self.order = AnchorOrder(len(self.split.train), cfg.batch_size, cfg.seed)

    def _resolve_precision(self) -> tuple[str, dict[str, Any]]:
        """``cfg.precision`` made concrete; rank 0 probes (``auto`` on CPU), the others follow."""
        cfg, ctx = self.cfg, self.ctx
        share = max(1, cfg.views_per_step // ctx.world_size)
        tokens = self._tokens(self.split.train[: min(share, len(self.split.train))])
        cache = cfg.out / PROBE_FILE
        if ctx.is_main:
            decided = training_precision(cfg.precision, self.device, cfg.model, tokens, cache)
        ctx.barrier()
        if not ctx.is_main:
            decided = training_precision(cfg.precision, self.device, cfg.model, tokens, cache)
        return decided

    def _tokens(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        return np.asarray(self.cache.tokens[rows])  # (n, 77) random access into the memmap

    def summary(self) -> dict[str, Any]:
        return {
            "path": str(self.cfg.data),
            "rows": int(len(self.split.train) + len(self.split.holdout)),
            "train_rows": len(self.split.train),
            "holdout_rows": len(self.split.holdout),
            "label_fingerprint": self.fingerprint,
            "cache_meta": {k: v for k, v in self.cache.meta.items() if k != "rows"},
        }

    def start_info(self) -> dict[str, Any]:
        return {"precision": self.precision, "precision_decision": self.precision_record}

    # -- random streams -------------------------------------------------------------------

    def _seed_dropout(self, step: int) -> None:
        words = np.random.SeedSequence([self.cfg.seed, _STREAM_TORCH, self.ctx.rank, step])
        torch.manual_seed(int(words.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)))

    def ranks_changed(self, saved_world_size: int, step: int) -> None:
        if self.ctx.is_main:
            print(
                f"note: checkpoint from {saved_world_size} ranks resumed on "
                f"{self.ctx.world_size}; dropout random streams are reseeded",
                file=sys.stderr,
            )
        self._seed_dropout(step)

    # -- one step -------------------------------------------------------------------------

    def loss(self, model: nn.Module, step: int) -> tuple[Tensor, dict[str, float]]:
        cfg, ctx = self.cfg, self.ctx
        anchors = self.order.anchors(step)  # (B,)
        positives = self.sampler.sample(anchors, cfg.positives, self.order.positives_rng(step))
        views = np.concatenate([anchors[:, None], positives], axis=1).reshape(-1)  # (B * (1+P),)
        # Anchor-major order: rank r embeds a contiguous slice, so the all-gathered embeddings
        # line up with `views` and the loss is that of a single process on the same batch.
        share = len(views) // ctx.world_size
        mine = views[ctx.rank * share : (ctx.rank + 1) * share]
        tokens = torch.from_numpy(self._tokens(self.split.train[mine])).to(self.device)
        labels = torch.from_numpy(self.train_labels[views]).to(self.device)  # (B * (1+P),)
        with autocast(self.device, self.precision):
            local = model(tokens)  # (share, D)
        loss = supcon_loss(
            ctx.gather(local.float()), labels, delta=cfg.delta, temperature=cfg.temperature
        )
        return loss, {}

    # -- evaluation -----------------------------------------------------------------------

    def _prepare_eval(self) -> None:
        """Fixed evaluation draws (same positions and batches at every evaluation)."""
        cfg = self.cfg
        rng = step_rng(cfg.seed, _STREAM_EVAL, 0)
        n_hold = len(self.split.holdout)
        self.eval_index = np.sort(rng.permutation(n_hold)[: min(cfg.eval_positions, n_hold)])
        # Held-out loss batches: anchors from the eval positions, positives from the held-out set.
        holdout_sampler = PositiveSampler(self.holdout_labels, cfg.delta)
        n_batches = max(1, len(self.eval_index) // cfg.views_per_step)
        anchors = self.eval_index[rng.permutation(len(self.eval_index))]
        self.eval_batches: list[npt.NDArray[np.int64]] = []
        for b in range(n_batches):
            batch = anchors[b * cfg.batch_size : (b + 1) * cfg.batch_size]
            if len(batch) < 2:
                break
            pos = holdout_sampler.sample(batch, cfg.positives, rng)
            self.eval_batches.append(np.concatenate([batch[:, None], pos], axis=1).reshape(-1))
        self.eval_axis = select_axis_positions(
            self.train_labels, max_per_side=cfg.eval_axis_per_side, seed=cfg.seed
        )

    def _embed(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """Embeddings of training-cache rows with the model as it is (evaluation)."""
        return embed_tokens(
            self.model, self._tokens(rows), device=self.device, precision=self.precision
        )

    def _heldout_scores(
        self,
        axis_selection: AxisSelection,
        holdout_index: npt.NDArray[np.int64],
        loss_batches: list[npt.NDArray[np.int64]],
    ) -> tuple[dict[str, float], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Axis, held-out loss, Spearman and pair accuracy; also (axis, held-out cosines)."""
        cfg = self.cfg

        train_rows = self.split.train
        axis = advantage_axis(
            self._embed(train_rows[axis_selection.white]),
            self._embed(train_rows[axis_selection.black]),
        )
        needed = np.unique(np.concatenate([holdout_index, *loss_batches]))
        z = self._embed(self.split.holdout[needed])  # (n, D)
        where = np.searchsorted(needed, holdout_index)
        cos = axis_cosine(z[where], axis)
        labels = self.holdout_labels[holdout_index]
        losses = []
        with torch.no_grad():
            for batch in loss_batches:
                zb = torch.from_numpy(z[np.searchsorted(needed, batch)])
                lb = torch.from_numpy(self.holdout_labels[batch])
                losses.append(
                    float(supcon_loss(zb, lb, delta=cfg.delta, temperature=cfg.temperature))
                )
        metrics = {
            "heldout_loss": float(np.mean(losses)) if losses else float("nan"),
            "spearman": spearman(cos, labels),
            "pair_accuracy": pair_accuracy(cos, labels, delta=cfg.delta, seed=cfg.seed),
            "positions": len(holdout_index),
        }
        return metrics, axis, cos

    def _axis_counts(self, selection: AxisSelection) -> dict[str, Any]:
        """The ``axis_counts`` entry of the exported model (the mates the axis came from)."""
        return selection.counts()

    def evaluate(self) -> dict[str, float]:
        metrics, _, _ = self._heldout_scores(self.eval_axis, self.eval_index, self.eval_batches)
        return metrics

    def export(self, model_dir: Path, training: dict[str, Any]) -> dict[str, Any]:
        """Final axis, all held-out metrics, calibration; write the model and the curves."""
        cfg = self.cfg
        selection = select_axis_positions(
            self.train_labels, max_per_side=cfg.axis_per_side, seed=cfg.seed
        )
        everything = np.arange(len(self.split.holdout))
        metrics, axis, cos = self._heldout_scores(selection, everything, self.eval_batches)
        calibration = fit_calibration(cos, self.holdout_labels)
        metrics["calibration_log_loss"] = calibration["log_loss"]
        metrics["step"] = training["steps_done"]
        training = {
            **training,
            "precision_used": self.precision,
            "precision_decision": self.precision_record,
            "data": self.summary(),
            "git_commit": git_commit(),
        }
        save_model(
            model_dir,
            self.encoder,
            axis=axis,
            metadata={
                "axis_counts": self._axis_counts(selection),
                "calibration": calibration,
                "training": training,
                "metrics": metrics,
            },
        )
        plot_training_curves(cfg.out / "metrics.jsonl", cfg.out / "training.png")
        return metrics
