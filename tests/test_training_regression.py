"""The axis-regression objective (SupCon's control): learning, the exported model, play, CLI."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from latentchess.data.cache import TrainingCache
from latentchess.engines.registry import create_engine
from latentchess.errors import LatentChessError
from latentchess.models import load_model
from latentchess.models.config import SparseEncoderConfig
from latentchess.training import train
from latentchess.training.config import TrainConfig
from latentchess.training.curves import read_metrics
from latentchess.training.metrics import spearman
from latentchess.training.objectives.regression import regression_axis
from training_fixtures import micro_config, synthetic_cache

SMALL = SparseEncoderConfig(name="sparse-test", l1=32, hidden=8, dim=16)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "cache"
    synthetic_cache(path)  # labels readable from the first 16 squares' tokens
    return path


def _config(cache: Path, out: Path, **overrides: object) -> TrainConfig:
    settings: dict[str, object] = dict(
        model=SMALL,
        objective="regression",
        steps=40,
        batch_size=64,
        optimizer="adamw",
        lr=0.003,
        warmup=0,
        eval_every=20,
        checkpoint_every=20,
    )
    settings.update(overrides)
    return micro_config(cache, out, **settings)


def test_regression_learns_and_exports_its_fixed_axis(cache: Path, tmp_path: Path) -> None:
    result = train(_config(cache, tmp_path / "run"))
    assert result.stop_reason == "completed" and result.step == 40
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    losses = [r["loss"] for r in records if r["kind"] == "train"]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    evals = [r for r in records if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [0, 20, 40]
    assert evals[-1]["heldout_loss"] < 0.5 * evals[0]["heldout_loss"]
    assert evals[-1]["spearman"] > 0.6
    assert records[0]["kind"] == "start"

    model = load_model(result.model_dir, precision="fp32")
    assert model.config == SMALL
    axis = regression_axis(SMALL.dim, seed=0)
    np.testing.assert_allclose(model.axis, axis, rtol=1e-6)
    assert abs(float(np.linalg.norm(model.axis)) - 1.0) < 1e-5
    meta = model.metadata
    assert meta["axis_counts"]["rule"].startswith("fixed unit vector")
    assert meta["training"]["objective"] == "regression"
    assert meta["metrics"]["spearman"] == result.metrics["spearman"]
    # The stored axis orders positions by their labels: the score is what the loss trained.
    data = TrainingCache.open(cache)
    tokens, labels = np.array(data.tokens[:200]), np.array(data.win_prob_white[:200])
    scores = model.score_tokens(tokens)
    assert spearman(scores, labels) > 0.6
    # The loss is the squared distance of the axis cosine to 2 p - 1 (held-out, final record).
    final = [r for r in records if r["kind"] == "final"][-1]
    assert 0.0 <= final["heldout_loss"] < evals[0]["heldout_loss"]


def test_exported_model_plays_through_the_latent_spec(cache: Path, tmp_path: Path) -> None:
    result = train(_config(cache, tmp_path / "run", steps=10, eval_every=0))
    assert result.model_dir is not None
    # native=true: the native core scores and searches it (or the engine refuses), as sparse-64.
    engine = create_engine(f"latent:model={result.model_dir},native=true,depth=2,width=3")
    board = chess.Board()
    for _ in range(6):
        move = engine.play(board, chess.engine.Limit(depth=2))
        assert move in board.legal_moves
        board.push(move)
    assert engine.analyse(board, chess.engine.Limit(depth=1)).score_cp is not None


def test_a_supcon_checkpoint_is_not_resumed_as_regression(cache: Path, tmp_path: Path) -> None:
    supcon = _config(cache, tmp_path / "run", objective="supcon", steps=4, positives=3)
    train(dataclasses.replace(supcon, steps=2))
    with pytest.raises(LatentChessError, match="objective"):
        train(_config(cache, tmp_path / "run", steps=4, positives=3))


def test_cli_subcommand_selects_the_objective(tmp_path: Path) -> None:
    from latentchess.cli import build_parser
    from latentchess.cli.train import config_from_args

    parser = build_parser()
    common = ["--data", str(tmp_path), "--out", str(tmp_path / "o"), "--model-config", "sparse-64"]
    args = parser.parse_args(["train", "regression", *common, "--batch-size", "768"])
    cfg = config_from_args(args)
    assert cfg.objective == "regression" and cfg.views_per_step == 768
    for argv in (["train", "supcon", *common], ["train", *common]):
        cfg = config_from_args(parser.parse_args(argv))
        assert cfg.objective == "supcon" and cfg.views_per_step == 128 * 6
    del vars(args)["objective"]  # a namespace from elsewhere (benchmarks): SupCon
    assert config_from_args(args).objective == "supcon"
    with pytest.raises(ValueError, match="unknown objective"):
        dataclasses.replace(cfg, objective="mse")
