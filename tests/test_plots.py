"""Plots are drawn from real data: a (random-weight) model, Stockfish labels, a real PGN."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import numpy as np
import pytest
import torch

from latentchess.cli import main
from latentchess.data.store import ShardWriter
from latentchess.models import Encoder, get_config, save_model
from latentchess.winprob import score_win_probability, white_perspective

STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A tiny random model, ~160 Stockfish-labelled positions, and a PGN with [%eval]."""
    root = tmp_path_factory.mktemp("plots")
    torch.manual_seed(0)
    encoder = Encoder(get_config("tiny"))
    axis = np.random.default_rng(0).normal(size=encoder.config.dim)
    model_dir = save_model(root / "model", encoder, axis=axis)
    rng = np.random.default_rng(1)
    rows = []
    game = chess.pgn.Game()
    node: chess.pgn.GameNode = game
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as engine:
        board = chess.Board()
        for ply in range(160):
            if board.is_game_over() or ply % 40 == 0:
                board = chess.Board()
            board.push(list(board.legal_moves)[rng.integers(board.legal_moves.count())])
            info = engine.analyse(board, chess.engine.Limit(depth=3))
            p = white_perspective(score_win_probability(info["score"].relative), board.turn)
            rows.append({"fen": board.fen(), "win_prob_white": p, "source": "test"})
            if ply < 30:
                node = node.add_variation(board.peek())
                node.comment = f"[%eval {info['score'].white().score(mate_score=10000) / 100:.2f}]"
    ShardWriter(root / "data").write(rows)
    pgn = root / "game.pgn"
    pgn.write_text(str(game) + "\n")
    return model_dir, root / "data", pgn


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def test_umap_and_trajectory_plots(labelled: tuple[Path, Path, Path], tmp_path: Path) -> None:
    from latentchess.models import load_model
    from latentchess.plots.space import (
        fit_space_map,
        load_labelled_sample,
        plot_trajectory,
        plot_umap,
        read_game,
    )

    model_dir, data, pgn = labelled
    out = tmp_path / "umap.png"
    args = ["--data", str(data), "--model", str(model_dir), "--sample", "150"]
    assert main(["plot", "umap", *args, "--out", str(out)]) == 0
    assert _png_size(out) == (910, 780)  # 7 x 6 inches at 130 dpi
    assert out.stat().st_size > 20_000  # hundreds of points drawn, not an empty canvas

    model = load_model(model_dir)
    fens, probs = load_labelled_sample(data, 150)
    assert len(fens) == 150 and ((probs >= 0) & (probs <= 1)).all()
    space = fit_space_map(model, fens, probs, progress=False)
    assert space.points.shape == (150, 2) and np.isfinite(space.points).all()
    svg = plot_umap(space, tmp_path / "umap.svg")
    assert svg.read_text().count("<use ") >= 150  # one marker per position
    out = plot_trajectory(model, space, read_game(pgn), tmp_path / "trajectory.png")
    assert _png_size(out) == (1690, 715)


def test_trajectory_reads_pgn_evals(labelled: tuple[Path, Path, Path]) -> None:
    from latentchess.plots.space import read_game

    trace = read_game(labelled[2])
    assert len(trace.boards) == 31
    assert np.isnan(trace.win_prob_white[0])
    assert np.isfinite(trace.win_prob_white[1:]).all()
    assert ((trace.win_prob_white[1:] >= 0) & (trace.win_prob_white[1:] <= 1)).all()


def test_depth_elo_plot_and_bad_rows(tmp_path: Path) -> None:
    results = tmp_path / "ladder.json"
    rows = [
        {
            "series": "minimax",
            "depth": d,
            "elo": 1000 + 50 * d,
            "elo_low": 950 + 50 * d,
            "elo_high": 1050 + 50 * d,
        }
        for d in range(1, 5)
    ]
    results.write_text(json.dumps({"results": rows}))
    out = tmp_path / "depth.png"
    assert main(["plot", "depth-elo", str(results), "--out", str(out)]) == 0
    assert _png_size(out) == (910, 650)
    bad = tmp_path / "bad.csv"
    bad.write_text("series,depth,elo,elo_low,elo_high\nminimax,2,1200,1100,1300\nbeam,x,1,1,1\n")
    assert main(["plot", "depth-elo", str(bad), "--out", str(out)]) == 2


def test_depth_elo_reads_ladder_json_files(tmp_path: Path) -> None:
    from latentchess.evaluation.elo import GameOutcome, fit_bayeselo
    from latentchess.plots.elo import read_depth_elo

    paths = []
    for depth in (2, 4):
        engine = f"latent:depth={depth},mode=beam"
        games = [GameOutcome(engine, "stockfish:elo=1350", s) for s in (1.0, 0.0, 0.5, 0.0)]
        games += [GameOutcome("stockfish:elo=1350", engine, s) for s in (1.0, 0.5, 1.0, 0.0)]
        fit = fit_bayeselo(games, anchors={"stockfish:elo=1350": 1350.0})
        path = tmp_path / f"ladder{depth}.json"
        path.write_text(json.dumps({"engine": engine, "limit": "50ms", "fit": fit.to_dict()}))
        paths.append(path)
        (point,) = read_depth_elo(path)
        rating = fit.rating(engine)
        assert (point.series, point.depth) == ("beam", depth)
        assert (point.elo, point.elo_low, point.elo_high) == (
            rating.elo,
            rating.lower,
            rating.upper,
        )
    # Without a depth in the spec, the depth comes from the ladder's limit (here combined).
    payload = json.loads(paths[0].read_text())
    payload["engine"], payload["limit"] = "latent:mode=beam", "depth=5,50ms"
    for rating in payload["fit"]["ratings"]:
        if rating["name"] == "latent:depth=2,mode=beam":
            rating["name"] = "latent:mode=beam"
    combined = tmp_path / "combined.json"
    combined.write_text(json.dumps(payload))
    assert read_depth_elo(combined)[0].depth == 5
    out = tmp_path / "depth.png"
    assert main(["plot", "depth-elo", *map(str, paths), "--out", str(out)]) == 0
    assert _png_size(out) == (910, 650)


def test_calibration_plot(tmp_path: Path) -> None:
    from latentchess.plots.human import plot_calibration

    out = plot_calibration(
        {
            "calibrated": [(1100.0, 1150.0, 1000.0, 1300.0), (1600.0, 1580.0, 1450.0, 1700.0)],
            "before": [(1200.0, 927.0, 797.0, 1057.0)],
        },
        tmp_path / "calibration.png",
    )
    width, height = _png_size(out)
    assert width > 400 and height > 400
    with pytest.raises(ValueError, match="no points"):
        plot_calibration({}, tmp_path / "empty.png")
