"""``latentchess uci --engine ab``: transcripts through the one UCI session, a clocked game over a
pipe, and a short real match against Stockfish."""

from __future__ import annotations

import sys
import time

import chess
import chess.engine

from evaluation_fixtures import require_stockfish
from latentchess.engines.ab import AlphaBetaEngine
from latentchess.evaluation.limits import parse_limit
from latentchess.evaluation.match import MatchConfig, Player, run_match
from latentchess.evaluation.openings import Opening
from latentchess.uci.session import UciSession
from uci_fixtures import SessionTranscript


class Transcript(SessionTranscript):
    """The UCI session around an ab engine, fed line by line, its output collected."""

    def __init__(self) -> None:
        engine = AlphaBetaEngine(name="ab")
        super().__init__(lambda write: UciSession(write, spec="ab", engine=engine))

    def strings(self) -> list[str]:
        return self.infos()


def test_handshake_options_info_lines_and_multipv() -> None:
    t = Transcript()
    t.send("uci")
    assert t.wait_for("id name") == "id name latentchess ab"
    t.wait_for("uciok")
    names = [line.split(" type ")[0] for line in t.lines if line.startswith("option name")]
    for option in ("Hash", "Threads", "MultiPV", "Move Overhead", "Clear Hash"):
        assert f"option name {option}" in names
    t.lines.clear()
    t.send("setoption name MultiPV value 2", "setoption name Hash value 4", "isready")
    t.wait_for("readyok")
    t.send("position startpos moves e2e4", "go depth 4")
    move = t.wait_for("bestmove").split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves
    infos = [line.split() for line in t.lines if line.startswith("info depth")]
    assert [(int(i[2]), int(i[6])) for i in infos][-2:] == [(4, 1), (4, 2)]
    for words in infos:
        for key in ("seldepth", "multipv", "score", "nodes", "nps", "hashfull", "time", "pv"):
            assert key in words
    assert t.send("quit") is False


def test_garbage_bad_positions_and_illegal_moves_are_refused() -> None:
    t = Transcript()
    t.send("uci", "hello there", "position fen not/a/fen w - - 0 1", "go depth 1")
    assert t.wait_for("bestmove") == "bestmove 0000"  # no valid position was ever set
    t.send("position startpos moves e2e4 e2e4", "go depth 2")
    assert t.wait_for("bestmove")
    strings = " | ".join(t.strings())
    assert "unknown command" in strings and "bad FEN" in strings and "illegal move" in strings
    t.send("setoption name Threads value 257", "setoption name Hash value x")
    strings = " ".join(t.strings())
    assert "'Threads' to be at most 256" in strings and "expected integer" in strings
    t.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "go depth 3")  # stalemate
    assert t.wait_for("bestmove") == "bestmove 0000"
    t.send("quit")


def test_stop_during_infinite_search_is_answered_at_once() -> None:
    t = Transcript()
    t.send("uci", "position startpos", "go infinite")
    time.sleep(0.5)
    began = time.monotonic()
    t.send("stop")
    move = t.wait_for("bestmove", timeout=2.0).split()[1]
    assert time.monotonic() - began < 0.25
    assert chess.Move.from_uci(move) in chess.Board().legal_moves
    assert not [line for line in t.lines if line.startswith("bestmove")]  # exactly one
    t.send("quit")


def test_clocked_game_over_a_pipe_never_flags_or_plays_illegal() -> None:
    command = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab:hash=8"]
    clocks = {chess.WHITE: 2.0, chess.BLACK: 2.0}
    increment = 0.02
    board = chess.Board()
    with chess.engine.SimpleEngine.popen_uci(command, timeout=30) as engine:
        # The default 30 ms covers the pipe on an idle machine; the test machine may be crowded.
        engine.configure({"Move Overhead": 100})
        while not board.is_game_over(claim_draw=True) and len(board.move_stack) < 40:
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE],
                black_clock=clocks[chess.BLACK],
                white_inc=increment,
                black_inc=increment,
            )
            began = time.monotonic()
            result = engine.play(board, limit)
            spent = time.monotonic() - began
            clocks[board.turn] += increment - spent
            assert clocks[board.turn] > 0, f"flag fell at ply {len(board.move_stack)}"
            assert result.move in board.legal_moves
            board.push(result.move)
    assert len(board.move_stack) >= 20 or board.is_game_over(claim_draw=True)


