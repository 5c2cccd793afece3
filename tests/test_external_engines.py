"""External engines and engine specs: real Stockfish, sunfish, and a scripted fake UCI engine."""

from __future__ import annotations

import chess
import chess.engine
import pytest

from evaluation_fixtures import fake_uci_spec, require_stockfish
from latentchess.engines.base import Engine
from latentchess.engines.external import ExternalEngine, find_executable
from latentchess.engines.registry import ENGINES, create_engine, parse_engine_spec
from latentchess.errors import EngineError

FAST = chess.engine.Limit(depth=1)


def test_spec_parsing() -> None:
    spec = parse_engine_spec(" Stockfish:elo=1400,Hash=32 ")
    assert spec.kind == "stockfish"
    assert spec.params == {"elo": "1400", "Hash": "32"}
    assert spec.name == "Stockfish:elo=1400,Hash=32"
    named = parse_engine_spec("uci:/usr/bin/engine --flag,Threads=2,name=mine")
    assert named.args == ("/usr/bin/engine --flag",)
    assert named.params == {"Threads": "2"}
    assert named.name == "mine"
    assert parse_engine_spec("random").params == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nosuchengine", "unknown engine kind 'nosuchengine'"),
        ("stockfish:elo=1400,,", "empty parameter"),
        ("stockfish:elo=1,ELO=2", "repeated key"),
        (":x", "bad engine spec"),
    ],
)
def test_bad_specs_are_quoted(text: str, message: str) -> None:
    with pytest.raises(EngineError, match=message):
        parse_engine_spec(text)


def test_registry_lists_every_kind() -> None:
    assert {"stockfish", "sunfish", "uci", "xboard", "random", "latent"} <= set(ENGINES)
    assert ENGINES["stockfish"].available()
    assert ENGINES["random"].available()


def test_stockfish_elo_spec_sets_limit_strength() -> None:
    require_stockfish()
    engine = create_engine("stockfish:elo=1400")
    try:
        assert isinstance(engine, Engine)
        assert isinstance(engine, ExternalEngine)
        assert engine.configured_options["UCI_LimitStrength"] is True
        assert engine.configured_options["UCI_Elo"] == 1400
        assert engine.configured_options["Threads"] == 1
        board = chess.Board()
        assert engine.play(board, FAST) in board.legal_moves
        analysis = engine.analyse(board, chess.engine.Limit(depth=4))
        assert analysis.best_move in board.legal_moves
        assert analysis.score_cp is not None and analysis.depth >= 1
        assert 0.0 <= (analysis.win_prob_white or 0.0) <= 1.0
    finally:
        engine.close()


def test_option_errors_name_the_engine_and_the_choices() -> None:
    require_stockfish()
    with pytest.raises(EngineError, match=r"no option 'Bogus'.*declares: .*Skill Level"):
        create_engine("stockfish:Bogus=1")
    with pytest.raises(EngineError, match="below the minimum"):
        create_engine("stockfish:elo=10")
    with pytest.raises(EngineError, match="bad value 'x' for option 'Skill Level'"):
        create_engine("stockfish:skill=x")


def test_missing_binary_is_a_clear_error() -> None:
    with pytest.raises(EngineError, match="does not exist"):
        create_engine("uci:/nonexistent/engine")
    with pytest.raises(EngineError, match="not found on PATH"):
        find_executable("no-such-engine-binary")


def test_sunfish_plays_legal_moves() -> None:
    engine = create_engine("sunfish")
    try:
        board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
        assert engine.play(board, chess.engine.Limit(time=0.05)) in board.legal_moves
    finally:
        engine.close()


def test_greedy_engine_mates_in_one_then_grabs_the_biggest_piece() -> None:
    greedy = create_engine("greedy:seed=1")
    mate = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8#
    assert greedy.play(mate, FAST) == chess.Move.from_uci("a1a8")
    # The knight on d4 can take the queen on e6 or the pawn on b5; the pawn on a4 takes b5 too.
    grab = chess.Board("4k3/8/4q3/1p6/P2N4/8/8/4K3 w - - 0 1")
    assert greedy.play(grab, FAST) == chess.Move.from_uci("d4e6")
    quiet = chess.Board()
    assert greedy.play(quiet, FAST) in quiet.legal_moves


def test_random_engine_is_seeded() -> None:
    board = chess.Board()
    first = [create_engine("random:seed=5").play(board, FAST) for _ in range(2)]
    assert first[0] == first[1]


def test_fake_engine_crash_is_an_engine_error(tmp_path) -> None:
    engine = create_engine(fake_uci_spec(tmp_path, "crash", after=1))
    try:
        board = chess.Board()
        assert engine.play(board, FAST) in board.legal_moves
        with pytest.raises(EngineError, match="terminated"):
            engine.play(board, FAST)
    finally:
        engine.close()


def test_fake_engine_illegal_move_raises_illegal_move_error(tmp_path) -> None:
    engine = create_engine(fake_uci_spec(tmp_path, "illegal", after=0))
    try:
        with pytest.raises(chess.IllegalMoveError, match="illegal move"):
            engine.play(chess.Board(), FAST)
    finally:
        engine.close()


def test_hung_engine_is_killed_after_its_clock(tmp_path) -> None:
    engine = create_engine(fake_uci_spec(tmp_path, "hang", after=0))
    clock = chess.engine.Limit(white_clock=0.2, black_clock=0.2)
    try:
        with pytest.raises(EngineError):
            engine.play(chess.Board(), clock)
    finally:
        engine.close()


def test_xboard_engines_refuse_depth_limits(tmp_path) -> None:
    # The check happens before any I/O, so the fake UCI script stands in for an XBoard engine.
    engine = create_engine(fake_uci_spec(tmp_path))
    engine.time_limits_only = True  # type: ignore[attr-defined]
    try:
        with pytest.raises(EngineError, match="time limits only"):
            engine.play(chess.Board(), FAST)
    finally:
        engine.close()


# Anchors with published ratings that Debian packages (scripts/setup.sh installs them when it
# can; they are optional, so a missing binary skips and says which package to install).
ANCHORS = ["gnuchess", "phalanx", "toga2", "glaurung", "sjeng", "hoichess"]


@pytest.mark.parametrize("kind", ANCHORS)
def test_anchor_plays_a_legal_move_on_a_clock(kind: str) -> None:
    if not ENGINES[kind].available():
        pytest.skip(f"{kind} is not installed (optional anchor: apt-get install {kind})")
    engine = create_engine(kind)
    try:
        board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
        clock = chess.engine.Limit(white_clock=2.0, black_clock=2.0, white_inc=0.1, black_inc=0.1)
        move = engine.play(board, clock)
        assert move in board.legal_moves, f"{kind} played {move} in {board.fen()}"
        board.push(move)
        reply = engine.play(board, clock)  # a second move: the engine follows the game
        assert reply in board.legal_moves, f"{kind} played {reply} in {board.fen()}"
    finally:
        engine.close()
