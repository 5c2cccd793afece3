"""The sparse (NNUE-feature) contrastive encoder: features, shapes, files, training, play."""

from __future__ import annotations

import argparse
import dataclasses
import random
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

from latentchess.data.cache import write_cache
from latentchess.encoding import tokenize_batch
from latentchess.errors import LatentChessError
from latentchess.models import LatentModel, load_model, save_model
from latentchess.models.config import (
    SPARSE_ENCODER_CONFIGS,
    SparseEncoderConfig,
    encoder_config_from_dict,
    get_config,
)
from latentchess.models.gab_encoder import build_encoder
from latentchess.models.sparse_encoder import SparseEncoder, mirror_features, token_features
from latentchess.nnue.features import parse_feature_set, position_features
from latentchess.training import train
from latentchess.training.curves import read_metrics
from training_fixtures import micro_config

SMALL = SparseEncoderConfig(name="sparse-test", l1=32, hidden=8, dim=16)
INT8_HIDDEN_TOLERANCE = 3e-2
"""|core - PyTorch| axis scores at the NNUE's scale 127, where the core's hidden layer has int8
weights (the same bound as tests/test_native_latent.py's NNUE_SCALE_TOLERANCE)."""


def _boards(count: int, seed: int = 0) -> list[chess.Board]:
    """Positions of random games (castling rights, en passant, promotions, both sides to move)."""
    rng, boards = random.Random(seed), []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(0, 150)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


def _as_sets(index: torch.Tensor, pad: int) -> list[list[int]]:
    return [sorted(i for i in row if i != pad) for row in index.tolist()]


@pytest.mark.parametrize("name", ["ALL", "ALL+H+V", "D1+D2", "PH+PV", "ALL+PV+H", "ALL+MB+MC"])
def test_feature_indices_equal_the_reference(name: str) -> None:
    feature_set = parse_feature_set(name)
    boards = _boards(30, seed=len(name))
    white, black = token_features(torch.from_numpy(tokenize_batch(boards)).long(), feature_set)
    pad = feature_set.size
    for board, w, b in zip(boards, _as_sets(white, pad), _as_sets(black, pad), strict=True):
        ref_w, ref_b = position_features(board, feature_set)
        assert w == ref_w.tolist(), board.fen()
        assert b == ref_b.tolist(), board.fen()


def test_feature_indices_equal_the_native_core() -> None:
    from latentchess.core import _native as native

    feature_set = parse_feature_set("ALL+H+PH")
    boards = _boards(30, seed=7)
    white, black = token_features(torch.from_numpy(tokenize_batch(boards)).long(), feature_set)
    for board, w, b in zip(
        boards, _as_sets(white, feature_set.size), _as_sets(black, feature_set.size), strict=True
    ):
        position = native.Position(board.fen())
        assert w == sorted(native.nnue_features(position, 0, feature_set.name))
        assert b == sorted(native.nnue_features(position, 1, feature_set.name))


def test_embeddings_are_unit_vectors_and_white_accumulator_comes_first() -> None:
    torch.manual_seed(0)
    encoder = SparseEncoder(SMALL).eval()
    boards = _boards(16)
    tokens = torch.from_numpy(tokenize_batch(boards))
    with torch.no_grad():
        z = encoder(tokens)
        acc = encoder.accumulators(tokens)
    assert z.shape == (16, 16) and z.dtype == torch.float32
    assert torch.allclose(z.norm(dim=1), torch.ones(16), atol=1e-5)
    # The written-out architecture (module docstring), from the reference features.
    w = encoder.ft.weight.detach()
    for row, board in enumerate(boards):
        ref_w, ref_b = position_features(board, SMALL.features)
        acc_w = encoder.ft_bias.detach() + w[ref_w].sum(dim=0)
        acc_b = encoder.ft_bias.detach() + w[ref_b].sum(dim=0)
        assert torch.allclose(acc[row], torch.cat([acc_w, acc_b]), atol=1e-5)
        x = torch.cat([acc_w, acc_b]).clamp(0, 1)
        h = encoder.l2.weight.detach() @ x + encoder.l2.bias.detach()
        if board.turn == chess.BLACK:
            h = h + encoder.l2_stm.detach()
        out = encoder.out.weight.detach() @ h.clamp(0, 1) + encoder.out.bias.detach()
        assert torch.allclose(z[row], out / out.norm(), atol=1e-5)


