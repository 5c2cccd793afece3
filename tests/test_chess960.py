"""Chess960 on the native core and over UCI, checked against python-chess (the reference).

python-chess's ``chess.Board(fen, chess960=True)`` defines the rules here: X-FEN and Shredder-FEN
castling fields, castling as king-takes-own-rook, the FEN it writes, ``perft`` by its own move
generator, and ``chess.polyglot.zobrist_hash``.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import pytest
from tests.uci_fixtures import SessionTranscript

from latentchess.core import Board
from latentchess.core import _native as native
from latentchess.core.board import move_to_bits
from latentchess.core.nnue import resolve_evaluator
from latentchess.core.suite import PERFT_SUITE
from latentchess.engines.ab import AlphaBetaEngine
from latentchess.errors import LatentChessError
from latentchess.evaluation.limits import parse_limit
from latentchess.evaluation.match import MatchConfig, Player, run_match
from latentchess.evaluation.openings import chess960_openings
from latentchess.uci.session import UciSession

# Castling where king and rook squares meet: (FEN, castling moves in python-chess's notation).
ODD_CASTLING = [
    ("1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1", {"f1g1", "f1b1"}),  # K f1, R g1
    ("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/RK4R1 w GA - 0 1", {"b1a1", "b1g1"}),  # K b1, R a1
    ("4k3/pppppppp/8/8/8/8/PPPPPPPP/2R3KR w HC - 0 1", {"g1h1", "g1c1"}),  # K on g1 already
    ("4k3/pppppppp/8/8/8/8/PPPPPPPP/1RK2R2 w FB - 0 1", {"c1b1", "c1f1"}),  # K on c1 already
    ("4k3/pppppppp/8/8/8/8/PPPPPPPP/2RK1R2 w FC - 0 1", {"d1c1", "d1f1"}),  # K d1, R c1: swap
    ("4k3/pppppppp/8/8/8/8/PPPPPPPP/4KR2 w F - 0 1", {"e1f1"}),  # R f1 stays on f1
    ("4k3/pppppppp/8/8/8/8/PPPPPPPP/3R2K1 w D - 0 1", {"g1d1"}),  # K g1 to c1, R d1 stays
    ("rk2r3/pppppppp/8/8/8/8/PPPPPPPP/4K3 b ea - 0 1", {"b8a8", "b8e8"}),  # Black, K b8
]


def _perft(board: chess.Board, depth: int) -> int:
    """python-chess's own leaf count."""
    if depth <= 1:
        return board.legal_moves.count() if depth == 1 else 1
    nodes = 0
    for move in board.legal_moves:
        board.push(move)
        nodes += _perft(board, depth - 1)
        board.pop()
    return nodes


def _same(native_board: Board, board: chess.Board) -> None:
    assert native_board.fen() == board.fen()
    assert native_board.fen(shredder=True) == board.fen(shredder=True)
    assert native_board.zobrist_key() == chess.polyglot.zobrist_hash(board)
    assert {m.uci() for m in native_board.legal_moves()} == {m.uci() for m in board.legal_moves}


def test_perft_of_every_start_position_equals_python_chess() -> None:
    for number in range(960):
        board = chess.Board.from_chess960_pos(number)
        ours = Board.from_chess(board)
        assert ours.chess960 and ours.fen() == board.fen(), number
        assert ours.perft(2) == _perft(board, 2), number
    for number in (0, 518, 959):
        board = chess.Board.from_chess960_pos(number)
        assert Board.from_chess(board).perft(3) == _perft(board, 3), number


def test_published_chess960_perft_counts() -> None:
    cases = [case for case in PERFT_SUITE if case.chess960]
    assert len(cases) == 6
    for case in cases:
        board = Board(case.fen, chess960=True)
        assert board.fen(shredder=True) == chess.Board(case.fen, chess960=True).fen(shredder=True)
        for depth, nodes in case.nodes.items():
            if nodes <= 1_200_000:
                assert board.perft(depth) == nodes, (case.name, depth)


