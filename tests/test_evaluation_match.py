"""Matches: real short games against Stockfish, PGN records, resume, crashes, limits, openings."""

from __future__ import annotations

import io
import struct
import time

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import pytest

from evaluation_fixtures import FirstMoveEngine, IllegalEngine, fake_uci_spec, require_stockfish
from latentchess.engines.registry import create_engine
from latentchess.errors import DataFormatError, LatentChessError
from latentchess.evaluation.limits import LimitError, SideLimit, parse_limit
from latentchess.evaluation.match import Adjudication, MatchConfig, Player, run_match
from latentchess.evaluation.openings import (
    Opening,
    eco_openings,
    load_openings,
    polyglot_openings,
    read_epd_openings,
    read_pgn_openings,
)

OPENINGS_PGN = """[Event "?"]
[ECO "C20"]
[Opening "King's pawn"]

1. e4 e5 2. Nf3 *

[Event "?"]
[ECO "D00"]
[Opening "Queen's pawn"]

1. d4 d5 *
"""

REQUIRED_HEADERS = (
    "Event", "Site", "Date", "Round", "White", "Black", "Result", "TimeControl", "Opening",
    "ECO", "Termination", "TerminationDetails", "PlyCount", "WhiteEngine", "BlackEngine",
    "WhiteOptions", "BlackOptions", "WhiteLimit", "BlackLimit",
)  # fmt: skip


