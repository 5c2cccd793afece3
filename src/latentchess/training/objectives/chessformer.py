"""Chessformer's policy + value objective on human games or engine labels, for the shared loop.

Loss per position: legal-masked cross-entropy of the policy on the move played (a human's move,
or Stockfish's best), plus ``value_weight`` times the value loss: cross-entropy of the WDL head on
the game result from the mover's view (human games), or binary cross-entropy of the expected
score ``win + draw / 2`` against the engine's win probability (engine labels).

Data (``--data``): a PGN of rated games (``.pgn``, ``.gz``, ``.xz``, ``.zst``), a Stockfish-labelled
CSV (``.csv``/``.csv.gz``) or a ``.npz`` cache written by an earlier run (``OUT/data.npz``).
Training uses games held out neither by game hash nor by player hash
(:mod:`latentchess.data.moves`); both held-out sets are evaluated.

Options, all off by default:

* ``mirror`` P: with probability P, a training position is mirrored a <-> h (squares and moves,
  in the mover's frame) when no board of its input window has castling rights, the only
  a-h asymmetry of the rules;
* ``model.time_control``: the game's time-control band (``MoveData.speed``) is an input;
* ``init_from``: the weights start from a model directory (fine-tuning);
* ``mix_data`` / ``mix_share`` S: step ``s`` of ``steps`` takes ``round(S * (1 - s / steps) *
  batch_size)`` of its positions from a second data set (e.g. engine moves), the rest from
  ``data``: the share decays linearly to 0;
* ``loader_workers`` N: N processes make the coming steps' batches (features, legal masks) while
  the model trains, so that a GPU does not wait on NumPy; the batches, and so the run, are the
  same as without them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from latentchess.data.moves import MoveData, batch_features, read_csv_moves, read_pgn_moves
from latentchess.errors import LatentChessError
from latentchess.models.chessformer import Chessformer, ChessformerConfig
from latentchess.models.chessformer_human import band_accuracy, select_rows
from latentchess.models.chessformer_io import load_chessformer, save_chessformer
from latentchess.squares import POLICY_SIZE
from latentchess.training.data import AnchorOrder, StepPrefetcher, step_rng
from latentchess.training.distributed import DistContext
from latentchess.training.loop import LoopResult, LoopSettings, Objective, run_objective

__all__ = [
    "ChessformerTrainConfig",
    "train_chessformer",
    "load_move_data",
    "plot_chessformer_training",
    "MIRROR_POLICY",
    "mirror_eligible",
    "mirror_batch",
    "mix_count",
]

_STREAM_EVAL = 21
_STREAM_MIRROR = 22
_STREAM_MIX = 23
_RESUMABLE = frozenset(
    {
        "data",
        "out",
        "max_minutes",
        "device",
        "threads",
        "eval_every",
        "checkpoint_every",
        "log_every",
        "progress",
        "eval_positions",
        "loader_workers",
    }
)


@dataclass(frozen=True, kw_only=True)
class ChessformerTrainConfig:
    """A Chessformer training run.

    Attributes:
        data: PGN, CSV or ``.npz`` cache (see the module docstring).
        out: run directory (``checkpoints/``, ``metrics.jsonl``, ``model/``, ``data.npz``).
        model: the architecture.
        steps: optimiser steps.
        batch_size: positions per step over all ranks.
        lr: peak AdamW learning rate; warm-up ``warmup`` steps, then ``schedule``.
        warmup: linear warm-up steps.
        schedule: ``"cosine"`` or ``"constant"``.
        weight_decay: AdamW weight decay.
        grad_clip: gradient-norm clip (0: none).
        value_weight: weight of the value loss (Maia-3: 0.1).
        holdout_fraction: share of games held out (by game hash) and of players (by name hash).
        max_games: read at most this many games (PGN) or rows (CSV).
        engine_elo: both players' rating for engine-labelled data.
        max_minutes: wall-clock budget of this invocation.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``.
        threads: torch CPU threads.
        seed: model init and data order.
        eval_every: steps between held-out evaluations (0: only at the end).
        eval_positions: held-out positions per set in periodic evaluations.
        final_positions: held-out positions per set in the final evaluation (a fixed random
            subset; ``None``: all).
        checkpoint_every: steps between checkpoints.
        log_every: steps between training records.
        progress: progress bar.
        mirror: probability of the a-h mirror of an eligible training position (0: never).
        init_from: a Chessformer model directory to start from (same architecture; a
            ``time_control`` input it lacks starts at zero).
        mix_data: a second data set (CSV, PGN or ``.npz``) mixed into the batches.
        mix_share: the second data set's share of step 0's batch, decaying linearly to 0.
        loader_workers: processes that make the coming steps' batches while the model trains
            (0: the training process makes each batch itself); the batches are the same.
    """

    data: Path
    out: Path
    model: ChessformerConfig = field(default_factory=ChessformerConfig)
    steps: int = 10_000
    batch_size: int = 256
    lr: float = 1e-3
    warmup: int = 200
    schedule: str = "cosine"
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    value_weight: float = 0.1
    holdout_fraction: float = 0.05
    max_games: int | None = None
    engine_elo: int = 3000
    max_minutes: float | None = None
    device: str = "auto"
    threads: int | None = None
    seed: int = 0
    eval_every: int = 1000
    eval_positions: int = 4096
    final_positions: int | None = None
    checkpoint_every: int = 200
    log_every: int = 20
    progress: bool = True
    mirror: float = 0.0
    init_from: Path | None = None
    mix_data: Path | None = None
    mix_share: float = 0.0
    loader_workers: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", Path(self.data))
        object.__setattr__(self, "out", Path(self.out))
        for name in ("init_from", "mix_data"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        if not 0.0 <= self.mirror <= 1.0:
            raise ValueError(f"mirror must lie in [0, 1], got {self.mirror!r}")
        if not 0.0 <= self.mix_share <= 1.0:
            raise ValueError(f"mix_share must lie in [0, 1], got {self.mix_share!r}")
        if self.mix_share > 0 and self.mix_data is None:
            raise ValueError("mix_share needs mix_data")
        if not isinstance(self.loader_workers, int) or self.loader_workers < 0:
            raise ValueError(f"loader_workers must be an int >= 0, got {self.loader_workers!r}")
        for name in ("steps", "batch_size", "checkpoint_every", "log_every", "eval_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 < self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction must lie in (0, 1), got {self.holdout_fraction!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["model"] = self.model.to_dict()
        data["data"], data["out"] = str(self.data), str(self.out)
        # the options at their defaults are left out: older runs' configs compare equal
        for name, default in (
            ("mirror", 0.0),
            ("init_from", None),
            ("mix_data", None),
            ("mix_share", 0.0),
            ("loader_workers", 0),
        ):
            if data[name] == default:
                del data[name]
            elif isinstance(data[name], Path):
                data[name] = str(data[name])
        return data


def load_move_data(
    cfg: ChessformerTrainConfig, *, progress: bool, path: Path | None = None, name: str = "data"
) -> MoveData:
    """The run's data (or ``path``, e.g. the mix data): a ``.npz`` cache, or a PGN / CSV parsed
    once into ``out/NAME.npz``."""
    path = cfg.data if path is None else path
    if path.suffix == ".npz":
        return MoveData.load(path)
    if not path.exists():
        raise LatentChessError(f"training data {str(path)!r} does not exist")
    cache, stamp_path = cfg.out / f"{name}.npz", cfg.out / f"{name}.json"
    stat = path.stat()
    stamp = {
        "source": str(path.resolve()),
        "size": stat.st_size,
        "mtime": stat.st_mtime,
        "max_games": cfg.max_games,
        "holdout_fraction": cfg.holdout_fraction,
        "fields": "speed",  # caches from before the time-control band are parsed again
    }
    if cache.exists() and stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp:
        return MoveData.load(cache)
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz", ".csv.xz", ".csv.zst")):
        data = read_csv_moves(
            path, elo=cfg.engine_elo, holdout_fraction=cfg.holdout_fraction, max_rows=cfg.max_games
        )
    else:
        data = read_pgn_moves(
            path, holdout_fraction=cfg.holdout_fraction, max_games=cfg.max_games, progress=progress
        )
    cfg.out.mkdir(parents=True, exist_ok=True)
    data.save(cache)
    stamp_path.write_text(json.dumps(stamp) + "\n")
    return data


def _mirror_policy() -> npt.NDArray[np.int64]:
    index = np.arange(POLICY_SIZE)
    out = index.copy()
    from_sq, to_sq = np.divmod(index[:4096], 64)
    out[:4096] = (from_sq ^ 7) * 64 + (to_sq ^ 7)
    files, piece = np.divmod(index[4096:] - 4096, 4)
    from_file, to_file = np.divmod(files, 8)
    out[4096:] = 4096 + ((7 - from_file) * 8 + (7 - to_file)) * 4 + piece
    return out


MIRROR_POLICY = _mirror_policy()
"""(4352,) the policy index of each move's a-h mirror (an involution): squares ``s -> s ^ 7``."""


