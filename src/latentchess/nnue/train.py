"""NNUE training: target-score loss or PQR, resumable, DDP, on a feature cache.

This is a second training loop beside :mod:`latentchess.training.trainer` (the SupCon loop, whose
step, evaluation and model writing are SupCon-specific). It reuses that package's shared machinery
instead of copying it: atomic pickle-free checkpoints (:mod:`latentchess.training.checkpoint`),
the metrics log (:mod:`latentchess.training.curves`) and the ``torchrun`` process-group plumbing
(:mod:`latentchess.training.distributed`).

Losses (Lombardo 2024; scores in centipawns, side to move's view):
    target score: ``mean(|sigmoid(out / 361) - sigmoid(target / 410)|^2.6)``
    PQR: with ``w(x) = 2 sigmoid(x / 361) - 1``, p, q, r = w(f(P)), w(f(Q)), w(f(R)):
    ``mean(-log sigmoid(r - q) - log sigmoid(p + q) - log sigmoid(-(p + q)))``

Optimiser: Adam (lr 5e-4), StepLR gamma 0.99 per epoch (``epoch_positions`` samples), batch 16384,
the L2 weights clipped to +-127/64 after every step (int8 at scale 64).
"""

from __future__ import annotations

import json
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel

from latentchess.errors import LatentChessError
from latentchess.nnue.dataset import FeatureCache, Source, build_cache, open_cache
from latentchess.nnue.features import parse_feature_set
from latentchess.nnue.io import load_nnue, save_nnue
from latentchess.nnue.model import Nnue, NnueConfig
from latentchess.provenance import git_commit
from latentchess.training.checkpoint import CHECKPOINT_FILE, load_checkpoint, save_checkpoint
from latentchess.training.curves import MetricsLog, read_metrics
from latentchess.training.distributed import DistContext, init_distributed

__all__ = [
    "NnueTrainConfig",
    "NnueTrainResult",
    "train_nnue",
    "export_checkpoint",
    "score_loss",
    "pqr_loss",
    "parameter_groups",
]

SCORE_SCALE_OUT = 361.0
SCORE_SCALE_TARGET = 410.0
LOSS_POWER = 2.6


def score_loss(out: Tensor, target: Tensor) -> Tensor:
    """Target-score loss in WDL space (thesis): mean |sigma(out/361) - sigma(target/410)|^2.6."""
    diff = torch.sigmoid(out / SCORE_SCALE_OUT) - torch.sigmoid(target / SCORE_SCALE_TARGET)
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
        data: labelled CSV sources (``PATH[:ROWS[:EVERY]]`` specs).
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
    progress: bool = True
    command: str = ""

    def __post_init__(self) -> None:
        if self.loss not in ("score", "pqr"):
            raise LatentChessError(f"unknown loss {self.loss!r}; expected 'score' or 'pqr'")
        if not self.data:
            raise LatentChessError("no training data given")
        if self.batch_size < 1 or self.steps < 1 or not 0 < self.holdout_fraction < 1:
            raise LatentChessError("batch size and steps must be >= 1, holdout in (0, 1)")
        if not 0.0 < self.dense_lr_scale <= 1.0:
            raise LatentChessError(
                f"dense_lr_scale must lie in (0, 1], got {self.dense_lr_scale!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"], d["network"] = str(self.out), self.network.to_dict()
        d["cache"] = None if self.cache is None else str(self.cache)
        d["init"] = None if self.init is None else str(self.init)
        d["data"] = list(self.data)
        return d


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


@dataclass(frozen=True)
class NnueTrainResult:
    """Outcome of :func:`train_nnue`."""

    out: Path
    step: int
    stop_reason: str
    model_dir: Path | None
    metrics: dict[str, float]
    seconds: float


