"""Data-parallel training: ``torchrun`` with 2 CPU processes (gloo) against one process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from latentchess.cli import build_parser
from latentchess.cli.train import config_from_args
from latentchess.training import train
from latentchess.training.checkpoint import load_checkpoint
from latentchess.training.curves import read_metrics
from training_fixtures import synthetic_cache, write_material_csv

REPO = Path(__file__).resolve().parents[1]


def test_two_process_ddp_matches_one_process_on_the_same_global_batch(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    synthetic_cache(cache)

    def argv(out: Path) -> list[str]:
        return [
            "train", "--data", str(cache), "--out", str(out), "--model-config", "tiny",
            "--dropout", "0", "--steps", "4", "--batch-size", "4", "--positives", "2",
            "--lr", "0.05", "--threads", "1", "--eval-every", "0", "--log-every", "1",
            "--holdout-fraction", "0.1", "--eval-positions", "16", "--axis-positions", "8",
            "--device", "cpu", "--precision", "fp32", "--no-progress",
        ]  # fmt: skip

    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command = [*launcher, "--nproc_per_node=2", "-m", "latentchess", *argv(tmp_path / "ddp")]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]

    single = train(config_from_args(build_parser().parse_args(argv(tmp_path / "single"))))
    assert single.stop_reason == "completed"

    ddp_records = read_metrics(tmp_path / "ddp" / "metrics.jsonl")
    start = next(r for r in ddp_records if r["kind"] == "start")
    assert start["world_size"] == 2 and start["precision"] == "fp32"
    sync = next(r for r in ddp_records if r["kind"] == "sync")
    assert len(sync["weights_sha256"]) == 2 and len(set(sync["weights_sha256"])) == 1

    def losses(records: list[dict]) -> list[float]:
        return [r["loss"] for r in records if r["kind"] == "train"]

    single_records = read_metrics(tmp_path / "single" / "metrics.jsonl")
    assert len(losses(ddp_records)) == 4
    # The all-gathered loss is the loss of the whole global batch, as in one process.
    assert losses(ddp_records) == pytest.approx(losses(single_records), rel=1e-5)
    a = load_checkpoint(tmp_path / "ddp" / "checkpoints" / "last.pt")
    b = load_checkpoint(tmp_path / "single" / "checkpoints" / "last.pt")
    assert a["world_size"] == 2 and len(a["rng"]) == 2
    for name, tensor in a["model"].items():
        torch.testing.assert_close(tensor, b["model"][name], rtol=1e-4, atol=1e-5)
    assert (tmp_path / "ddp" / "model" / "model.safetensors").exists()


def test_two_process_ddp_nnue_matches_one_process(tmp_path: Path) -> None:
    """``train nnue`` under torchrun: ranks in sync, the same weights as one process."""
    csv = tmp_path / "pos.csv.gz"
    write_material_csv(csv, games=6)

    def argv(out: Path) -> list[str]:
        return [
            "train", "nnue", "--data", str(csv), "--out", str(out), "--cache", str(tmp_path / "c"),
            "--l1", "16", "--l2", "4", "--batch-size", "64", "--steps", "3", "--lr", "1e-2",
            "--threads", "1", "--device", "cpu", "--holdout-fraction", "0.1", "--no-progress",
        ]  # fmt: skip

    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command = [*launcher, "--nproc_per_node=2", "-m", "latentchess", *argv(tmp_path / "ddp")]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    from latentchess.cli import main

    assert main(argv(tmp_path / "single")) == 0
    records = read_metrics(tmp_path / "ddp" / "metrics.jsonl")
    assert next(r for r in records if r["kind"] == "start")["world_size"] == 2
    sync = next(r for r in records if r["kind"] == "sync")
    assert len(sync["weights_sha256"]) == 2 and len(set(sync["weights_sha256"])) == 1
    a = load_checkpoint(tmp_path / "ddp" / "checkpoints" / "last.pt")
    b = load_checkpoint(tmp_path / "single" / "checkpoints" / "last.pt")
    assert a["world_size"] == 2 and len(a["rng"]) == 2
    for name, tensor in a["model"].items():  # the mean of the ranks' gradients: the batch's
        torch.testing.assert_close(tensor, b["model"][name], rtol=1e-4, atol=1e-5)
