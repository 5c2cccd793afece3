"""The objective-agnostic training loop: resume, atomic checkpoints, progress, metrics, DDP.

An :class:`Objective` says what one step computes (its batch, loss and metrics), how to
evaluate and how to export; :func:`run_objective` does everything else. It may bring its own
optimiser and learning-rate scheduler (:meth:`Objective.optimisation`; by default the loop's:
the ``optimizer`` factory with warm-up then ``schedule``) and an after-step hook
(:meth:`Objective.after_step`, e.g. weight clipping), as nnue-pytorch's Lightning module splits
them. Three objectives train through it, each behind ``latentchess train OBJECTIVE``: the SupCon
encoder (:mod:`latentchess.training.objectives.supcon`, entry point
:mod:`latentchess.training.trainer`), the Chessformer
(:mod:`latentchess.training.objectives.chessformer`) and the NNUE
(:mod:`latentchess.training.objectives.nnue`; network and losses in :mod:`latentchess.nnue`).
What the loop does for every one of them:

* a checkpoint in ``out/checkpoints/last.pt`` is resumed automatically (config and data
  fingerprint must match); it is written atomically every ``checkpoint_every`` steps, on a time
  budget, on SIGINT/SIGTERM and at the end; the torch random state of every rank is in it, so a
  resumed run continues bit-identically. Checkpoints written before a key existed (no random
  states, no data fingerprint: the NNUE trainer's own loop before it became an objective) resume;
* SIGINT or SIGTERM stops after the current step with a checkpoint; a second SIGINT aborts at
  once (``KeyboardInterrupt``); a ``max_minutes`` budget stops the same way and writes the model;
* ``out/metrics.jsonl`` gets ``start``, ``train`` (loss, metrics, lr, rate), ``eval`` and
  ``final`` records; a progress bar shows the rate and ETA;
* under ``torchrun`` each rank computes its share of the global batch and the model is wrapped in
  ``DistributedDataParallel``; rank 0 logs, evaluates, checkpoints and exports; at the end the
  ranks' weight hashes are compared (a ``sync`` record) and a divergence is an error.

Data order must be a pure function of ``(seed, step)`` so that resuming continues identically.
"""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from latentchess.errors import LatentChessError
from latentchess.training.checkpoint import (
    CHECKPOINT_FILE,
    config_differences,
    load_checkpoint,
    save_checkpoint,
)
from latentchess.training.config import lr_factor
from latentchess.training.curves import MetricsLog
from latentchess.training.distributed import DistContext, init_distributed

__all__ = [
    "LoopSettings",
    "Objective",
    "Optimisation",
    "LoopResult",
    "OptimizerFactory",
    "adamw",
    "run_objective",
]


@dataclass(frozen=True, kw_only=True)
class LoopSettings:
    """What the loop needs from a run's config (each objective's config provides these).

    Attributes:
        out: run directory.
        steps: optimiser steps in all.
        lr: peak learning rate (of the optimiser that ``run_objective`` builds).
        warmup: linear warm-up steps (of the loop's scheduler).
        schedule: ``"cosine"`` or ``"constant"`` (of the loop's scheduler).
        weight_decay: weight decay (used by the default AdamW factory).
        grad_clip: global gradient-norm clip (0: none).
        max_minutes: wall-clock budget of one invocation (``None``: none).
        eval_every: steps between evaluations (0: only at the end).
        checkpoint_every: steps between checkpoints.
        log_every: steps between ``train`` records.
        positions_per_step: positions in one global batch (for the rate).
        progress: show a progress bar.
        resumable_changes: config keys that may change on resume.
        config: the run's full config as a JSON-ready dict (stored and compared on resume).
        rate_key: name of the rate in ``train`` records (``positions_per_step`` per second).
        eval_at_start: evaluate once before the first step of a fresh run (when ``eval_every``).
        resume_differences: given the checkpoint's config, the differences that forbid resuming
            (replaces the comparison of ``config`` outside ``resumable_changes``).
    """

    out: Path
    steps: int
    lr: float
    warmup: int
    schedule: str
    weight_decay: float
    grad_clip: float
    max_minutes: float | None
    eval_every: int
    checkpoint_every: int
    log_every: int
    positions_per_step: int
    progress: bool
    resumable_changes: frozenset[str]
    config: dict[str, Any]
    rate_key: str = "positions_per_s"
    eval_at_start: bool = False
    resume_differences: Callable[[dict[str, Any]], list[str]] | None = None


