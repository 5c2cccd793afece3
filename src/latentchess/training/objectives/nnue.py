"""The NNUE objective (target-score or PQR loss on a feature cache) for the shared training loop.

The network is :class:`latentchess.nnue.model.Nnue`, the losses and the run's settings are in
:mod:`latentchess.training.nnue`; :mod:`latentchess.training.loop` does resume, checkpoints
(with the random states), signals, progress, the metrics log, the rank-sync check and DDP. This
objective brings what is NNUE-specific:

* data: the feature cache (built once by rank 0 from the labelled CSVs), split into training and
  held-out rows; the batch of step ``s`` is a slice of an epoch-wise permutation of the training
  rows, a pure function of ``(seed, s)``;
* optimisation: Adam with the dense layers optionally at a smaller rate
  (:func:`~latentchess.training.nnue.parameter_groups`), the feature tables under a lazy sparse
  Adam when the first-layer update is sparse (:func:`~latentchess.training.nnue.make_optimizer`;
  one process only), its rate times ``gamma`` after each
  epoch of ``epoch_positions`` samples (``ExponentialLR`` stepped at epoch boundaries), and the
  L2 weights clipped to the int8 range after every step (:meth:`NnueObjective.after_step`);
* evaluation: held-out loss, live second-layer units, and for PQR the target-score loss too;
* export: the model directory (:func:`latentchess.nnue.io.save_nnue`) and ``training.png``.

The same ``out/checkpoints/last.pt`` layout as every objective; checkpoints of the NNUE trainer's
own loop (before it became an objective: no random states, no data fingerprint, a ``positions``
count) resume.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from latentchess.errors import LatentChessError
from latentchess.nnue.dataset import FeatureCache, build_cache, open_cache, parse_source
from latentchess.nnue.features import parse_feature_set
from latentchess.nnue.io import load_nnue, save_nnue
from latentchess.nnue.model import Nnue, expand_network
from latentchess.provenance import git_commit
from latentchess.training.distributed import DistContext
from latentchess.training.loop import (
    LoopResult,
    LoopSettings,
    Objective,
    Optimisation,
    run_objective,
)
from latentchess.training.nnue import (
    NnueTrainConfig,
    epoch_boundary,
    holdout_split,
    make_optimizer,
    plot_nnue_training,
    pqr_loss,
    score_loss,
)

__all__ = ["NnueObjective", "train_nnue", "loop_settings"]

_EVAL_CHUNK = 8192


class NnueObjective(Objective):
    """Target-score or PQR loss of an :class:`Nnue` on a feature cache."""

    def __init__(self, cfg: NnueTrainConfig, ctx: DistContext) -> None:
        self.cfg, self.ctx, self.device = cfg, ctx, ctx.device
        if cfg.sparse_update and ctx.distributed:
            # Not supported: DDP's reduction of sparse gradients depends on the backend and is
            # untested in this loop; refused rather than trusted.
            raise LatentChessError(
                f"a sparse first-layer update trains in one process, not {ctx.world_size} "
                "ranks: train with --dense-features (the default for sets without a threat "
                "block) or in one process"
            )
        if cfg.batch_size % ctx.world_size:
            raise LatentChessError(
                f"batch {cfg.batch_size} not divisible by {ctx.world_size} ranks"
            )
        cache_dir = cfg.cache or cfg.out / "cache"
        if ctx.is_main:  # rank 0 builds the cache once, the others then open it
            cfg.out.mkdir(parents=True, exist_ok=True)
            build_cache(
                [parse_source(spec) for spec in cfg.data],
                cache_dir,
                parse_feature_set(cfg.network.feature_set),
                pqr=cfg.loss == "pqr",
                progress=cfg.progress,
            )
        ctx.barrier()
        self.cache: FeatureCache = open_cache(cache_dir)
        if cfg.score_lambda != 1.0 and not self.cache.has_results:
            raise LatentChessError(
                f"lambda {cfg.score_lambda} blends in game results, but the cache "
                f"{str(cache_dir)!r} holds none (CSV labels carry no result; self-play .bin "
                "files do, and a cache built before results were kept needs rebuilding)"
            )
        self.train_rows, self.hold_rows = holdout_split(
            len(self.cache), cfg.holdout_fraction, cfg.holdout_max, cfg.seed
        )
        self.fingerprint = _fingerprint(self.cache)
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        self.net = Nnue(cfg.network).to(self.device)
        if cfg.init is not None:
            start = load_nnue(cfg.init).network
            try:  # king and output buckets: the same function, each copy the plain weights
                start = expand_network(start, cfg.network)
            except LatentChessError as error:
                raise LatentChessError(f"--init {str(cfg.init)!r}: {error}") from error
            self.net.load_state_dict(start.state_dict())
        self.model: nn.Module = self.net
        self.epoch_positions = cfg.epoch_positions or len(self.train_rows)

    def summary(self) -> dict[str, Any]:
        return {
            "sources": list(self.cfg.data),
            "cache": str(self.cache.path),
            "rows": len(self.cache),
            "train_rows": len(self.train_rows),
            "holdout_rows": len(self.hold_rows),
            "fingerprint": self.fingerprint,
        }

    def start_info(self) -> dict[str, Any]:
        return {"train_rows": len(self.train_rows), "holdout_rows": len(self.hold_rows)}

    # -- optimisation ---------------------------------------------------------------------

    def optimisation(self, settings: LoopSettings) -> Optimisation:
        cfg = self.cfg
        optimizer = make_optimizer(self.net, cfg.lr, cfg.dense_lr_scale, cfg.sparse_update)
        return Optimisation(
            optimizer,
            torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.gamma),
            advances=lambda step: epoch_boundary(step, cfg.batch_size, self.epoch_positions),
        )

    def after_step(self, step: int) -> None:
        self.net.clip_weights()

    def train_record(self, step: int) -> dict[str, Any]:
        return {"positions": step * self.cfg.batch_size}

    # -- data and loss --------------------------------------------------------------------

    def _batch_rows(self, step: int) -> npt.NDArray[np.int64]:
        """This rank's rows of the global batch of ``step`` (an epoch-wise permutation)."""
        cfg, n = self.cfg, len(self.train_rows)
        start = step * cfg.batch_size
        out: list[int] = []
        while len(out) < cfg.batch_size:
            epoch, offset = divmod(start + len(out), n)
            perm = np.random.default_rng([cfg.seed, 11, epoch]).permutation(n)
            out.extend(perm[offset : offset + cfg.batch_size - len(out)].tolist())
        rows = self.train_rows[np.asarray(out)]
        share = cfg.batch_size // self.ctx.world_size
        return np.sort(rows[self.ctx.rank * share : (self.ctx.rank + 1) * share])

    def _result(self, rows: npt.NDArray[np.int64]) -> Tensor | None:
        """Game results of ``rows`` (side to move's; NaN unknown), when the loss uses them."""
        if self.cfg.score_lambda == 1.0 or self.cache.result is None:
            return None
        result = np.asarray(self.cache.result[rows], dtype=np.float32)
        return torch.from_numpy(result).to(self.device)

    def _tensors(self, rows: npt.NDArray[np.int64]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(white features, black features, side to move, score) of ``rows`` on the device."""
        feats = torch.from_numpy(np.asarray(self.cache.features[rows], dtype=np.int64))
        stm = torch.from_numpy(np.asarray(self.cache.stm[rows], dtype=np.int64))
        score = torch.from_numpy(np.asarray(self.cache.score[rows], dtype=np.float32))
        d = self.device
        return feats[:, 0].to(d), feats[:, 1].to(d), stm.to(d), score.to(d)

    def _loss(self, rows: npt.NDArray[np.int64], model: nn.Module) -> Tensor:
        white, black, stm, score = self._tensors(rows)
        out_p = model(white, black, stm)
        if self.cfg.loss == "score":
            return score_loss(out_p, score, self._result(rows), self.cfg.score_lambda)
        assert self.cache.pqr is not None
        pqr = torch.from_numpy(np.asarray(self.cache.pqr[rows], dtype=np.int64)).to(self.device)
        other = 1 - stm  # Q and R: the other side to move
        out_q = model(pqr[:, 0, 0], pqr[:, 0, 1], other)
        out_r = model(pqr[:, 1, 0], pqr[:, 1, 1], other)
        return pqr_loss(out_p, out_q, out_r)

    def loss(self, model: nn.Module, step: int) -> tuple[Tensor, dict[str, float]]:
        return self._loss(self._batch_rows(step), model), {}

    # -- evaluation and export ------------------------------------------------------------

    def evaluate(self) -> dict[str, float]:
        losses, weights = [], []
        for start in range(0, len(self.hold_rows), _EVAL_CHUNK):
            rows = self.hold_rows[start : start + _EVAL_CHUNK]
            losses.append(float(self._loss(rows, self.net)))
            weights.append(len(rows))
        w, b, s, _ = self._tensors(self.hold_rows[:_EVAL_CHUNK])
        result = {
            "val_loss": float(np.average(losses, weights=weights)),
            "live_l2_units": self.net.live_units(w, b, s),
        }
        if self.cfg.loss == "pqr":  # the target-score loss too: comparable across methods
            result["val_score_loss"] = self._score_loss_holdout()
        return result

    def _score_loss_holdout(self) -> float:
        total, count = 0.0, 0
        for start in range(0, len(self.hold_rows), _EVAL_CHUNK):
            w, b, s, sc = self._tensors(self.hold_rows[start : start + _EVAL_CHUNK])
            total += float(score_loss(self.net(w, b, s), sc)) * len(sc)
            count += len(sc)
        return total / count

    def export(self, model_dir: Path, training: dict[str, Any]) -> dict[str, Any]:
        cfg, step = self.cfg, training["steps_done"]
        metrics = {"step": step, **self.evaluate(), "positions_seen": step * cfg.batch_size}
        save_nnue(
            model_dir,
            self.net,
            {
                "training": {**training, "git_commit": git_commit()},
                "data": {
                    **self.cache.meta,
                    "train_rows": len(self.train_rows),
                    "holdout_rows": len(self.hold_rows),
                },
                "metrics": metrics,
                "command": cfg.command,
            },
        )
        plot_nnue_training(cfg.out / "metrics.jsonl", cfg.out / "training.png")
        return metrics


def _fingerprint(cache: FeatureCache) -> str:
    """A digest of the cache's labels and sides to move (a rebuilt cache of other data differs)."""
    digest = hashlib.sha256(str(len(cache)).encode())
    digest.update(np.ascontiguousarray(cache.score).tobytes())
    digest.update(np.ascontiguousarray(cache.stm).tobytes())
    if cache.has_results:  # caches without results keep the digest they always had
        assert cache.result is not None
        digest.update(np.ascontiguousarray(cache.result).tobytes())
    return digest.hexdigest()[:16]


def loop_settings(cfg: NnueTrainConfig) -> LoopSettings:
    """The shared loop's settings of an NNUE run (the optimisation is the objective's own)."""
    return LoopSettings(
        out=cfg.out,
        steps=cfg.steps,
        lr=cfg.lr,
        warmup=0,
        schedule="constant",
        weight_decay=0.0,
        grad_clip=0.0,
        max_minutes=cfg.max_minutes,
        eval_every=cfg.eval_every,
        checkpoint_every=cfg.checkpoint_every,
        log_every=cfg.log_every,
        positions_per_step=cfg.batch_size,
        progress=cfg.progress,
        resumable_changes=frozenset(),  # cfg.resume_differences decides
        config=cfg.to_dict(),
        resume_differences=cfg.resume_differences,
    )


def train_nnue(cfg: NnueTrainConfig, **kwargs: Any) -> LoopResult:
    """Train (or resume) an NNUE as ``cfg`` says; writes ``cfg.out/model``.

    ``kwargs`` go to :func:`~latentchess.training.loop.run_objective` (e.g. ``on_step``).
    """
    return run_objective(
        loop_settings(cfg),
        lambda ctx: NnueObjective(cfg, ctx),
        device=cfg.device,
        threads=cfg.threads,
        **kwargs,
    )
