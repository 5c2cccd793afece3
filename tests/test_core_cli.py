"""``latentchess perft`` and UCI ``go perft N`` print Stockfish's perft format."""

from __future__ import annotations

import chess
import pytest

from latentchess.cli import main
from latentchess.uci import UciSession


def _divide_lines(board: chess.Board, depth: int) -> dict[str, int]:
    counts = {}
    for move in board.legal_moves:
        board.push(move)
        counts[move.uci()] = sum(1 for _ in _leaves(board, depth - 1))
        board.pop()
    return counts


def _leaves(board: chess.Board, depth: int):  # type: ignore[no-untyped-def]
    if depth == 0:
        yield None
        return
    for move in list(board.legal_moves):
        board.push(move)
        yield from _leaves(board, depth - 1)
        board.pop()


def _parse(lines: list[str]) -> tuple[dict[str, int], int]:
    blank = lines.index("")
    counts = {move: int(n) for move, n in (line.split(": ") for line in lines[:blank])}
    assert lines[blank + 1].startswith("Nodes searched: ")
    return counts, int(lines[blank + 1].split(": ")[1])


def test_perft_command_prints_stockfish_format(capsys: pytest.CaptureFixture[str]) -> None:
    fen = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    assert main(["perft", "--fen", fen, "--moves", "e1g1", "--depth", "2"]) == 0
    counts, total = _parse(capsys.readouterr().out.splitlines())
    board = chess.Board(fen)
    board.push_uci("e1g1")
    assert counts == _divide_lines(board, 2)
    assert total == sum(counts.values())


def test_perft_suite_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perft", "--suite", "--max-nodes", "10000"]) == 0
    assert "counts equal the published values" in capsys.readouterr().out


def test_perft_command_refuses_a_bad_fen(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perft", "--fen", "8/8/8 w - - 0 1", "--depth", "1"]) == 2
    assert "invalid FEN '8/8/8 w - - 0 1'" in capsys.readouterr().err


def test_uci_go_perft() -> None:
    lines: list[str] = []
    session = UciSession(lines.append, spec="random")
    for command in ("position startpos moves e2e4 e7e5", "go perft 3"):
        session.handle_line(command)
    counts, total = _parse(lines)
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("e7e5")
    assert counts == _divide_lines(board, 3)
    assert total == sum(counts.values())