def read_games(path) -> list[chess.pgn.Game]:
    games = []
    with open(path, encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            assert not game.errors, game.errors
            games.append(game)
    return games


@pytest.fixture
def openings(tmp_path) -> list[Opening]:
    path = tmp_path / "openings.pgn"
    path.write_text(OPENINGS_PGN, encoding="utf-8")
    return read_pgn_openings(path)


def quiet(games: int, **kwargs) -> MatchConfig:
    return MatchConfig(games=games, progress=False, **kwargs)


def first_player(name: str = "first", limit: str = "depth=1") -> Player:
    return Player(name=name, make=lambda: FirstMoveEngine(name), limit=parse_limit(limit))


# --- limits -------------------------------------------------------------------------------------


def test_limit_syntax() -> None:
    assert parse_limit("50ms") == SideLimit(movetime=0.05)
    assert parse_limit("time=0.2,depth=3") == SideLimit(movetime=0.2, depth=3)
    assert parse_limit("nodes=1000").nodes == 1000
    clock = parse_limit("tc=60+0.6")
    assert clock.is_clock and clock.base == 60 and clock.increment == 0.6
    assert clock.pgn_time_control() == "60+0.6" and parse_limit("60+0.6") == clock
    assert parse_limit(str(clock)) == clock
    limit = clock.engine_limit({True: 30.0, False: 20.0}, {True: 0.6, False: 0.6})
    assert (limit.white_clock, limit.black_clock, limit.white_inc) == (30.0, 20.0, 0.6)
    for bad in ("", "depth=x", "speed=3", "time=-1", "depth=2,depth=3", "tc=a+b"):
        with pytest.raises(LimitError):
            parse_limit(bad)


# --- real games ---------------------------------------------------------------------------------


def test_short_match_against_stockfish_writes_readable_pgn(tmp_path, openings) -> None:
    require_stockfish()
    pgn = tmp_path / "match.pgn"
    stockfish = Player.from_spec("stockfish:skill=0", parse_limit("depth=1"))
    randomer = Player.from_spec("random:seed=1", parse_limit("10ms"))
    result = run_match(stockfish, randomer, openings, quiet(4, workers=2), pgn_path=pgn)
    assert len(result.games) == 4 and result.resumed == 0
    wins, draws, losses = result.score
    assert wins + draws + losses == 4
    games = read_games(pgn)
    assert sorted(int(g.headers["Round"]) for g in games) == [1, 2, 3, 4]
    for game in games:
        headers = game.headers
        for key in REQUIRED_HEADERS:
            assert key in headers, key
        round_number = int(headers["Round"])
        white_first = round_number % 2 == 1
        assert headers["White"] == ("stockfish:skill=0" if white_first else "random:seed=1")
        engine_header = "WhiteOptions" if white_first else "BlackOptions"
        assert "Skill Level=0" in headers[engine_header]
        opening = openings[(round_number - 1) // 2]
        assert headers["Opening"] == opening.name and headers["ECO"] == opening.eco
        moves = [m.uci() for m in game.mainline_moves()]
        assert tuple(moves[: len(opening.moves)]) == opening.moves  # book moves recorded
        board = game.end().board()
        assert int(headers["PlyCount"]) == board.ply()
        if headers["Termination"] == "normal":
            assert board.outcome(claim_draw=True).result() == headers["Result"]
    assert "Elo difference" in result.summary()


def test_resume_appends_only_missing_rounds(tmp_path, openings) -> None:
    pgn = tmp_path / "resume.pgn"
    a, b = first_player("a"), Player.from_spec("random:seed=2", parse_limit("depth=1"))
    run_match(a, b, openings, quiet(2), pgn_path=pgn)
    first_text = pgn.read_text(encoding="utf-8")
    result = run_match(a, b, openings, quiet(4), pgn_path=pgn)
    assert result.resumed == 2 and len(result.games) == 4
    assert pgn.read_text(encoding="utf-8").startswith(first_text)  # appended, not rewritten
    assert sorted(int(g.headers["Round"]) for g in read_games(pgn)) == [1, 2, 3, 4]
    before = pgn.read_text(encoding="utf-8")
    again = run_match(a, b, openings, quiet(4), pgn_path=pgn)
    assert again.resumed == 4 and pgn.read_text(encoding="utf-8") == before
    # A different match (another event) in the same file does not count as resumed.
    other = run_match(a, b, openings, quiet(2, event="other"), pgn_path=pgn)
    assert other.resumed == 0 and len(read_games(pgn)) == 6


def test_resume_refuses_a_different_schedule(tmp_path, openings) -> None:
    pgn = tmp_path / "resume.pgn"
    a, b = first_player("a"), first_player("b")
    run_match(a, b, openings, quiet(2), pgn_path=pgn)
    with pytest.raises(DataFormatError, match="disagrees with this run's schedule"):
        run_match(a, b, list(reversed(openings)), quiet(2), pgn_path=pgn)
    # The same players at another limit: those games do not belong to this match.
    with pytest.raises(DataFormatError, match="limit 'depth=1', this run gives it 'depth=2'"):
        run_match(a, first_player("b", limit="depth=2"), openings, quiet(2), pgn_path=pgn)


def test_crashing_engine_loses_and_the_match_goes_on(tmp_path, openings) -> None:
    pgn = tmp_path / "crash.pgn"
    crasher = Player.from_spec(fake_uci_spec(tmp_path, "crash", after=3, name="crasher"),
                               parse_limit("depth=1"))  # fmt: skip
    result = run_match(crasher, first_player(), openings, quiet(4, workers=1), pgn_path=pgn)
    assert len(result.games) == 4
    assert result.score == (0, 0, 4)
    for game in read_games(pgn):
        assert game.headers["Termination"] == "abandoned"
        assert "engine failed" in game.headers["TerminationDetails"]
        loser_is_white = game.headers["White"] == "crasher"
        assert game.headers["Result"] == ("0-1" if loser_is_white else "1-0")


def test_illegal_move_loses_by_rules_infraction(tmp_path, openings) -> None:
    cheater = Player(name="cheater", make=lambda: IllegalEngine(after=2), limit=parse_limit("1ms"))
    result = run_match(cheater, first_player(), openings, quiet(2, workers=1))
    assert [g.termination for g in result.games] == ["rules infraction"] * 2
    assert result.score == (0, 0, 2)
    assert all("illegal move" in g.details for g in result.games)


def test_external_illegal_move_is_a_rules_infraction(tmp_path, openings) -> None:
    cheat = Player.from_spec(fake_uci_spec(tmp_path, "illegal", after=1, name="cheat"),
                             parse_limit("depth=1"))  # fmt: skip
    result = run_match(cheat, first_player(), openings[:1], quiet(2, workers=1))
    assert [g.termination for g in result.games] == ["rules infraction"] * 2


class SlowEngine(FirstMoveEngine):
    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        time.sleep(0.15)
        return super().play(board, limit)


def test_clock_games_are_lost_on_time(openings) -> None:
    slow = Player(name="slow", make=lambda: SlowEngine("slow"), limit=parse_limit("tc=0.4"))
    fast = first_player("fast", limit="tc=0.4")
    result = run_match(slow, fast, openings[:1], quiet(2, workers=2, time_margin=0.05))
    for game in result.games:
        assert game.termination == "time forfeit"
        assert game.result == ("0-1" if game.white == "slow" else "1-0")
        assert "lost on time" in game.details


def test_adjudication_resigns_and_draws(openings) -> None:
    require_stockfish()
    adjudicator = Adjudication(
        make=lambda: create_engine("stockfish"),
        limit=chess.engine.Limit(depth=6),
        resign_cp=400,
        resign_plies=2,
        draw_plies=None,
    )
    strong = Player.from_spec("stockfish", parse_limit("depth=4"))
    result = run_match(strong, first_player(), openings[:1],
                       quiet(2, workers=1, adjudication=adjudicator))  # fmt: skip
    assert result.score == (2, 0, 0)
    assert {g.termination for g in result.games} <= {"adjudication", "normal"}
    assert any(g.termination == "adjudication" and "resigns" in g.details for g in result.games)

    drawer = Adjudication(
        make=lambda: create_engine("stockfish"),
        limit=chess.engine.Limit(depth=1),
        resign_plies=None,
        draw_move=1,
        draw_cp=100_000,
        draw_plies=2,
    )
    result = run_match(first_player("a"), first_player("b"), openings[:1],
                       quiet(1, adjudication=drawer))  # fmt: skip
    (game,) = result.games
    assert game.result == "1/2-1/2" and game.termination == "adjudication"
    assert game.plies == len(openings[0].moves) + 2


def test_ply_limit_and_same_name_checks(openings) -> None:
    result = run_match(first_player("a"), first_player("b"), openings[:1], quiet(1, max_plies=12))
    assert result.games[0].plies <= 12 and result.games[0].result in ("1-0", "0-1", "1/2-1/2")
    with pytest.raises(LatentChessError, match="both players are named 'x'"):
        run_match(first_player("x"), first_player("x"), openings, quiet(2))


def test_ply_count_counts_moves_of_the_game_not_the_fen_move_number() -> None:
    # A FEN start at move 45 (Black to move) must neither hit a 12-ply limit at once nor make
    # PlyCount count from move 1.
    start = Opening(name="late", fen="4k3/8/8/8/8/8/8/R3K3 b - - 0 45")
    record = run_match(first_player("a"), first_player("b"), [start], quiet(1, max_plies=12))
    game = record.games[0]
    moves = len(list(chess.pgn.read_game(io.StringIO(game.pgn)).mainline_moves()))
    assert moves == game.plies > 0
    assert chess.pgn.read_game(io.StringIO(game.pgn)).headers["PlyCount"] == str(moves)


# --- openings -----------------------------------------------------------------------------------


def test_bad_opening_files_name_file_and_line(tmp_path) -> None:
    bad_pgn = tmp_path / "bad.pgn"
    bad_pgn.write_text(OPENINGS_PGN + '\n[Event "?"]\n\n1. e4 e5 2. Ke3 *\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.pgn:13: bad PGN game: .*Ke3"):
        read_pgn_openings(bad_pgn)
    bad_epd = tmp_path / "bad.epd"
    bad_epd.write_text(
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id "ok";\n'
        "rnbqkbnr/pppppppp/8/8/8 w KQkq -\n",
        encoding="utf-8",
    )
    with pytest.raises(DataFormatError, match=r"bad\.epd:2: bad EPD position"):
        read_epd_openings(bad_epd)
    empty = tmp_path / "empty.pgn"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="no games found"):
        read_pgn_openings(empty)
    not_a_book = tmp_path / "book.bin"
    not_a_book.write_bytes(b"not a polyglot book")
    with pytest.raises(DataFormatError, match="not a Polyglot book"):
        polyglot_openings(not_a_book, 2)
    with pytest.raises(DataFormatError, match=r"unknown opening file type '\.txt'"):
        load_openings(tmp_path / "openings.txt", 2)
    with pytest.raises(DataFormatError, match="cannot read"):
        read_pgn_openings(tmp_path / "missing.pgn")


def _polyglot_move(move: chess.Move) -> int:
    return (
        chess.square_file(move.to_square)
        | chess.square_rank(move.to_square) << 3
        | chess.square_file(move.from_square) << 6
        | chess.square_rank(move.from_square) << 9
    )


def test_polyglot_book_walks_are_seeded_and_distinct(tmp_path) -> None:
    board = chess.Board()
    entries = []
    for first, weight in (("e2e4", 10), ("d2d4", 5)):
        entries.append((chess.polyglot.zobrist_hash(board), chess.Move.from_uci(first), weight))
        after = board.copy()
        after.push_uci(first)
        for reply in ("e7e5", "c7c5"):
            entries.append((chess.polyglot.zobrist_hash(after), chess.Move.from_uci(reply), 1))
    entries.sort(key=lambda e: e[0])
    book = tmp_path / "tiny.bin"
    book.write_bytes(
        b"".join(struct.pack(">QHHI", key, _polyglot_move(m), w, 0) for key, m, w in entries)
    )
    lines = polyglot_openings(book, 4, plies=6, seed=3)
    assert len(lines) == 4 and len({o.moves for o in lines}) == 4
    assert all(len(o.moves) == 2 for o in lines)  # the book ends after two plies
    assert polyglot_openings(book, 4, plies=6, seed=3) == lines
    assert load_openings(book, 4, seed=3) == lines


def test_eco_sample_is_balanced_and_seeded() -> None:
    sample = eco_openings(10, seed=1)
    assert len(sample) == 10
    assert len({o.eco for o in sample}) == 10
    assert {o.eco[0] for o in sample} == set("ABCDE")  # every volume
    assert all(len(o.moves) >= 6 for o in sample)
    assert eco_openings(10, seed=1) == sample
    assert eco_openings(10, seed=2) != sample


def test_eco_balance_check_with_stockfish() -> None:
    with chess.engine.SimpleEngine.popen_uci(require_stockfish()) as engine:
        sample = eco_openings(3, seed=0, engine=engine, max_cp=60, depth=6)
        assert len(sample) == 3
        for opening in sample:
            info = engine.analyse(opening.board(), chess.engine.Limit(depth=6))
            assert abs(info["score"].white().score(mate_score=100_000)) <= 60
