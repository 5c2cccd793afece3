"""``data label``: PGN (plain, .gz, .zst), EPD and FEN lists; malformed input; resume."""

from __future__ import annotations

import gzip
from pathlib import Path

import chess
import pytest
import zstandard

from latentchess.cli import main
from latentchess.data.label import label_file
from latentchess.data.positions import detect_format, read_positions
from latentchess.data.problems import ProblemLog
from latentchess.data.stockfish import make_limit
from latentchess.data.store import read_dataset
from latentchess.encoding import fen_key
from latentchess.errors import DataFormatError

LIMIT = make_limit(depth=4)

PGN = """[Event "scholar"]
[Result "1-0"]

1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0

[Event "broken"]
[Result "*"]

1. e4 e5 2. Ke3 Nf6 *

[Event "queen's gambit"]
[Result "*"]

1. d4 d5 2. c4 e6 3. Nc3 Nf6 *
"""
BROKEN_GAME_LINE = 6  # the broken game's first line
# Game 1 has 8 positions, game 3 has 7, and both start from the initial position.
PGN_UNIQUE = 8 + 7 - 1

EPD = """rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e5; id "after e4";

not an epd line
8/8/8/8/8/8/8/8 w - - id "no kings";
r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - hmvc 2; fmvn 3;
"""

FENS = """# a comment line
rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1
rnbqkbnr/pppppppp/8/8/4P3 w KQkq - 0 1
7k/5Q2/6K1/8/8/8/8/8 b - -
rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1
"""


def _write_pgns(tmp_path: Path) -> list[Path]:
    plain = tmp_path / "games.pgn"
    plain.write_text(PGN)
    gz = tmp_path / "games_gz.pgn.gz"
    gz.write_bytes(gzip.compress(PGN.encode()))
    zst = tmp_path / "games_zst.pgn.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(PGN.encode()))
    return [plain, gz, zst]


def test_pgn_plain_gz_and_zst_give_the_same_labelled_positions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fen_sets = []
    for path in _write_pgns(tmp_path):
        out = tmp_path / f"out_{path.name}"
        result = label_file(path, out, limit=LIMIT, workers=1, progress=False)
        assert result.rows == PGN_UNIQUE and result.duplicates == 1 and result.malformed == 1
        assert f"{path}:{BROKEN_GAME_LINE}: broken PGN game #2" in capsys.readouterr().err
        rows = read_dataset(out).to_pylist()
        assert {r["game"] for r in rows} == {0, 2}
        assert all(r["source"] == f"label:{path.name}" for r in rows)
        mate = [r for r in rows if chess.Board(r["fen"]).is_checkmate()]
        assert len(mate) == 1 and mate[0]["win_prob_white"] == 1.0 and mate[0]["mate_white"] == 0
        before_mate = [r for r in rows if r["game"] == 0 and r["ply"] == 6]
        assert before_mate[0]["win_prob_white"] == 1.0 and before_mate[0]["best_move"] == "h5f7"
        assert all(r["multipv_gap_cp"] is not None for r in rows if r["depth"])
        fen_sets.append({r["fen"] for r in rows})
    assert fen_sets[0] == fen_sets[1] == fen_sets[2]


def test_per_game_sampling_is_seeded(tmp_path: Path) -> None:
    path = _write_pgns(tmp_path)[0]
    draws = []
    for seed in (3, 3, 4):
        positions = list(read_positions(path, per_game=3, seed=seed, problems=ProblemLog()))
        assert [p.game for p in positions] == [0, 0, 0, 2, 2, 2]
        draws.append([p.fen for p in positions])
    assert draws[0] == draws[1]
    assert draws[0] != draws[2]


def test_epd_with_malformed_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "suite.epd"
    path.write_text(EPD)
    result = label_file(path, tmp_path / "out", limit=LIMIT, workers=2, progress=False)
    err = capsys.readouterr().err
    assert result.rows == 2 and result.malformed == 2
    assert f"{path}:3: bad EPD 'not an epd line'" in err
    assert f"{path}:4: impossible position" in err
    rows = read_dataset(tmp_path / "out").to_pylist()
    assert {r["fen"].split()[-1] for r in rows} == {"1", "3"}  # EPD fmvn op honoured
    assert all(r["game"] is None for r in rows)


def test_fen_list_dedups_and_strict_is_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "positions.txt"
    path.write_text(FENS)
    assert detect_format(path) == "fen"
    result = label_file(path, tmp_path / "out", limit=LIMIT, workers=1, progress=False)
    assert result.rows == 2 and result.duplicates == 1 and result.malformed == 1
    assert f"{path}:3: bad FEN" in capsys.readouterr().err
    stalemate = [
        r for r in read_dataset(tmp_path / "out").to_pylist() if r["win_prob_white"] == 0.5
    ]
    assert len(stalemate) == 1 and stalemate[0]["depth"] == 0
    with pytest.raises(DataFormatError, match=rf"{path}:3: bad FEN"):
        label_file(path, tmp_path / "strict", limit=LIMIT, workers=1, strict=True)


def test_rerun_resumes_without_duplicates(tmp_path: Path) -> None:
    path = _write_pgns(tmp_path)[0]
    first = label_file(path, tmp_path / "out", limit=LIMIT, workers=1, progress=False)
    again = label_file(path, tmp_path / "out", limit=LIMIT, workers=1, progress=False)
    assert again.new_rows == 0 and again.rows == first.rows
    keys = [fen_key(r["fen"]) for r in read_dataset(tmp_path / "out").to_pylist()]
    assert len(keys) == len(set(keys)) == PGN_UNIQUE


def test_cli_label_and_strict_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "positions.fen"
    path.write_text(FENS)
    out = tmp_path / "out"
    args = ["data", "label", str(path), "--out", str(out), "--depth", "4", "--workers", "1"]
    assert main([*args, "--no-progress"]) == 0
    assert "label: 2 rows" in capsys.readouterr().out
    assert main([*args, "--strict", "--out", str(tmp_path / "strict")]) == 2
    assert f"{path}:3: bad FEN" in capsys.readouterr().err


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="no such file"):
        label_file(tmp_path / "nope.pgn", tmp_path / "out", limit=LIMIT, workers=1)


def test_bin_records_are_labelled_as_positions(tmp_path: Path) -> None:
    """``data selfplay``'s .bin records: their positions, numbered by record; a truncated file
    is an error naming it (binary input cannot be skipped line by line)."""
    from latentchess.data.packed_sfen import encode_score, pack_record

    board = chess.Board()
    records = b""
    for san in ("e4", "e5", "Nf3"):
        move = board.parse_san(san)
        records += pack_record(board, encode_score(20), move, 0)
        board.push(move)
    path = tmp_path / "games.bin"
    path.write_bytes(records)
    assert detect_format(path) == "bin"
    positions = list(read_positions(path))
    assert [p.line for p in positions] == [0, 1, 2]  # record numbers, as read_records counts
    assert (
        positions[1].fen
        == chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").fen()
        and positions[1].ply == 1
    )
    result = label_file(path, tmp_path / "out", limit=LIMIT, workers=1, progress=False)
    assert result.rows == 3
    labelled = {fen_key(r["fen"]) for r in read_dataset(tmp_path / "out").to_pylist()}
    assert labelled == {fen_key(p.fen) for p in positions}
    truncated = tmp_path / "cut.bin"
    truncated.write_bytes(records[:-7])
    with pytest.raises(DataFormatError, match=r"cut\.bin"):
        list(read_positions(truncated))
