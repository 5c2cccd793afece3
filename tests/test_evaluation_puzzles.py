"""Lichess-format puzzles: parsing, solving with engines that know / do not know the answers,
reports, charts, and making puzzles from a labelled dataset with Stockfish."""

from __future__ import annotations

import chess
import chess.engine
import pytest

from evaluation_fixtures import FirstMoveEngine, ScriptedEngine, require_stockfish
from latentchess.data.store import ShardWriter
from latentchess.errors import DataFormatError
from latentchess.evaluation.puzzles import (
    PUZZLE_COLUMNS,
    Puzzle,
    make_puzzles,
    performance_rating,
    proxy_rating,
    read_puzzles,
    run_puzzles,
    solve_puzzle,
    write_puzzles,
)

LIMIT = chess.engine.Limit(depth=1)
START = chess.STARTING_FEN
HEADER = ",".join(PUZZLE_COLUMNS)
# A real Lichess puzzle (back-rank mate), a scholar's mate, and a longer line.
ROWS = [
    "CJi0b,6k1/p1p2ppp/1pqp2r1/3Q4/8/1P6/P1P2PPP/4RK2 b - - 8 22,c6d5 e1e8,400,116,81,1125,"
    "backRankMate endgame mate mateIn1 oneMove queenRookEndgame,https://lichess.org/zhWsNjI8,",
    "p2two,r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR b KQkq - 0 1,"
    "a7a6 f3f7,900,80,90,100,mate mateIn1 short,https://example.org/2,",
    "p3lng,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1,"
    "e2e4 e7e5 g1f3 b8c6 f1b5,1700,80,90,100,opening long,https://example.org/3,Ruy_Lopez",
]


def answers(puzzles: list[Puzzle]) -> dict[str, str]:
    """Position (EPD) -> the solver's expected move, for every solver move of every puzzle."""
    table = {}
    for puzzle in puzzles:
        board = chess.Board(puzzle.fen)
        for index, uci in enumerate(puzzle.moves):
            if index % 2 == 1:
                table[board.epd()] = uci
            board.push_uci(uci)
    return table


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "puzzles.csv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n", encoding="utf-8")
    return path


def test_read_puzzles(csv_file) -> None:
    puzzles, problems = read_puzzles(csv_file)
    assert problems == []
    assert [p.id for p in puzzles] == ["CJi0b", "p2two", "p3lng"]
    first = puzzles[0]
    assert first.moves == ("c6d5", "e1e8") and first.rating == 400
    assert "mateIn1" in first.themes and first.opening_tags == ()
    assert puzzles[2].opening_tags == ("Ruy_Lopez",)


