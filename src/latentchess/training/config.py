"""``TrainConfig``: every hyperparameter of a training run, validated, stored with its results."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latentchess.models.config import (
    AnyEncoderConfig,
    EncoderConfig,
    GabEncoderConfig,
    SparseEncoderConfig,
    encoder_config_class,
    get_config,
)

__all__ = ["TrainConfig", "SCHEDULES", "PRECISIONS", "ENCODER_OBJECTIVES", "lr_factor"]

SCHEDULES = ("cosine", "constant")
ENCODER_OBJECTIVES = ("supcon", "regression")
PRECISIONS = ("auto", "fp32", "bf16")

# Fields that may change between a run and its resumption: where things live, how often to
# report, how long this invocation may take, and how the same arithmetic is executed.
_RESUMABLE_CHANGES = frozenset(
    {
        "data",
        "out",
        "cache_dir",
        "max_minutes",
        "precision",
        "device",
        "threads",
        "eval_every",
        "eval_positions",
        "eval_axis_per_side",
        "axis_per_side",
        "checkpoint_every",
        "log_every",
        "progress",
    }
)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Hyperparameters of an encoder training run (defaults follow the paper where it says).

    Attributes:
        objective: ``"supcon"`` (the paper's contrastive loss,
            :mod:`latentchess.training.objectives.supcon`) or ``"regression"`` (the same encoder
            trained to regress its cosine to a fixed axis onto ``2 p_white - 1``,
            :mod:`latentchess.training.objectives.regression`; ``positives`` and ``temperature``
            unused, a step embeds ``batch_size`` positions).
        data: a training cache directory or a dataset directory of Parquet shards.
        out: run directory: ``checkpoints/``, ``metrics.jsonl``, ``model/``, ``training.png``.
        model: encoder architecture (``--model-config`` picks one of ``MODEL_CONFIGS``, or a
            ``gab-*`` contrastive Chessformer encoder of ``GAB_ENCODER_CONFIGS``, or a ``sparse-*``
            NNUE-feature encoder of ``SPARSE_ENCODER_CONFIGS``); the
            default is ``tiny`` with dropout 0: with the paper's 0.1, short SGD runs collapsed to
            a near-constant embedding (``benchmarks/results/lr_schedule.md``, Spearman 0.17-0.20
            against 0.93 without dropout after 300 steps).
        steps: optimiser steps of the run; the cosine schedule spans them (paper: 400,000).
        max_minutes: wall-clock budget of one invocation; on expiry a checkpoint and the model
            are written (rerunning continues towards ``steps``). ``None``: no budget.
        batch_size: anchors per step over all ranks (paper: 128); each brings ``positives``
            views, so a step embeds ``batch_size * (1 + positives)`` positions.
        positives: positives sampled per anchor within ``delta`` (paper: 5).
        delta: win-probability margin of a positive pair (paper: 0.05).
        temperature: SupCon temperature tau (paper: 0.07).
        lr: peak learning rate of SGD. 0.03 from ``benchmarks/compare_lr.py``
            (``benchmarks/results/lr_schedule.md``): tied best held-out Spearman with 0.01 at
            batch 32, while 0.1 learns worse and 0.3 collapses; the default batch of 128 has less
            gradient noise, which favours the higher of the two.
        schedule: ``"cosine"`` (decay to 0 at ``steps``) or ``"constant"`` after warmup; cosine
            learned better in the same comparison (and constant 0.1 collapsed).
        warmup: linear warm-up steps; ``None`` means 2% of ``steps``.
        momentum: SGD momentum (paper: 0.9).
        optimizer: ``"sgd"`` (SGD with momentum, the paper's) or ``"adamw"`` (AdamW at ``lr``
            with ``weight_decay``; the GAB encoder's post-norm trunk collapses under SGD at the
            SOLIS learning rates, ``benchmarks/results/gab_encoder/``).
        weight_decay: SGD weight decay (SupCon reference value).
        precision: ``"auto"`` (bf16 autocast on CUDA; on CPU fp32 unless bf16 is measured
            faster for this model on this machine, see :mod:`latentchess.training.precision`),
            ``"fp32"`` or ``"bf16"``.
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        threads: torch CPU threads (``None``: torch's default).
        seed: seeds model init, data order, held-out split and dropout.
        holdout_fraction: share of rows held out for metrics and calibration.
        holdout_max: cap on held-out rows.
        eval_every: steps between held-out evaluations (0: only at the end).
        eval_positions: held-out positions used by periodic evaluations (the final one uses all).
        eval_axis_per_side: training mates per side for the axis of periodic evaluations.
        axis_per_side: training mates per side for the final axis (see
            :mod:`latentchess.training.axis`).
        checkpoint_every: steps between checkpoints (also written on stop and signals).
        log_every: steps between training-loss records in ``metrics.jsonl``.
        cache_dir: where a Parquet dataset's token cache is built; ``None``: ``out/cache``.
        init_ft: an NNUE model directory whose feature transformer starts a sparse encoder's
            (the blocks the two sets share; see
            :func:`latentchess.models.sparse_encoder.init_from_nnue`); ``None``: random.
        progress: show a progress bar on stderr.
    """

    data: Path
    out: Path
    model: AnyEncoderConfig = field(default_factory=lambda: _default_model())
    objective: str = "supcon"
    steps: int = 10_000
    max_minutes: float | None = None
    batch_size: int = 128
    positives: int = 5
    delta: float = 0.05
    temperature: float = 0.07
    lr: float = 0.03
    schedule: str = "cosine"
    warmup: int | None = None
    momentum: float = 0.9
    optimizer: str = "sgd"
    weight_decay: float = 1e-4
    precision: str = "auto"
    device: str = "auto"
    threads: int | None = None
    seed: int = 0
    holdout_fraction: float = 0.02
    holdout_max: int = 20_000
    eval_every: int = 500
    eval_positions: int = 4096
    eval_axis_per_side: int = 1024
    axis_per_side: int = 4096
    checkpoint_every: int = 1000
    log_every: int = 10
    cache_dir: Path | None = None
    init_ft: Path | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", Path(self.data))
        object.__setattr__(self, "out", Path(self.out))
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        if self.init_ft is not None:
            object.__setattr__(self, "init_ft", Path(self.init_ft))
        if not isinstance(self.model, EncoderConfig | GabEncoderConfig | SparseEncoderConfig):
            raise ValueError(
                "model must be an EncoderConfig, a GabEncoderConfig or a SparseEncoderConfig, "
                f"got {self.model!r}"
            )
        if self.init_ft is not None and getattr(self.model, "ft_from", None) is not None:
            raise ValueError(
                "init_ft starts a feature transformer that training changes; the model's "
                f"ft_from ({self.model.ft_from!r}) uses an NNUE's unchanged: give one of the two"
            )
        if self.init_ft is not None and not isinstance(self.model, SparseEncoderConfig):
            raise ValueError(
                f"init_ft starts a sparse encoder's feature transformer; {self.model.name!r} "
                "is not a sparse-* encoder"
            )
        positive_ints = ("steps", "batch_size", "positives", "holdout_max", "eval_positions")
        positive_ints += ("eval_axis_per_side", "axis_per_side", "checkpoint_every", "log_every")
        for name in positive_ints:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive int, got {value!r}")
        for name in ("eval_every", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"TrainConfig.{name} must be a non-negative int, got {value!r}")
        if self.warmup is not None and not (isinstance(self.warmup, int) and self.warmup >= 0):
            raise ValueError(f"warmup must be a non-negative int or None, got {self.warmup!r}")
        if self.threads is not None and not (isinstance(self.threads, int) and self.threads >= 1):
            raise ValueError(f"threads must be a positive int or None, got {self.threads!r}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ValueError(f"max_minutes must be positive, got {self.max_minutes!r}")
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {self.delta!r}")
        for name in ("temperature", "lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.optimizer not in ("sgd", "adamw"):
            raise ValueError(f"optimizer must be 'sgd' or 'adamw', got {self.optimizer!r}")
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum!r}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if not 0.0 < self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction must lie in (0, 1), got {self.holdout_fraction!r}")
        if self.objective not in ENCODER_OBJECTIVES:
            raise ValueError(
                f"unknown objective {self.objective!r}; choose from {list(ENCODER_OBJECTIVES)}"
            )
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose from {list(SCHEDULES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"unknown precision {self.precision!r}; choose from {list(PRECISIONS)}"
            )

    @property
    def warmup_steps(self) -> int:
        """Resolved warm-up length (``warmup``, or 2% of ``steps`` when unset)."""
        return round(0.02 * self.steps) if self.warmup is None else self.warmup

    @property
    def views_per_step(self) -> int:
        """Positions embedded in one global step (SupCon: each anchor brings ``positives``)."""
        if self.objective == "regression":
            return self.batch_size
        return self.batch_size * (1 + self.positives)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (paths as strings, the encoder as its own dict)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["model"] = self.model.to_dict()
        for name in ("data", "out", "cache_dir", "init_ft"):
            data[name] = None if data[name] is None else str(data[name])
        return data

    def resume_differences(self, saved: dict[str, Any]) -> list[str]:
        """Settings that differ from a checkpoint's config in a way that changes the run.

        ``steps`` may grow or shrink under the constant schedule (it does not shape the learning
        rate then); under the cosine schedule it sets the decay and must match.
        """
        from latentchess.training.checkpoint import config_differences

        ignore = set(_RESUMABLE_CHANGES)
        # Checkpoints written before a setting existed ran with its default.
        saved = {**_defaults(type(self)), **saved}
        if isinstance(saved.get("model"), dict):
            family = encoder_config_class(saved["model"].get("kind"))
            saved["model"] = {**_defaults(family), **saved["model"]}
        if self.schedule == "constant" and saved.get("schedule") == "constant":
            ignore.add("steps")
        return config_differences(saved, self.to_dict(), ignore=ignore)


def _defaults(cls: type) -> dict[str, Any]:
    """The dataclass fields of ``cls`` that have a plain default, with it."""
    return {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


def _default_model() -> AnyEncoderConfig:
    return dataclasses.replace(get_config("tiny"), dropout=0.0)


def lr_factor(step: int, *, steps: int, warmup: int, schedule: str) -> float:
    """Multiplier of the peak learning rate at (0-based) ``step``.

    Linear warm-up over ``warmup`` steps to 1, then 1 (``constant``) or a half cosine from 1 at
    the end of warm-up down to 0 at ``steps`` (``cosine``).
    """
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, steps - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
