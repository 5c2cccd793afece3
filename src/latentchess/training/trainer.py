"""The training loop: SupCon on win-probability positives (paper section 3.3), resumable, DDP.

One step: take ``batch_size`` anchors (global over ranks), sample ``positives`` views of each within
``delta`` (:class:`~latentchess.training.positives.PositiveSampler`), embed this rank's slice of the
views, all-gather the embeddings of every rank, and take an SGD step on the SupCon loss of the
whole global batch (:func:`~latentchess.training.losses.supcon_loss`). Rank 0 logs, evaluates and
checkpoints. At the end the advantage axis and the score calibration are computed and the model is
written with :func:`latentchess.models.save_model`.

Run directory (``TrainConfig.out``)::

    config.json          the TrainConfig of the run
    metrics.jsonl        {"kind": "train" | "eval" | "final" | "start", "step": ..., ...} per line
    checkpoints/last.pt  the latest checkpoint (a rerun of the same command resumes from it)
    model/               the trained model (config.json + model.safetensors)
    training.png         loss and held-out metric curves
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.nn.parallel import DistributedDataParallel

from latentchess.errors import LatentChessError
from latentchess.models import save_model
from latentchess.models.gab_encoder import build_encoder
from latentchess.provenance import git_commit as _git_commit
from latentchess.training.axis import (
    advantage_axis,
    fit_calibration,
    select_axis_positions,
)
from latentchess.training.checkpoint import CHECKPOINT_FILE, load_checkpoint, save_checkpoint
from latentchess.training.config import TrainConfig, lr_factor
from latentchess.training.curves import MetricsLog, plot_training_curves
from latentchess.training.data import (
    AnchorOrder,
    label_fingerprint,
    open_training_data,
    split_holdout,
    step_rng,
)
from latentchess.training.distributed import DistContext, init_distributed
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

__all__ = ["TrainResult", "train"]

_STREAM_EVAL = 10  # step_rng streams of the evaluation draws (see training.data)
_STREAM_TORCH = 11


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

    A checkpoint in ``cfg.out/checkpoints`` is resumed automatically; a config that differs from
    the checkpoint's in a setting that matters is refused. SIGINT and SIGTERM end the run after the
    current step with a checkpoint. Under ``torchrun`` the run is data-parallel.

    Args:
        cfg: the run's configuration.
        on_step: called with the step count after every optimiser step (tests, instrumentation).

    Raises:
        LatentChessError: unusable data, or a checkpoint from an incompatible config.
    """
    ctx = init_distributed(cfg.device)
    try:
        return _Run(cfg, ctx).execute(on_step)
    finally:
        ctx.close()


