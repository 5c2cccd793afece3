"""Chessformer: parameter counts, GAB, heads, model files, training through the loop, eval-human."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

from chessformer_fixtures import train_config, write_rated_pgn
from latentchess.cli import main
from latentchess.errors import ModelFileError
from latentchess.models.chessformer import (
    CHESSFORMER_CONFIGS,
    Chessformer,
    ChessformerConfig,
    get_chessformer_config,
    parameter_count,
)
from latentchess.models.chessformer_io import ChessformerModel, load_chessformer, save_chessformer
from latentchess.training.objectives.chessformer import ChessformerTrainConfig, train_chessformer

NANO = get_chessformer_config("cf-nano")


@pytest.mark.parametrize(
    ("name", "millions", "digits"),
    [("maia3-3m", 3.15, 2), ("maia3-5m", 5.23, 2), ("maia3-23m", 22.9, 1), ("maia3-79m", 78.9, 1)],
)
def test_maia3_parameter_counts(name: str, millions: float, digits: int) -> None:
    with torch.device("meta"):  # no memory, no init time
        model = Chessformer(get_chessformer_config(name))
    assert round(parameter_count(model) / 1e6, digits) == millions


def test_gab_matrix_is_shared_and_biases_depend_on_the_position() -> None:
    cfg = dataclasses.replace(NANO, gab_per_square=4)  # the flatten path (p > 0)
    model = Chessformer(cfg).eval()
    shapes = [p.shape for n, p in model.named_parameters() if "templates" in n]
    assert shapes == [(4096, cfg.gab_templates)]  # one matrix for all layers
    x = torch.randn(2, 64, cfg.d_model)
    bias = model.blocks[0].bias(x, model.gab_templates)
    assert bias.shape == (2, cfg.heads, 64, 64)
    assert not torch.allclose(bias[0], bias[1])


@pytest.mark.parametrize("position", ["gab", "relative", "absolute", "none"])
def test_forward_shapes_and_legal_masking(position: str) -> None:
    torch.manual_seed(0)
    cfg = dataclasses.replace(NANO, position=position, history=2, side_features=True)
    net = Chessformer(cfg)
    model = ChessformerModel(net)
    board = chess.Board("8/P6k/8/8/8/8/7K/8 w - - 0 1")
    (prediction,) = model.predict([board], 1500, 1500)
    assert set(prediction.moves) == set(board.legal_moves)
    assert prediction.probabilities.sum() == pytest.approx(1.0, abs=1e-5)
    assert prediction.wdl.shape == (3,) and prediction.wdl.sum() == pytest.approx(1.0, abs=1e-5)
    policy, _ = model.logits([board], 1500, 1500)
    assert torch.isfinite(policy).sum() == board.legal_moves.count()


def test_skill_interpolates_between_the_two_vectors() -> None:
    net = Chessformer(NANO)
    elos = torch.tensor([0.0, 2500.0, 5000.0, 9000.0])
    skill = net.skill(elos)
    torch.testing.assert_close(skill[0], net.elo_weak)
    torch.testing.assert_close(skill[1], 0.5 * (net.elo_weak + net.elo_strong))
    torch.testing.assert_close(skill[2], net.elo_strong)
    torch.testing.assert_close(skill[3], net.elo_strong)  # clamped to [0, 5000]


def test_model_directory_round_trip_and_bad_files(tmp_path: Path) -> None:
    torch.manual_seed(1)
    net = Chessformer(NANO).eval()
    save_chessformer(tmp_path / "m", net, {"metrics": {"x": 1.0}})
    loaded, config = load_chessformer(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]
    assert config["metrics"] == {"x": 1.0}
    features = torch.randn(3, 64, NANO.input_features)
    elo = torch.full((3,), 1800.0)
    for a, b in zip(net(features, elo, elo), loaded(features, elo, elo), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    (tmp_path / "m" / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ModelFileError, match="cannot load weights"):
        load_chessformer(tmp_path / "m")
    with pytest.raises(ModelFileError, match="cannot read"):
        load_chessformer(tmp_path / "missing")


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="divisible"):
        ChessformerConfig(d_model=30, heads=4)
    with pytest.raises(ValueError, match="position"):
        ChessformerConfig(position="rope")
    with pytest.raises(ValueError, match="unknown Chessformer config"):
        get_chessformer_config("huge")
    assert "cf-nano" in CHESSFORMER_CONFIGS


def _config(data: Path, out: Path, **changes: object) -> ChessformerTrainConfig:
    return train_config(data, out, NANO, **changes)


def test_training_resumes_identically_and_eval_human_reads_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pgn = write_rated_pgn(tmp_path / "games.pgn", games=16, plies=50)
    straight = train_chessformer(_config(pgn, tmp_path / "a"))
    assert straight.stop_reason == "completed" and straight.step == 8
    # Stopped by its time budget after one step, then the same command resumes.
    first = train_chessformer(_config(pgn, tmp_path / "b", steps=8, max_minutes=1e-9))
    assert first.stop_reason == "time_budget" and first.step == 1
    resumed = train_chessformer(_config(pgn, tmp_path / "b"))
    assert resumed.resumed_from == 1 and resumed.step == 8
    a, _ = load_chessformer(tmp_path / "a" / "model")
    b, _ = load_chessformer(tmp_path / "b" / "model")
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        torch.testing.assert_close(x, y, msg=name)
    records = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").open()]
    kinds = {r["kind"] for r in records}
    assert {"start", "train", "eval", "final"} <= kinds
    assert all(r["positions_per_s"] > 0 for r in records if r["kind"] == "train")
    final = records[-1]
    sets = [k.removesuffix("_top1") for k in final if k.endswith("_top1")]
    assert sets and all(0.0 <= final[f"{s}_top1"] <= 1.0 and final[f"{s}_by_band"] for s in sets)
    # A changed setting is refused on resume.
    with pytest.raises(Exception, match="other settings"):
        train_chessformer(_config(pgn, tmp_path / "b", lr=1e-2, steps=9))

    out = tmp_path / "eval.json"
    code = main(
        [
            "eval-human",
            str(pgn),
            "--model",
            str(tmp_path / "a" / "model"),
            "--json",
            str(out),
            "--time-control",
            "any",
            "--no-progress",
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    assert result["positions"] == sum(b["positions"] for b in result["by_band"].values()) > 0
    weighted = sum(
        b["accuracy"] * b["positions"] for b in result["by_band"].values() if b["positions"]
    )
    assert weighted / result["positions"] == pytest.approx(result["accuracy"])
    assert "top-1" in capsys.readouterr().out


def test_engine_labelled_csv_trains(tmp_path: Path) -> None:
    rows = []
    board = chess.Board()
    for uci, p in (("e2e4", 0.55), ("e7e5", 0.52), ("g1f3", 0.56), ("b8c6", 0.5)) * 10:
        rows.append(f"{board.fen()},30,,{p},{uci},9,")
        board.push_uci(uci)
        if board.fullmove_number > 2:
            board = chess.Board()
    csv = tmp_path / "sf.csv"
    csv.write_text("\n".join(rows) + "\nnot,a,row\n")
    result = train_chessformer(_config(csv, tmp_path / "run", steps=3, holdout_fraction=0.5))
    assert result.step == 3 and np.isfinite(result.metrics.get("games_value_loss", 0.0))


@pytest.fixture(scope="module")
def nano_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(2)
    return save_chessformer(tmp_path_factory.mktemp("cf") / "nano", Chessformer(NANO), {})


def test_onnx_export_matches_pytorch(tmp_path: Path, nano_dir: Path) -> None:
    from latentchess.models.chessformer_export import check_onnx, export_chessformer_onnx

    net, _ = load_chessformer(nano_dir)
    path = export_chessformer_onnx(net, tmp_path / "cf.onnx")
    assert check_onnx(net, path, batch=3) < 1e-4


def test_engine_spec_plays_legal_moves_and_reports_value(nano_dir: Path) -> None:
    from latentchess.engines.registry import create_engine

    limit = chess.engine.Limit(nodes=1)
    mate = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    value = create_engine(f"chessformer:model={nano_dir},mode=value,elo=1500")
    assert value.play(mate, limit) == chess.Move.from_uci("a1a8")  # the child that mates
    analysis = value.analyse(mate, limit)
    assert analysis.score_cp is not None and analysis.wdl is not None
    assert sum(analysis.wdl) == pytest.approx(1000, abs=2)
    sampled = create_engine(
        f"chessformer:model={nano_dir},temperature=1.5,top_p=0.9,selfelo=1200,oppoelo=2000,seed=4"
    )
    argmax = create_engine(f"chessformer:model={nano_dir}")
    board = chess.Board()
    for ply in range(16):
        engine = (sampled, argmax, value)[ply % 3]
        move = engine.play(board, limit)
        assert move in board.legal_moves
        board.push(move)
    with pytest.raises(Exception, match="unknown chessformer options"):
        create_engine(f"chessformer:model={nano_dir},depth=3")
    with pytest.raises(Exception, match="mode"):
        create_engine(f"chessformer:model={nano_dir},mode=search")


def test_attention_correlations_on_known_maps() -> None:
    from latentchess.evaluation.attention import _correlations

    rng = np.random.default_rng(0)
    same_everywhere = np.broadcast_to(rng.normal(size=(1, 1, 2, 64, 64)), (1, 6, 2, 64, 64))
    assert _correlations(same_everywhere, 0)["between_positions"] == pytest.approx(1.0)
    one_row = np.broadcast_to(rng.normal(size=(1, 6, 2, 1, 64)), (1, 6, 2, 64, 64))
    assert _correlations(one_row, 0)["within_position"] == pytest.approx(1.0)
    noise = _correlations(rng.normal(size=(1, 8, 2, 64, 64)), 0)
    assert abs(noise["between_positions"]) < 0.05 and abs(noise["within_position"]) < 0.05


def test_attention_command_and_plot(
    tmp_path: Path, nano_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pgn = write_rated_pgn(tmp_path / "games.pgn", games=3, plies=30)
    out = tmp_path / "table3.json"
    assert (
        main(
            [
                "chessformer",
                "attention",
                str(pgn),
                "--model",
                str(nano_dir),
                "--positions",
                "40",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    assert set(result["ours"]) == {"gab", "dot_product"} and result["positions"] == 40
    png = tmp_path / "gab.png"
    assert (
        main(
            [
                "plot",
                "attention",
                "startpos",
                "--model",
                str(nano_dir),
                "--square",
                "g1",
                "--out",
                str(png),
            ]
        )
        == 0
    )
    assert png.stat().st_size > 1000
    assert main(["chessformer", "configs"]) == 0
    assert "maia3-79m" in capsys.readouterr().out


def test_shipped_human_model_loads_and_predicts() -> None:
    from latentchess.models.chessformer_io import default_chessformer_path

    model = ChessformerModel.load()
    assert model.config["metrics"]["games_top1"] > 0.3  # what its card reports, roughly
    board = chess.Board()
    (prediction,) = model.predict([board], 1500, 1500)
    assert prediction.moves[0] in board.legal_moves
    assert (default_chessformer_path() / "config.json").exists()
