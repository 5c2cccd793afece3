"""End-to-end training runs on synthetic data: learning, resume, signals, model directory."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from latentchess.errors import LatentChessError
from latentchess.models import load_model
from latentchess.training import train
from latentchess.training.checkpoint import load_checkpoint
from latentchess.training.curves import read_metrics
from training_fixtures import MICRO, micro_config, synthetic_cache

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "cache"
    synthetic_cache(path)
    return path


def _losses(out: Path) -> dict[int, float]:
    return {
        r["step"]: r["loss"] for r in read_metrics(out / "metrics.jsonl") if r["kind"] == "train"
    }


def test_training_reduces_loss_and_writes_a_loadable_model(cache: Path, tmp_path: Path) -> None:
    cfg = micro_config(
        cache, tmp_path / "run", steps=20, lr=0.01, model=dataclasses.replace(MICRO, dropout=0.0)
    )
    result = train(cfg)
    assert result.stop_reason == "completed" and result.step == 20
    evals = [r for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [0, 6, 12, 18]
    assert evals[-1]["heldout_loss"] < evals[0]["heldout_loss"] - 0.2
    losses = list(_losses(tmp_path / "run").values())
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    assert (tmp_path / "run" / "training.png").stat().st_size > 0

    model = load_model(result.model_dir)
    meta = model.metadata
    assert meta["axis_counts"]["rule"].startswith("p_white == 1.0")
    assert meta["axis_counts"]["white"] == meta["axis_counts"]["black"] == 64  # capped
    assert meta["calibration"]["kind"] == "logistic"
    assert meta["training"]["steps_done"] == 20 and meta["training"]["lr"] == 0.01
    assert meta["training"]["data"]["holdout_rows"] == 64
    assert meta["metrics"]["spearman"] == result.metrics["spearman"] > 0.5
    tokens = np.asarray(load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["step"])
    assert int(tokens) == 20
    # The stored axis scores held-out-like positions in label order (classes 0 and 4 differ).
    from latentchess.data.cache import TrainingCache

    data = TrainingCache.open(cache)
    scores = model.score_tokens(np.array(data.tokens[:10]))
    labels = np.asarray(data.win_prob_white[:10])
    assert scores[labels == 1.0].mean() > scores[labels == 0.0].mean()
    # Rerunning a finished run does nothing but report it.
    again = train(cfg)
    assert again.stop_reason == "completed" and again.resumed_from == 20


def test_interrupted_run_resumes_identically(cache: Path, tmp_path: Path) -> None:
    straight = micro_config(cache, tmp_path / "straight")  # dropout 0.1: the RNG must resume too
    train(straight)

    interrupted = micro_config(cache, tmp_path / "resumed")

    def interrupt(step: int) -> None:
        if step == 5:
            os.kill(os.getpid(), signal.SIGINT)

    first = train(interrupted, on_step=interrupt)
    assert first.stop_reason == "signal" and first.step == 5 and first.model_dir is None
    assert load_checkpoint(tmp_path / "resumed" / "checkpoints" / "last.pt")["step"] == 5
    second = train(interrupted)
    assert second.resumed_from == 5 and second.step == 12 and second.stop_reason == "completed"

    a = load_checkpoint(tmp_path / "straight" / "checkpoints" / "last.pt")
    b = load_checkpoint(tmp_path / "resumed" / "checkpoints" / "last.pt")
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    for key, state in a["optimizer"]["state"].items():
        assert torch.equal(
            state["momentum_buffer"], b["optimizer"]["state"][key]["momentum_buffer"]
        )
    assert torch.equal(a["rng"][0]["cpu"], b["rng"][0]["cpu"])
    assert _losses(tmp_path / "straight") == _losses(tmp_path / "resumed")  # steps 1..12 once each

    with pytest.raises(LatentChessError, match=re.escape("lr: 0.05 -> 0.1")):
        train(dataclasses.replace(interrupted, lr=0.1))


def test_time_budget_stops_with_checkpoint_and_model(cache: Path, tmp_path: Path) -> None:
    cfg = micro_config(cache, tmp_path / "run", steps=10_000, max_minutes=0.02, eval_every=0)
    result = train(cfg)
    assert result.stop_reason == "time_budget" and 0 < result.step < 10_000
    assert result.model_dir is not None and (result.model_dir / "model.safetensors").exists()
    assert load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["step"] == result.step


def test_cli_sigterm_then_rerun_resumes(cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "latentchess", "train", "--data", str(cache), "--out", str(out),
        "--model-config", "tiny", "--steps", "16", "--batch-size", "2", "--positives", "1",
        "--threads", "1", "--eval-every", "0", "--log-every", "1", "--checkpoint-every", "1000",
        "--holdout-fraction", "0.1", "--eval-positions", "16", "--axis-positions", "8",
        "--no-progress",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if metrics.exists() and any(r["kind"] == "train" for r in read_metrics(metrics)):
            break
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "rerun the same command to resume" in stderr
    stopped_at = load_checkpoint(out / "checkpoints" / "last.pt")["step"]
    assert 1 <= stopped_at < 16
    assert not (out / "model").exists()

    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"resumed from step {stopped_at}" in done.stderr
    steps = [r["step"] for r in read_metrics(metrics) if r["kind"] == "train"]
    assert steps == list(range(1, 17))  # every step logged exactly once across both processes
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["training"]["steps_done"] == 16


def test_cli_reports_bad_arguments(cache: Path, tmp_path: Path) -> None:
    from latentchess.cli import main

    assert (
        main(["train", "--data", str(cache), "--out", str(tmp_path), "--model-config", "huge"]) == 2
    )
    assert main(["train", "--data", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
