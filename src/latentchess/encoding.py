"""Where a position becomes tokens: the ChessBench FEN tokenizer (Ruoss et al. 2024, section 2).

A FEN is expanded to a fixed sequence of 77 characters and each character is mapped to an index in
a 31-symbol vocabulary. Layout of the 77 tokens:

====== ===================================================================================
index  content
====== ===================================================================================
0      side to move (``w`` or ``b``)
1-64   the squares in FEN order a8..h8, a7..h7, ..., a1..h1; empty squares are ``.``
65-68  castling characters, right-padded with ``.`` (``-`` gives ``....``)
69-70  en-passant square, or ``..``
71-73  halfmove clock, right-padded with ``.`` (``0`` gives ``0..``)
74-76  fullmove number, right-padded with ``.`` (``1`` gives ``1..``)
====== ===================================================================================

A character has one index wherever it appears: ``b`` is 11 as a file, a black bishop or Black to
move. Clock values above 999 do not fit in three characters; they are clamped to 999 (a 1000-move
game is legal but the model cannot tell it from a 999-move one, which does not matter for play).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import chess
import numpy as np
import numpy.typing as npt

from latentchess.errors import InvalidFenError

__all__ = [
    "VOCAB",
    "VOCAB_SIZE",
    "SEQUENCE_LENGTH",
    "TOKENIZER_VERSION",
    "Tokens",
    "tokenize",
    "tokenize_batch",
    "detokenize",
    "fen_key",
]

VOCAB: str = "0123456789abcdefghpnrkqPBNRQKw."
"""The 31 symbols in index order."""
VOCAB_SIZE: int = len(VOCAB)
SEQUENCE_LENGTH: int = 77
TOKENIZER_VERSION: str = "chessbench-fen-77"
"""Stored in every model's config so that a model is never fed tokens of another scheme."""

Tokens = npt.NDArray[np.uint8]
"""(77,) or (N, 77) array of vocabulary indices."""

_MAX_CLOCK = 999
_PIECES = frozenset("pnbrqkPNBRQK")
_CASTLING_ORDER = "KQkq"
_EXPAND_DIGITS = str.maketrans({str(n): "." * n for n in range(1, 9)})
_LUT = np.full(256, 255, dtype=np.uint8)
for _index, _char in enumerate(VOCAB):
    _LUT[ord(_char)] = _index
_CHARS = np.frombuffer(VOCAB.encode("ascii"), dtype=np.uint8)


def _validate_board_field(fen: str, placement: str) -> None:
    ranks = placement.split("/")
    if len(ranks) != 8:
        raise InvalidFenError(fen, f"expected 8 ranks separated by '/', got {len(ranks)}")
    for rank_number, rank in zip(range(8, 0, -1), ranks, strict=True):
        width = 0
        previous_digit = False
        for char in rank:
            if char in "12345678":
                if previous_digit:
                    raise InvalidFenError(fen, f"rank {rank_number} {rank!r} has adjacent digits")
                width += int(char)
                previous_digit = True
            elif char in _PIECES:
                width += 1
                previous_digit = False
            else:
                raise InvalidFenError(fen, f"bad piece letter {char!r} in rank {rank_number}")
        if width != 8:
            raise InvalidFenError(fen, f"rank {rank_number} {rank!r} covers {width} squares, not 8")


def _clock(fen: str, name: str, value: str, minimum: int) -> str:
    if not (value.isascii() and value.isdigit()) or int(value) < minimum:
        raise InvalidFenError(fen, f"{name} {value!r} is not an integer >= {minimum}")
    return str(min(int(value), _MAX_CLOCK))


def _fen_string(position: str | chess.Board) -> str:
    if isinstance(position, chess.Board):
        return position.fen()
    if not isinstance(position, str):
        raise TypeError(f"expected a FEN string or chess.Board, got {type(position).__name__}")
    return position


def _characters(fen: str) -> str:
    """Validate ``fen`` and return its 77-character expansion."""
    fields = fen.split()
    if len(fields) != 6:
        raise InvalidFenError(fen, f"expected 6 space-separated fields, got {len(fields)}")
    placement, side, castling, en_passant, halfmove, fullmove = fields
    _validate_board_field(fen, placement)
    if side not in ("w", "b"):
        raise InvalidFenError(fen, f"side to move must be 'w' or 'b', got {side!r}")
    if castling != "-":
        letters = [c for c in _CASTLING_ORDER if c in castling]
        if len(castling) > 4 or "".join(letters) != castling:
            raise InvalidFenError(fen, f"castling field {castling!r} is not '-' or KQkq in order")
    if en_passant != "-" and (
        len(en_passant) != 2 or en_passant[0] not in "abcdefgh" or en_passant[1] not in "36"
    ):
        raise InvalidFenError(fen, f"en-passant field {en_passant!r} is not '-' or a3..h6")
    squares = placement.replace("/", "").translate(_EXPAND_DIGITS)
    return (
        side
        + squares
        + (castling if castling != "-" else "").ljust(4, ".")
        + (en_passant if en_passant != "-" else "").ljust(2, ".")
        + _clock(fen, "halfmove clock", halfmove, 0).ljust(3, ".")
        + _clock(fen, "fullmove number", fullmove, 1).ljust(3, ".")
    )


def tokenize(position: str | chess.Board) -> Tokens:
    """Tokenize one position (FEN or board) into a ``(77,)`` uint8 array.

    Raises:
        InvalidFenError: the FEN has a wrong field count, bad piece letters, a rank of wrong
            length, or an illegal side, castling, en-passant or clock field.
    """
    chars = _characters(_fen_string(position))
    return _LUT[np.frombuffer(chars.encode("ascii"), dtype=np.uint8)]


def tokenize_batch(positions: Iterable[str | chess.Board]) -> Tokens:
    """Tokenize many positions into an ``(N, 77)`` uint8 array (one table lookup for the batch)."""
    expanded = "".join(_characters(_fen_string(p)) for p in positions)
    flat = _LUT[np.frombuffer(expanded.encode("ascii"), dtype=np.uint8)]
    return flat.reshape(-1, SEQUENCE_LENGTH)  # (N, 77)


def detokenize(tokens: Sequence[int] | Tokens) -> str:
    """Inverse of :func:`tokenize`: rebuild the FEN (clocks clamped to 999 stay clamped)."""
    array = np.asarray(tokens, dtype=np.int64)
    if array.shape != (SEQUENCE_LENGTH,):
        raise ValueError(f"expected {SEQUENCE_LENGTH} tokens, got shape {array.shape}")
    if array.min() < 0 or array.max() >= VOCAB_SIZE:
        raise ValueError(f"token indices must lie in [0, {VOCAB_SIZE}), got {array.tolist()}")
    chars = _CHARS[array].tobytes().decode("ascii")
    side, squares = chars[0], chars[1:65]
    ranks = []
    for r in range(8):
        rank, empty = "", 0
        for char in squares[8 * r : 8 * r + 8]:
            if char == ".":
                empty += 1
                continue
            rank += (str(empty) if empty else "") + char
            empty = 0
        ranks.append(rank + (str(empty) if empty else ""))
    castling = chars[65:69].rstrip(".") or "-"
    en_passant = chars[69:71].rstrip(".") or "-"
    halfmove, fullmove = chars[71:74].rstrip("."), chars[74:77].rstrip(".")
    return f"{'/'.join(ranks)} {side} {castling} {en_passant} {halfmove} {fullmove}"


def fen_key(fen: str) -> str:
    """The identity of a position for deduplication: the first four FEN fields."""
    return " ".join(fen.split()[:4])
