"""Batch hashing and tokenizing agree with python-chess's Zobrist hash and our FEN tokenizer."""

from __future__ import annotations

import random

import chess
import chess.polyglot
import numpy as np

from latentchess.batch_keys import bitboards, tokenize_boards, zobrist_hashes
from latentchess.encoding import tokenize_batch

SPECIAL = [
    chess.STARTING_FEN,
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # legal en passant
    "4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1",  # en passant for Black
    "4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1",  # ep square without a capturing pawn
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 1000 1200",  # clocks beyond three digits
    "r3k2r/8/8/8/8/8/8/4K2R w KQkq - 0 1",  # castling right without its rook
    "8/P7/8/8/8/8/8/k1K5 w - - 0 90",
]


def random_positions(seed: int, games: int) -> list[chess.Board]:
    rng = random.Random(seed)
    boards = [chess.Board(fen) for fen in SPECIAL]
    for _ in range(games):
        board = chess.Board()
        for _ in range(rng.randint(1, 200)):
            moves = list(board.legal_moves)
            if not moves:
                break
            # Favour pawn moves so that promotions and en passant happen.
            pawn_moves = [m for m in moves if board.piece_type_at(m.from_square) == chess.PAWN]
            board.push(rng.choice(pawn_moves if pawn_moves and rng.random() < 0.4 else moves))
            boards.append(board.copy(stack=False))
    return boards


def test_zobrist_hashes_equal_polyglot() -> None:
    boards = random_positions(1, 25)
    hashes = zobrist_hashes(boards)
    assert hashes.dtype == np.uint64 and hashes.shape == (len(boards),)
    assert [int(h) for h in hashes] == [chess.polyglot.zobrist_hash(b) for b in boards]
    assert zobrist_hashes([]).shape == (0,)


def test_tokenize_boards_equals_fen_tokenizer() -> None:
    boards = random_positions(2, 25)
    np.testing.assert_array_equal(tokenize_boards(boards), tokenize_batch(boards))
    np.testing.assert_array_equal(
        tokenize_boards(boards, bitboards(boards)), tokenize_batch(b.fen() for b in boards)
    )
    assert tokenize_boards([]).shape == (0, 77)
