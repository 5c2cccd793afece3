"""The UCI engine: command parsing, positions, scripted transcripts, and a real game over a pipe."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

from latentchess.engines.latent import LatentEngine
from latentchess.models import Encoder, EncoderConfig
from latentchess.models.io import save_model
from latentchess.search import SearchConfig
from latentchess.uci import (
    Debug,
    Go,
    IsReady,
    Position,
    PositionError,
    Quit,
    SetOption,
    Stop,
    Uci,
    UciSession,
    Unknown,
    build_position,
    go_limit,
    parse_command,
)
from uci_fixtures import SessionTranscript

MICRO = EncoderConfig(name="micro", layers=1, hidden=32, heads=4, mlp=64, dim=16)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    axis = np.random.default_rng(0).normal(size=MICRO.dim)
    return save_model(tmp_path_factory.mktemp("models") / "micro", Encoder(MICRO), axis=axis)


# -- parsing --------------------------------------------------------------------------------------


def test_parse_simple_commands() -> None:
    assert parse_command("uci") == Uci()
    assert parse_command("  isready \n") == IsReady()
    assert parse_command("stop") == Stop() and parse_command("quit") == Quit()
    assert parse_command("") is None and parse_command("   ") is None
    assert parse_command("joho debug on") == Debug(True)  # unknown leading tokens are skipped
    assert isinstance(parse_command("debug maybe"), Unknown)
    unknown = parse_command("xyzzy plugh")
    assert isinstance(unknown, Unknown) and unknown.problem == "unknown command"


def test_parse_position() -> None:
    assert parse_command("position startpos") == Position(None)
    assert parse_command("position startpos moves e2e4 e7e5") == Position(None, ("e2e4", "e7e5"))
    fen = "8/8/8/8/8/8/8/K1k5 w - - 0 1"
    assert parse_command(f"position fen {fen} moves a1a2") == Position(fen, ("a1a2",))
    for bad in ("position", "position sideways", "position fen", "position moves e2e4"):
        assert isinstance(parse_command(bad), Unknown), bad


def test_parse_go_and_setoption() -> None:
    go = parse_command("go wtime 60000 btime 50000 winc 1000 binc 1000 movestogo 20")
    assert go == Go(wtime=60000, btime=50000, winc=1000, binc=1000, movestogo=20)
    limit = go_limit(go)
    assert limit.white_clock == 60.0 and limit.black_inc == 1.0 and limit.remaining_moves == 20
    assert go_limit(parse_command("go movetime 250")).time == 0.25
    assert parse_command("go infinite") == Go(infinite=True)
    assert parse_command("go depth 3 nodes 500").nodes == 500
    go = parse_command("go depth banana frobnicate movetime 100")
    assert go.movetime == 100 and go.depth is None and len(go.problems) == 2
    assert "banana" in go.problems[0] and "frobnicate" in go.problems[1]
    go = parse_command("go searchmoves e2e4 d2d4 depth 2")
    assert go.searchmoves == ("e2e4", "d2d4") and go.depth == 2
    assert parse_command("setoption name Move Overhead value 100") == SetOption(
        "Move Overhead", "100"
    )
    assert parse_command("setoption name Clear Hash") == SetOption("Clear Hash")
    assert isinstance(parse_command("setoption value 3"), Unknown)


@pytest.mark.parametrize(
    ("fen", "problem"),
    [
        ("8/8/8/8/8/8/8/k7 w - - 0 1", "no white king"),
        ("K7/8/8/8/8/8/8/k6K w - - 0 1", "too many kings"),
        ("k7/8/8/8/8/8/8/R6K w - - 0 1", "side not to move is in check"),
        ("k7/8/8/8/8/8/8/KP6 w - - 0 1", "pawns on the first or eighth rank"),
        ("not a fen", "bad FEN"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0", None),  # lenient: 5 fields
    ],
)
def test_build_position_refuses_invalid_positions(fen: str, problem: str | None) -> None:
    if problem is None:
        board, _ = build_position(Position(fen))
        assert board.is_valid()
        return
    with pytest.raises(PositionError, match=problem):
        build_position(Position(fen))


def test_build_position_moves_and_repairs() -> None:
    board, warnings = build_position(Position(None, ("e2e4", "e7e5", "g1f3")))
    assert board.fen().startswith("rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b")
    assert len(board.move_stack) == 3 and warnings == []
    with pytest.raises(PositionError, match=r"illegal move 2 'e2e4'"):
        build_position(Position(None, ("e2e4", "e2e4")))
    with pytest.raises(PositionError, match="not a UCI move"):
        build_position(Position(None, ("e2e4", "banana")))
    board, warnings = build_position(Position("4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1"))
    assert board.castling_rights == 0 and "castling" in warnings[0]


def test_a_position_that_continues_the_last_plays_only_the_new_moves() -> None:
    """GUIs resend the game every move: the board of the last ``position`` is extended."""
    first = Position(None, ("e2e4", "e7e5"))
    board, _ = build_position(first)
    longer = Position(None, ("e2e4", "e7e5", "g1f3", "b8c6"))
    extended, warnings = build_position(longer, (first, board))
    fresh, _ = build_position(longer)
    assert extended == fresh and extended.move_stack == fresh.move_stack and warnings == []
    assert len(board.move_stack) == 2  # the previous board is not changed
    with pytest.raises(PositionError, match=r"illegal move 3 'e1e3'"):
        build_position(Position(None, ("e2e4", "e7e5", "e1e3")), (first, board))
    # Another FEN, or a move list that does not continue the last one: built from scratch.
    other = Position(None, ("d2d4",))
    assert build_position(other, (first, board))[0].move_stack == [chess.Move.from_uci("d2d4")]
    fen = Position("4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1", ("e1e2",))
    rebuilt, warnings = build_position(fen, (first, board))
    assert rebuilt.fen().startswith("4k3/8/8/8/8/8/4K3/8 b") and "castling" in warnings[0]


# -- scripted transcripts -------------------------------------------------------------------------


class Transcript(SessionTranscript):
    """Feeds lines to a UciSession around a latent engine (its model loading in the background,
    as ``latentchess uci --engine latent`` starts it) and collects what it writes."""

    def __init__(self, model: Path, config: SearchConfig | None = None) -> None:
        def make(write: Callable[[str], None]) -> UciSession:
            engine = LatentEngine(None, config, model_path=model, precision="fp32")
            return UciSession(write, spec="latent", engine=engine)

        super().__init__(make)


def bestmove(transcript: Transcript) -> str:
    return transcript.wait_for("bestmove").split()[1]


def test_handshake_options_and_a_search(model_dir: Path) -> None:
    t = Transcript(model=model_dir, config=SearchConfig(depth=3))
    t.send("uci")
    assert t.wait_for("id name") == "id name latentchess latent"
    t.wait_for("uciok")
    names = [line.split(" type ")[0] for line in t.lines if line.startswith("option name")]
    for option in ("Model", "Depth", "Width", "Mode", "Threads", "Hash", "Move Overhead"):
        assert f"option name {option}" in names
    t.send("isready")
    t.wait_for("readyok")
    t.send("ucinewgame", "position startpos moves e2e4 e7e5", "go depth 2")
    move = bestmove(t)
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert chess.Move.from_uci(move) in board.legal_moves
    info = [line for line in t.lines if line.startswith("info depth")]
    assert [line.split()[2] for line in info] == ["1", "2"]
    assert all(" score cp " in line or " score mate " in line for line in info)
    assert all(" nodes " in line and " nps " in line and " pv " in line for line in info)
    # Search options rebuild the engine around the loaded model; they do not reload it.
    engine = t.session.engine
    assert isinstance(engine, LatentEngine)
    model = engine.model
    t.send(
        "setoption name Width value 2",
        "setoption name Mode value beam",
        "setoption name Hash value 1",
    )
    t.send("isready")
    t.wait_for("readyok")
    assert t.session.engine is engine and engine.model is model
    assert (engine.config.width, engine.config.mode) == (2, "beam")
    assert engine.config.cache_size == 1_000_000 // 220
    assert t.send("quit") is False


def test_malformed_and_invalid_input_is_reported_not_fatal(model_dir: Path) -> None:
    t = Transcript(model=model_dir, config=SearchConfig(depth=2))
    t.send("uci", "isready")
    t.wait_for("readyok")
    t.send("go depth 1")  # no position yet
    assert bestmove(t) == "0000"
    t.send(
        "flibbertigibbet",
        "position fen 8/8/8/8/8/8/8/k7 w - - 0 1",
        "position startpos moves e2e4 e2e4",
        "setoption name Depth value deep",
        "setoption name Width value 0",
        "setoption name Warp Drive value on",
        "setoption name Mode value mcts",
    )
    infos = "\n".join(t.infos())
    for needle in (
        "unknown command",
        "no white king",
        "illegal move 2 'e2e4'",
        "expected integer for spin option 'Depth'",
        "option 'Width' to be at least 1",
        "unknown option 'Warp Drive'",
        "available: minimax, beam",
    ):
        assert needle in infos, needle
    # Still no valid position: go answers 0000.
    t.send("go depth 1")
    assert bestmove(t) == "0000"
    t.send("position startpos moves d2d4", "go depth nope")
    board = chess.Board()
    board.push_uci("d2d4")
    assert chess.Move.from_uci(bestmove(t)) in board.legal_moves
    assert any("bad value 'nope'" in line for line in t.infos())


def test_positions_without_legal_moves_answer_0000(model_dir: Path) -> None:
    t = Transcript(model=model_dir)
    for fen in ("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"):
        t.send(f"position fen {fen}", "go movetime 100")
        assert bestmove(t) == "0000"


def test_stop_during_go_infinite(model_dir: Path) -> None:
    t = Transcript(model=model_dir, config=SearchConfig(depth=6))
    t.send("uci", "isready")
    t.wait_for("readyok")
    t.send("position startpos", "go infinite")
    time.sleep(0.5)
    assert not any(line.startswith("bestmove") for line in t.lines)
    t.send("isready")  # answered at once while searching
    t.wait_for("readyok", timeout=2.0)
    began = time.monotonic()
    t.send("stop")
    move = bestmove(t)
    assert time.monotonic() - began < 5.0
    assert chess.Move.from_uci(move) in chess.Board().legal_moves


def test_model_load_failure_and_recovery(model_dir: Path, tmp_path: Path) -> None:
    t = Transcript(model=tmp_path / "missing", config=SearchConfig(depth=1))
    t.send("uci", "isready")
    t.wait_for("readyok")
    t.send("position startpos", "go depth 1")
    assert chess.Move.from_uci(bestmove(t)) in chess.Board().legal_moves  # a fallback, not 0000
    assert any("cannot load model" in line and "missing" in line for line in t.infos())
    assert any("fallback move" in line for line in t.infos())
    t.send(f"setoption name Model value {model_dir}", "isready")
    t.wait_for("readyok")
    t.send("go depth 1")
    assert chess.Move.from_uci(bestmove(t)) in chess.Board().legal_moves


def test_ponder_then_ponderhit(model_dir: Path) -> None:
    t = Transcript(model=model_dir)
    t.send("uci", "isready")
    t.wait_for("readyok")
    t.send("position startpos moves e2e4", "go ponder wtime 2000 btime 2000")
    time.sleep(0.2)
    assert not any(line.startswith("bestmove") for line in t.lines)
    t.send("ponderhit")
    move = bestmove(t)
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves


def test_ponderhit_after_a_finished_ponder_search_answers_at_once(model_dir: Path) -> None:
    # The mate in one ends the ponder search early; after ponderhit the engine must answer at
    # once rather than wait out the clock's hard limit (here about 6 s of a 60 s clock).
    t = Transcript(model=model_dir)
    t.send("uci", "isready")
    t.wait_for("readyok")
    t.send("position fen 6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "go ponder wtime 60000 btime 60000")
    t.wait_for("info depth 1")  # the search has found the mate and is waiting
    time.sleep(0.1)
    began = time.monotonic()
    t.send("ponderhit")
    assert bestmove(t) == "a1a8"
    assert time.monotonic() - began < 2.0


# -- a real game over a pipe ----------------------------------------------------------------------


def test_game_with_a_clock_through_python_chess(model_dir: Path) -> None:
    """Both sides played by the engine process under a clock: legal moves, no flag fall."""
    command = [
        sys.executable,
        "-m",
        "latentchess",
        "uci",
        "--engine",
        "latent",
        "--model",
        str(model_dir),
    ]
    clocks = {chess.WHITE: 3.0, chess.BLACK: 3.0}
    increment = 0.05
    board = chess.Board()
    with chess.engine.SimpleEngine.popen_uci(command, timeout=60) as engine:
        assert engine.id["name"] == f"latentchess latent:model={model_dir}"
        engine.configure({"Depth": 6, "Move Overhead": 30})
        engine.ping()  # isready: waits for the model
        while not board.is_game_over() and len(board.move_stack) < 24:
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE],
                black_clock=clocks[chess.BLACK],
                white_inc=increment,
                black_inc=increment,
            )
            began = time.monotonic()
            result = engine.play(board, limit, info=chess.engine.INFO_ALL)
            spent = time.monotonic() - began
            clocks[board.turn] += increment - spent
            assert clocks[board.turn] > 0, f"flag fell at ply {len(board.move_stack)}"
            assert result.move in board.legal_moves
            board.push(result.move)
    assert len(board.move_stack) >= 10


# -- refused positions, failures after go, go mate -------------------------------------------


def bestmoves(transcript: Transcript) -> list[str]:
    """Every ``bestmove`` line not yet taken, once any search has ended (``stop`` joins it)."""
    transcript.send("stop", "isready")
    transcript.wait_for("readyok")
    return [line for line in transcript.lines if line.startswith("bestmove")]


def test_refused_position_leaves_no_position(model_dir: Path) -> None:
    """Failed before the fix: go answered with a move for the previous board."""
    t = Transcript(model=model_dir, config=SearchConfig(depth=1))
    for refused, reason in (
        ("position fen k7/8/8/8/8/8/8/R6K w - - 0 1", "side not to move is in check"),
        ("position startpos moves e2e4 e2e4", "illegal move 2 'e2e4'"),
        ("position fen not-a-fen", "bad FEN 'not-a-fen'"),
    ):
        t.lines.clear()
        t.send("position startpos moves d2d4", "go depth 1")
        assert bestmove(t) != "0000"
        t.send(refused, "go depth 1")
        assert bestmove(t) == "0000", refused
        why = [line for line in t.infos() if line.startswith("info string go without")]
        assert len(why) == 1 and "refused position" in why[0] and reason in why[0], t.lines
    t.send("position startpos", "go depth 1")  # a valid position again: a real move
    assert chess.Move.from_uci(bestmove(t)) in chess.Board().legal_moves


class FailingModel:
    """A real model that fails on purpose: scoring after ``fail_after`` calls, or calibration."""

    def __init__(self, model: object, *, fail_after: int | None = None, calibrate: bool = True):
        self._model = model
        self._calls = 0
        self._fail_after = fail_after
        self._calibrate = calibrate

    def __getattr__(self, name: str) -> object:
        return getattr(self._model, name)

    def score_tokens(self, tokens: np.ndarray) -> np.ndarray:
        self._calls += 1
        if self._fail_after is not None and self._calls > self._fail_after:
            raise RuntimeError("the accelerator fell off the bus")
        return self._model.score_tokens(tokens)  # type: ignore[attr-defined]

    def win_probability(self, score: float) -> float:
        if not self._calibrate:
            raise ArithmeticError("calibration table is corrupt")
        return self._model.win_probability(score)  # type: ignore[attr-defined]


def load_failing(monkeypatch: pytest.MonkeyPatch, **failure: object) -> None:
    """Make the latent engine's model loader return a :class:`FailingModel`."""
    import latentchess.models.io as model_io

    load_model = model_io.load_model

    def load(path: object, **options: object) -> object:
        return FailingModel(load_model(path, precision="fp32"), **failure)  # type: ignore[arg-type]

    monkeypatch.setattr(model_io, "load_model", load)