def test_colour_mirrored_twin_swaps_the_accumulators() -> None:
    """What holds by construction: the twin's perspectives are the original's, swapped."""
    boards = _boards(20, seed=3)
    twins = [board.mirror() for board in boards]  # flipped, colours and side to move swapped
    feature_set = parse_feature_set("ALL+H+PV")
    original = token_features(torch.from_numpy(tokenize_batch(boards)).long(), feature_set)
    mirrored = token_features(torch.from_numpy(tokenize_batch(twins)).long(), feature_set)
    pad = feature_set.size
    for ours, theirs in zip(mirror_features(*original), mirrored, strict=True):
        assert _as_sets(ours, pad) == _as_sets(theirs, pad)
    encoder = SparseEncoder(SMALL).eval()
    with torch.no_grad():
        acc = encoder.accumulators(torch.from_numpy(tokenize_batch(boards)))
        acc_twin = encoder.accumulators(torch.from_numpy(tokenize_batch(twins)))
    assert torch.allclose(acc, torch.cat([acc_twin[:, 32:], acc_twin[:, :32]], dim=1), atol=1e-5)


def test_config_registry_and_validation() -> None:
    assert {c.dim for c in SPARSE_ENCODER_CONFIGS.values()} == {32, 64, 128}
    config = get_config("sparse-64")
    assert isinstance(config, SparseEncoderConfig) and config.feature_set == "ALL"
    assert encoder_config_from_dict(config.to_dict()) == config
    assert isinstance(build_encoder(config), SparseEncoder)
    with pytest.raises(ValueError, match="unknown feature block"):
        SparseEncoderConfig(feature_set="ALL+XX")
    with pytest.raises(ValueError, match="multiple of 8"):
        SparseEncoderConfig(l1=30)
    with pytest.raises(ValueError, match="no dropout"):
        SparseEncoderConfig(dropout=0.1)


def test_cli_selects_the_sparse_encoder_and_its_feature_set(tmp_path: Path) -> None:
    from latentchess.cli.train import _add_supcon_arguments, config_from_args

    parser = argparse.ArgumentParser()
    _add_supcon_arguments(parser)
    base = ["--data", str(tmp_path), "--out", str(tmp_path / "o")]
    args = parser.parse_args([*base, "--model-config", "sparse-32", "--feature-set", "ALL+H"])
    model = config_from_args(args).model
    assert isinstance(model, SparseEncoderConfig) and (model.dim, model.feature_set) == (
        32,
        "ALL+H",
    )
    with pytest.raises(ValueError, match="--feature-set applies to sparse"):
        config_from_args(
            parser.parse_args([*base, "--model-config", "micro", "--feature-set", "H"])
        )
    shared = ["--feature-set", "KA9", "--ft-from", "nnue-default", "--hidden", "64"]
    args = parser.parse_args([*base, "--model-config", "sparse-64", *shared])
    model = config_from_args(args).model
    assert (model.ft_from, model.ft_hash, model.hidden) == ("nnue-default", None, 64)
    for option in (["--ft-from", "nnue-default"], ["--hidden", "64"]):
        with pytest.raises(ValueError, match=f"{option[0]} applies to sparse"):
            config_from_args(parser.parse_args([*base, "--model-config", "micro", *option]))


def test_save_load_round_trip_gives_identical_scores(tmp_path: Path) -> None:
    torch.manual_seed(1)
    encoder = SparseEncoder(SMALL)
    axis = np.random.default_rng(0).normal(size=16).astype(np.float32)
    saved = save_model(tmp_path / "model", encoder, axis=axis)
    loaded = load_model(saved, precision="fp32")
    boards = _boards(12, seed=5)
    before = LatentModel.from_encoder(encoder, axis, precision="fp32").score(boards)
    assert isinstance(loaded.encoder, SparseEncoder)
    np.testing.assert_array_equal(loaded.score(boards), before)
    assert len(loaded.content_hash) == 12


def _material_cache(path: Path, rows: int = 600) -> Path:
    """Real positions labelled by White's material (mates: a rook or more up)."""
    values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
    boards = _boards(rows, seed=11)
    material = np.array(
        [
            sum(
                v * (len(b.pieces(t, chess.WHITE)) - len(b.pieces(t, chess.BLACK)))
                for t, v in values.items()
            )
            for b in boards
        ]
    )
    labels = np.clip(0.5 + material / 10, 0.0, 1.0)
    labels[material >= 5], labels[material <= -5] = 1.0, 0.0
    write_cache(path, tokenize_batch(boards), labels.astype(np.float32), source="material")
    return path


