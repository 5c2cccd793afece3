"""Helpers shared by the evaluation tests: tiny in-process engines and a scriptable fake UCI."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import chess
import chess.engine

from latentchess.engines.base import Analysis, Engine

STOCKFISH = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")


def require_stockfish() -> str:
    """Stockfish is part of the set-up: fail loudly (never skip) when it is missing."""
    assert STOCKFISH is not None, "Stockfish is not installed (run `make setup`)"
    return STOCKFISH


class FirstMoveEngine(Engine):
    """Plays the first legal move in UCI order (deterministic and weak)."""

    def __init__(self, name: str = "first") -> None:
        self.name = name
        self.closed = False

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        return min(board.legal_moves, key=lambda m: m.uci())

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        move = self.play(board, limit)
        return Analysis(best_move=move, pv=[move])

    def close(self) -> None:
        self.closed = True


class ScriptedEngine(FirstMoveEngine):
    """Plays from a table ``{board.epd(): uci}`` when the position is in it, else the first move."""

    def __init__(self, answers: dict[str, str], name: str = "oracle") -> None:
        super().__init__(name)
        self.answers = answers

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        uci = self.answers.get(board.epd())
        return chess.Move.from_uci(uci) if uci else super().play(board, limit)


class IllegalEngine(FirstMoveEngine):
    """Returns an illegal move (h1h8, through pieces or from the wrong side) after ``after``
    good moves."""

    def __init__(self, after: int = 0, name: str = "cheater") -> None:
        super().__init__(name)
        self.after = after
        self.calls = 0

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        self.calls += 1
        if self.calls > self.after:
            return chess.Move.from_uci("h1h8")
        return super().play(board, limit)


_FAKE_UCI = r"""
import sys, time
import chess

mode, after = sys.argv[1], int(sys.argv[2])
board = chess.Board()
searches = 0
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci":
        print("id name fake-" + mode)
        print("option name Hash type spin default 1 min 1 max 64")
        print("uciok", flush=True)
    elif words[0] == "isready":
        print("readyok", flush=True)
    elif words[0] == "position":
        if words[1] == "startpos":
            board = chess.Board()
            rest = words[2:]
        else:
            board = chess.Board(" ".join(words[2:8]))
            rest = words[8:]
        for uci in rest[1:] if rest and rest[0] == "moves" else []:
            board.push_uci(uci)
    elif words[0] == "go":
        searches += 1
        if searches > after and mode == "crash":
            sys.exit(3)
        if searches > after and mode == "hang":
            time.sleep(600)
        if searches > after and mode == "illegal":
            print("bestmove e2e2", flush=True)
            continue
        move = min(board.legal_moves, key=lambda m: m.uci())
        print("info depth 1 score cp 0 pv " + move.uci())
        print("bestmove " + move.uci(), flush=True)
    elif words[0] == "quit":
        break
"""


def fake_uci_spec(tmp_path: Path, mode: str = "ok", after: int = 0, name: str = "") -> str:
    """A ``uci:`` spec for a Python UCI engine that crashes / hangs / cheats after ``after``
    searches (``mode`` crash, hang, illegal; ``ok`` never misbehaves)."""
    script = tmp_path / f"fake_uci_{mode}_{after}.py"
    script.write_text(_FAKE_UCI, encoding="utf-8")
    spec = f"uci:{sys.executable} {script} {mode} {after}"
    return spec + (f",name={name}" if name else "")