@dataclass(frozen=True)
class Optimisation:
    """An objective's own optimiser and learning-rate scheduler.

    Attributes:
        optimizer: over the bare model's parameters.
        scheduler: its learning-rate scheduler (state saved in and restored from checkpoints).
        advances: whether the scheduler steps after (0-based) optimiser step ``step``
            (``None``: after every step), e.g. once per epoch of a given number of samples.
    """

    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    advances: Callable[[int], bool] | None = None


class Objective:
    """One training task: model, data and loss. ``model`` is the bare (unwrapped) module.

    Subclasses set ``model`` and ``fingerprint`` and implement :meth:`loss`, :meth:`evaluate`,
    :meth:`export` and :meth:`summary`; :meth:`optimisation`, :meth:`after_step`,
    :meth:`train_record`, :meth:`start_info` and :meth:`ranks_changed` are optional.
    """

    model: nn.Module
    fingerprint: str

    def loss(self, model: nn.Module, step: int) -> tuple[Tensor, dict[str, float]]:
        """This rank's share of global batch ``step`` through ``model``: (loss, metrics)."""
        raise NotImplementedError

    def evaluate(self) -> dict[str, float]:
        """Held-out metrics (rank 0 only; the model is in eval mode, no gradients)."""
        raise NotImplementedError

    def export(self, model_dir: Path, training: dict[str, Any]) -> dict[str, Any]:
        """Evaluate on all held-out data, write the model directory, return the final metrics."""
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description of the data for the ``start`` record."""
        raise NotImplementedError

    def optimisation(self, settings: LoopSettings) -> Optimisation | None:
        """The objective's own optimiser and scheduler; ``None``: the loop's (see the module)."""
        return None

    def after_step(self, step: int) -> None:
        """Called after each optimiser step (before the scheduler's), with the steps done.

        For constraints on the weights, such as clipping them to a quantisation range.
        """

    def train_record(self, step: int) -> dict[str, Any]:
        """Extra JSON-ready fields of the ``train`` record at ``step`` (not window averages)."""
        return {}

    def start_info(self) -> dict[str, Any]:
        """Extra JSON-ready fields of the ``start`` record (e.g. the precision decided)."""
        return {}

    def ranks_changed(self, saved_world_size: int, step: int) -> None:
        """Resuming a checkpoint of ``saved_world_size`` ranks on another number of ranks.

        The saved per-rank random states cannot be continued then; an objective whose model
        draws random numbers (dropout) reseeds them here. By default they stay as built.
        """


@dataclass(frozen=True)
class LoopResult:
    """Outcome of one invocation: steps done, why it stopped, the model written and metrics."""

    out: Path
    step: int
    stop_reason: str
    model_dir: Path | None
    resumed_from: int | None
    metrics: dict[str, Any]
    seconds: float
    device: str


OptimizerFactory = Callable[[nn.Module, LoopSettings], torch.optim.Optimizer]


def adamw(model: nn.Module, settings: LoopSettings) -> torch.optim.Optimizer:
    """The default optimiser: AdamW at ``settings.lr`` with ``settings.weight_decay``."""
    return torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)


def run_objective(
    settings: LoopSettings,
    build: Callable[[DistContext], Objective],
    *,
    device: str = "auto",
    threads: int | None = None,
    optimizer: OptimizerFactory = adamw,
    on_step: Callable[[int], None] | None = None,
) -> LoopResult:
    """Train ``build(ctx)``'s objective as ``settings`` say (resuming when a checkpoint exists).

    Args:
        settings: the loop's settings.
        build: makes the objective for this process (its model already on ``ctx.device``).
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        threads: torch CPU threads.
        optimizer: makes the optimiser (default AdamW); the learning-rate schedule wraps it.
            Not used when the objective brings its own (:meth:`Objective.optimisation`).
        on_step: called with the step count after every optimiser step.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    ctx = init_distributed(device)
    try:
        result = _Loop(settings, build(ctx), ctx, optimizer).execute(on_step)
        # Every rank past its last collective before the group is torn down: a rank that
        # destroys a gloo group while its peer still talks to it can abort ("terminate called
        # without an active exception"), seen once in a two-process test run.
        ctx.barrier()
        return result
    finally:
        ctx.close()


class _Loop:
    def __init__(
        self,
        s: LoopSettings,
        objective: Objective,
        ctx: DistContext,
        optimizer: OptimizerFactory,
    ) -> None:
        self.s, self.objective, self.ctx = s, objective, ctx
        self.net = objective.model
        self.model: nn.Module = self.net
        if ctx.distributed:
            ids = [ctx.device.index] if ctx.device.type == "cuda" else None
            self.model = DistributedDataParallel(self.net, device_ids=ids)
        own = objective.optimisation(s)
        if own is None:
            opt = optimizer(self.net, s)
            own = Optimisation(
                opt,
                torch.optim.lr_scheduler.LambdaLR(
                    opt,
                    lambda i: lr_factor(i, steps=s.steps, warmup=s.warmup, schedule=s.schedule),
                ),
            )
        self.optimizer, self.scheduler = own.optimizer, own.scheduler
        self.scheduler_advances = own.advances
        self.checkpoint_path = s.out / "checkpoints" / CHECKPOINT_FILE
        self.log = MetricsLog(s.out / "metrics.jsonl")
        self.step, self.elapsed = 0, 0.0
        self._signal: int | None = None

    def _rng_state(self) -> dict[str, Tensor]:
        state = {"cpu": torch.get_rng_state()}
        if self.ctx.device.type == "cuda":
            state["cuda"] = torch.cuda.get_rng_state(self.ctx.device)
        return state

    def _save(self) -> None:
        rng_states = self.ctx.gather_objects(self._rng_state())  # collective: every rank
        if not self.ctx.is_main:
            return
        save_checkpoint(
            self.checkpoint_path,
            {
                "step": self.step,
                "model": self.net.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "elapsed_s": self.elapsed,
                "rng": rng_states,
                "config": self.s.config,
                "data_fingerprint": self.objective.fingerprint,
                "world_size": self.ctx.world_size,
            },
        )

    def _resume(self) -> int | None:
        if not self.checkpoint_path.exists():
            return None
        state = load_checkpoint(self.checkpoint_path)
        if self.s.resume_differences is not None:
            differences = self.s.resume_differences(state["config"])
        else:
            differences = config_differences(
                state["config"], self.s.config, ignore=self.s.resumable_changes
            )
        if differences:
            raise LatentChessError(
                f"{self.checkpoint_path} was written by a run with other settings; use another "
                "--out or restore them:\n  " + "\n  ".join(differences)
            )
        saved_fingerprint = state.get("data_fingerprint")  # absent: an older checkpoint
        if saved_fingerprint is not None and saved_fingerprint != self.objective.fingerprint:
            raise LatentChessError(
                f"{self.checkpoint_path} was trained on other data (fingerprint "
                f"{saved_fingerprint!r}, now {self.objective.fingerprint!r})"
            )
        self.net.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed_s"])
        rng = state.get("rng", [])
        if len(rng) == self.ctx.world_size:  # dropout streams continue where they stopped
            torch.set_rng_state(rng[self.ctx.rank]["cpu"])
            if self.ctx.device.type == "cuda" and "cuda" in rng[self.ctx.rank]:
                torch.cuda.set_rng_state(rng[self.ctx.rank]["cuda"], self.ctx.device)
        else:
            self.objective.ranks_changed(len(rng), self.step)
        return self.step

    def _check_ranks_in_sync(self) -> None:
        """Every rank must hold bit-identical weights; rank 0 logs the hashes."""
        if not self.ctx.distributed:
            return
        digest = hashlib.sha256()
        for tensor in self.net.state_dict().values():
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        hashes = self.ctx.gather_objects(digest.hexdigest())
        if self.ctx.is_main:
            self.log.write({"kind": "sync", "step": self.step, "weights_sha256": hashes})
        if len(set(hashes)) != 1:
            raise LatentChessError(f"ranks diverged at step {self.step}: weight hashes {hashes}")

    @contextmanager
    def _signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: FrameType | None) -> None:
            if self._signal is not None and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self._signal = signum

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    def _evaluate(self) -> dict[str, float]:
        tick = time.monotonic()
        self.net.eval()
        with torch.no_grad():
            metrics = self.objective.evaluate()
        self.net.train()
        self.log.write(
            {"kind": "eval", "step": self.step, **metrics, "eval_seconds": time.monotonic() - tick}
        )
        return metrics

    def execute(self, on_step: Callable[[int], None] | None) -> LoopResult:
        s, ctx = self.s, self.ctx
        started = time.monotonic()
        resumed = self._resume()
        model_dir = s.out / "model"
        if ctx.is_main:
            s.out.mkdir(parents=True, exist_ok=True)
            if resumed is None:
                self.log.path.unlink(missing_ok=True)
            self.log.truncate_after(self.step)
            (s.out / "config.json").write_text(json.dumps(s.config, indent=2) + "\n")
            self.log.write(
                {
                    "kind": "start",
                    "step": self.step,
                    "resumed": resumed is not None,
                    "world_size": ctx.world_size,
                    "device": str(ctx.device),
                    **self.objective.start_info(),
                    "threads": torch.get_num_threads(),
                    "data": self.objective.summary(),
                }
            )
        if self.step >= s.steps and (model_dir / "config.json").exists():  # nothing left to do
            stored = json.loads((model_dir / "config.json").read_text()).get("metrics", {})
            main_dir = model_dir if ctx.is_main else None
            return self._result("completed", main_dir, resumed, started, stored)
        with self._signals():
            if s.eval_at_start and s.eval_every and ctx.is_main and self.step == 0:
                self._evaluate()
            stop = self._loop(started, on_step)
        self._check_ranks_in_sync()
        if stop == "signal":
            return self._result(stop, None, resumed, started, {})
        metrics: dict[str, Any] = {}
        if ctx.is_main:
            tick = time.monotonic()
            training = {
                **s.config,
                "steps_done": self.step,
                "train_seconds": self.elapsed,
                "world_size": ctx.world_size,
                "device": str(ctx.device),
                "torch": torch.__version__,
            }
            self.net.eval()
            with torch.no_grad():
                metrics = self.objective.export(model_dir, training)
            record = {"kind": "final", "step": self.step, **metrics}
            self.log.write({**record, "final_seconds": time.monotonic() - tick})
        ctx.barrier()
        return self._result(stop, model_dir if ctx.is_main else None, resumed, started, metrics)

    def _result(
        self,
        stop: str,
        model_dir: Path | None,
        resumed: int | None,
        started: float,
        metrics: dict[str, Any],
    ) -> LoopResult:
        return LoopResult(
            out=self.s.out,
            step=self.step,
            stop_reason=stop,
            model_dir=model_dir,
            resumed_from=resumed,
            metrics=metrics,
            seconds=time.monotonic() - started,
            device=str(self.ctx.device),
        )

    def _loop(self, started: float, on_step: Callable[[int], None] | None) -> str:
        s, ctx = self.s, self.ctx
        bar = None
        if ctx.is_main and s.progress:
            from tqdm import tqdm

            bar = tqdm(
                total=s.steps, initial=self.step, unit="step", desc="train", dynamic_ncols=True
            )
        window: dict[str, float] = {}
        window_steps, window_seconds = 0, 0.0
        self.model.train()
        try:
            while self.step < s.steps:
                tick = time.monotonic()
                loss, metrics = self.objective.loss(self.model, self.step)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if s.grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(self.net.parameters(), s.grad_clip)
                self.optimizer.step()
                self.objective.after_step(self.step + 1)
                if self.scheduler_advances is None or self.scheduler_advances(self.step):
                    self.scheduler.step()
                self.step += 1
                seconds = time.monotonic() - tick
                self.elapsed += seconds
                window_seconds += seconds
                window_steps += 1
                for key, value in {"loss": float(loss.detach()), **metrics}.items():
                    window[key] = window.get(key, 0.0) + value
                if on_step is not None:
                    on_step(self.step)
                out_of_time = s.max_minutes is not None and (
                    time.monotonic() - started > 60.0 * s.max_minutes
                )
                signalled = ctx.any(self._signal is not None)
                out_of_time = ctx.any(out_of_time)
                if window_steps == s.log_every or signalled or out_of_time:
                    rate = window_steps * s.positions_per_step / max(window_seconds, 1e-9)
                    record: dict[str, Any] = {"kind": "train", "step": self.step}
                    record.update({key: value / window_steps for key, value in window.items()})
                    record.update(
                        {
                            "lr": self.scheduler.get_last_lr()[0],
                            s.rate_key: rate,
                            "elapsed_s": self.elapsed,
                            **self.objective.train_record(self.step),
                        }
                    )
                    if ctx.is_main:
                        self.log.write(record)
                    if bar is not None:
                        bar.set_postfix(loss=f"{record['loss']:.4f}", per_s=f"{rate:.0f}")
                    window, window_steps, window_seconds = {}, 0, 0.0
                if bar is not None:
                    bar.update(1)
                if ctx.is_main and s.eval_every and self.step % s.eval_every == 0:
                    self._evaluate()
                finished = self.step >= s.steps
                if self.step % s.checkpoint_every == 0 or signalled or out_of_time or finished:
                    self._save()
                if signalled:
                    return "signal"
                if out_of_time:
                    return "time_budget"
        finally:
            if bar is not None:
                bar.close()
        return "completed"
