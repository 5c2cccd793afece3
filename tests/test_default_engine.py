"""The default engine (``ab``) behind every command, the latent planner one option away, and the
UCI ``Engine`` option that switches a running session between them."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest
import torch

from evaluation_fixtures import require_stockfish
from latentchess.cli import main
from latentchess.engines.default import DEFAULT_ENGINE_SPEC
from latentchess.models import Encoder, EncoderConfig
from latentchess.models.io import save_model
from latentchess.uci.session import UciSession
from uci_fixtures import SessionTranscript

MICRO = EncoderConfig(name="micro", layers=1, hidden=32, heads=4, mlp=64, dim=16)
MATE_IN_ONE = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(2)
    axis = np.random.default_rng(2).normal(size=MICRO.dim)
    return save_model(tmp_path_factory.mktemp("models") / "micro", Encoder(MICRO), axis=axis)


def test_the_default_is_ab() -> None:
    assert DEFAULT_ENGINE_SPEC == "ab"  # benchmarks/results/ab_ladder/: change with a ladder


# -- the commands ---------------------------------------------------------------------------------


def test_commands_use_the_default_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bestmove", MATE_IN_ONE, "--depth", "3"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "h5f7" and err.startswith("ab: depth 3 score mate 1")
    assert main(["analyse", MATE_IN_ONE, "--depth", "4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["engine"] == "ab" and report["bestmove"] == "h5f7"
    assert report["score"] == "mate 1" and report["depth"] == 4 and report["nodes"] > 0
    assert len(report["moves"]) == 3  # --multipv 3 by default
    assert main(["analyse", "startpos", "--depth", "3", "--multipv", "0"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("rnbqkbnr/") and "best " in table and "depth 3/" in table
    assert table.count("\n") == 4 + 20  # header, best, pv, column names, every legal move


def test_play_against_the_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("e4\nquit\n"))
    assert main(["play", "--depth", "3"]) == 0
    out = capsys.readouterr().out
    assert "You play e4" in out and "ab plays " in out and "depth 3" in out


def test_latent_options_need_engine_latent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bestmove", "startpos", "--model", "somewhere"]) == 2
    err = capsys.readouterr().err
    assert "unknown ab option 'model'" in err and "--engine latent" in err
    assert main(["uci", "--depth", "4", "--width", "2"]) == 2  # uci: ab:depth=4,width=2
    assert "unknown ab option 'width'" in capsys.readouterr().err


def test_latent_is_one_option_away(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bestmove", "startpos", "--engine", "latent", "--model", str(model_dir)]
    assert main([*args, "--depth", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert chess.Move.from_uci(report["bestmove"]) in chess.Board().legal_moves
    assert report["depth"] == 1 and report["engine"] == f"latent:model={model_dir}"
    spec = f"latent:model={model_dir},depth=1,width=2"
    assert main(["analyse", "startpos", "--engine", spec, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["moves"]) == 20 and report["depth"] == 1
    assert all(-1.0 <= row["score"] <= 1.0 for row in report["moves"])  # axis values
    assert main(["bestmove", "startpos", "--engine", "latent:warp=9"]) == 2
    assert "unknown latent engine options ['warp']" in capsys.readouterr().err


# -- the UCI Engine option -----------------------------------------------------------------------


class Transcript(SessionTranscript):
    """The session of ``latentchess uci`` fed line by line."""

    def __init__(self, spec: str = DEFAULT_ENGINE_SPEC) -> None:
        super().__init__(lambda write: UciSession(write, spec=spec))

    def bestmove(self) -> chess.Move:
        return chess.Move.from_uci(self.wait_for("bestmove").split()[1])

    def exactly_one_bestmove(self) -> chess.Move:
        move = self.bestmove()
        self.send("isready")
        self.wait_for("readyok")
        assert not [line for line in self.lines if line.startswith("bestmove")]
        return move


def test_engine_option_switches_to_latent_and_back(model_dir: Path) -> None:
    t = Transcript()
    t.send("uci")
    assert t.wait_for("id name") == "id name latentchess ab"
    assert t.wait_for("option name") == "option name Engine type string default ab"
    t.wait_for("uciok")
    t.send("setoption name Hash value 8", "setoption name Move Overhead value 70")
    t.send("setoption name Depth value 5", "setoption name Width value 2")  # not ab's options
    assert "unknown option 'Width'" in t.infos()[-1]
    t.lines.clear()
    t.send(f"setoption name Engine value latent:model={model_dir},depth=1", "isready")
    t.wait_for("readyok")  # after the model has loaded: its hash is announced
    strings = " | ".join(t.infos())
    assert "engine now latent:" in strings and "Depth" in strings and "model_sha256=" in strings
    latent = {option.name: option.option.default for option in t.session.engine.options()}
    assert (latent["Hash"], latent["Move Overhead"]) == (8, 70)  # replayed
    assert (latent["Depth"], latent["Width"]) == (1, 2)  # the spec's depth wins
    t.send("position startpos moves e2e4", "go depth 1")
    board = chess.Board()
    board.push_uci("e2e4")
    assert t.exactly_one_bestmove() in board.legal_moves
    t.send("uci")
    assert t.wait_for("id name") == f"id name latentchess latent:model={model_dir},depth=1"
    assert t.wait_for("option name") == (
        f"option name Engine type string default latent:model={model_dir},depth=1"
    )
    assert t.wait_for("option name Depth") and t.wait_for("option name Model")
    t.send("setoption name Engine value ab", f"position fen {MATE_IN_ONE}", "go depth 3")
    assert t.exactly_one_bestmove() == chess.Move.from_uci("h5f7")
    assert "engine now ab" in " ".join(t.infos())
    t.send("quit")


def test_bad_engine_specs_are_refused_and_the_engine_stays(model_dir: Path) -> None:
    t = Transcript()
    t.send("uci", "position startpos", "go infinite")
    t.send("setoption name Engine value warp:9")  # stops the infinite search: its bestmove
    assert t.exactly_one_bestmove() in chess.Board().legal_moves
    for spec, problem in (
        ("latent:warp=9", "unknown latent engine options ['warp']"),
        ("latent:depth=deep", "not a valid int"),
        (f"latent:model={model_dir / 'nowhere'}", "no model directory"),
        ("stockfish:path=/nonexistent/stockfish", "Engine 'stockfish:path="),
        ("", "needs an engine spec"),
    ):
        t.send(f"setoption name Engine value {spec}")
        assert problem in t.infos()[-1], t.infos()
    assert "unknown engine kind 'warp'" in " ".join(t.infos())
    assert all("still playing ab" in line for line in t.infos()[-5:-1])
    t.send("position startpos", "go depth 2")  # still ab, still answering
    assert t.exactly_one_bestmove() in chess.Board().legal_moves
    t.send("uci")
    assert t.wait_for("id name") == "id name latentchess ab"
    t.send("quit")


def test_latent_at_start_up_keeps_its_session(model_dir: Path) -> None:
    t = Transcript(f"latent:model={model_dir},depth=2,mode=beam")
    t.send("uci", "isready")
    t.wait_for("readyok")
    assert any("model_sha256=" in line for line in t.infos())
    t.send("position fen 6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "go mate 1")
    assert t.exactly_one_bestmove() == chess.Move.from_uci("a1a8")
    assert "go mate 1" in " ".join(t.infos())  # the latent session's own go mate report
    with pytest.raises(Exception, match="unknown engine kind"):
        Transcript("nonsense")


# -- the demo -------------------------------------------------------------------------------------


def test_demo_shows_the_default_engine_and_the_latent_view(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_stockfish()
    pgn = tmp_path / "demo.pgn"
    argv = [
        "demo", "--plies", "4", "--limit", "30ms", "--opponent-limit", "20ms",
        "--referee-depth", "4", "--model", str(model_dir), "--depth", "1", "--pgn", str(pgn),
    ]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "== ab analyses" in out and "best Qxf7#  score mate 1" in out
    assert "== A short game: ab (White" in out and "stopped after 4 plies" in out
    assert "== The latent view" in out and "P(White wins) by ply: 0: " in out
    assert "Why, piece by piece" in out
    game = chess.pgn.read_game(pgn.open())
    assert (
        game is not None and game.headers["White"] == "ab" and len(list(game.mainline_moves())) == 4
    )