def _split(
    n: int, fraction: float, maximum: int, seed: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
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


class _Run:
    def __init__(self, cfg: NnueTrainConfig, ctx: DistContext) -> None:
        self.cfg, self.ctx = cfg, ctx
        if cfg.batch_size % ctx.world_size:
            raise LatentChessError(
                f"batch {cfg.batch_size} not divisible by {ctx.world_size} ranks"
            )
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        self.device = ctx.device
        self.log = MetricsLog(cfg.out / "metrics.jsonl")
        self.ckpt = cfg.out / "checkpoints" / CHECKPOINT_FILE
        cache_dir = cfg.cache or cfg.out / "cache"
        fs = parse_feature_set(cfg.network.feature_set)
        if ctx.is_main:
            cfg.out.mkdir(parents=True, exist_ok=True)
            sources = [_source(s) for s in cfg.data]
            build_cache(sources, cache_dir, fs, pqr=cfg.loss == "pqr", progress=cfg.progress)
        ctx.barrier()
        self.cache: FeatureCache = open_cache(cache_dir)
        self.train_rows, self.hold_rows = _split(
            len(self.cache), cfg.holdout_fraction, cfg.holdout_max, cfg.seed
        )
        torch.manual_seed(cfg.seed)
        self.net = Nnue(cfg.network).to(self.device)
        if cfg.init is not None:
            loaded = load_nnue(cfg.init)
            if loaded.network.cfg != cfg.network:
                raise LatentChessError(f"--init {str(cfg.init)!r} has shape {loaded.network.cfg}")
            self.net.load_state_dict(loaded.network.state_dict())
        self.model: torch.nn.Module = self.net
        if ctx.distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.model = DistributedDataParallel(self.net, device_ids=ids)
        self.opt = torch.optim.Adam(
            parameter_groups(self.net, cfg.lr, cfg.dense_lr_scale), lr=cfg.lr
        )
        self.sched = torch.optim.lr_scheduler.ExponentialLR(self.opt, gamma=cfg.gamma)
        self.epoch_positions = cfg.epoch_positions or len(self.train_rows)
        self.step, self.elapsed, self.positions = 0, 0.0, 0
        self._signal: int | None = None

    # -- data -----------------------------------------------------------------------------
    def _batch_rows(self, step: int) -> npt.NDArray[np.int64]:
        """This rank's rows of the global batch of ``step`` (an epoch-wise permutation)."""
        cfg, n = self.cfg, len(self.train_rows)
        start = step * cfg.batch_size
        out = []
        while len(out) < cfg.batch_size:
            epoch, offset = divmod(start + len(out), n)
            perm = np.random.default_rng([cfg.seed, 11, epoch]).permutation(n)
            out.extend(perm[offset : offset + cfg.batch_size - len(out)].tolist())
        rows = self.train_rows[np.asarray(out)]
        share = cfg.batch_size // self.ctx.world_size
        return np.sort(rows[self.ctx.rank * share : (self.ctx.rank + 1) * share])

    def _tensors(self, rows: npt.NDArray[np.int64]) -> tuple[Tensor, ...]:
        feats = torch.from_numpy(np.asarray(self.cache.features[rows], dtype=np.int64))
        stm = torch.from_numpy(np.asarray(self.cache.stm[rows], dtype=np.int64))
        score = torch.from_numpy(np.asarray(self.cache.score[rows], dtype=np.float32))
        d = self.device
        return feats[:, 0].to(d), feats[:, 1].to(d), stm.to(d), score.to(d)

    def _loss(self, rows: npt.NDArray[np.int64], model: torch.nn.Module) -> Tensor:
        white, black, stm, score = self._tensors(rows)
        out_p = model(white, black, stm)
        if self.cfg.loss == "score":
            return score_loss(out_p, score)
        assert self.cache.pqr is not None
        pqr = torch.from_numpy(np.asarray(self.cache.pqr[rows], dtype=np.int64)).to(self.device)
        other = 1 - stm  # Q and R: the other side to move
        out_q = model(pqr[:, 0, 0], pqr[:, 0, 1], other)
        out_r = model(pqr[:, 1, 0], pqr[:, 1, 1], other)
        return pqr_loss(out_p, out_q, out_r)

    @torch.no_grad()
    def _validate(self) -> dict[str, float]:
        self.net.eval()
        losses, weights = [], []
        for start in range(0, len(self.hold_rows), 8192):
            rows = self.hold_rows[start : start + 8192]
            losses.append(float(self._loss(rows, self.net)))
            weights.append(len(rows))
        w, b, s, _ = self._tensors(self.hold_rows[:8192])
        live = self.net.live_units(w, b, s)
        self.net.train()
        result = {"val_loss": float(np.average(losses, weights=weights)), "live_l2_units": live}
        if self.cfg.loss == "pqr":  # the target-score loss too: comparable across methods
            result["val_score_loss"] = self._score_loss_holdout()
        return result

    @torch.no_grad()
    def _score_loss_holdout(self) -> float:
        total, count = 0.0, 0
        for start in range(0, len(self.hold_rows), 8192):
            w, b, s, sc = self._tensors(self.hold_rows[start : start + 8192])
            total += float(score_loss(self.net(w, b, s), sc)) * len(sc)
            count += len(sc)
        return total / count

    # -- state ----------------------------------------------------------------------------
    def _save(self) -> None:
        if not self.ctx.is_main:
            return
        save_checkpoint(
            self.ckpt,
            {
                "step": self.step,
                "model": self.net.state_dict(),
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "elapsed_s": self.elapsed,
                "positions": self.positions,
                "config": self.cfg.to_dict(),
            },
        )

    def _resume(self) -> bool:
        if not self.ckpt.exists():
            return False
        state = load_checkpoint(self.ckpt)
        saved, now = dict(state["config"]), self.cfg.to_dict()
        # Checkpoints written before a network option existed hold its default.
        saved["network"] = NnueConfig.from_dict(saved["network"]).to_dict()
        saved.setdefault("dense_lr_scale", 1.0)
        diffs = [
            k
            for k in set(saved) | set(now)
            if k not in _RESUME_IGNORED and saved.get(k) != now.get(k)
        ]
        if diffs:
            raise LatentChessError(
                f"{str(self.ckpt)!r} was written with other settings: {sorted(diffs)}"
            )
        self.net.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed_s"])
        self.positions = int(state["positions"])
        return True

    @contextmanager
    def _signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: object) -> None:
            self._signal = signum

        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, old in previous.items():
                signal.signal(s, old)

    # -- the run --------------------------------------------------------------------------
    def execute(self) -> NnueTrainResult:
        cfg, ctx = self.cfg, self.ctx
        started = time.monotonic()
        resumed = self._resume()
        if ctx.is_main:
            if not resumed:
                self.log.path.unlink(missing_ok=True)
            self.log.truncate_after(self.step)
            (cfg.out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
            self.log.write(
                {
                    "kind": "start",
                    "step": self.step,
                    "resumed": resumed,
                    "device": str(self.device),
                    "threads": torch.get_num_threads(),
                    "world_size": ctx.world_size,
                    "train_rows": len(self.train_rows),
                    "holdout_rows": len(self.hold_rows),
                }
            )
        stop = "completed"
        window: list[float] = []
        window_time, tick_all = 0.0, time.monotonic()
        with self._signals():
            while self.step < cfg.steps:
                tick = time.monotonic()
                loss = self._loss(self._batch_rows(self.step), self.model)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                self.net.clip_weights()
                before = self.positions // self.epoch_positions
                self.step += 1
                self.positions += cfg.batch_size
                if self.positions // self.epoch_positions > before:
                    self.sched.step()
                seconds = time.monotonic() - tick
                self.elapsed += seconds
                window.append(float(loss.detach()))
                window_time += seconds
                signalled = ctx.any(self._signal is not None)
                out_of_time = ctx.any(
                    cfg.max_minutes is not None
                    and time.monotonic() - started > 60 * cfg.max_minutes
                )
                if ctx.is_main and (len(window) == cfg.log_every or signalled or out_of_time):
                    rate = len(window) * cfg.batch_size / max(window_time, 1e-9)
                    self.log.write(
                        {
                            "kind": "train",
                            "step": self.step,
                            "loss": float(np.mean(window)),
                            "lr": self.sched.get_last_lr()[0],
                            "positions_per_s": rate,
                            "positions": self.positions,
                            "elapsed_s": self.elapsed,
                        }
                    )
                    if cfg.progress:
                        eta = (cfg.steps - self.step) * window_time / len(window)
                        print(
                            f"nnue train: step {self.step}/{cfg.steps} loss {np.mean(window):.6f} "
                            f"{rate:.0f} positions/s ETA {eta / 60:.1f} min",
                            flush=True,
                        )
                    window, window_time = [], 0.0
                if ctx.is_main and cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.log.write({"kind": "eval", "step": self.step, **self._validate()})
                finished = self.step >= cfg.steps
                if self.step % cfg.checkpoint_every == 0 or signalled or out_of_time or finished:
                    self._save()
                if signalled:
                    stop = "signal"
                    break
                if out_of_time:
                    stop = "time_budget"
                    break
        del tick_all
        if stop == "signal" or not ctx.is_main:
            return NnueTrainResult(cfg.out, self.step, stop, None, {}, time.monotonic() - started)
        metrics = {"step": self.step, **self._validate(), "positions_seen": self.positions}
        self.log.write({"kind": "final", **metrics})
        model_dir = cfg.out / "model"
        save_nnue(
            model_dir,
            self.net,
            {
                "training": {
                    **cfg.to_dict(),
                    "train_seconds": self.elapsed,
                    "git_commit": git_commit(),
                    "torch": torch.__version__,
                    "world_size": ctx.world_size,
                },
                "data": {
                    **{k: v for k, v in self.cache.meta.items()},
                    "train_rows": len(self.train_rows),
                    "holdout_rows": len(self.hold_rows),
                },
                "metrics": metrics,
                "command": cfg.command,
            },
        )
        _plot(self.log.path, cfg.out / "training.png")
        return NnueTrainResult(
            cfg.out, self.step, stop, model_dir, metrics, time.monotonic() - started
        )


def _source(spec: str) -> Source:
    from latentchess.nnue.dataset import parse_source

    return parse_source(spec)


def _plot(metrics: Path, png: Path) -> None:
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


def train_nnue(cfg: NnueTrainConfig) -> NnueTrainResult:
    """Train (or resume) an NNUE as ``cfg`` says; writes ``cfg.out/model``."""
    ctx = init_distributed(cfg.device)
    try:
        return _Run(cfg, ctx).execute()
    finally:
        ctx.close()


def export_checkpoint(run: str | Path, model_dir: str | Path | None = None) -> Path:
    """Write the model of a run's last checkpoint (e.g. of a run still going or stopped early).

    The metadata says it is an export at the checkpoint's step; the validation metrics are those
    of the last evaluation logged before it.
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
    meta = open_cache(cache_dir).meta
    metrics: dict[str, Any] = {"step": int(state["step"]), "positions_seen": state["positions"]}
    if evals:
        metrics["last_logged_eval"] = evals[-1]
    cache = open_cache(cache_dir)
    _, hold = _split(len(cache), config["holdout_fraction"], config["holdout_max"], config["seed"])
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
            "data": meta,
            "metrics": metrics,
            "command": config.get("command", ""),
        },
    )
    _plot(run / "metrics.jsonl", run / "training.png")
    return out


def command_line() -> str:
    """The current process's command line, for the model's provenance."""
    return shlex.join(sys.argv)