def test_bad_rows_are_reported_with_line_numbers(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "\n".join(
            [
                HEADER,
                ROWS[0],
                "x1,not a fen,e2e4 e7e5,800,1,1,1,,,",
                f"x2,{START},e2e5 e7e5,800,1,1,1,,,",
                f"x3,{START},e2e4,800,1,1,1,,,",
                f"x4,{START},e2e4 e7e5,high,1,1,1,,,",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    puzzles, problems = read_puzzles(path)
    assert [p.id for p in puzzles] == ["CJi0b"]
    messages = [str(p) for p in problems]
    assert [p.line for p in problems] == [3, 4, 5, 6]
    assert "bad.csv:3: bad puzzle 'x1'" in messages[0]
    assert "illegal move 'e2e5'" in messages[1]
    assert "at least one reply" in messages[2]
    assert "Rating must be an integer, got 'high'" in messages[3]
    with pytest.raises(DataFormatError, match=r"bad\.csv:3"):
        read_puzzles(path, strict=True)
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("id,fen\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="expected the Lichess puzzle header"):
        read_puzzles(wrong)


def test_engine_that_knows_the_answers_solves_everything(csv_file) -> None:
    puzzles, _ = read_puzzles(csv_file)
    oracle = ScriptedEngine(answers(puzzles))
    report = run_puzzles(lambda: oracle, puzzles, LIMIT, progress=False, engine_name="oracle")
    assert report.solved == 3 and report.accuracy == 1.0
    assert all(r.wrong_at is None and r.solved for r in report.results)
    assert report.results[2].played == ("e7e5", "b8c6")  # our moves of the long line
    rating, _, high = report.performance_rating()
    assert rating > 1700 and high == float("inf")


def test_engine_that_does_not_know_fails_where_it_should(csv_file) -> None:
    puzzles, _ = read_puzzles(csv_file)
    report = run_puzzles(lambda: FirstMoveEngine(), puzzles, LIMIT, progress=False, workers=2)
    table = answers(puzzles)
    for result in report.results:
        board = chess.Board(result.puzzle.fen)
        board.push_uci(result.puzzle.moves[0])
        first_choice = min(board.legal_moves, key=lambda m: m.uci()).uci()
        assert result.solved == (first_choice == table[board.epd()])
    assert report.solved < 3
    bands = report.by_band(400)
    assert sum(b.total for b in bands) == 3
    assert [b.label for b in bands] == ["400-799", "800-1199", "1600-1999"]
    assert "rating band" in report.table(themes=3)


def test_any_mating_move_solves() -> None:
    # White mates on the back rank after Black's move, with either rook (Rb8# is listed).
    puzzle = Puzzle(
        id="alt", fen="6k1/2p2ppp/8/8/8/8/5PPP/RR4K1 b - - 0 1", moves=("c7c6", "b1b8"), rating=600
    )
    board = chess.Board(puzzle.fen)
    board.push_uci("c7c6")
    mates = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            mates.append(move.uci())
        board.pop()
    assert len(mates) >= 2
    other = next(m for m in mates if m != "b1b8")
    alternative = ScriptedEngine({board.epd(): other})
    assert solve_puzzle(alternative, puzzle, LIMIT).solved
    wrong = ScriptedEngine({board.epd(): "g1f1"})
    result = solve_puzzle(wrong, puzzle, LIMIT)
    assert not result.solved and result.wrong_at == 1 and result.played == ("g1f1",)


def test_report_outputs(csv_file, tmp_path) -> None:
    puzzles, _ = read_puzzles(csv_file)
    report = run_puzzles(lambda: FirstMoveEngine(), puzzles, LIMIT, progress=False)
    chart = tmp_path / "bands.png"
    report.plot(chart)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = report.to_dict()
    assert summary["puzzles"] == 3 and len(summary["bands"]) == 3
    copy = tmp_path / "copy.csv"
    assert write_puzzles(copy, puzzles) == 3
    assert read_puzzles(copy)[0] == puzzles


def test_performance_rating_matches_its_definition() -> None:
    ratings = [1000, 1200, 1400, 1600, 1800]
    solved = [True, True, True, False, False]
    estimate, low, high = performance_rating(ratings, solved)
    expected = sum(1 / (1 + 10 ** ((r - estimate) / 400)) for r in ratings)
    assert expected == pytest.approx(3.0, abs=1e-6)
    assert low < estimate < high


def test_make_puzzles_from_a_labelled_dataset(tmp_path) -> None:
    require_stockfish()
    # A short game: 1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7#; the last position has one mate.
    moves = ["e2e4", "e7e5", "d1h5", "b8c6", "f1c4", "g8f6", "h5f7"]
    board = chess.Board()
    rows = []
    for ply, uci in enumerate(moves):
        rows.append(
            {
                "fen": board.fen(),
                "win_prob_white": 0.5,
                "best_move": uci,
                "multipv_gap_cp": 10_000 if uci == "h5f7" else 20,
                "source": "test",
                "game": 0,
                "ply": ply,
            }
        )
        board.push_uci(uci)
    # An orphan candidate: no row for its previous ply.
    rows.append({**rows[-1], "game": 1, "ply": 40})
    ShardWriter(tmp_path / "ds").write(rows)
    puzzles, stats = make_puzzles(tmp_path / "ds", gap_cp=300, max_depth=6, progress=False)
    assert stats["candidates"] == 2 and stats["no_previous_position"] == 1
    (puzzle,) = puzzles
    assert puzzle.moves == ("g8f6", "h5f7")
    assert puzzle.fen == rows[5]["fen"]
    assert "mateIn1" in puzzle.themes and puzzle.rating == proxy_rating(1)
    out = tmp_path / "made.csv"
    write_puzzles(out, puzzles)
    again, problems = read_puzzles(out)
    assert problems == [] and again == puzzles