def test_x_fen_and_shredder_fen_round_trips() -> None:
    # X-FEN names a rook by its file when another rook stands further out on the same side.
    fen = "rr2k1r1/ppppppp1/8/8/8/8/PPPPPPP1/1R2KR1R w BHbg - 0 1"
    board, ours = chess.Board(fen, chess960=True), Board(fen, chess960=True)
    assert ours.fen() == board.fen() == "rr2k1r1/ppppppp1/8/8/8/8/PPPPPPP1/1R2KR1R w KQkb - 0 1"
    assert ours.fen(shredder=True) == board.fen(shredder=True)
    assert Board(ours.fen(), chess960=True).fen(shredder=True) == ours.fen(shredder=True)
    rng = random.Random(5)
    checked = lettered = 0
    for _ in range(600):
        ranks = []
        for color in (chess.BLACK, chess.WHITE):
            row = ["1"] * 8
            squares = rng.sample(range(8), 5)
            row[squares[0]] = "k"
            for index in squares[1 : 1 + rng.randrange(3)]:
                row[index] = "r"
            if rng.random() < 0.5:
                row[squares[4]] = "n"
            text = re.sub("1+", lambda run: str(len(run.group())), "".join(row))
            ranks.append(text.upper() if color else text)
        white = "".join(rng.sample("KQABCDEFGH", rng.randrange(3)))
        black = "".join(rng.sample("kqabcdefgh", rng.randrange(3)))
        placement = f"{ranks[0]}/pppppppp/8/8/8/8/PPPPPPPP/{ranks[1]}"
        fen = f"{placement} {rng.choice('wb')} {white + black or '-'} - 0 1"
        board, ours = chess.Board(fen, chess960=True), Board(fen, chess960=True)
        _same(ours, board)
        assert Board(ours.fen(), chess960=True).fen() == ours.fen()
        checked += 1
        lettered += any(c not in "KQkq-" for c in ours.fen().split()[2])
    assert checked == 600 and lettered > 10


def test_chess960_castling_fields_refused_in_standard_mode() -> None:
    fen = "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1"
    with pytest.raises(ValueError, match="castling field 'GBgb'"):
        Board(fen)
    with pytest.raises(ValueError, match="X-FEN or Shredder-FEN"):
        Board(fen.replace("GBgb", "GBgbx"), chess960=True)
    standard = Board()
    assert not standard.chess960 and "e1g1" not in {m.uci() for m in standard.legal_moves()}
    kiwipete = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    assert {"e1g1", "e1c1"} <= {m.uci() for m in Board(kiwipete).legal_moves()}
    assert {"e1h1", "e1a1"} <= {m.uci() for m in Board(kiwipete, chess960=True).legal_moves()}


@pytest.mark.parametrize(("fen", "castles"), ODD_CASTLING)
def test_castling_make_unmake_restores_everything(fen: str, castles: set[str]) -> None:
    board = chess.Board(fen, chess960=True)
    ours = Board(fen, chess960=True)
    _same(ours, board)
    assert {board.uci(m) for m in board.legal_moves if board.is_castling(m)} == castles
    before = (ours.fen(), ours.zobrist_key())
    for uci in sorted(castles):
        move = chess.Move.from_uci(uci)
        ours.push(move)
        board.push(move)
        _same(ours, board)
        evaluations = native.evaluate_along(native.Position(fen, True), [move_to_bits(move)], "hce")
        assert evaluations[0] == evaluations[1]
        for reply in list(board.legal_moves)[:5]:  # one ply deeper and back
            ours.push(reply)
            board.push(reply)
            _same(ours, board)
            ours.pop()
            board.pop()
        assert ours.pop() == move
        board.pop()
        assert (ours.fen(), ours.zobrist_key()) == before
        _same(ours, board)


