"""UCI_ShowWDL: the WDL model's fit, its file beside a network, and ``wdl`` in ``info`` lines."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from latentchess.core.nnue import default_nnue_path
from latentchess.engines.ab import AlphaBetaConfig, AlphaBetaEngine
from latentchess.wdl import WDL_FILE, WdlModel, fit_wdl_model, material_count


def _sample(model: WdlModel, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cp, material = rng.normal(0.0, 250.0, n), rng.integers(10, 79, n)
    win, draw, _ = model.probabilities(cp, material)
    u = rng.random(n)
    return cp, material, np.where(u < win, 1, np.where(u < win + draw, 0, -1))


def test_the_fit_recovers_the_model_that_made_the_results() -> None:
    true = WdlModel(a=(60.0, 150.0), b=(40.0, 40.0))
    cp, material, outcome = _sample(true, 20_000, seed=1)
    fitted = fit_wdl_model(cp, material, outcome, degree=1)
    grid_cp, grid_material = np.meshgrid([-300, -100, 0, 100, 300], [20, 40, 60, 78])
    for a, b in zip(
        true.probabilities(grid_cp, grid_material),
        fitted.probabilities(grid_cp, grid_material),
        strict=True,
    ):
        assert np.abs(a - b).max() < 0.03


def test_bad_fit_input_is_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        fit_wdl_model([0.0, 1.0], [30], [1, 0])
    with pytest.raises(ValueError, match="1 \\(win\\), 0 \\(draw\\) or -1"):
        fit_wdl_model([0.0], [30], [2])
    with pytest.raises(ValueError, match="wins, draws and losses"):
        fit_wdl_model([0.0, 10.0], [30, 30], [1, 0])


def test_wdl_per_mille_from_the_side_to_move() -> None:
    model = WdlModel(a=(150.0,), b=(60.0,))
    board = chess.Board()
    assert material_count(board) == 78
    ahead = model.wdl(chess.engine.Cp(250), board)
    assert sum(ahead) == 1000 and ahead.wins > ahead.losses
    behind = model.wdl(chess.engine.Cp(-250), board)
    assert (behind.wins, behind.losses) == (ahead.losses, ahead.wins)
    assert model.wdl(chess.engine.Mate(3), board) == chess.engine.Wdl(1000, 0, 0)
    assert model.wdl(chess.engine.Mate(-2), board) == chess.engine.Wdl(0, 0, 1000)


def test_file_round_trip_and_a_broken_file_is_named(tmp_path: Path) -> None:
    model = WdlModel(a=(1.0, 2.0), b=(3.0, 4.0), source="test", metrics={"positions": 5})
    model.save(tmp_path)
    assert WdlModel.load(tmp_path) == model and WdlModel.load(tmp_path).metrics == {"positions": 5}
    assert WdlModel.load(tmp_path / "elsewhere") is None
    (tmp_path / WDL_FILE).write_text('{"a": [1.0]}')
    with pytest.raises(ValueError, match=f"{WDL_FILE}: not a WDL model"):
        WdlModel.load(tmp_path)


@pytest.fixture()
def network_with_wdl(tmp_path: Path) -> Path:
    """A copy of the shipped network with a WDL model beside it."""
    network = tmp_path / "nnue"
    shutil.copytree(default_nnue_path(), network)
    (network / WDL_FILE).unlink(missing_ok=True)
    WdlModel(a=(100.0, 150.0), b=(50.0, 30.0), source="test").save(network)
    return network


def test_uci_show_wdl_over_a_pipe(network_with_wdl: Path) -> None:
    """Declared with a network that has a model; every scored ``info`` then carries ``wdl``."""
    command = [
        sys.executable,
        "-m",
        "latentchess",
        "uci",
        "--engine",
        f"ab:eval={network_with_wdl}",
    ]
    with chess.engine.SimpleEngine.popen_uci(command, timeout=30) as client:
        assert client.options["UCI_ShowWDL"].type == "check"
        board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/RQ4K1 w - - 0 1")  # White is far ahead
        info = client.analyse(board, chess.engine.Limit(depth=4), info=chess.engine.INFO_ALL)
        assert "wdl" not in info  # off until asked for
        client.configure({"UCI_ShowWDL": True})
        info = client.analyse(board, chess.engine.Limit(depth=4), info=chess.engine.INFO_ALL)
        wdl = info["wdl"].relative
        assert sum(wdl) == 1000 and wdl.wins > 900
        assert info["wdl"].white().wins == wdl.wins  # White to move: its view is White's
        quiet = client.analyse(chess.Board(), chess.engine.Limit(depth=4))
        assert "wdl" in quiet and quiet["wdl"].relative.draws > 0


def test_no_model_no_option_and_no_wdl() -> None:
    engine = AlphaBetaEngine(AlphaBetaConfig(evaluator="hce"))
    assert engine.wdl_model() is None
    command = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab:eval=hce"]
    with chess.engine.SimpleEngine.popen_uci(command, timeout=30) as client:
        assert "UCI_ShowWDL" not in client.options
        info = client.analyse(chess.Board(), chess.engine.Limit(depth=3))
        assert "wdl" not in info