class _Run:
    """State of one invocation; :meth:`execute` is the whole run."""

    def __init__(self, cfg: TrainConfig, ctx: DistContext) -> None:
        self.cfg, self.ctx = cfg, ctx
        if cfg.batch_size % ctx.world_size:
            raise LatentChessError(
                f"batch size {cfg.batch_size} is not divisible by the {ctx.world_size} ranks"
            )
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        self.device = ctx.device
        self.out = cfg.out
        self.checkpoint_path = self.out / "checkpoints" / CHECKPOINT_FILE
        self.log = MetricsLog(self.out / "metrics.jsonl")
        if ctx.is_main:
            self.out.mkdir(parents=True, exist_ok=True)
        self._load_data()
        self.precision, self.precision_record = self._resolve_precision()
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        self.encoder = build_encoder(cfg.model).to(self.device)
        self.model: torch.nn.Module = self.encoder
        if ctx.distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.model = DistributedDataParallel(self.encoder, device_ids=ids)
        self.optimizer = torch.optim.SGD(
            self.encoder.parameters(),
            lr=cfg.lr,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
        )
        warmup = cfg.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda s: lr_factor(s, steps=cfg.steps, warmup=warmup, schedule=cfg.schedule),
        )
        self._seed_dropout(0)
        self.step = 0
        self.elapsed = 0.0  # training seconds over all invocations
        self._signal: int | None = None

    # -- data -----------------------------------------------------------------------------

    def _load_data(self) -> None:
        cfg, ctx = self.cfg, self.ctx
        cache_dir = cfg.cache_dir or self.out / "cache"
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
        cache = self.out / PROBE_FILE
        if ctx.is_main:
            decided = training_precision(cfg.precision, self.device, cfg.model, tokens, cache)
        ctx.barrier()
        if not ctx.is_main:
            decided = training_precision(cfg.precision, self.device, cfg.model, tokens, cache)
        return decided

    def _tokens(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        return np.asarray(self.cache.tokens[rows])  # (n, 77) random access into the memmap

    def _data_summary(self) -> dict[str, Any]:
        return {
            "path": str(self.cfg.data),
            "rows": int(len(self.split.train) + len(self.split.holdout)),
            "train_rows": len(self.split.train),
            "holdout_rows": len(self.split.holdout),
            "label_fingerprint": self.fingerprint,
            "cache_meta": {k: v for k, v in self.cache.meta.items() if k != "rows"},
        }

    # -- state ----------------------------------------------------------------------------

    def _seed_dropout(self, step: int) -> None:
        seed_words = np.random.SeedSequence([self.cfg.seed, _STREAM_TORCH, self.ctx.rank, step])
        torch.manual_seed(int(seed_words.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)))

    def _rng_state(self) -> dict[str, torch.Tensor]:
        state = {"cpu": torch.get_rng_state()}
        if self.device.type == "cuda":
            state["cuda"] = torch.cuda.get_rng_state(self.device)
        return state

    def _save(self) -> None:
        rng_states = self.ctx.gather_objects(self._rng_state())  # collective: every rank
        if not self.ctx.is_main:
            return
        save_checkpoint(
            self.checkpoint_path,
            {
                "step": self.step,
                "model": self.encoder.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "rng": rng_states,
                "elapsed_s": self.elapsed,
                "config": self.cfg.to_dict(),
                "data_fingerprint": self.fingerprint,
                "world_size": self.ctx.world_size,
            },
        )

    def _resume(self) -> int | None:
        if not self.checkpoint_path.exists():
            return None
        state = load_checkpoint(self.checkpoint_path)
        differences = self.cfg.resume_differences(state["config"])
        if differences:
            raise LatentChessError(
                f"{self.checkpoint_path} was written by a run with other settings; use another "
                "--out or restore them:\n  " + "\n  ".join(differences)
            )
        if state["data_fingerprint"] != self.fingerprint:
            raise LatentChessError(
                f"{self.checkpoint_path} was trained on other data (label fingerprint "
                f"{state['data_fingerprint']!r}, now {self.fingerprint!r})"
            )
        self.encoder.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed_s"])
        rng = state["rng"]
        if len(rng) == self.ctx.world_size:
            torch.set_rng_state(rng[self.ctx.rank]["cpu"])
            if self.device.type == "cuda" and "cuda" in rng[self.ctx.rank]:
                torch.cuda.set_rng_state(rng[self.ctx.rank]["cuda"], self.device)
        else:  # a different number of ranks: dropout streams cannot continue, reseed them
            if self.ctx.is_main:
                print(
                    f"note: checkpoint from {len(rng)} ranks resumed on {self.ctx.world_size}; "
                    "dropout random streams are reseeded",
                    file=sys.stderr,
                )
            self._seed_dropout(self.step)
        return self.step

    @contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGINT/SIGTERM request a stop after the current step; a second SIGINT aborts."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: FrameType | None) -> None:
            if self._signal is not None and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self._signal = signum

        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, old in previous.items():
                signal.signal(s, old)

    # -- the run --------------------------------------------------------------------------

    def execute(self, on_step: Callable[[int], None] | None) -> TrainResult:
        cfg, ctx = self.cfg, self.ctx
        started = time.monotonic()
        resumed = self._resume()
        if ctx.is_main:
            if resumed is None:
                # A fresh run: drop records of an attempt killed before its first checkpoint.
                self.log.path.unlink(missing_ok=True)
            self.log.truncate_after(self.step)
            (self.out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
            self.log.write(
                {
                    "kind": "start",
                    "step": self.step,
                    "resumed": resumed is not None,
                    "world_size": ctx.world_size,
                    "device": str(self.device),
                    "precision": self.precision,
                    "precision_decision": self.precision_record,
                    "threads": torch.get_num_threads(),
                    "data": self._data_summary(),
                }
            )
            self._prepare_eval()
        model_dir = self.out / "model"
        if self.step >= cfg.steps and (model_dir / "config.json").exists():  # nothing left to do
            stored = json.loads((model_dir / "config.json").read_text()).get("metrics", {})
            main_dir = model_dir if ctx.is_main else None
            return self._result("completed", main_dir, resumed, started, stored)
        stop = "completed"
        with self._signals():
            if ctx.is_main and self.step == 0 and cfg.eval_every:
                self._evaluate()
            stop = self._loop(started, on_step)
        self._check_ranks_in_sync()
        if stop == "signal":
            return self._result(stop, None, resumed, started)
        metrics: dict[str, float] = {}
        if ctx.is_main:
            metrics = self._finish(model_dir)
        return self._result(stop, model_dir if ctx.is_main else None, resumed, started, metrics)

    def _result(
        self,
        stop: str,
        model_dir: Path | None,
        resumed: int | None,
        started: float,
        metrics: dict[str, float] | None = None,
    ) -> TrainResult:
        return TrainResult(
            out=self.out,
            step=self.step,
            stop_reason=stop,
            model_dir=model_dir,
            resumed_from=resumed,
            metrics=metrics or {},
            seconds=time.monotonic() - started,
            precision=self.precision,
            device=str(self.device),
        )

    def _loop(self, started: float, on_step: Callable[[int], None] | None) -> str:
        cfg, ctx = self.cfg, self.ctx
        bar = None
        if ctx.is_main and cfg.progress:
            from tqdm import tqdm

            bar = tqdm(
                total=cfg.steps, initial=self.step, unit="step", desc="train", dynamic_ncols=True
            )
        window_loss, window_steps, window_seconds = 0.0, 0, 0.0
        self.model.train()
        try:
            while self.step < cfg.steps:
                tick = time.monotonic()
                loss = self._train_step()
                self.step += 1
                seconds = time.monotonic() - tick
                self.elapsed += seconds
                window_loss, window_steps = window_loss + loss, window_steps + 1
                window_seconds += seconds
                if on_step is not None:
                    on_step(self.step)
                out_of_time = (
                    cfg.max_minutes is not None
                    and time.monotonic() - started > 60.0 * cfg.max_minutes
                )
                signalled = ctx.any(self._signal is not None)
                out_of_time = ctx.any(out_of_time)
                if window_steps == cfg.log_every or signalled or out_of_time:
                    rate = window_steps * cfg.views_per_step / max(window_seconds, 1e-9)
                    record = {
                        "kind": "train",
                        "step": self.step,
                        "loss": window_loss / window_steps,
                        "lr": self.scheduler.get_last_lr()[0],
                        "views_per_s": rate,
                        "elapsed_s": self.elapsed,
                    }
                    if ctx.is_main:
                        self.log.write(record)
                    if bar is not None:
                        bar.set_postfix(loss=f"{record['loss']:.4f}", views_s=f"{rate:.0f}")
                    window_loss, window_steps, window_seconds = 0.0, 0, 0.0
                if bar is not None:
                    bar.update(1)
                if ctx.is_main and cfg.eval_every and self.step % cfg.eval_every == 0:
                    self._evaluate()
                finished = self.step >= cfg.steps
                if self.step % cfg.checkpoint_every == 0 or signalled or out_of_time or finished:
                    self._save()
                if signalled:
                    return "signal"
                if out_of_time:
                    return "time_budget"
        finally:
            if bar is not None:
                bar.close()
        return "completed"

    def _train_step(self) -> float:
        """One optimiser step on the global batch of ``self.step``; returns the loss."""
        cfg, ctx = self.cfg, self.ctx
        anchors = self.order.anchors(self.step)  # (B,)
        positives = self.sampler.sample(anchors, cfg.positives, self.order.positives_rng(self.step))
        views = np.concatenate([anchors[:, None], positives], axis=1).reshape(-1)  # (B * (1+P),)
        # Anchor-major order: rank r embeds a contiguous slice, so the all-gathered embeddings
        # line up with `views` and the loss is that of a single process on the same batch.
        share = len(views) // ctx.world_size
        mine = views[ctx.rank * share : (ctx.rank + 1) * share]
        tokens = torch.from_numpy(self._tokens(self.split.train[mine])).to(self.device)
        labels = torch.from_numpy(self.train_labels[views]).to(self.device)  # (B * (1+P),)
        with autocast(self.device, self.precision):
            local = self.model(tokens)  # (share, D)
        loss = supcon_loss(
            ctx.gather(local.float()), labels, delta=cfg.delta, temperature=cfg.temperature
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        return float(loss.detach())

    def _check_ranks_in_sync(self) -> None:
        """Every rank must hold bit-identical weights; rank 0 logs the hashes, a mismatch fails."""
        if not self.ctx.distributed:
            return
        digest = hashlib.sha256()
        for tensor in self.encoder.state_dict().values():
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        hashes = self.ctx.gather_objects(digest.hexdigest())
        if self.ctx.is_main:
            self.log.write({"kind": "sync", "step": self.step, "weights_sha256": hashes})
        if len(set(hashes)) != 1:
            raise LatentChessError(f"ranks diverged at step {self.step}: weight hashes {hashes}")

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
        self.eval_batches = []
        for b in range(n_batches):
            batch = anchors[b * cfg.batch_size : (b + 1) * cfg.batch_size]
            if len(batch) < 2:
                break
            pos = holdout_sampler.sample(batch, cfg.positives, rng)
            self.eval_batches.append(np.concatenate([batch[:, None], pos], axis=1).reshape(-1))
        self.eval_axis = select_axis_positions(
            self.train_labels, max_per_side=cfg.eval_axis_per_side, seed=cfg.seed
        )

    def _heldout_scores(
        self,
        axis_selection: Any,
        holdout_index: npt.NDArray[np.int64],
        loss_batches: list[npt.NDArray[np.int64]],
    ) -> tuple[dict[str, float], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Axis, held-out loss, Spearman and pair accuracy; also (axis, held-out cosines)."""
        cfg = self.cfg

        def embed(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
            return embed_tokens(
                self.encoder, self._tokens(rows), device=self.device, precision=self.precision
            )

        train_rows = self.split.train
        axis = advantage_axis(
            embed(train_rows[axis_selection.white]), embed(train_rows[axis_selection.black])
        )
        needed = np.unique(np.concatenate([holdout_index, *loss_batches]))
        z = embed(self.split.holdout[needed])  # (n, D)
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

    def _evaluate(self) -> dict[str, float]:
        tick = time.monotonic()
        metrics, _, _ = self._heldout_scores(self.eval_axis, self.eval_index, self.eval_batches)
        record = {"kind": "eval", "step": self.step, **metrics}
        record["eval_seconds"] = time.monotonic() - tick
        self.log.write(record)
        return metrics

    def _finish(self, model_dir: Path) -> dict[str, float]:
        """Final axis, full held-out metrics, calibration; write the model and the curves."""
        cfg = self.cfg
        tick = time.monotonic()
        selection = select_axis_positions(
            self.train_labels, max_per_side=cfg.axis_per_side, seed=cfg.seed
        )
        everything = np.arange(len(self.split.holdout))
        metrics, axis, cos = self._heldout_scores(selection, everything, self.eval_batches)
        calibration = fit_calibration(cos, self.holdout_labels)
        metrics["calibration_log_loss"] = calibration["log_loss"]
        metrics["step"] = self.step
        training = {
            **cfg.to_dict(),
            "steps_done": self.step,
            "train_seconds": self.elapsed,
            "world_size": self.ctx.world_size,
            "device": str(self.device),
            "precision_used": self.precision,
            "precision_decision": self.precision_record,
            "data": self._data_summary(),
            "git_commit": _git_commit(),
            "torch": torch.__version__,
        }
        save_model(
            model_dir,
            self.encoder,
            axis=axis,
            metadata={
                "axis_counts": selection.counts(),
                "calibration": calibration,
                "training": training,
                "metrics": metrics,
            },
        )
        self.log.write({"kind": "final", **metrics, "final_seconds": time.monotonic() - tick})
        plot_training_curves(self.log.path, self.out / "training.png")
        return metrics