def test_random_chess960_games_agree_with_python_chess() -> None:
    rng = random.Random(11)
    castled = 0
    for _ in range(24):
        board = chess.Board.from_chess960_pos(rng.randrange(960))
        ours = Board.from_chess(board)
        moves: list[chess.Move] = []
        for _ in range(120):
            _same(ours, board)
            legal = list(board.legal_moves)
            if not legal:
                break
            castles = [m for m in legal if board.is_castling(m)]
            move = rng.choice(castles if castles and rng.random() < 0.7 else legal)
            castled += board.is_castling(move)
            moves.append(move)
            ours.push(move)
            board.push(move)
        root = Board.from_chess(board.root())
        updated, refreshed = native.evaluate_along(
            native.Position(root.fen(shredder=True), True),
            [move_to_bits(m) for m in moves],
            "hce",
        )
        assert updated == refreshed
        assert Board.from_chess(board).fen() == board.fen()  # root FEN plus the move stack
    assert castled >= 10


def test_shipped_nnue_incremental_equals_refresh_after_chess960_castling() -> None:
    evaluator = resolve_evaluator("nnue")
    for fen, castles in ODD_CASTLING:
        for uci in sorted(castles):
            board = chess.Board(fen, chess960=True)
            line = [chess.Move.from_uci(uci)]
            board.push(line[0])
            line += list(board.legal_moves)[:1]
            updated, refreshed = native.evaluate_along(
                native.Position(fen, True), [move_to_bits(m) for m in line], evaluator
            )
            assert updated == refreshed, (fen, uci)


def test_ab_finds_the_castling_mates() -> None:
    engine = AlphaBetaEngine.from_options(hash=4)
    for fen, mate in [
        ("2rkr3/2p1p3/8/8/8/8/8/RK6 w A - 0 1", "b1a1"),  # K c1, R d1: the d-file
        ("4rkr1/4p1p1/8/8/8/8/8/6KR w H - 0 1", "g1h1"),  # K stays on g1, R f1: the f-file
        ("6kr/8/8/8/8/8/4P1P1/4RKR1 b h - 0 1", "g8h8"),  # Black, the king already on g8
    ]:
        board = chess.Board(fen, chess960=True)
        analysis = engine.analyse(board, chess.engine.Limit(depth=3))
        assert analysis.best_move is not None and board.uci(analysis.best_move) == mate, fen
        assert analysis.mate == 1
    engine.close()


def _session(spec: str = "ab:hash=4") -> SessionTranscript:
    from latentchess.engines.registry import create_engine

    return SessionTranscript(
        lambda write: UciSession(write, spec=spec, engine=create_engine(spec, wait=False))
    )


def test_uci_session_chess960_option_positions_and_perft() -> None:
    t = _session()
    t.send("uci")
    t.wait_for("uciok")
    assert "option name UCI_Chess960 type check default false" in t.lines
    # Off: standard notation.
    t.send("position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1g1", "go depth 1")
    assert chess.Move.from_uci(t.wait_for("bestmove").split()[1])
    t.send("setoption name UCI_Chess960 value true", "isready")
    t.wait_for("readyok")
    assert t.session.chess960
    # The same game continued: the standard board is not reused in Chess960 mode.
    t.send("position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1g1 d7d6")
    assert t.session.board is None  # e1g1 is no castling in Chess960 notation: refused
    assert any("illegal move 7 'e1g1'" in line for line in t.infos())
    # On: castling as king takes rook, X-FEN and Shredder-FEN both read.
    t.send("position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1h1", "go depth 2")
    board = chess.Board(chess960=True)
    for uci in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1h1"]:
        board.push_uci(uci)
    assert chess.Move.from_uci(t.wait_for("bestmove").split()[1]) in board.legal_moves
    for fen in ("2rkr3/2p1p3/8/8/8/8/8/RK6 w A - 0 1", "2rkr3/2p1p3/8/8/8/8/8/RK6 w Q - 0 1"):
        t.send(f"position fen {fen}", "go depth 3")
        assert t.wait_for("bestmove").split()[1] == "b1a1"
    t.send("position fen 1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1", "go perft 2")
    nodes = t.wait_for("Nodes searched")
    reference = chess.Board("1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1", chess960=True)
    assert nodes == f"Nodes searched: {_perft(reference, 2)}"
    assert "f1g1: " + str(_perft_after(reference, "f1g1")) in t.lines
    t.send("quit")