def test_short_match_against_stockfish() -> None:
    require_stockfish()
    ours = Player.from_spec("ab:hash=4", parse_limit("20ms"))
    stockfish = Player.from_spec("stockfish:elo=1350", parse_limit("20ms"))
    opening = Opening(name="Italian", eco="C50", moves=("e2e4", "e7e5", "g1f3", "b8c6", "f1c4"))
    config = MatchConfig(games=2, workers=1, progress=False, max_plies=120)
    result = run_match(ours, stockfish, [opening], config)
    assert len(result.games) == 2
    for game in result.games:
        assert game.termination in ("normal", "adjudication"), game


def test_cli_bestmove_analyse_and_bench(capsys) -> None:
    from latentchess.cli import main

    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
    assert main(["bestmove", fen, "--engine", "ab", "--depth", "3"]) == 0
    assert capsys.readouterr().out.split()[0] == "h5f7"
    assert main(["analyse", fen, "--engine", "ab", "--depth", "3"]) == 0
    out = capsys.readouterr().out
    assert "Qxf7#" in out and "mate 1" in out
    assert main(["bench", "4"]) == 0
    out = capsys.readouterr().out
    assert "Nodes searched" in out and "Nodes/second" in out


def test_multipv_info_lines_and_analyse_are_best_first(capsys) -> None:
    """``info multipv 1`` is the best line of every iteration and ``bestmove`` is its move; the
    ``analyse`` command lists its lines best first (a node limit that stops an iteration after
    its first line: it used to list Nf3 cp 16 above Nc3 cp 39)."""
    import json

    from latentchess.cli import main

    t = Transcript()
    t.send("uci", "setoption name MultiPV value 3", "isready")
    t.wait_for("readyok")
    t.send("position startpos", "go nodes 3500")
    move = t.wait_for("bestmove").split()[1]
    infos = [line.split() for line in t.lines if line.startswith("info depth")]
    by_depth: dict[int, list[tuple[int, int]]] = {}
    for words in infos:
        by_depth.setdefault(int(words[2]), []).append((int(words[6]), int(words[9])))
    for lines in by_depth.values():
        assert [rank for rank, _ in lines] == [1, 2, 3]
        assert [cp for _, cp in lines] == sorted((cp for _, cp in lines), reverse=True)
    last_best = next(w for w in reversed(infos) if w[6] == "1")
    assert move == last_best[last_best.index("pv") + 1]
    t.send("quit")
    assert main(["analyse", "startpos", "--nodes", "3500", "--multipv", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cps = [int(row["score"].split()[1]) for row in report["moves"]]
    assert len(cps) == 3 and cps == sorted(cps, reverse=True)
    assert report["bestmove"] == report["moves"][0]["move"]


def test_go_searchmoves_restricts_the_root() -> None:
    t = Transcript()
    t.send("uci", "isready")
    t.wait_for("readyok")
    # White mates with Qxf7#, but searchmoves allows only two quiet moves (and names garbage).
    fen = "r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
    t.send(f"position fen {fen}", "go depth 3 searchmoves a2a3 h2h3 e1e5")
    move = t.wait_for("bestmove").split()[1]
    assert move in ("a2a3", "h2h3")
    assert any("'e1e5' is not a legal move" in line for line in t.strings())
    t.send(f"position fen {fen}", "go depth 3 searchmoves zz")
    assert t.wait_for("bestmove").split()[1] == "h5f7"  # nothing legal named: every move
    t.send("quit")
