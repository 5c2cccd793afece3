"""LatentEngine (the Engine protocol, limits, options) and the bestmove/analyse/play commands."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

from latentchess.cli import main
from latentchess.cli.terminal import parse_move, play_terminal, render
from latentchess.engines.base import Engine
from latentchess.engines.latent import (
    LatentEngine,
    calibrated_draw_score,
    calibration,
    time_budget,
)
from latentchess.errors import EngineError
from latentchess.models import Encoder, EncoderConfig
from latentchess.models.inference import LatentModel
from latentchess.models.io import save_model

LATENT = ("--engine", "latent", "--model")
"""The latent engine is one option away from the default (``ab``)."""
MICRO = EncoderConfig(name="micro", layers=1, hidden=32, heads=4, mlp=64, dim=16)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(1)
    axis = np.random.default_rng(1).normal(size=MICRO.dim)
    metadata = {"calibration": {"kind": "logistic", "slope": 4.0, "intercept": 0.4}}
    path = tmp_path_factory.mktemp("models") / "micro"
    return save_model(path, Encoder(MICRO), axis=axis, metadata=metadata)


@pytest.fixture(scope="module")
def engine(model_dir: Path) -> LatentEngine:
    return LatentEngine.from_options(model_dir, depth="3", width=3, precision="fp32")


# -- the engine -----------------------------------------------------------------------------------


def test_engine_protocol_and_limits(engine: LatentEngine) -> None:
    assert isinstance(engine, Engine)
    board = chess.Board()
    board.push_uci("e2e4")
    for limit in (
        chess.engine.Limit(depth=2),
        chess.engine.Limit(nodes=40),
        chess.engine.Limit(time=0.2),
        chess.engine.Limit(white_clock=5.0, black_clock=5.0, white_inc=0.1, black_inc=0.1),
    ):
        move = engine.play(board, limit)
        assert move in board.legal_moves, limit
    result = engine.search(board, chess.engine.Limit(depth=2))
    assert result.depth == 2
    result = engine.search(board, chess.engine.Limit(nodes=40))
    assert result.nodes <= max(40, board.legal_moves.count())
    # 50 ms per move with the default 50 ms overhead: moves are still scored, not just the first
    # legal move played (the scorer speed is known from the searches above).
    engine.new_game()
    result = engine.search(board, chess.engine.Limit(time=0.05))
    assert result.nodes > 0
    with pytest.raises(EngineError, match="no legal move"):
        engine.play(chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"), chess.engine.Limit(depth=1))


def test_analyse_reports_every_move(engine: LatentEngine) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4")
    analysis = engine.analyse(board, chess.engine.Limit(depth=2))
    assert analysis.best_move == chess.Move.from_uci("h5f7")  # mate in one
    assert analysis.mate == 1 and analysis.win_prob_white == 1.0
    assert [m.rank for m in analysis.moves] == list(range(1, board.legal_moves.count() + 1))
    assert {m.move for m in analysis.moves} == set(board.legal_moves)
    assert analysis.moves[0].move == analysis.best_move
    board = chess.Board()
    analysis = engine.analyse(board, chess.engine.Limit(depth=2))
    assert analysis.score_cp is not None and -10000 <= analysis.score_cp <= 10000
    assert analysis.pv[0] == analysis.best_move and 0.0 < analysis.win_prob_white < 1.0
    assert analysis.nodes > 0 and analysis.depth == 2


def test_calibrated_scores_and_draw_score(engine: LatentEngine) -> None:
    # p = sigmoid(4 cos + 0.4) is 1/2 at cos = -0.1: that is what a draw is worth.
    assert calibrated_draw_score(calibration(engine.model)) == pytest.approx(-0.1, abs=1e-6)
    assert engine.config.draw_score == pytest.approx(-0.1, abs=1e-6)
    assert engine.pov_score(-0.1, chess.WHITE).relative.score() == 0
    assert engine.pov_score(0.5, chess.WHITE).relative.score() > 0
    assert engine.pov_score(0.5, chess.BLACK).relative.score() < 0
    uncalibrated = LatentModel.from_encoder(Encoder(MICRO), np.ones(MICRO.dim), precision="fp32")
    assert calibrated_draw_score(calibration(uncalibrated)) == pytest.approx(0.0, abs=1e-9)
    # A decreasing fit (a barely trained model) would invert every score: it is not used.
    inverted = LatentModel.from_encoder(
        Encoder(MICRO),
        np.ones(MICRO.dim),
        precision="fp32",
        metadata={"calibration": {"kind": "logistic", "slope": -10.0, "intercept": 0.4}},
    )
    with pytest.warns(UserWarning, match="not increasing"):
        engine = LatentEngine(inverted)
    assert engine.config.draw_score == pytest.approx(0.0, abs=1e-9)
    assert engine.win_probability(0.5) == pytest.approx(0.75)


def test_from_options_validates(model_dir: Path) -> None:
    with pytest.raises(EngineError, match="unknown latent engine options"):
        LatentEngine.from_options(model_dir, warp=9)
    with pytest.raises(EngineError, match="not a valid int"):
        LatentEngine.from_options(model_dir, depth="deep")
    with pytest.raises(EngineError, match="mode"):
        LatentEngine.from_options(model_dir, mode="mcts")
    beam = LatentEngine.from_options(model_dir, mode="beam", width="2", alpha_beta="false")
    assert beam.config.mode == "beam" and beam.config.width == 2 and not beam.config.alpha_beta
    assert beam.play(chess.Board(), chess.engine.Limit(depth=2)) in chess.Board().legal_moves


def test_cache_kept_across_moves_and_cleared_by_new_game(model_dir: Path) -> None:
    engine = LatentEngine.from_options(model_dir, depth=3)
    board = chess.Board()
    first = engine.search(board)
    board.push(first.move)
    board.push(first.pv[1])
    second = engine.search(board)
    assert second.cache_hits > 0  # the reply was searched last move
    engine.new_game()
    assert len(engine.searcher.cache) == 0


def test_time_budget() -> None:
    assert time_budget(chess.engine.Limit(depth=3), chess.WHITE) is None
    fixed = time_budget(chess.engine.Limit(time=1.0), chess.WHITE, overhead_s=0.05)
    assert fixed.hard == pytest.approx(0.95) and fixed.soft == fixed.hard
    # A short fixed time is not eaten whole by the overhead reserve (at most a fifth of it).
    short = time_budget(chess.engine.Limit(time=0.05), chess.WHITE, overhead_s=0.05)
    assert short.hard == pytest.approx(0.04)
    clock = chess.engine.Limit(white_clock=60.0, black_clock=1.0, white_inc=1.0, black_inc=0.0)
    white, black = time_budget(clock, chess.WHITE), time_budget(clock, chess.BLACK)
    assert 1.0 < white.soft <= white.hard <= 30.0
    assert black.hard <= 0.5 and black.soft <= black.hard
    last = time_budget(
        chess.engine.Limit(white_clock=10.0, remaining_moves=1), chess.WHITE, overhead_s=0.0
    )
    assert 5.0 < last.hard <= 8.5
    assert time_budget(chess.engine.Limit(white_clock=0.01), chess.WHITE).hard == 0.0


# -- the commands ---------------------------------------------------------------------------------


def test_bestmove_command(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bestmove", "startpos", *LATENT, str(model_dir), "--depth", "2"]) == 0
    out, err = capsys.readouterr()
    assert chess.Move.from_uci(out.strip()) in chess.Board().legal_moves
    assert "depth 2" in err
    fen = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    assert main(["bestmove", fen, *LATENT, str(model_dir), "--mode", "beam", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bestmove"] == "a1a8" and report["score"] == "mate 1"


def test_analyse_command(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["analyse", "startpos", "--moves", "e2e4", *LATENT, str(model_dir), "--depth", "2"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    board = chess.Board()
    board.push_uci("e2e4")
    assert len(report["moves"]) == board.legal_moves.count()
    assert report["moves"][0]["move"] == report["bestmove"]
    assert all(0.0 <= row["win_prob_white"] <= 1.0 for row in report["moves"])
    assert all(-1.0 <= row["score"] <= 1.0 for row in report["moves"])  # axis values
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "rank" in table and "P(White)" in table and table.count("\n") > 20


def test_commands_refuse_bad_input(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bestmove", "8/8/8/8/8/8/8/k7 w - - 0 1", *LATENT, str(model_dir)]) == 2
    assert "no white king" in capsys.readouterr().err
    assert main(["bestmove", "startpos", "--moves", "e2e5", *LATENT, str(model_dir)]) == 2
    assert "illegal move 1 'e2e5'" in capsys.readouterr().err
    assert main(["bestmove", "startpos", *LATENT, str(model_dir), "--width", "0"]) == 2
    assert "width" in capsys.readouterr().err
    missing = str(model_dir.parent / "nowhere")
    assert main(["bestmove", "startpos", *LATENT, missing]) == 2
    assert "no model directory" in capsys.readouterr().err
    # 'uci' takes its limits from each 'go'; it must not accept limit flags it would ignore.
    with pytest.raises(SystemExit):
        main(["uci", *LATENT, str(model_dir), "--time", "1"])
    assert "unrecognized arguments: --time" in capsys.readouterr().err


# -- playing in the terminal ----------------------------------------------------------------------


def test_render_and_parse_move() -> None:
    board = chess.Board()
    text = render(board)
    assert text.splitlines()[0].startswith("8 ♜") and text.splitlines()[-1] == "  a b c d e f g h"
    assert render(board, chess.BLACK).splitlines()[-1] == "  h g f e d c b a"
    assert parse_move(board, "Nf3") == parse_move(board, "g1f3") == chess.Move.from_uci("g1f3")
    for bad, reason in (("e5", "illegal"), ("Qh9", "cannot read"), ("hello", "cannot read")):
        with pytest.raises(ValueError, match=reason):
            parse_move(board, bad)
    for null in ("--", "0000", "Z0", "@@@@"):  # python-chess parses these as a pass
        with pytest.raises(ValueError, match="null move"):
            parse_move(board, null)


def test_play_in_the_terminal(engine: LatentEngine) -> None:
    script = io.StringIO("e4\nKe3\nmoves\nxyz\nundo\nd4\nhelp\nresign\n")
    out = io.StringIO()
    result = play_terminal(
        engine,
        human=chess.WHITE,
        input_stream=script,
        output=out,
        limit=chess.engine.Limit(depth=1),
    )
    text = out.getvalue()
    assert result == "0-1"
    assert "You play e4" in text and "You play d4" in text and "Took back" in text
    assert text.count(f"{engine.name} plays") == 2
    assert "cannot read 'xyz'" in text and "'Ke3' is illegal" in text
    assert "♔" in text and "You resign" in text


def test_play_command_with_piped_input(model_dir: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "latentchess",
            "play",
            "--engine",
            "latent",
            "--model",
            str(model_dir),
            "--color",
            "black",
            "--depth",
            "1",
            "--fen",
            "4k3/8/8/8/8/8/8/R3K3 w - - 0 1",
        ],
        input="Kd8\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert f"latent:model={model_dir} plays" in completed.stdout
    assert "Game abandoned" in completed.stdout