def _perft_after(board: chess.Board, uci: str) -> int:
    after = board.copy()
    after.push_uci(uci)
    return after.legal_moves.count()


def test_uci_engine_that_cannot_play_chess960_refuses_it_clearly() -> None:
    t = _session()
    t.send("uci")
    t.wait_for("uciok")
    # Human-like play runs a model that knows only KQkq castling: ab then cannot play Chess960.
    t.send("setoption name UCI_LimitStrength value true")
    assert not t.session.engine.supports_chess960()
    t.send("setoption name UCI_Chess960 value true")
    assert any("cannot play Chess960" in line for line in t.infos())
    assert not t.session.chess960
    # With the option on and then an engine that cannot play it: a legal fallback, said why.
    t.send("setoption name UCI_LimitStrength value false", "setoption name UCI_Chess960 value on")
    assert t.session.chess960
    t.send("setoption name UCI_LimitStrength value true")
    t.send("position fen 1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1", "go depth 2")
    move = t.wait_for("bestmove").split()[1]
    board = chess.Board("1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1", chess960=True)
    assert chess.Move.from_uci(move) in board.legal_moves
    assert any("fallback move" in line for line in t.infos())
    t.send("quit")


def test_uci_chess960_games_over_a_pipe() -> None:
    command = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab:hash=8"]
    starts = [chess.Board.from_chess960_pos(n).fen() for n in (0, 959, 314)] + [
        "2rkr3/2p1p3/8/8/8/8/8/RK6 w A - 0 1",
        "4rkr1/4p1p1/8/8/8/8/8/6KR w H - 0 1",
    ]
    castled = 0
    with chess.engine.SimpleEngine.popen_uci(command, timeout=60) as engine:
        assert "UCI_Chess960" in engine.options
        for fen in starts:
            board = chess.Board(fen, chess960=True)
            for _ in range(16):
                if board.is_game_over():
                    break
                result = engine.play(board, chess.engine.Limit(nodes=2000))
                assert result.move is not None and result.move in board.legal_moves, board.fen()
                castled += board.is_castling(result.move)
                board.push(result.move)
    assert castled >= 2


def test_chess960_match_writes_variant_pgn_and_refuses_engines_that_cannot(tmp_path: Path) -> None:
    openings = chess960_openings(2, seed=3)
    assert all(o.chess960 for o in openings) and len({o.fen for o in openings}) == 2
    ab = Player.from_spec("ab:hash=4,depth=2", parse_limit("depth=2"))
    rand = Player.from_spec("random", parse_limit("depth=1"))
    config = MatchConfig(games=4, workers=1, progress=False, max_plies=40)
    pgn = tmp_path / "c960.pgn"
    result = run_match(ab, rand, openings, config, pgn_path=pgn)
    assert len(result.games) == 4
    with pgn.open() as handle:
        games = [chess.pgn.read_game(handle) for _ in range(4)]
    for game in games:
        assert game is not None and game.headers["Variant"] == "Chess960"
        board = game.board()
        assert board.chess960 and board.fen() in {o.fen for o in openings}
        assert game.headers.get("SetUp") == "1" or board.fen() == chess.STARTING_FEN
        for move in game.mainline_moves():
            assert move in board.legal_moves
            board.push(move)
    again = run_match(ab, rand, openings, config, pgn_path=pgn)  # resumed: nothing left to play
    assert again.resumed == 4
    human = Player.from_spec("ab:limit_strength=1", parse_limit("depth=1"))
    with pytest.raises(LatentChessError, match="cannot play Chess960"):
        run_match(human, rand, openings, MatchConfig(games=2, workers=1, progress=False))
