"""The shared training loop's generic hooks, on a tiny regression objective (no chess data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from latentchess.training.checkpoint import load_checkpoint, save_checkpoint
from latentchess.training.curves import read_metrics
from latentchess.training.distributed import DistContext
from latentchess.training.loop import LoopSettings, Objective, run_objective
from latentchess.training.objectives.chessformer import ChessformerObjective
from latentchess.training.objectives.supcon import SupConObjective


class _Line(Objective):
    """Fit y = 3x - 1 with one linear unit; batch ``step`` comes from a generator seeded by it."""

    def __init__(self, ctx: DistContext) -> None:
        self.ctx = ctx
        torch.manual_seed(0)
        self.model = nn.Linear(1, 1)
        self.fingerprint = "line"
        self.changed: list[tuple[int, int]] = []
        self.evaluations = 0

    def _batch(self, seed: int) -> tuple[Tensor, Tensor]:
        x = torch.rand(16, 1, generator=torch.Generator().manual_seed(seed))
        return x, 3 * x - 1

    def loss(self, model: nn.Module, step: int) -> tuple[Tensor, dict[str, float]]:
        x, y = self._batch(step)
        return ((model(x) - y) ** 2).mean(), {"x_mean": float(x.mean())}

    def evaluate(self) -> dict[str, float]:
        self.evaluations += 1
        x, y = self._batch(10**6)
        return {"heldout_mse": float(((self.model(x) - y) ** 2).mean())}

    def export(self, model_dir: Path, training: dict[str, Any]) -> dict[str, Any]:
        model_dir.mkdir(parents=True, exist_ok=True)
        (model_dir / "config.json").write_text('{"metrics": {}}')
        return {**self.evaluate(), "steps_done": training["steps_done"]}

    def summary(self) -> dict[str, Any]:
        return {"rows": 16}

    def start_info(self) -> dict[str, Any]:
        return {"flavour": "line"}

    def ranks_changed(self, saved_world_size: int, step: int) -> None:
        self.changed.append((saved_world_size, step))


def _settings(out: Path, steps: int, **overrides: Any) -> LoopSettings:
    values: dict[str, Any] = {
        "out": out,
        "steps": steps,
        "lr": 0.1,
        "warmup": 0,
        "schedule": "constant",
        "weight_decay": 0.0,
        "grad_clip": 0.0,
        "max_minutes": None,
        "eval_every": 5,
        "checkpoint_every": 100,
        "log_every": 5,
        "positions_per_step": 16,
        "progress": False,
        "resumable_changes": frozenset({"steps"}),
        "config": {"lr": 0.1},
    }
    values.update(overrides)
    return LoopSettings(**values)


def test_loop_hooks_rate_key_start_eval_and_rank_change(tmp_path: Path) -> None:
    assert issubclass(SupConObjective, Objective) and issubclass(ChessformerObjective, Objective)
    built: list[_Line] = []

    def build(ctx: DistContext) -> _Line:
        built.append(_Line(ctx))
        return built[-1]

    settings = _settings(tmp_path, 10, rate_key="lines_per_s", eval_at_start=True)
    result = run_objective(settings, build, device="cpu", threads=1)
    assert result.stop_reason == "completed" and result.metrics["steps_done"] == 10
    records = read_metrics(tmp_path / "metrics.jsonl")
    assert records[0]["kind"] == "start" and records[0]["flavour"] == "line"
    assert [(r["kind"], r["step"]) for r in records[1:3]] == [("eval", 0), ("train", 5)]
    train = [r for r in records if r["kind"] == "train"]
    assert list(train[0])[:2] == ["kind", "step"] and train[0]["lines_per_s"] > 0
    assert "positions_per_s" not in train[0] and 0 < train[0]["x_mean"] < 1
    assert train[-1]["loss"] < train[0]["loss"]
    assert built[0].changed == [] and built[0].evaluations == 4  # steps 0, 5, 10 and the export

    # A checkpoint written by two ranks, resumed by one: the objective is told, once.
    path = tmp_path / "checkpoints" / "last.pt"
    state = load_checkpoint(path)
    state["rng"] = state["rng"] * 2
    save_checkpoint(path, state)
    refused: list[dict[str, Any]] = []

    def compare(saved: dict[str, Any]) -> list[str]:
        refused.append(saved)
        return []

    settings = _settings(tmp_path, 12, resume_differences=compare)
    again = run_objective(settings, build, device="cpu", threads=1)
    assert again.resumed_from == 10 and again.step == 12
    assert built[1].changed == [(2, 10)] and refused == [{"lr": 0.1}]
    assert built[1].evaluations == 1  # no evaluation at the start of a resumed run


def test_train_command_spellings() -> None:
    """One ``train`` command; no objective is supcon; the old spellings are aliases."""
    from latentchess.cli import build_parser
    from latentchess.cli.train import _chessformer, _supcon, run_nnue

    parser = build_parser()

    def parse(*argv: str) -> dict[str, Any]:
        return vars(parser.parse_args(argv))

    io = ("--data", "d", "--out", "o")
    old, new = parse("train", *io, "--steps", "3"), parse("train", "supcon", *io, "--steps", "3")
    assert old == new and new["objective"] == "supcon" and new["func"] is _supcon
    assert new["steps"] == 3 and new["model_config"] == "tiny"
    cf = parse("train", "chessformer", *io, "--batch-size", "8")
    assert cf["func"] is _chessformer and cf["batch_size"] == 8 and cf["model_config"] == "cf-micro"
    alias = parse("train-chessformer", *io, "--batch-size", "8")
    assert alias["func"] is not _chessformer  # the deprecation note, then _chessformer
    assert {k: v for k, v in alias.items() if k not in ("func", "command")} == {
        k: v for k, v in cf.items() if k not in ("func", "command", "objective")
    }
    nnue = parse("train", "nnue", *io, "--data", "e", "--l1", "64")
    assert nnue["func"] is run_nnue and nnue["data"] == ["d", "e"] and nnue["l1"] == 64
    alias = parse("nnue", "train", *io, "--data", "e", "--l1", "64")
    assert alias["nnue_command"] == "train" and alias["func"] is not run_nnue
    assert {k: v for k, v in alias.items() if k not in ("func", "command", "nnue_command")} == {
        k: v for k, v in nnue.items() if k not in ("func", "command", "objective")
    }
