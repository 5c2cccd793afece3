"""Tokenizer: hand-checked vectors, every special field, round trips and clear errors."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from latentchess import (
    SEQUENCE_LENGTH,
    VOCAB,
    InvalidFenError,
    detokenize,
    fen_key,
    tokenize,
    tokenize_batch,
)


def chars(fen: str) -> str:
    return "".join(VOCAB[i] for i in tokenize(fen))


def test_vocabulary_order() -> None:
    assert VOCAB == "0123456789abcdefghpnrkqPBNRQKw."
    assert len(VOCAB) == 31
    assert VOCAB.index("b") == 11
    assert VOCAB.index(".") == 30
    assert VOCAB.index("w") == 29


def test_start_position_hand_checked() -> None:
    expected = (
        "w"
        + "rnbqkbnr"
        + "pppppppp"
        + "." * 32
        + "PPPPPPPP"
        + "RNBQKBNR"
        + "KQkq"
        + ".."
        + "0.."
        + "1.."
    )
    assert chars(chess.STARTING_FEN) == expected
    tokens = tokenize(chess.STARTING_FEN)
    assert tokens.dtype == np.uint8 and tokens.shape == (SEQUENCE_LENGTH,)
    assert tokens[:9].tolist() == [29, 20, 19, 11, 22, 21, 11, 19, 20]
    assert tokens[65:].tolist() == [28, 27, 21, 22, 30, 30, 0, 30, 30, 1, 30, 30]


@pytest.mark.parametrize(
    ("fen", "tail"),
    [
        # side b, partial castling, en passant, two-digit clocks
        ("rnbqkbnr/pp1ppppp/8/2pP4/8/8/PPP1PPPP/RNBQKBNR w Kq c6 0 3", "Kq..c60..3.."),
        ("4k3/8/8/8/8/8/8/4K3 b - - 57 123", "......57.123"),
        ("4k3/8/8/8/8/8/8/4K3 w - - 100 999", "......100999"),
        ("r3k2r/8/8/8/8/8/8/R3K2R b Qk - 7 40", "Qk....7..40."),
    ],
)
def test_special_fields(fen: str, tail: str) -> None:
    assert chars(fen)[65:] == tail
    assert chars(fen)[0] == fen.split()[1]


def test_squares_in_fen_order_with_promotion_pieces() -> None:
    fen = "Q6k/8/8/8/8/8/8/K6q w - - 0 60"
    c = chars(fen)
    assert c[1] == "Q" and c[8] == "k" and c[57] == "K" and c[64] == "q"
    assert c[2:8] == "......"


def test_clocks_above_999_are_clamped() -> None:
    c = chars("4k3/8/8/8/8/8/8/4K3 w - - 1500 12345")
    assert c[71:] == "999999"


def test_board_and_string_agree() -> None:
    board = chess.Board()
    for uci in ["e2e4", "c7c5", "e4e5", "d7d5"]:
        board.push_uci(uci)
    np.testing.assert_array_equal(tokenize(board), tokenize(board.fen()))
    assert chars(board.fen())[69:71] == "d6"


def test_batch_matches_single_and_round_trips() -> None:
    board = chess.Board()
    fens = []
    rng = np.random.default_rng(0)
    for _ in range(200):
        moves = list(board.legal_moves)
        if not moves or board.is_game_over():
            board = chess.Board()
            continue
        board.push(moves[rng.integers(len(moves))])
        fens.append(board.fen())
    batch = tokenize_batch(fens)
    assert batch.shape == (len(fens), SEQUENCE_LENGTH)
    for fen, row in zip(fens, batch, strict=True):
        np.testing.assert_array_equal(row, tokenize(fen))
        assert detokenize(row) == fen
    assert tokenize_batch([]).shape == (0, SEQUENCE_LENGTH)


@pytest.mark.parametrize(
    ("fen", "problem"),
    [
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -", "6 space-separated fields"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "8 ranks"),
        ("rnbqkbnr/ppppxppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "bad piece letter 'x'"),
        ("rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "covers 7 squares"),
        ("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "bad piece letter '9'"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "side to move"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkz - 0 1", "castling"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w qK - 0 1", "castling"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e4 0 1", "en-passant"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - -1 1", "halfmove"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0", "fullmove"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - \u00b2 1", "halfmove"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 \u0663", "fullmove"),
    ],
)
def test_invalid_fen_errors_quote_the_fen(fen: str, problem: str) -> None:
    with pytest.raises(InvalidFenError) as info:
        tokenize(fen)
    assert isinstance(info.value, ValueError)
    assert repr(fen) in str(info.value)
    assert problem in str(info.value)
    with pytest.raises(InvalidFenError):
        tokenize_batch([chess.STARTING_FEN, fen])


def test_detokenize_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="expected 77 tokens"):
        detokenize([0] * 10)
    with pytest.raises(ValueError, match="token indices"):
        detokenize([31] * 77)


def test_fen_key_uses_first_four_fields() -> None:
    assert fen_key("8/8/8/8/8/8/8/K6k w - - 12 80") == "8/8/8/8/8/8/8/K6k w - -"
