"""The one engine interface: options declared once (python-chess ``Option`` types), set by UCI
name or spec key, refused without a change; the native time budget the UCI session asks for."""

from __future__ import annotations

import json
import sys

import chess
import chess.engine
import pytest

from evaluation_fixtures import require_stockfish
from latentchess.engines.ab import AlphaBetaConfig, AlphaBetaEngine
from latentchess.engines.base import Analysis, Engine, GoControl, native_time_budget
from latentchess.engines.registry import create_engine
from latentchess.errors import EngineError


def test_declared_options_reach_a_uci_client_as_declared() -> None:
    """``latentchess uci`` over a pipe: python-chess parses each option to its declaration."""
    command = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab:hash=4"]
    with chess.engine.SimpleEngine.popen_uci(command, timeout=30) as client:
        seen = client.options
        assert seen["Engine"].default == "ab:hash=4"
        for declared in AlphaBetaEngine(AlphaBetaConfig(hash_mb=4)).options():
            parsed = seen[declared.name]
            assert (parsed.type, parsed.min, parsed.max, parsed.var) == (
                declared.option.type,
                declared.option.min,
                declared.option.max,
                declared.option.var or [],
            )
            if declared.option.type != "button":
                assert str(parsed.default) == str(declared.option.default)
        client.configure({"Move Overhead": 40, "EvalFile": "hce"})
        assert client.play(chess.Board(), chess.engine.Limit(depth=3)).move is not None
        assert seen["Ponder"].type == "check"  # the session ponders for every engine
        board = chess.Board()
        limit = chess.engine.Limit(white_clock=5, black_clock=5, white_inc=0.05, black_inc=0.05)
        for _ in range(4):  # python-chess ponders on the expected reply between moves
            result = client.play(board, limit, ponder=True)
            assert result.move in board.legal_moves
            board.push(result.move)


def test_set_option_by_name_or_spec_key_and_refusals_change_nothing() -> None:
    engine = AlphaBetaEngine()
    engine.set_option("multipv", "3")  # the spec key
    engine.set_option("Move Overhead", 55)  # the UCI name
    assert (engine.config.multipv, engine.config.move_overhead_ms) == (3, 55)
    for name, value, problem in (
        ("MultiPV", "0", "at least 1"),
        ("MultiPV", "many", "expected integer"),
        ("Threads", "257", "at most 256"),
        ("EvalFile", "nope", "unknown evaluator 'nope'"),
        ("Warp", "9", "unknown option 'Warp'"),
    ):
        with pytest.raises(EngineError, match=problem):
            engine.set_option(name, value)
    assert (engine.config.multipv, engine.config.evaluator) == (3, "nnue")


def test_the_session_budget_is_the_search_budget() -> None:
    """``ponderhit`` asks the engine for the budget its own time manager would set."""
    engine = AlphaBetaEngine()
    limit = chess.engine.Limit(white_clock=12.0, black_clock=9.0, white_inc=0.1, black_inc=0.1)
    board = chess.Board()
    budget = engine.time_budget(limit, board)
    outcome = engine.search(board, chess.engine.Limit(**{**limit.__dict__, "depth": 1}))
    assert budget is not None and outcome.soft_s is not None and outcome.hard_s is not None
    assert (budget.soft, budget.hard) == pytest.approx((outcome.soft_s, outcome.hard_s), abs=0.002)
    black_to_move = chess.Board()
    black_to_move.push_san("e4")
    black = native_time_budget(limit, black_to_move, move_overhead_ms=30)
    assert black is not None and black.hard < budget.hard  # the side to move's clock
    assert native_time_budget(chess.engine.Limit(depth=3), board, move_overhead_ms=30) is None


class _Fixed(Engine):
    name = "fixed"

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        move = min(board.legal_moves, key=lambda m: m.uci())
        return Analysis(best_move=move, pv=[move], score_cp=12, depth=limit.depth or 0)


def test_defaults_of_the_base_class() -> None:
    engine = _Fixed()
    infos: list[chess.engine.InfoDict] = []
    control = GoControl(infinite=True, on_info=infos.append)
    analysis = engine.go(chess.Board(), chess.engine.Limit(), control)
    assert analysis.depth == 6  # an infinite search of a one-shot engine runs to depth 6
    assert infos[0]["score"].relative == chess.engine.Cp(12) and infos[0]["pv"]
    assert engine.play(chess.Board(), chess.engine.Limit()) == analysis.best_move
    assert engine.options() == [] and engine.provenance() == {}
    with pytest.raises(EngineError, match="unknown option 'Hash' of 'fixed'"):
        engine.set_option("Hash", 16)
    mated = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    with pytest.raises(ValueError):
        engine.play(mated, chess.engine.Limit())


def test_external_engines_declare_their_own_options() -> None:
    require_stockfish()
    engine = create_engine("stockfish")
    try:
        names = {option.name for option in engine.options()}
        assert {"Hash", "Skill Level", "UCI_Elo"} <= names and "MultiPV" not in names  # managed
        engine.set_option("Skill Level", "3")
        with pytest.raises(EngineError):
            engine.set_option("Skill Level", "99")
        assert engine.provenance()["id_name"].startswith("Stockfish")
    finally:
        engine.close()


def test_options_command_lists_the_declarations(capsys: pytest.CaptureFixture[str]) -> None:
    from latentchess.cli import main

    assert main(["options", "ab:hash=8", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["options"]
    declared = AlphaBetaEngine(AlphaBetaConfig(hash_mb=8)).options()
    assert [row["name"] for row in listed] == [o.name for o in declared]
    assert next(row for row in listed if row["name"] == "Hash")["default"] == 8
    assert main(["options", "latent"]) == 0  # no model is loaded to list them
    table = capsys.readouterr().out
    assert "Depth" in table and "[1, 64]" in table and "minimax|beam" in table