def mirror_eligible(
    data: MoveData, rows: npt.NDArray[np.int64], history: int
) -> npt.NDArray[np.bool_]:
    """(len(rows),) True where no board of a position's input window has castling rights.

    Rights are never regained, so it is enough that the window's earliest board (its position
    ``history`` plies back, or the game's first) has none. Positions and boards are one to one.
    """
    earliest = np.maximum(data.board_row[rows] - history, data.first_row[rows])
    return data.castling[rows - (data.board_row[rows] - earliest)] == 0


def mirror_batch(
    features: npt.NDArray[np.float32],
    legal: npt.NDArray[np.bool_],
    move: npt.NDArray[np.int64],
    flip: npt.NDArray[np.bool_],
) -> None:
    """Mirror a <-> h, in place, the positions ``flip`` of a batch: (B, 64, F) features (every
    plane is per square), (B, 4352) legal masks and (B,) moves."""
    if not flip.any():
        return
    features[flip] = features[flip][:, np.arange(64) ^ 7]
    legal[flip] = legal[flip][:, MIRROR_POLICY]
    move[flip] = MIRROR_POLICY[move[flip]]


def mix_count(share: float, step: int, steps: int, batch_size: int) -> int:
    """Positions of step ``step`` taken from the mix data: ``share`` of the batch at step 0,
    decaying linearly to 0 at ``steps``."""
    return round(share * max(0.0, 1.0 - step / steps) * batch_size)