@pytest.mark.parametrize(
    ("failure", "go", "expected"),
    [
        ({"fail_after": 2}, "go depth 2", "search failed (RuntimeError"),  # in the search thread
        ({"fail_after": 2}, "go infinite", "search failed (RuntimeError"),
        ({"calibrate": False}, "go depth 2", "calibration table is corrupt"),  # at loading
        ({}, "go movetime 1" + "0" * 400, None),  # overflowed converting ms to seconds
    ],
)
def test_every_failure_after_go_yields_exactly_one_bestmove(
    model_dir: Path,
    failure: dict,
    go: str,
    expected: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Failed before the fix for the last two: no bestmove at all (and no readyok after the
    failure before the search thread)."""
    load_failing(monkeypatch, **failure)
    t = Transcript(model=model_dir, config=SearchConfig(depth=2))
    board = chess.Board()
    board.push_uci("e2e4")
    t.send("position startpos moves e2e4", go)
    if "infinite" in go or "movetime" in go:  # a movetime of 10^400 ms thinks until stopped
        time.sleep(0.2)
        t.send("stop")
    assert chess.Move.from_uci(bestmove(t)) in board.legal_moves
    if expected is not None:
        assert any(expected in line for line in t.infos()), t.lines
    assert bestmoves(t) == []  # no second answer
    t.send("go depth 1")
    assert len(bestmoves(t)) == 1  # the next go is answered once too


def test_go_mate_is_honoured_and_said(model_dir: Path) -> None:
    """Failed before the fix: `go mate 1` searched the configured depth without a word."""
    t = Transcript(model=model_dir, config=SearchConfig(depth=6))
    t.send("position fen 6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "go mate 1")
    assert bestmove(t) == "a1a8"
    assert any("go mate 1: searching 1 plies" in line for line in t.infos()), t.lines
    depths = [line.split()[2] for line in t.lines if line.startswith("info depth")]
    assert depths == ["1"] and any("score mate 1" in line for line in t.lines)
    assert go_limit(parse_command("go mate 3")).depth == 5
    assert go_limit(parse_command("go mate 3 depth 2")).depth == 2
    assert go_limit(parse_command("go mate 0")).depth == 1
    assert go_limit(parse_command("go mate 1000")).depth == 64


def test_failed_ponderhit_still_answers(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before the fix: an error in ponderhit left the GUI waiting for a bestmove."""
    import latentchess.engines.latent as latent

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("clock arithmetic")

    t = Transcript(model=model_dir, config=SearchConfig(depth=3))
    t.send("position startpos moves e2e4", "go ponder wtime 2000 btime 2000")
    t.wait_for("info depth 1")
    monkeypatch.setattr(latent, "time_budget", broken)  # the search has its budget already
    t.send("ponderhit")
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(bestmove(t)) in board.legal_moves
    assert any("ponderhit failed (ZeroDivisionError" in line for line in t.infos())
    assert bestmoves(t) == []
