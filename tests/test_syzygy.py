"""Syzygy tables at ``ab``'s root (``SyzygyPath``), checked with python-chess's own probing.

The tables in tests/data/syzygy are the 3-piece ones (KQvK, KRvK, KBvK, KNvK, KPvK) that
python-chess's source distribution on PyPI ships for its own tests (data/syzygy/regular).
"""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.engine
import chess.syzygy
import pytest
from tests.uci_fixtures import SessionTranscript

from latentchess.engines.ab import AlphaBetaEngine
from latentchess.engines.syzygy import TB_WIN_CP, root_probe
from latentchess.errors import EngineError
from latentchess.uci.session import UciSession

TABLES = Path(__file__).parent / "data" / "syzygy"


@pytest.fixture(scope="module")
def tablebase() -> chess.syzygy.Tablebase:
    return chess.syzygy.open_tablebase(str(TABLES))


def test_won_endings_are_won_within_the_fifty_move_rule(tablebase: chess.syzygy.Tablebase) -> None:
    engine = AlphaBetaEngine.from_options(hash=4, syzygy=str(TABLES))
    rng = random.Random(3)
    for fen in ("8/8/8/4k3/8/8/8/KR6 w - - 0 1", "8/8/8/3k4/8/8/8/K5Q1 w - - 0 1"):
        board = chess.Board(fen)
        analysis = engine.analyse(board, chess.engine.Limit(nodes=50))
        assert analysis.score_cp == TB_WIN_CP - tablebase.probe_dtz(board)
        while not board.is_game_over(claim_draw=True):
            if board.turn == chess.WHITE:  # tiny searches: the tables make the progress
                move = engine.play(board, chess.engine.Limit(nodes=50))
                board.push(move)
                assert board.is_checkmate() or tablebase.probe_wdl(board) == -2, board.fen()
            else:
                board.push(rng.choice(list(board.legal_moves)))
        assert board.is_checkmate() and len(board.move_stack) <= 100, fen
    engine.close()


def test_drawn_and_lost_roots_keep_the_draw_and_score_by_the_tables(
    tablebase: chess.syzygy.Tablebase,
) -> None:
    engine = AlphaBetaEngine.from_options(hash=4, syzygy=str(TABLES))
    board = chess.Board("4k3/8/8/8/8/8/4P3/4K3 b - - 0 1")  # Kd8/Kf8 lose, the rest draws
    analysis = engine.analyse(board, chess.engine.Limit(nodes=1))
    assert analysis.best_move is not None and analysis.score_cp == 0
    board.push(analysis.best_move)
    assert tablebase.probe_wdl(board) == 0
    assert engine.info_string().startswith("syzygy: draw")
    lost = chess.Board("8/8/8/3k4/8/8/8/K5Q1 b - - 0 1")
    analysis = engine.analyse(lost, chess.engine.Limit(depth=2))
    assert analysis.score_cp is not None and analysis.score_cp <= -TB_WIN_CP + 100
    # Not in the tables (castling rights; too many pieces): no probe, a plain search.
    assert root_probe(engine._tablebase, chess.Board()) is None
    assert root_probe(engine._tablebase, chess.Board("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1")) is None
    engine.close()


def test_syzygy_path_option_over_uci_and_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="not a directory"):
        AlphaBetaEngine.from_options(syzygy=str(tmp_path / "missing"))
    with pytest.raises(EngineError, match="no Syzygy tables"):
        AlphaBetaEngine.from_options(syzygy=str(tmp_path))
    engine = AlphaBetaEngine.from_options(hash=4)
    t = SessionTranscript(lambda write: UciSession(write, spec="ab", engine=engine))
    t.send("uci")
    t.wait_for("uciok")
    assert "option name SyzygyPath type string default <empty>" in t.lines
    t.send(f"setoption name SyzygyPath value {tmp_path}")
    assert any("SyzygyPath" in line and "refused" in line for line in t.infos())
    t.send(f"setoption name SyzygyPath value {TABLES}", "isready")
    t.wait_for("readyok")
    assert engine.provenance()["syzygy"] == str(TABLES)
    t.send("position fen 8/8/8/4k3/8/8/8/KR6 w - - 0 1", "go nodes 100")
    move = chess.Move.from_uci(t.wait_for("bestmove").split()[1])
    board = chess.Board("8/8/8/4k3/8/8/8/KR6 w - - 0 1")
    assert move in board.legal_moves
    assert any(line.startswith("info string syzygy: win") for line in t.infos())
    infos = [line for line in t.lines if line.startswith("info depth")]
    assert infos and all(" score cp 19" in line for line in infos)  # the tables', not the eval's
    t.send("setoption name SyzygyPath value <empty>", "quit")
    assert engine.config.syzygy_path == ""