def test_training_through_the_loop_learns_and_resumes(tmp_path: Path) -> None:
    cache = _material_cache(tmp_path / "cache")
    settings = dict(
        model=SMALL, steps=30, batch_size=32, positives=3, optimizer="adamw", lr=0.01, warmup=0
    )
    cfg = micro_config(cache, tmp_path / "run", **settings, eval_every=15, checkpoint_every=10)
    stopped = train(dataclasses.replace(cfg, steps=20, schedule="constant"))
    assert stopped.step == 20
    result = train(dataclasses.replace(cfg, schedule="constant"))
    assert result.resumed_from == 20 and result.step == 30 and result.stop_reason == "completed"
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    losses = [r["loss"] for r in records if r["kind"] == "train"]
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    evals = [r for r in records if r["kind"] == "eval"]
    assert evals[-1]["heldout_loss"] < evals[0]["heldout_loss"]
    model = load_model(result.model_dir, precision="fp32")
    assert model.config == SMALL and model.metadata["axis_counts"]["white"] > 0


def test_latent_engine_plays_legal_moves_with_it(tmp_path: Path) -> None:
    from latentchess.engines.latent import LatentEngine

    torch.manual_seed(2)
    axis = np.random.default_rng(1).normal(size=16).astype(np.float32)
    saved = save_model(tmp_path / "model", SparseEncoder(SMALL), axis=axis)
    engine = LatentEngine(load_model(saved, precision="fp32"))
    board = chess.Board()
    for _ in range(6):
        move = engine.play(board, chess.engine.Limit(depth=2))
        assert move in board.legal_moves
        board.push(move)


def test_init_from_an_nnue_copies_the_shared_blocks_and_the_bias() -> None:
    from latentchess.models.sparse_encoder import init_from_nnue
    from latentchess.nnue.model import Nnue, NnueConfig

    torch.manual_seed(2)
    nnue = Nnue(NnueConfig(feature_set="KA9", l1=32, l2=8))
    encoder = SparseEncoder(dataclasses.replace(SMALL, feature_set="KA9+TNK"))
    threat_rows = encoder.ft.weight[6912:].detach().clone()
    assert init_from_nnue(encoder, nnue) == ("KA9",)
    assert torch.equal(encoder.ft.weight[:6912], nnue.ft.weight[:6912])
    assert torch.equal(encoder.ft.weight[6912:], threat_rows)  # the threat block keeps its start
    assert torch.equal(encoder.ft_bias, nnue.ft_bias)
    # The same set: the encoder's accumulators are the NNUE's, position by position.
    same = SparseEncoder(dataclasses.replace(SMALL, feature_set="KA9"))
    init_from_nnue(same, nnue)
    boards = _boards(6, seed=4)
    tokens = torch.as_tensor(tokenize_batch(boards))
    white, _ = token_features(tokens, parse_feature_set("KA9"))
    accumulators = same.accumulators(tokens)
    for row, got in zip(white, accumulators, strict=True):
        active = [int(i) for i in row if int(i) != 6912]
        expected = nnue.ft.weight[active].sum(dim=0) + nnue.ft_bias
        assert torch.allclose(got[:32], expected, atol=1e-5)
    with pytest.raises(LatentChessError, match="L1 is 64"):
        init_from_nnue(encoder, Nnue(NnueConfig(feature_set="KA9", l1=64, l2=8)))
    with pytest.raises(LatentChessError, match="share no block"):
        init_from_nnue(encoder, Nnue(NnueConfig(feature_set="ALL", l1=32, l2=8)))


def test_training_starts_from_an_nnue_given_by_init_ft(tmp_path: Path) -> None:
    from latentchess.cli.train import _add_supcon_arguments, config_from_args
    from latentchess.nnue.io import save_nnue
    from latentchess.nnue.model import Nnue, NnueConfig

    torch.manual_seed(3)
    nnue = Nnue(NnueConfig(feature_set="ALL", l1=32, l2=8))
    saved = save_nnue(tmp_path / "nnue", nnue, {"note": "test"})
    parser = argparse.ArgumentParser()
    _add_supcon_arguments(parser)
    base = ["--data", str(tmp_path), "--out", str(tmp_path / "o")]
    args = parser.parse_args([*base, "--model-config", "sparse-32", "--init-ft", str(saved)])
    assert config_from_args(args).init_ft == saved
    with pytest.raises(ValueError, match="not a sparse"):
        config_from_args(parser.parse_args([*base, "--model-config", "micro", "--init-ft", "x"]))
    cache = _material_cache(tmp_path / "cache", rows=300)
    cfg = micro_config(
        cache, tmp_path / "run", model=SMALL, steps=1, batch_size=16, positives=2,
        optimizer="adamw", lr=1e-9, warmup=0, eval_every=0, init_ft=saved,
    )  # fmt: skip
    result = train(cfg)
    model = load_model(result.model_dir, precision="fp32")
    assert isinstance(model.encoder, SparseEncoder)
    assert torch.allclose(model.encoder.ft.weight[:768], nnue.ft.weight[:768], atol=1e-6)


