"""NNUE training pieces: the losses, the run's settings, Adam's parameter groups, checkpoint export.

The training itself is an objective of the shared loop (``latentchess train nnue``;
:mod:`latentchess.training.objectives.nnue` on :mod:`latentchess.training.loop`, which does
resume, checkpoints, signals, progress, the metrics log and DDP for every objective).

Losses (Lombardo 2024; scores in centipawns, side to move's view):
    target score: ``mean(|sigmoid(out / 361) - t|^2.6)`` with the target
    ``t = lambda * sigmoid(score / 410) + (1 - lambda) * result`` (result 1 / 0.5 / 0 for a won /
    drawn / lost game, side to move's view; nnue-pytorch's ``lambda``; 1, the default, is the
    score alone, and rows without a result, such as CSV labels, always use the score alone)
    PQR: with ``w(x) = 2 sigmoid(x / 361) - 1``, p, q, r = w(f(P)), w(f(Q)), w(f(R)):
    ``mean(-log sigmoid(r - q) - log sigmoid(p + q) - log sigmoid(-(p + q)))``

Optimiser: Adam (lr 5e-4), StepLR gamma 0.99 per epoch (``epoch_positions`` samples), batch 16384,
the L2 weights clipped to +-127/64 after every step (int8 at scale 64). With a sparse first-layer
update (``sparse_features``; the default for a set with a threat block) the feature tables get
sparse gradients and a lazy Adam (:class:`SparseFeatureAdam`): only the rows a batch touches move.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from latentchess.errors import LatentChessError
from latentchess.nnue.dataset import open_cache
from latentchess.nnue.io import save_nnue
from latentchess.nnue.model import Nnue, NnueConfig
from latentchess.provenance import git_commit
from latentchess.training.checkpoint import CHECKPOINT_FILE, load_checkpoint
from latentchess.training.curves import read_metrics

__all__ = [
    "NnueTrainConfig",
    "export_checkpoint",
    "score_loss",
    "pqr_loss",
    "parameter_groups",
    "SparseFeatureAdam",
    "make_optimizer",
    "epoch_boundary",
    "holdout_split",
    "plot_nnue_training",
]

SCORE_SCALE_OUT = 361.0
SCORE_SCALE_TARGET = 410.0
LOSS_POWER = 2.6


def score_loss(
    out: Tensor, target: Tensor, result: Tensor | None = None, lam: float = 1.0
) -> Tensor:
    """Target-score loss in WDL space (thesis): mean |sigma(out/361) - t|^2.6, where
    ``t = lam * sigma(target/410) + (1 - lam) * result`` (``result`` NaN: ``t`` is the score's)."""
    wanted = torch.sigmoid(target / SCORE_SCALE_TARGET)
    if result is not None and lam != 1.0:
        blend = lam * wanted + (1.0 - lam) * result
        wanted = torch.where(torch.isnan(result), wanted, blend)
    diff = torch.sigmoid(out / SCORE_SCALE_OUT) - wanted
    return diff.abs().pow(LOSS_POWER).mean()


def pqr_loss(p: Tensor, q: Tensor, r: Tensor) -> Tensor:
    """PQR loss on raw centipawn outputs of P, Q (best move) and R (random move)."""
    wp, wq, wr = (2.0 * torch.sigmoid(x / SCORE_SCALE_OUT) - 1.0 for x in (p, q, r))
    logsig = torch.nn.functional.logsigmoid
    return (-logsig(wr - wq) - logsig(wp + wq) - logsig(-(wp + wq))).mean()


@dataclass(frozen=True, kw_only=True)
class NnueTrainConfig:
    """Settings of one NNUE training run (stored in the checkpoint and the model).

    Attributes:
        data: labelled sources, CSV, Parquet or ``.bin`` (``PATH[:ROWS[:EVERY]]`` specs).
        out: run directory.
        cache: feature cache directory (default ``out/cache``).
        network: network shape.
        loss: ``"score"`` or ``"pqr"``.
        init: a model directory to start from (fine-tuning), or ``None``.
        batch_size: global batch.
        lr: Adam learning rate.
        gamma: learning-rate factor per epoch.
        epoch_positions: samples per epoch (``None``: the training split's size).
        steps: optimiser steps.
        max_minutes: stop this invocation after so many minutes (checkpoint + model).
        holdout_fraction: share of the rows held out for validation.
        holdout_max: at most this many held-out rows.
        eval_every: steps between validation passes.
        checkpoint_every: steps between checkpoints.
        log_every: steps per train-loss record.
        threads: torch threads (``None``: torch's default).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N``.
        seed: data order and initial weights.
        score_lambda: ``lambda``, the search score's weight in the target against the game
            result (1: the score alone; rows without a result always use the score alone).
        sparse_features: the first-layer update: ``True`` sparse (the feature tables, the
            first layer's and the psqt term's, get sparse gradients and the lazy Adam of
            :class:`SparseFeatureAdam`: a step moves only the rows its batch touches), ``False``
            dense (plain Adam on every row), ``None`` (default) sparse exactly when the set has
            a threat block. Sparse and dense runs differ (see :class:`SparseFeatureAdam`); one
            process only (several ranks refuse it).
        dense_lr_scale: the learning-rate factor of the two dense layers (L2 and output). Their
            fan-in is 2 x L1, so one Adam step at the feature layer's rate moves a unit by about
            L1 x lr: at 2e-3 most L2 units left (0, 1) for good within ten steps (measured: 4 of
            32 live after 10 steps, 1 after 20; at a factor of 0.1, 13 and 12).
        progress: progress output.
        command: the command line that started the run (stored in the model).
    """

    data: tuple[str, ...]
    out: Path
    cache: Path | None = None
    network: NnueConfig = field(default_factory=NnueConfig)
    loss: str = "score"
    init: Path | None = None
    batch_size: int = 16384
    lr: float = 5e-4
    gamma: float = 0.99
    epoch_positions: int | None = None
    steps: int = 1000
    max_minutes: float | None = None
    holdout_fraction: float = 0.02
    holdout_max: int = 50_000
    eval_every: int = 200
    checkpoint_every: int = 100
    log_every: int = 20
    threads: int | None = None
    device: str = "auto"
    seed: int = 0
    dense_lr_scale: float = 1.0
    score_lambda: float = 1.0
    sparse_features: bool | None = None
    progress: bool = True
    command: str = ""

    def __post_init__(self) -> None:
        if self.loss not in ("score", "pqr"):
            raise LatentChessError(f"unknown loss {self.loss!r}; expected 'score' or 'pqr'")
        if not self.data:
            raise LatentChessError("no training data given")
        if self.batch_size < 1 or self.steps < 1 or not 0 < self.holdout_fraction < 1:
            raise LatentChessError("batch size and steps must be >= 1, holdout in (0, 1)")
        if not 0.0 <= self.score_lambda <= 1.0:
            raise LatentChessError(f"lambda must lie in [0, 1], got {self.score_lambda!r}")
        if self.score_lambda != 1.0 and self.loss != "score":
            raise LatentChessError("lambda (the game result in the target) needs --loss score")
        if not 0.0 < self.dense_lr_scale < float("inf"):
            # Above 1: the dense layers move faster than the feature transformer (a bucketed
            # fine-tune that keeps the accumulator nearly as it was).
            raise LatentChessError(
                f"dense_lr_scale must be positive and finite, got {self.dense_lr_scale!r}"
            )

    @property
    def sparse_update(self) -> bool:
        """Whether the first layer's update is sparse (``sparse_features`` resolved)."""
        if self.sparse_features is None:
            return self.network.features.threats is not None
        return self.sparse_features

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"], d["network"] = str(self.out), self.network.to_dict()
        d["cache"] = None if self.cache is None else str(self.cache)
        d["init"] = None if self.init is None else str(self.init)
        d["data"] = list(self.data)
        return d

    def resume_differences(self, saved: dict[str, Any]) -> list[str]:
        """Settings that differ from a checkpoint's config in a way that changes the run."""
        saved, now = dict(saved), self.to_dict()
        # Checkpoints written before a network option existed hold its default.
        saved["network"] = NnueConfig.from_dict(saved["network"]).to_dict()
        saved.setdefault("dense_lr_scale", 1.0)
        saved.setdefault("score_lambda", 1.0)
        # Compared as resolved; checkpoints written before the option were dense.
        sparse = saved.get("sparse_features", False)
        if sparse is None:
            sparse = NnueConfig.from_dict(saved["network"]).features.threats is not None
        saved["sparse_features"], now["sparse_features"] = sparse, self.sparse_update
        return [
            f"{key}: {saved.get(key)!r} -> {now.get(key)!r}"
            for key in sorted(set(saved) | set(now))
            if key not in _RESUME_IGNORED and saved.get(key) != now.get(key)
        ]


_RESUME_IGNORED = {
    "steps",
    "max_minutes",
    "eval_every",
    "checkpoint_every",
    "log_every",
    "threads",
    "device",
    "progress",
    "command",
    "cache",
}


def epoch_boundary(step: int, batch_size: int, epoch_positions: int) -> bool:
    """Whether (0-based) step ``step`` ends an epoch of ``epoch_positions`` samples.

    The learning rate decays by ``gamma`` after such steps (samples seen cross a multiple of
    ``epoch_positions``; with a batch larger than an epoch, once per step that crosses one).
    """
    return (step + 1) * batch_size // epoch_positions > step * batch_size // epoch_positions


def holdout_split(
    n: int, fraction: float, maximum: int, seed: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Sorted (training, held-out) row indices of a cache of ``n`` rows."""
    perm = np.random.default_rng([seed, 7]).permutation(n)
    hold = min(maximum, max(1, int(n * fraction)))
    return np.sort(perm[hold:]), np.sort(perm[:hold])


def parameter_groups(net: Nnue, lr: float, dense_lr_scale: float) -> list[dict[str, Any]]:
    """Adam's parameter groups: the dense layers (L2, output) at ``lr * dense_lr_scale``.

    One group when the factor is 1, as in checkpoints written before the option existed.
    """
    if dense_lr_scale == 1.0:
        return [{"params": list(net.parameters())}]
    dense = [*net.l2.parameters(), *net.out.parameters()]
    sparse = [p for p in net.parameters() if all(p is not d for d in dense)]
    return [{"params": sparse}, {"params": dense, "lr": lr * dense_lr_scale}]


class SparseFeatureAdam(torch.optim.Optimizer):
    """Adam for the dense parameters and ``torch.optim.SparseAdam`` for the feature tables.

    One optimiser for the loop and its learning-rate scheduler: its parameter groups are the
    two inner optimisers' own (the sparse group first), so a scheduler that scales every
    group's rate scales both, and its state dict holds both states (``{"sparse": ...,
    "dense": ...}``), so a checkpoint resumes it exactly.

    The dense parameters follow ``torch.optim.Adam`` bit for bit. The tables' update is
    SparseAdam's *lazy* Adam, not Adam: a step updates the moments and the weights of the rows
    its batch touches only (an untouched row keeps its weights and moments: no decay of its
    moments, no momentum step), with the bias corrections of the step count of the whole table
    and ``eps`` added to the uncorrected ``sqrt(v)``. A row touched by every step moves as under
    Adam apart from where ``eps`` enters; a rarely touched row moves less than under Adam. No
    weight decay (the NNUE runs use none) and no gradient-norm clipping (sparse gradients; the
    NNUE runs clip none): the weight clipping after each step
    (:meth:`~latentchess.nnue.model.Nnue.clip_weights`) is unchanged.
    """

    def __init__(self, sparse: list[Tensor], dense: list[dict[str, Any]], lr: float) -> None:
        self.sparse = torch.optim.SparseAdam(sparse, lr=lr)
        self.dense = torch.optim.Adam(dense, lr=lr)
        super().__init__(self._groups(), {"lr": lr})

    def _groups(self) -> list[dict[str, Any]]:
        return [*self.sparse.param_groups, *self.dense.param_groups]

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        if closure is not None:
            raise LatentChessError("SparseFeatureAdam takes no closure")
        self.sparse.step()
        self.dense.step()

    def state_dict(self) -> dict[str, Any]:
        return {"sparse": self.sparse.state_dict(), "dense": self.dense.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if set(state_dict) != {"sparse", "dense"}:
            raise LatentChessError(
                "the checkpoint holds a dense Adam's state: resume it with a dense first-layer "
                "update (--dense-features), or start a new run"
            )
        self.sparse.load_state_dict(state_dict["sparse"])
        self.dense.load_state_dict(state_dict["dense"])
        self.param_groups = self._groups()  # loading replaced the inner groups


def make_optimizer(
    net: Nnue, lr: float, dense_lr_scale: float, sparse: bool
) -> torch.optim.Optimizer:
    """The run's optimiser: Adam over :func:`parameter_groups`, or with ``sparse`` the feature
    tables (``ft`` and ``psqt``, switched to sparse gradients) under :class:`SparseFeatureAdam`
    and the rest under Adam, the dense layers at ``lr * dense_lr_scale``."""
    groups = parameter_groups(net, lr, dense_lr_scale)
    if not sparse:
        return torch.optim.Adam(groups, lr=lr)
    tables = [net.ft] if net.psqt is None else [net.ft, net.psqt]
    for table in tables:
        table.sparse = True
    weights = [table.weight for table in tables]
    rest = [
        {**group, "params": [p for p in group["params"] if all(p is not w for w in weights)]}
        for group in groups
    ]
    return SparseFeatureAdam(weights, rest, lr)


def plot_nnue_training(metrics: Path, png: Path) -> None:
    """Training and validation loss against the positions seen, from a run's metrics log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics)
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["positions"] for r in train], [r["loss"] for r in train], lw=1, label="train")
    ax.plot(
        [r["step"] * (train[0]["positions"] / train[0]["step"]) if train else 0 for r in evals],
        [r["val_loss"] for r in evals],
        "o-",
        label="validation",
    )
    ax.set(xlabel="positions seen", ylabel="loss", yscale="log", title="NNUE training")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def export_checkpoint(
    run: str | Path, model_dir: str | Path | None = None, *, lean: bool = False
) -> Path:
    """Write the model of a run's last checkpoint (e.g. of a run still going or stopped early).

    The metadata says it is an export at the checkpoint's step; the validation metrics are those
    of the last evaluation logged before it. ``lean``: the quantised tensors only
    (:func:`~latentchess.nnue.io.save_nnue`); the core evaluates it as the full file.
    """
    run = Path(run)
    state = load_checkpoint(run / "checkpoints" / CHECKPOINT_FILE)
    config = state["config"]
    network = Nnue(NnueConfig.from_dict(config["network"]))
    network.load_state_dict(state["model"])
    evals = [
        r
        for r in read_metrics(run / "metrics.jsonl")
        if r.get("kind") == "eval" and r["step"] <= state["step"]
    ]
    cache_dir = Path(config["cache"]) if config.get("cache") else run / "cache"
    cache = open_cache(cache_dir)
    # "positions" is in checkpoints of the NNUE trainer's own loop; it was always step x batch.
    positions = state.get("positions", int(state["step"]) * int(config["batch_size"]))
    metrics: dict[str, Any] = {"step": int(state["step"]), "positions_seen": positions}
    if evals:
        metrics["last_logged_eval"] = evals[-1]
    _, hold = holdout_split(
        len(cache), config["holdout_fraction"], config["holdout_max"], config["seed"]
    )
    network.eval()
    total = 0.0
    with torch.no_grad():  # the held-out target-score loss of exactly these weights
        for start in range(0, len(hold), 8192):
            rows = hold[start : start + 8192]
            feats = torch.from_numpy(np.asarray(cache.features[rows], dtype=np.int64))
            stm = torch.from_numpy(np.asarray(cache.stm[rows], dtype=np.int64))
            score = torch.from_numpy(np.asarray(cache.score[rows], dtype=np.float32))
            total += float(score_loss(network(feats[:, 0], feats[:, 1], stm), score)) * len(rows)
    metrics["val_score_loss" if config["loss"] == "pqr" else "val_loss"] = total / len(hold)
    metrics["holdout_rows"] = len(hold)
    out = Path(model_dir) if model_dir is not None else run / "model"
    save_nnue(
        out,
        network,
        {
            "training": {
                **config,
                "train_seconds": float(state["elapsed_s"]),
                "exported": True,
                "git_commit": git_commit(),
            },
            "data": cache.meta,
            "metrics": metrics,
            "command": config.get("command", ""),
        },
        lean=lean,
    )
    plot_nnue_training(run / "metrics.jsonl", run / "training.png")
    return out


def command_line() -> str:
    """The current process's command as a user would retype it, for the model's provenance:
    ``latentchess`` and the arguments (not the absolute path of the script that started it)."""
    return shlex.join(["latentchess", *sys.argv[1:]])
