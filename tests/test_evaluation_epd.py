"""EPD suites: bm/am parsing, STS c0 points, malformed lines, scoring with known answers."""

from __future__ import annotations

import chess
import chess.engine
import pytest

from evaluation_fixtures import FirstMoveEngine, ScriptedEngine
from latentchess.errors import DataFormatError
from latentchess.evaluation.epd import parse_epd_line, read_epd, run_epd, score_move

LIMIT = chess.engine.Limit(depth=1)
STS_LINE = (
    '1kr5/3n4/q3p2p/p2n2p1/PppB1P2/5BP1/1P2Q2P/3R2K1 w - - bm f5; id "STS(v1.0) Undermine.001"; '
    'c0 "f5=10, Be5+=2, Bf2=3, Bg4=2"; c9 "f4f5 d4e5 d4f2 f3g4";'
)


def test_sts_line_points_from_c0() -> None:
    position = parse_epd_line(STS_LINE, default_theme="sts")
    assert position.id == "STS(v1.0) Undermine.001"
    assert position.theme == "STS(v1.0) Undermine"
    assert position.best_moves == ("f4f5",)
    assert position.points == {"f4f5": 10, "d4e5": 2, "d4f2": 3, "f3g4": 2}
    assert position.max_points == 10
    best = score_move(position, "f4f5")
    assert best.solved and best.points == 10
    second = score_move(position, "d4f2")
    assert not second.solved and second.points == 3
    assert score_move(position, "g1h1").points == 0


def test_c0_variants() -> None:
    # Fully disambiguated SAN (as in STS v3), a UCI entry, a repeated move (max counts).
    line = '6k1/6b1/8/8/8/8/8/3Q2K1 b - - bm Bf8; id "x.1"; c0 "Bg7f8=10, g7f6=4, Bf6=7, Bh8=2";'
    position = parse_epd_line(line)
    assert position.points == {"g7f8": 10, "g7f6": 7, "g7h8": 2}
    comment = parse_epd_line('k7/8/1K6/8/8/8/8/7R w - - bm Rh8#; c0 "Smith=Jones game, 1999";')
    assert comment.points == {}  # a comment, not a move list
    assert comment.best_moves == ("h1h8",)


def test_bm_with_several_moves_and_am() -> None:
    position = parse_epd_line(
        'r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - bm Nd5 a4; id "BK.05";'
    )
    assert position.theme == "BK" and set(position.best_moves) == {"c3d5", "a2a4"}
    assert score_move(position, "a2a4").solved and not score_move(position, "d4d5").solved
    avoid = parse_epd_line(
        'k1b4r/1p3p2/pq2pNp1/5n1p/P3QP2/1P1R1BPP/2P5/1K6 b - - am Nxg3; id "arasan2024.50";'
    )
    assert avoid.avoid_moves == ("f5g3",) and avoid.best_moves == ()
    assert not score_move(avoid, "f5g3").solved and score_move(avoid, "b6b3").solved


def test_malformed_lines_are_reported_with_file_and_line(tmp_path) -> None:
    path = tmp_path / "suite.epd"
    path.write_text(
        "\n".join(
            [
                "# a comment",
                STS_LINE,
                "8/8/8/8 w - - bm e4;",
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - bm e5;",
                'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - bm e4; c0 "e4=10, Zz9=3";',
                'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "nothing.1";',
                'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - bm e4; id "open;',
                "",
            ]
        ),
        encoding="utf-8",
    )
    positions, problems = read_epd(path)
    assert len(positions) == 1
    assert [p.line for p in problems] == [3, 4, 5, 6, 7]
    assert all(str(p).startswith(f"{path}:") for p in problems)
    assert "bad c0 entry 'Zz9=3'" in str(problems[2])
    assert "nothing to score" in str(problems[3])
    with pytest.raises(DataFormatError, match=r"suite\.epd:3"):
        read_epd(path, strict=True)


def test_scoring_with_an_engine_that_knows_the_answers(tmp_path) -> None:
    lines = [
        STS_LINE,
        '1k1r4/pp1b1R2/3q2pp/4p3/2B5/4Q3/PPP2B2/2K5 b - - bm Qd1+; id "BK.01";',
        '3r1k2/4npp1/1ppr3p/p6P/P2PPPP1/1NR5/5K2/2R5 w - - bm d5; id "BK.02";',
    ]
    path = tmp_path / "mixed.epd"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    positions, problems = read_epd(path)
    assert problems == [] and len(positions) == 3
    table = {chess.Board(p.fen).epd(): p.best_moves[0] for p in positions}
    report = run_epd(lambda: ScriptedEngine(table), positions, LIMIT, progress=False, workers=2)
    assert report.solved == 3
    themes = {t.theme: t for t in report.by_theme()}
    assert themes["BK"].solved == 2 and themes["BK"].max_points == 0
    assert themes["STS(v1.0) Undermine"].points == 10
    assert "total" in report.table()
    weak = run_epd(lambda: FirstMoveEngine(), positions, LIMIT, progress=False)
    for result in weak.results:
        board = chess.Board(result.position.fen)
        first = min(board.legal_moves, key=lambda m: m.uci()).uci()
        assert result.move == first
        assert result.solved == (first in result.position.best_moves)