def test_an_encoder_on_an_nnues_transformer_stores_its_dense_layers_alone(tmp_path: Path) -> None:
    from safetensors import safe_open

    from latentchess.core import _native as core
    from latentchess.core.nnue import resolve_evaluator
    from latentchess.errors import ModelFileError
    from latentchess.models.sparse_encoder import ft_fingerprint
    from latentchess.nnue.io import load_nnue, save_nnue
    from latentchess.nnue.model import Nnue, NnueConfig
    from latentchess.search.native import load_native_encoder

    torch.manual_seed(5)
    network = Nnue(NnueConfig(feature_set="ALL", l1=32, l2=8))
    nnue_dir = save_nnue(tmp_path / "nnue", network, {}, lean=True)  # int16 rows, as shipped
    rows = load_nnue(nnue_dir).network.ft  # the rows as the file gives them back
    shared = dataclasses.replace(SMALL, ft_from=str(nnue_dir))
    cache = _material_cache(tmp_path / "cache", rows=300)
    cfg = micro_config(
        cache, tmp_path / "run", model=shared, steps=4, batch_size=16, positives=2,
        optimizer="adamw", lr=0.01, warmup=0, eval_every=0,
    )  # fmt: skip
    model = load_model(train(cfg).model_dir, precision="fp32")
    encoder = model.encoder
    assert isinstance(encoder, SparseEncoder) and model.path is not None
    # The NNUE's rows and bias, untouched by training; the dense layers trained.
    assert torch.equal(encoder.ft.weight[:768], rows.weight[:768])
    assert encoder.config.ft_hash == ft_fingerprint(encoder.ft.weight, encoder.ft_bias)
    assert encoder.num_parameters() == sum(p.numel() for p in encoder.stored_state_dict().values())
    with safe_open(str(model.path / "model.safetensors"), "pt") as handle:
        assert set(handle.keys()) == {"l2.weight", "l2.bias", "l2_stm", "out.weight", "out.bias"}
    # The core assembles the same encoder, at the NNUE's scale (the accumulators exact, the
    # hidden layer the NNUE's int8 one: tests/test_native_latent.py bounds it).
    fens = [b.fen() for b in _boards(40, seed=8)]
    native = load_native_encoder(model.path)
    assert native.accumulator_scale == 127
    assert np.abs(native.score_fens(fens) - model.score(fens)).max() < INT8_HIDDEN_TOLERANCE
    evaluator = resolve_evaluator(str(model.path))  # ab:eval=DIR registers the same encoder
    walked = [core.latent_evaluator_walk(core.Position(f), [], evaluator)[0][0] for f in fens]
    assert np.array_equal(np.float32(walked), native.score_fens(fens))
    # Another network under that name is refused by its fingerprint, not used silently.
    save_nnue(nnue_dir, Nnue(NnueConfig(feature_set="ALL", l1=32, l2=8)), {}, lean=True)
    with pytest.raises(ModelFileError, match="fingerprint"):
        load_model(model.path)
    with pytest.raises(ValueError, match="one of the two"):
        dataclasses.replace(cfg, init_ft=nnue_dir)


def test_threat_features_of_a_position_the_core_refuses_come_from_the_reference() -> None:
    # Three white knights beside eight pawns: well formed, but more pieces than promotions allow.
    board = chess.Board("r3k2r/pp1n1pp1/2pqpn2/3p4/3P2bp/2PBPN2/PPQN1PPP/1NKR3R b kq - 3 11")
    feature_set = parse_feature_set("KA9+TNK")
    white, black = token_features(torch.as_tensor(tokenize_batch([board])), feature_set)
    expected = position_features(board, feature_set)
    for got, want in zip((white[0], black[0]), expected, strict=True):
        assert sorted(int(i) for i in got if int(i) != feature_set.size) == sorted(want)