def _fingerprint(data: MoveData) -> str:
    digest = hashlib.sha256()
    for array in (data.move, data.board_row, data.self_elo, data.wdl):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


class ChessformerObjective(Objective):
    """Policy + value on :class:`MoveData` (see the module docstring)."""

    def __init__(self, cfg: ChessformerTrainConfig, ctx: DistContext) -> None:
        self.cfg, self.ctx = cfg, ctx
        if cfg.batch_size % ctx.world_size:
            raise LatentChessError(
                f"batch size {cfg.batch_size} is not divisible by the {ctx.world_size} ranks"
            )
        if ctx.is_main:
            self.data = load_move_data(cfg, progress=cfg.progress)
        ctx.barrier()
        if not ctx.is_main:
            self.data = load_move_data(cfg, progress=False)
        data = self.data
        player = data.player_heldout(cfg.holdout_fraction)
        with_player = np.isin(data.game, np.unique(data.game[player]))
        self.train_rows = np.flatnonzero(~data.game_heldout & ~with_player)
        if not len(self.train_rows):
            raise LatentChessError(f"no training positions left in {str(cfg.data)!r}")
        self.eval_sets = {
            "games": select_rows(data, "games", cfg.holdout_fraction),
            "players": select_rows(data, "players", cfg.holdout_fraction),
        }
        self.order = AnchorOrder(len(self.train_rows), cfg.batch_size, cfg.seed)
        self.prefetcher: StepPrefetcher | None = None
        self.fingerprint = _fingerprint(data)
        self.mix: MoveData | None = None
        if cfg.mix_data is not None and cfg.mix_share > 0:
            self.mix = load_move_data(cfg, progress=False, path=cfg.mix_data, name="mix")
            self.mix_rows = np.flatnonzero(~self.mix.game_heldout)
            counts = [
                mix_count(cfg.mix_share, s, cfg.steps, cfg.batch_size) for s in range(cfg.steps)
            ]
            self.mix_start = np.concatenate([[0], np.cumsum(counts)])  # (steps + 1,)
            self.fingerprint += "+" + _fingerprint(self.mix)
        torch.manual_seed(cfg.seed)
        self.model: nn.Module = Chessformer(cfg.model).to(ctx.device)
        if cfg.init_from is not None:
            _init_from(self.model, cfg.init_from)

    def summary(self) -> dict[str, Any]:
        return {
            "path": str(self.cfg.data),
            "positions": len(self.data),
            "train_positions": len(self.train_rows),
            "heldout_games_positions": len(self.eval_sets["games"]),
            "heldout_players_positions": len(self.eval_sets["players"]),
            "fingerprint": self.fingerprint,
        }

    def _arrays(
        self, data: MoveData, rows: npt.NDArray[np.int64], flip: npt.NDArray[np.bool_] | None
    ) -> dict[str, npt.NDArray[Any]]:
        model_cfg = self.cfg.model
        features = batch_features(
            data, rows, history=model_cfg.history, side=model_cfg.side_features
        )
        arrays = {
            "features": features,
            "self_elo": data.self_elo[rows].astype(np.float32),
            "oppo_elo": data.oppo_elo[rows].astype(np.float32),
            "legal": data.legal_mask(rows, POLICY_SIZE),
            "move": data.move[rows].astype(np.int64),
            "wdl": data.wdl[rows].astype(np.int64),
            "score": data.score[rows].astype(np.float32),
            "speed": data.speed[rows].astype(np.int64),
        }
        if flip is not None:
            flip = flip & mirror_eligible(data, rows, model_cfg.history)
            mirror_batch(arrays["features"], arrays["legal"], arrays["move"], flip)
        return arrays

    def _tensors(self, rows: npt.NDArray[np.int64]) -> dict[str, Tensor]:
        return self._to_device(self._arrays(self.data, rows, None))

    def _to_device(self, arrays: dict[str, Any]) -> dict[str, Tensor]:
        """A batch's arrays (NumPy, or tensors from the prefetcher) on the run's device."""
        device = self.ctx.device
        return {k: torch.as_tensor(v).to(device, non_blocking=True) for k, v in arrays.items()}

    def _losses(self, model: nn.Module, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        speed = batch["speed"] if self.cfg.model.time_control else None
        policy, value = model(batch["features"], batch["self_elo"], batch["oppo_elo"], speed)
        logits = policy.float().masked_fill(~batch["legal"], float("-inf"))
        policy_loss = F.cross_entropy(logits, batch["move"])
        value = value.float()
        known = batch["wdl"] >= 0
        value_loss = torch.zeros((), device=value.device)
        if bool(known.any()):
            value_loss = value_loss + F.cross_entropy(
                value[known], batch["wdl"][known], reduction="sum"
            )
        # No result and no engine score (an unfinished game, "*"): no value target.
        scored = ~known & ~torch.isnan(batch["score"])
        if bool(scored.any()):
            probs = torch.softmax(value[scored], dim=1)
            expected = (probs[:, 0] + 0.5 * probs[:, 1]).clamp(1e-6, 1 - 1e-6)
            value_loss = value_loss + F.binary_cross_entropy(
                expected, batch["score"][scored], reduction="sum"
            )
        value_loss = value_loss / len(known)
        hits = (logits.argmax(dim=1) == batch["move"]).float()
        return {"policy": policy_loss, "value": value_loss, "hits": hits}

    def batch_rows(self, step: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Step ``step``'s global batch: rows of the data and rows of the mix data."""
        mixed = 0 if self.mix is None else int(self.mix_start[step + 1] - self.mix_start[step])
        rows = self.train_rows[self.order.anchors(step)[: self.cfg.batch_size - mixed]]
        if not mixed:
            return rows, np.zeros(0, dtype=np.int64)
        size = len(self.mix_rows)
        taken = np.arange(self.mix_start[step], self.mix_start[step + 1])
        epoch, offset = np.divmod(taken, size)
        orders = {e: step_rng(self.cfg.seed, _STREAM_MIX, e).permutation(size) for e in set(epoch)}
        picks = np.array([orders[e][o] for e, o in zip(epoch, offset, strict=True)])
        return rows, self.mix_rows[picks]

    def batch_arrays(self, step: int) -> dict[str, npt.NDArray[Any]]:
        """This rank's share of step ``step``'s batch as arrays (a pure function of the step:
        what the loader's workers make ahead, ``--loader-workers``)."""
        rows, mix_rows = self.batch_rows(step)
        mirror = self.cfg.mirror > 0
        flip = step_rng(self.cfg.seed, _STREAM_MIRROR, step).random(len(rows) + len(mix_rows))
        flip = flip < self.cfg.mirror
        share = (len(rows) + len(mix_rows)) // self.ctx.world_size
        lo, hi = self.ctx.rank * share, (self.ctx.rank + 1) * share
        n = len(rows)
        part, mix_part = slice(min(lo, n), min(hi, n)), slice(max(lo - n, 0), max(hi - n, 0))
        arrays = self._arrays(self.data, rows[part], flip[part] if mirror else None)
        if len(mix_rows[mix_part]):
            assert self.mix is not None
            extra = self._arrays(
                self.mix, mix_rows[mix_part], flip[n:][mix_part] if mirror else None
            )
            arrays = {k: np.concatenate([v, extra[k]]) for k, v in arrays.items()}
        return arrays

    def loss(self, model: nn.Module, step: int) -> tuple[Tensor, dict[str, float]]:
        if self.cfg.loader_workers and self.prefetcher is None:
            self.prefetcher = StepPrefetcher(
                self.batch_arrays,
                self.cfg.steps,
                self.cfg.loader_workers,
                pin_memory=self.ctx.device.type == "cuda",
            )
        if self.prefetcher is not None:
            batch = self._to_device(self.prefetcher.get(step))
        else:
            batch = self._to_device(self.batch_arrays(step))
        mixed = 0 if self.mix is None else int(self.mix_start[step + 1] - self.mix_start[step])
        parts = self._losses(model, batch)
        total = parts["policy"] + self.cfg.value_weight * parts["value"]
        return total, {
            "policy_loss": float(parts["policy"].detach()),
            "value_loss": float(parts["value"].detach()),
            "top1": float(parts["hits"].mean()),
            "mix_share": mixed / self.cfg.batch_size,
        }

    def evaluate(self, final: bool = False) -> dict[str, float]:
        metrics: dict[str, Any] = {}
        for name, rows in self.eval_sets.items():
            if not len(rows):
                continue
            limit = self.cfg.final_positions if final else self.cfg.eval_positions
            if limit is not None and len(rows) > limit:
                pick = step_rng(self.cfg.seed, _STREAM_EVAL, 0).permutation(len(rows))
                rows = np.sort(rows[pick[:limit]])
            hits, policy, value = [], 0.0, 0.0
            for start in range(0, len(rows), 512):
                chunk = rows[start : start + 512]
                parts = self._losses(self.model, self._tensors(chunk))
                hits.append(parts["hits"].cpu().numpy().astype(bool))
                policy += float(parts["policy"]) * len(chunk)
                value += float(parts["value"]) * len(chunk)
            correct = np.concatenate(hits)
            metrics[f"{name}_top1"] = float(correct.mean())
            metrics[f"{name}_policy_loss"] = policy / len(rows)
            metrics[f"{name}_value_loss"] = value / len(rows)
            metrics[f"{name}_positions"] = len(rows)
            if final:
                metrics[f"{name}_by_band"] = band_accuracy(correct, self.data.self_elo[rows])
        return metrics

    def export(self, model_dir: Path, training: dict[str, Any]) -> dict[str, Any]:
        if self.prefetcher is not None:
            self.prefetcher.close()
        metrics = self.evaluate(final=True)
        training = {**training, "data_summary": self.summary()}
        save_chessformer(model_dir, self.model, {"training": training, "metrics": metrics})  # type: ignore[arg-type]
        log = self.cfg.out / "metrics.jsonl"
        if log.exists():
            plot_chessformer_training(log, self.cfg.out / "training.png", final=metrics)
        return metrics


def _init_from(model: nn.Module, path: Path) -> None:
    """Copy a model directory's weights into ``model`` (fine-tuning); only the zero-initialised
    time-control input may be missing from it."""
    start, _ = load_chessformer(path)
    mine = {k: v for k, v in model.cfg.to_dict().items() if k != "time_control"}  # type: ignore[operator]
    theirs = {k: v for k, v in start.cfg.to_dict().items() if k != "time_control"}
    if mine != theirs:
        changed = sorted(k for k in mine if mine[k] != theirs.get(k))
        raise LatentChessError(
            f"--init-from {str(path)!r} has another architecture ({', '.join(changed)} differ): "
            "train with its --model-config and flags"
        )
    missing, unexpected = model.load_state_dict(start.state_dict(), strict=False)
    if unexpected or set(missing) - {"speed_embedding"}:
        raise LatentChessError(
            f"--init-from {str(path)!r}: a time-control input it has cannot be dropped "
            f"(unexpected {unexpected}, missing {missing})"
        )


def train_chessformer(cfg: ChessformerTrainConfig, **kwargs: Any) -> LoopResult:
    """Train (or resume) a Chessformer as ``cfg`` says, through :func:`run_objective`."""
    settings = LoopSettings(
        out=cfg.out,
        steps=cfg.steps,
        lr=cfg.lr,
        warmup=cfg.warmup,
        schedule=cfg.schedule,
        weight_decay=cfg.weight_decay,
        grad_clip=cfg.grad_clip,
        max_minutes=cfg.max_minutes,
        eval_every=cfg.eval_every,
        checkpoint_every=cfg.checkpoint_every,
        log_every=cfg.log_every,
        positions_per_step=cfg.batch_size,
        progress=cfg.progress,
        resumable_changes=_RESUMABLE,
        config=cfg.to_dict(),
    )
    return run_objective(
        settings,
        lambda ctx: ChessformerObjective(cfg, ctx),
        device=cfg.device,
        threads=cfg.threads,
        **kwargs,
    )


def plot_chessformer_training(
    metrics_path: Path, png_path: Path, *, final: dict[str, Any] | None = None
) -> Path:
    """Training and held-out top-1 / policy loss against the step, and final top-1 per band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from latentchess.training.curves import read_metrics

    records = read_metrics(metrics_path)
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval"]
    if final is None:
        final = next((r for r in reversed(records) if r.get("kind") == "final"), {})
    fig, (ax_top, ax_loss, ax_band) = plt.subplots(1, 3, figsize=(15, 4))
    steps = [r["step"] for r in train]
    ax_top.plot(steps, [r["top1"] for r in train], lw=1, label="train batches")
    ax_loss.plot(steps, [r["policy_loss"] for r in train], lw=1, label="train batches")
    for name in ("games", "players"):
        if evals and f"{name}_top1" in evals[0]:
            eval_steps = [r["step"] for r in evals]
            ax_top.plot(
                eval_steps, [r[f"{name}_top1"] for r in evals], "o-", label=f"held-out {name}"
            )
            ax_loss.plot(
                eval_steps,
                [r[f"{name}_policy_loss"] for r in evals],
                "o-",
                label=f"held-out {name}",
            )
        bands = final.get(f"{name}_by_band", {})
        if bands:
            ax_band.plot(
                list(bands), [v["accuracy"] for v in bands.values()], "o-", label=f"held-out {name}"
            )
    ax_top.set(xlabel="step", ylabel="top-1 move matching", title="top-1")
    ax_loss.set(xlabel="step", ylabel="cross-entropy", title="policy loss")
    ax_band.set(xlabel="mover's rating band", ylabel="top-1", title="final top-1 by band")
    ax_band.tick_params(axis="x", rotation=45)
    for ax in (ax_top, ax_loss, ax_band):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return png_path
