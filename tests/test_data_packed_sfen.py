"""Stockfish's .bin records (PackedSfenValue) against python-chess: positions (castling rights,
en passant, both sides to move, long games), moves (castling, en passant, every promotion),
scores and mates, and malformed or truncated files."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import pytest

from latentchess.data.packed_sfen import (
    MATE_BOUND,
    RECORD_SIZE,
    decode_move,
    decode_score,
    encode_move,
    encode_score,
    pack_position,
    pack_record,
    read_records,
    unpack_position,
    unpack_record,
    write_records,
)
from latentchess.errors import DataFormatError

# (FEN, a legal move to record with it): every kind of move and position the format must keep.
CASES = [
    (chess.STARTING_FEN, "e2e4"),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1"),  # castling kingside
    ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8c8"),  # castling queenside, Black
    ("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 3 40", "h1h8"),  # some rights only; a capture
    ("r3k3/8/8/8/8/8/8/4K2R w KQkq - 0 1", "e1f1"),  # rights without their rook are dropped
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", "e5f6"),  # en passant
    ("rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2", "e4d3"),  # en passant, Black
    ("1n5k/P7/8/8/8/8/8/K7 w - - 0 60", "a7a8q"),
    ("1n5k/P7/8/8/8/8/8/K7 w - - 0 60", "a7b8n"),  # capture-promotion
    ("7k/8/8/8/8/8/p7/1N5K b - - 0 60", "a2b1r"),
    ("7k/8/8/8/8/8/p7/1N5K b - - 0 60", "a2a1b"),
    ("8/8/4k3/8/8/4K3/8/8 b - - 99 300", "e6d5"),  # halfmove clock above 63, fullmove above 255
]


@pytest.mark.parametrize(("fen", "uci"), CASES)
def test_records_round_trip_against_python_chess(fen: str, uci: str) -> None:
    board = chess.Board(fen)
    move = chess.Move.from_uci(uci)
    assert board.is_legal(move)
    for score, result in ((123, 1), (-4567, -1), (encode_score(None, 3), 0)):
        data = pack_record(board, score, move, result)
        assert len(data) == RECORD_SIZE
        record = unpack_record(data)
        assert record.fen == board.fen()
        assert record.board() == board
        assert record.move == move
        assert record.score == score
        assert record.ply == board.ply()
        assert record.result == result


def test_an_en_passant_square_without_a_capture_is_dropped_as_in_python_chess_fens() -> None:
    board = chess.Board()
    board.push_uci("e2e4")  # python-chess keeps ep_square e3, but no capture is legal
    assert board.ep_square == chess.E3
    assert unpack_position(pack_position(board)) == board.fen() == board.fen(en_passant="legal")
    assert " - " in board.fen()


def test_the_start_position_bits_follow_the_published_layout() -> None:
    bits = int.from_bytes(pack_position(chess.Board()), "little")
    assert bits & 1 == 0  # White to move
    assert (bits >> 1) & 63 == chess.E1 and (bits >> 7) & 63 == chess.E8
    assert (bits >> 13) & 31 == 0b10111  # a8: rook code 0b0111, then colour bit 1 (Black)
    assert (bits >> 18) & 31 == 0b10011  # b8: black knight


def test_moves_use_stockfishs_16_bit_encoding() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/4P3/R3K2R w KQkq - 0 1")
    assert encode_move(board, chess.Move.from_uci("e2e4")) == chess.E4 | chess.E2 << 6
    castle = encode_move(board, chess.Move.from_uci("e1g1"))
    assert castle == chess.H1 | chess.E1 << 6 | 3 << 14  # king takes rook
    assert decode_move(castle) == chess.Move.from_uci("e1g1")
    assert decode_move(chess.A1 | chess.E1 << 6 | 3 << 14) == chess.Move.from_uci("e1c1")
    promo = chess.Board("7k/P7/8/8/8/8/8/K7 w - - 0 1")
    queen = encode_move(promo, chess.Move.from_uci("a7a8q"))
    assert queen == chess.A8 | chess.A7 << 6 | 3 << 12 | 1 << 14
    assert decode_move(queen) == chess.Move.from_uci("a7a8q")


def test_scores_and_mates() -> None:
    for cp in (-MATE_BOUND + 1, -1234, 0, 7, 31000 - 256 - 1):
        assert decode_score(encode_score(cp)) == (cp, None)
    assert encode_score(100_000) == MATE_BOUND - 1  # clamped below the mate range
    for mate in (1, 2, 7, 100, -1, -2, -9):
        assert decode_score(encode_score(None, mate)) == (None, mate)
    assert encode_score(None, 1) == 31999  # mate in 1 = 1 ply
    assert encode_score(None, -1) == -31998  # mated in 1 = 2 plies


def test_random_games_round_trip() -> None:
    rng = random.Random(7)
    seen = 0
    for _ in range(12):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 200:
            move = rng.choice(list(board.legal_moves))
            record = unpack_record(pack_record(board, rng.randint(-900, 900), move, 1))
            assert (record.fen, record.move) == (board.fen(), move)
            board.push(move)
            seen += 1
    assert seen > 1000


def _write(path: Path, fens_moves: list[tuple[str, str]]) -> list[bytes]:
    records = [pack_record(chess.Board(f), 10, chess.Move.from_uci(m), 0) for f, m in fens_moves]
    assert write_records(path, records) == len(records)
    return records


def test_files_read_back_and_concatenate(tmp_path: Path) -> None:
    _write(tmp_path / "a.bin", CASES[:3])
    _write(tmp_path / "b.bin", CASES[3:])
    whole = [r.fen for _, r in read_records(tmp_path, check_moves=True)]  # a directory
    assert whole == [chess.Board(f).fen() for f, _ in CASES]
    (tmp_path / "ab.bin").write_bytes((tmp_path / "a.bin").read_bytes() * 2)
    assert [i for i, _ in read_records(tmp_path / "ab.bin")] == list(range(6))


def test_a_truncated_file_is_reported_by_file_and_record(tmp_path: Path) -> None:
    path = tmp_path / "cut.bin"
    records = _write(path, CASES[:2])
    with open(path, "ab") as handle:
        handle.write(records[0][:17])
    read: list[int] = []
    with pytest.raises(DataFormatError, match=r"cut\.bin at byte offset 80: record 2 is truncated"):
        for index, _ in read_records(path):
            read.append(index)
    assert read == [0, 1]  # the complete records come first


def test_malformed_records_are_reported_by_file_record_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad.bin"
    good, second = _write(path, CASES[:2])
    bits = int.from_bytes(second[:32], "little") | 0b1011 << 13  # a8: no piece has code 1011
    path.write_bytes(good + bits.to_bytes(32, "little") + second[32:])
    with pytest.raises(DataFormatError, match=r"bad\.bin at byte offset 40: record 1: bad piece"):
        list(read_records(path))
    path.write_bytes(good + second[:38] + bytes([5, 255]))
    with pytest.raises(DataFormatError, match=r"record 1: game result 5"):
        list(read_records(path))
    wrong = pack_record(chess.Board(), 0, chess.Move.from_uci("e2e4"), 0)
    path.write_bytes(
        good + wrong[:34] + (chess.E5 | chess.E2 << 6).to_bytes(2, "little") + wrong[36:]
    )
    assert len(list(read_records(path))) == 2  # the move is only checked when asked
    with pytest.raises(DataFormatError, match=r"record 1: illegal move 'e2e5'"):
        list(read_records(path, check_moves=True))
    with pytest.raises(DataFormatError, match=r"missing\.bin: cannot read"):
        list(read_records(tmp_path / "missing.bin"))


def test_boards_the_format_cannot_hold_are_refused() -> None:
    with pytest.raises(ValueError, match="one king a side"):
        pack_position(chess.Board("8/8/8/8/8/8/8/K7 w - - 0 1"))
    with pytest.raises(ValueError, match="halfmove clock"):
        pack_position(chess.Board("8/8/4k3/8/8/4K3/8/8 w - - 200 300"))
    with pytest.raises(ValueError, match="result"):
        pack_record(chess.Board(), 0, chess.Move.from_uci("e2e4"), 2)
