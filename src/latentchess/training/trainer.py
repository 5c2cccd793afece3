"""Training the SOLIS encoder: SupCon on win-probability positives (paper section 3.3).

``latentchess train [supcon]`` ends here. The run is the shared training loop
(:func:`latentchess.training.loop.run_objective`: resume, atomic checkpoints, SIGINT/SIGTERM,
time budget, DDP under ``torchrun``, progress, metrics log) driving the SupCon objective
(:class:`latentchess.training.objectives.supcon.SupConObjective`). Top to bottom:

1. rank 0 opens (or builds) the training cache and splits off the held-out rows; the precision is
   decided (``auto``: a probe on CPU); the encoder is initialised from ``seed`` on every rank;
2. each step takes ``batch_size`` anchors, ``positives`` views of each within ``delta``, embeds
   this rank's slice, all-gathers the embeddings and takes an SGD step (momentum, weight decay,
   warm-up then ``schedule``) on the SupCon loss of the whole global batch;
3. every ``eval_every`` steps rank 0 measures the held-out loss, and the Spearman correlation and
   pair accuracy of the cosine to the advantage axis against the win probability;
4. at the end the advantage axis and the score calibration are fitted and the model is written
   with :func:`latentchess.models.save_model`.

Run directory (``TrainConfig.out``)::

    config.json          the TrainConfig of the run
    metrics.jsonl        {"kind": "train" | "eval" | "final" | "start", "step": ..., ...} per line
    checkpoints/last.pt  the latest checkpoint (a rerun of the same command resumes from it)
    model/               the trained model (config.json + model.safetensors)
    training.png         loss and held-out metric curves
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from latentchess.training.config import TrainConfig
from latentchess.training.distributed import DistContext
from latentchess.training.loop import LoopSettings, run_objective
from latentchess.training.objectives.regression import AxisRegressionObjective
from latentchess.training.objectives.supcon import SupConObjective

__all__ = ["TrainResult", "train"]


@dataclass(frozen=True)
class TrainResult:
    """Outcome of one invocation of :func:`train`.

    Attributes:
        out: the run directory.
        step: steps completed so far (over all invocations).
        stop_reason: ``"completed"``, ``"time_budget"`` (``max_minutes``) or ``"signal"``.
        model_dir: the written model, or ``None`` (interrupted by a signal, or not rank 0).
        resumed_from: the checkpoint step this invocation started from, if any.
        metrics: final held-out metrics (empty unless a model was written).
        seconds: wall time of this invocation.
        precision: the precision used (``"fp32"`` or ``"bf16"``).
        device: the device used.
    """

    out: Path
    step: int
    stop_reason: str
    model_dir: Path | None = None
    resumed_from: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    precision: str = "fp32"
    device: str = "cpu"


def train(cfg: TrainConfig, *, on_step: Callable[[int], None] | None = None) -> TrainResult:
    """Train (or resume training) a SOLIS encoder as described by ``cfg``.

    ``cfg.objective`` picks the loss: SupCon, or the axis regression of
    :class:`~latentchess.training.objectives.regression.AxisRegressionObjective` (its control).

    A checkpoint in ``cfg.out/checkpoints`` is resumed automatically; a config that differs from
    the checkpoint's in a setting that matters is refused. SIGINT and SIGTERM end the run after the
    current step with a checkpoint. Under ``torchrun`` the run is data-parallel.

    Args:
        cfg: the run's configuration.
        on_step: called with the step count after every optimiser step (tests, instrumentation).

    Raises:
        LatentChessError: unusable data, or a checkpoint from an incompatible config.
    """
    settings = LoopSettings(
        out=cfg.out,
        steps=cfg.steps,
        lr=cfg.lr,
        warmup=cfg.warmup_steps,
        schedule=cfg.schedule,
        weight_decay=cfg.weight_decay,
        grad_clip=0.0,
        max_minutes=cfg.max_minutes,
        eval_every=cfg.eval_every,
        checkpoint_every=cfg.checkpoint_every,
        log_every=cfg.log_every,
        positions_per_step=cfg.views_per_step,
        progress=cfg.progress,
        resumable_changes=frozenset(),  # cfg.resume_differences decides
        config=cfg.to_dict(),
        rate_key="views_per_s",
        eval_at_start=True,
        resume_differences=cfg.resume_differences,
    )
    objectives: list[SupConObjective] = []
    kind = AxisRegressionObjective if cfg.objective == "regression" else SupConObjective

    def build(ctx: DistContext) -> SupConObjective:
        objectives.append(kind(cfg, ctx))
        return objectives[-1]

    def optimizer(model: nn.Module, s: LoopSettings) -> torch.optim.Optimizer:
        if cfg.optimizer == "adamw":
            return torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
        return torch.optim.SGD(
            model.parameters(), lr=s.lr, momentum=cfg.momentum, weight_decay=s.weight_decay
        )

    result = run_objective(
        settings,
        build,
        device=cfg.device,
        threads=cfg.threads,
        optimizer=optimizer,
        on_step=on_step,
    )
    return TrainResult(
        out=result.out,
        step=result.step,
        stop_reason=result.stop_reason,
        model_dir=result.model_dir,
        resumed_from=result.resumed_from,
        metrics=result.metrics,
        seconds=result.seconds,
        precision=objectives[0].precision,
        device=result.device,
    )
